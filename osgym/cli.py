"""The ``osgym`` command line (typer + rich)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from osgym.errors import ConfigError, OsgymError

app = typer.Typer(help="osgym: desktop replicas, agent episodes, Parquet datasets.", no_args_is_help=True,
                  pretty_exceptions_enable=False)
images_app = typer.Typer(help="Build and inspect replica images.", no_args_is_help=True)
pool_app = typer.Typer(help="Inspect and clean up replica pools.", no_args_is_help=True)
suites_app = typer.Typer(help="Describe the built-in task suites.", no_args_is_help=True)
tasks_app = typer.Typer(help="Check task files (OSWorld's JSON) against what osgym supports; stage their assets.",
                        no_args_is_help=True)
app.add_typer(images_app, name="images")
app.add_typer(tasks_app, name="tasks")
app.add_typer(pool_app, name="pool")
app.add_typer(suites_app, name="suites")
console = Console()
err = Console(stderr=True)


def _fail(exc: BaseException) -> typer.Exit:
    err.print(f"[bold red]error:[/bold red] {exc}", markup=True, highlight=False)
    return typer.Exit(2)


def _docker() -> Any:
    import docker
    import docker.errors

    try:
        client = docker.from_env()
        client.ping()
        return client
    except docker.errors.DockerException as exc:
        msg = f"cannot reach Docker ({exc}); start it with `make docker` (scripts/ensure-docker.sh)"
        raise _fail(OsgymError(msg)) from exc


@images_app.command("build")
def images_build(tier: Annotated[str, typer.Option(help="desktop or apps")] = "desktop") -> None:
    """Build the base image (debootstrap) and the replica image, unless they are up to date."""
    from osgym.replicas import images

    try:
        res = images.build(tier, client=_docker(), log=lambda m: console.print(m, markup=False, highlight=False))
    except OsgymError as exc:
        raise _fail(exc) from exc
    console.print(f"{res.tag} {'built' if res.built else 'up to date'}")


@images_app.command("tag")
def images_tag(tier: Annotated[str, typer.Option(help="desktop or apps")] = "desktop") -> None:
    """Print the tag the current inputs build to."""
    from osgym.replicas import images

    try:
        tag = images.image_tag(tier)
    except OsgymError as exc:
        raise _fail(exc) from exc
    console.print(tag)


@pool_app.command("reap")
def pool_reap(
    pool: Annotated[str | None, typer.Option(help="only this pool (whoever started it)")] = None,
    host: Annotated[list[str] | None, typer.Option(help="Docker endpoint(s); default: DOCKER_HOST or local")] = None,
    all_owners: Annotated[bool, typer.Option("--all", help="also pools whose owning process is alive")] = False,
) -> None:
    """Remove replicas, networks and run directories left by interrupted runs.

    Touches only osgym-labelled containers; without --pool or --all, only those whose owning process is gone.
    """
    import docker

    from osgym.replicas.pool import reap

    clients = [docker.DockerClient(base_url=h) for h in host] if host else [_docker()]
    for client in clients:
        try:
            n = reap(client, pool=pool, all_owners=all_owners)
        except docker.errors.DockerException as exc:
            raise _fail(OsgymError(f"reap on {client.api.base_url}: {exc}")) from exc
        console.print(f"removed {n} container(s)" + (f" of pool {pool}" if pool else "")
                      + (f" on {client.api.base_url}" if host else ""))


def _host_size(value: str) -> tuple[float, float]:
    cpus, sep, gib = value.partition(",")
    try:
        return float(cpus), float(gib)
    except ValueError:
        raise _fail(OsgymError(f"--host-size: expected CPUS,GIB (e.g. 16,64), actual {value!r}")) from None


@pool_app.command("plan")
def pool_plan(
    replicas: Annotated[int | None, typer.Option(help="size a fleet for this many replicas")] = None,
    from_run: Annotated[str | None, typer.Option(help="plan from the profile this run measured")] = None,
    dataset: Annotated[str | None, typer.Option(help="plan from the profile of a whole dataset (or the "
                                                     "dataset that holds --from-run)")] = None,
    store: Annotated[str, typer.Option(help="store root of --from-run or --dataset")] = "./data",
    prices: Annotated[Path | None, typer.Option(help="a price table (YAML) merged into osgym's own; default "
                                                     "OSGYM_PRICES")] = None,
    host: Annotated[str | None, typer.Option(help="the price table's host to size the fleet on")] = None,
    host_size: Annotated[str | None, typer.Option(
        help="a host not in the price table: CPUS,GIB (with --price)")] = None,
    price: Annotated[float | None, typer.Option(help="that host's price, USD per hour")] = None,
    mem_limit: Annotated[int, typer.Option(help="per-replica memory limit, MiB")] = 512,
    footprint: Annotated[float | None, typer.Option(help="per-replica memory, MiB (overrides the profile)")] = None,
    cpu_per_replica: Annotated[float | None, typer.Option(help="cores per replica (overrides the profile)")] = None,
) -> None:
    """How many replicas this host holds, and with --replicas the fleet and its cost, from one cost model.

    The profile (cores and memory per replica, replica-seconds, tokens and bytes per episode) is measured
    by a run (--from-run) or a dataset (--dataset); without either, the benchmark's figure is assumed."""
    from osgym.replicas import capacity, cost

    try:
        table = cost.load_prices(prices)
        profile = _plan_profile(store, from_run, dataset)
        overrides = {k: v for k, v in (("mem_mib", footprint), ("cores", cpu_per_replica)) if v is not None}
        profile = cost.Profile.model_validate({**profile.model_dump(), **overrides}) if overrides else profile
        p = capacity.plan(capacity.local_resources(), profile, mem_limit_mib=mem_limit)
    except (OsgymError, ValueError) as exc:
        raise _fail(exc if isinstance(exc, OsgymError) else OsgymError(str(exc))) from exc
    console.print(f"profile: {profile.cores:.3g} cores, {profile.mem_mib:.0f} MiB per replica "
                  f"({profile.source})", highlight=False, markup=False)
    console.print(f"this host: {p.cpus:g} cores, {p.mem_available_mib:,.0f} MiB available -> [bold]{p.replicas:,}"
                  f"[/bold] replicas ({p.binding} binds; cpu {p.by_cpu:,}, memory {p.by_memory:,}, "
                  f"limits {p.by_limits:,})", highlight=False)
    if replicas is None:
        if host_size is not None or price is not None:
            raise _fail(OsgymError("fleet sizing needs --replicas"))
        return
    try:
        if host_size is not None or price is not None:
            if host_size is None or price is None:
                raise OsgymError("a custom host needs --host-size and --price together")
            cpus, gib = _host_size(host_size)
            h = cost.HostPrice(instance=f"{cpus:g}vCPU-{gib:g}GiB", vcpus=cpus, memory_gib=gib, usd_per_hour=price)
            table = table.model_copy(update={"hosts": [*table.hosts, h], "default_host": h.instance})
        else:
            h = table.host(host)
        f = cost.fleet(replicas, h, profile)
        run = cost.cost_of(table, profile, host=h.instance)
    except (OsgymError, ValueError) as exc:
        raise _fail(exc if isinstance(exc, OsgymError) else OsgymError(str(exc))) from exc
    console.print(f"fleet: {f.replicas:,} replicas on {f.hosts:,} x {h.instance} ({h.vcpus:g} vCPU, "
                  f"{h.memory_gib:g} GiB, {cost.usd(h.usd_per_hour)}/h), {f.replicas_per_host:,} per host "
                  f"({f.binding} binds)", highlight=False, markup=False)
    console.print(f"cost: {cost.usd(f.usd_per_replica_day)} per replica-day, {cost.usd(f.usd_per_day)} per day",
                  highlight=False, markup=False)
    if profile.replica_s:
        per_success = (f", {cost.usd(run.total_usd / profile.success_rate)} per success"
                       if profile.success_rate else "")
        console.print(f"episode: {cost.usd(run.total_usd)} ({cost.usd(run.compute_usd)} replica, "
                      f"{cost.usd(run.tokens_usd)} tokens, {cost.usd(run.storage_usd)} storage){per_success}",
                      highlight=False, markup=False)


def _plan_profile(store: str, from_run: str | None, dataset: str | None) -> Any:
    """The profile ``pool plan`` uses: measured by a run or a dataset, else the assumed default."""
    from osgym.replicas import cost

    if from_run is None and dataset is None:
        return cost.DEFAULT_PROFILE
    from osgym.analysis import analytics
    from osgym.analysis.profile import find_run, measured_profile

    name = dataset or find_run(store, from_run or "")
    _require_dataset(store, name)
    return measured_profile(analytics.connect(store, name), from_run, name=name)


def _require_dataset(store: str, name: str) -> None:
    """Fail with the datasets the store has if it has no dataset ``name``.

    Raises:
        ConfigError: naming the datasets that exist.
    """
    from osgym.dataset import list_datasets

    names = list_datasets(store)
    if name not in names:
        raise ConfigError(f"dataset {name!r} does not exist in {store}; datasets there: {', '.join(names) or 'none'}")


_EXCLUDE_HELP = "skip task files under a directory, or files, of this name (repeatable), e.g. Windows"


@tasks_app.command("check")
def tasks_check(
    directory: Annotated[Path, typer.Argument(help="a directory of task JSON files (searched recursively)")],
    exclude: Annotated[list[str] | None, typer.Option(help=_EXCLUDE_HELP)] = None,
    cache: Annotated[str | None, typer.Option(
        help="an asset cache (directory or s3://bucket/prefix): refuse tasks that name a URL it lacks")] = None,
    live_files: Annotated[bool, typer.Option(
        "--live-files", help="also list each file refused only for live sites, with the sites it opens")] = False,
) -> None:
    """Load every task file under DIRECTORY: per-domain counts of loaded files, files refused only for the live
    websites they open, and refused files; then every refused setup type, metric and getter with the number of
    files that use it (exit code 0). With --cache, a task naming a URL the cache lacks is refused
    ("asset not cached: <url>")."""
    from osgym.tasks.assets import AssetCache
    from osgym.tasks.check import check_dir

    try:
        report = check_dir(directory, exclude=frozenset(exclude or []),
                           cache=AssetCache(cache) if cache is not None else None)
    except OsgymError as exc:
        raise _fail(exc) from exc
    typer.echo(report.render(live_files=live_files))  # plain text: long names and reasons are not wrapped


@tasks_app.command("sample")
def tasks_sample(
    directory: Annotated[Path, typer.Argument(help="where to write examples/<domain>/<id>.json and test_all.json")],
    tier: Annotated[str, typer.Option(help="desktop: xterm and Mousepad tasks; apps: 12 tasks on the apps tier's "
                                           "apps, with their assets under DIR/assets")] = "desktop",
    cache: Annotated[str | None, typer.Option(help="(--tier apps) also put the assets in this asset cache, under "
                                                   "the URLs the task files name: a directory or s3://bucket/prefix")]
    = None,
) -> None:
    """Write a small folder of OSWorld-format task files, with an index in OSWorld's test_all.json shape: the
    tasks datasets/osworld-sample.yaml (desktop tier) or datasets/osworld-apps-sample.yaml (apps tier) collects."""
    from osgym.tasks.assets import AssetCache
    from osgym.tasks.sample import write_sample
    from osgym.tasks.sample_apps import stage_assets, write_apps_sample

    if tier not in ("desktop", "apps"):
        raise _fail(ConfigError(f"tasks sample --tier: expected desktop or apps, actual {tier!r}"))
    if cache is not None and tier != "apps":
        raise _fail(ConfigError("tasks sample --cache: only the apps tier's tasks have assets (add --tier apps)"))
    try:
        paths = write_apps_sample(directory) if tier == "apps" else write_sample(directory)
        staged = stage_assets(AssetCache(cache)) if cache is not None else 0
    except OSError as exc:
        raise _fail(OSError(f"tasks sample: cannot write {str(directory)!r}: {exc}")) from exc
    except OsgymError as exc:
        raise _fail(exc) from exc
    typer.echo(f"{len(paths)} task files under {directory / 'examples'}, index {directory / 'test_all.json'}"
               + (f"; {staged} assets in {cache}" if cache is not None else ""))


@tasks_app.command("fetch-assets")
def tasks_fetch_assets(
    directory: Annotated[Path, typer.Argument(help="a directory of task JSON files (searched recursively)")],
    cache: Annotated[str, typer.Option(help="the asset cache to fill: a directory or s3://bucket/prefix")],
    exclude: Annotated[list[str] | None, typer.Option(help=_EXCLUDE_HELP)] = None,
    max_mib: Annotated[int, typer.Option(min=1, help="largest file to fetch, in MiB")] = 512,
    timeout: Annotated[float, typer.Option(min=1, help="seconds without progress before a download fails")] = 60,
    attempts: Annotated[int, typer.Option(min=1, help="tries per URL on timeouts, dropped connections, 5xx")] = 4,
    allow_private_hosts: Annotated[bool, typer.Option(
        help="also fetch from hosts on loopback or private addresses (refused by default: task files are "
             "untrusted)")] = False,
) -> None:
    """Download every http(s) URL the task files under DIRECTORY fetch at setup or evaluation (download,
    upload_file, cloud_file) into the asset cache, once each, stored by sha256 with a URL manifest. URLs already
    cached are skipped. Prints a summary; exit code 1 if any URL failed. Run it where there is a network; set
    OSGYM_ASSET_CACHE to the same cache for runs."""
    from osgym.tasks.asset_fetch import FetchResult, fetch_assets
    from osgym.tasks.assets import AssetCache

    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[detail]}"), TimeElapsedColumn(), console=err) as progress:
        bar = progress.add_task("fetch-assets", total=None, detail="")

        def on_result(r: FetchResult) -> None:
            if r.status == "failed":
                progress.console.print(f"[red]failed[/red] {r.url}: {r.reason}", markup=True, highlight=False)
            progress.update(bar, advance=1, detail=f"{r.status} {r.url[-60:]}")

        try:
            report = fetch_assets(directory, AssetCache(cache), exclude=frozenset(exclude or []),
                                  max_bytes=max_mib * 2**20, timeout_s=timeout, attempts=attempts,
                                  allow_private_hosts=allow_private_hosts,
                                  on_start=lambda n: progress.update(bar, total=n), on_result=on_result)
        except OsgymError as exc:
            raise _fail(exc) from exc
    typer.echo(report.render())
    if not report.ok:
        raise typer.Exit(1)


@suites_app.command("list")
def suites_list() -> None:
    """List the built-in suites with their template counts."""
    from rich.table import Table

    from osgym.tasks import suites

    table = Table("suite", "templates", "infeasible", "description")
    for name in suites.list_suites():
        ts = suites.templates(name)
        table.add_row(name, str(len(ts)), str(sum(t.infeasible for t in ts)), suites.describe(name))
    console.print(table)


@suites_app.command("show")
def suites_show(
    name: Annotated[str, typer.Argument(help="suite name, e.g. desktop-basics")],
    variants: Annotated[int, typer.Option(help="also print this many generated variants")] = 0,
    seed: Annotated[int, typer.Option(help="seed for the generated variants")] = 0,
) -> None:
    """Show a suite's templates (id, domain, apps, oracle length) and, optionally, generated variants."""
    from rich.table import Table

    from osgym.tasks import suites

    try:
        templates = suites.templates(name)
        sample = suites.generate(name, variants, seed) if variants else []
    except OsgymError as exc:
        raise _fail(exc) from exc
    table = Table("template", "domain", "apps", "oracle ops", "answer", "description", title=f"{name}: "
                  f"{suites.describe(name)}")
    for t in templates:
        task = t.variant(0)
        table.add_row(t.id, t.domain, ",".join(task.related_apps), str(len(task.oracle or [])),
                      "FAIL" if t.infeasible else "DONE", t.description)
    console.print(table)
    if sample:
        out = Table("template", "variant", "instruction", title=f"{len(sample)} variants, seed {seed}")
        for task in sample:
            out.add_row(task.id, task.variant, task.instruction)
        console.print(out)


@app.command()
def collect(
    recipe: Annotated[Path, typer.Argument(help="recipe YAML, e.g. datasets/smoke.yaml")],
    run_id: Annotated[str | None, typer.Option(help="resume or name this run")] = None,
    store: Annotated[str | None, typer.Option(help="override the recipe's store (dir or s3://bucket/prefix)")] = None,
    episodes: Annotated[int | None, typer.Option(help="override the number of episodes")] = None,
    replicas: Annotated[int | None, typer.Option(help="override the number of replicas")] = None,
    report: Annotated[bool, typer.Option(help="print the report at the end")] = True,
    plan_from_run: Annotated[str | None, typer.Option(
        help="admit replicas by the profile this earlier run (in the recipe's store) measured")] = None,
) -> None:
    """Collect a dataset in this process (no Prefect), then print its report.

    The run is osgym.collection.run_collection, the same code the Prefect flow `collect` runs.
    """
    from osgym.collection import Collection
    from osgym.collection.recipe import load_recipe

    try:
        rec = load_recipe(recipe, store=store, episodes=episodes, replicas=replicas)
        profile = _plan_profile(rec.store, plan_from_run, None) if plan_from_run else None
        run = Collection(rec, run_id=run_id, profile=profile)  # unknown suites or tasks fail here, before Docker
    except OsgymError as exc:
        raise _fail(exc) from exc
    for refusal in run.refused:  # on_refused: skip; under fail, Collection has raised with the list
        err.print(f"skipped task file {refusal}", markup=False, highlight=False)
    _docker()
    counts = {"ok": 0, "failed": 0, "retried": 0, "ready": 0}
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[detail]}"), TimeElapsedColumn(), console=console) as progress:
        bar = progress.add_task(f"collect {rec.name}", total=rec.episodes, detail="starting replicas")

        def refresh(advance: int = 0) -> None:
            done = counts["ok"] + counts["failed"]
            if done == 0:
                detail = f"starting replicas: {counts['ready']} ready of {rec.replicas}"
            else:
                elapsed = max(progress.tasks[0].elapsed or 1e-9, 1e-9)
                detail = (f"ok {counts['ok']} failed {counts['failed']} retried {counts['retried']} | "
                          f"replicas {run.healthy_replicas} healthy | {60 * done / elapsed:.1f} ep/min")
            progress.update(bar, advance=advance, detail=detail)

        def on_episode(result: Any) -> None:
            counts["ok" if result.success else "failed"] += 1
            counts["retried"] += int(result.attempts > 1)
            refresh(advance=1)

        def on_event(event: Any) -> None:
            if event.event in ("ready", "faulted", "removed"):
                counts["ready"] += int(event.event == "ready")
                refresh()

        run.on_episode, run.on_event = on_episode, on_event
        try:
            summary = run.run()
        except OsgymError as exc:
            raise _fail(exc) from exc
        progress.update(bar, completed=rec.episodes)
    print_run(summary, report=report)


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port (OSGym's is 20000)")] = 20000,
    tier: Annotated[str, typer.Option(help="replica tier: apps (OSGym's tasks) or desktop")] = "apps",
    replicas: Annotated[int, typer.Option(help="replicas that may be leased at once")] = 2,
    standby: Annotated[int, typer.Option(help="extra ready replicas, to hide resets")] = 1,
    screen: Annotated[str, typer.Option(help="WIDTHxHEIGHT; OSGym's client expects 1920x1080")] = "1920x1080",
    tokenless_loopback: Annotated[bool, typer.Option(
        "--tokenless-loopback", help="also accept requests without a token (OSGym's client sends none); "
                                     "only with --host 127.0.0.1")] = False,
    max_steps: Annotated[int, typer.Option(help="steps per episode; the last one ends and evaluates it")] = 100,
    idle_timeout: Annotated[float, typer.Option(help="seconds a session may sit idle before it is reclaimed")] = 600,
    max_sessions_per_token: Annotated[int, typer.Option(help="sessions one client may hold")] = 8,
    store: Annotated[str, typer.Option(help="where episodes are recorded (dir or s3://bucket/prefix)")] = "data",
    dataset: Annotated[str, typer.Option(help="dataset name under the store")] = "served",
    record: Annotated[bool, typer.Option(help="record every served episode into the dataset")] = True,
    run_id: Annotated[str | None, typer.Option(help="the dataset run (default: a new one)")] = None,
) -> None:
    """Serve replicas to RL trainers: OSGym's protocol (/reset, /step, /shutdown, /screenshot) and /v1.

    Clients send 'Authorization: Bearer <token>' with a token from OSGYM_SERVE_TOKENS; without one, a
    token is made and printed once. Every episode is recorded into the dataset (one run per process).
    """
    from pydantic import ValidationError

    from osgym.serving.server import ServeConfig
    from osgym.serving.server import serve as run_server

    width, sep, height = screen.partition("x")
    try:
        if not (sep and width.isdigit() and height.isdigit()):
            raise ConfigError(f"--screen: expected WIDTHxHEIGHT (e.g. 1920x1080), actual {screen!r}")
        config = ServeConfig(host=host, port=port, tier=tier, replicas=replicas, standby=standby,
                             screen=(int(width), int(height)), tokenless_loopback=tokenless_loopback,
                             max_steps=max_steps, idle_timeout_s=idle_timeout,
                             max_sessions_per_token=max_sessions_per_token, store=store, dataset=dataset,
                             record=record, run_id=run_id)
    except ValidationError as exc:
        e = exc.errors()[0]
        raise _fail(ConfigError(f"--{'-'.join(str(p) for p in e['loc']).replace('_', '-')}: {e['msg']}")) from exc
    except OsgymError as exc:
        raise _fail(exc) from exc
    _docker()
    try:
        run_server(config, log=lambda m: console.print(m, markup=False, highlight=False, soft_wrap=True))
    except OsgymError as exc:
        raise _fail(exc) from exc


def print_run(summary: dict[str, Any], report: bool = True) -> None:
    """Print a collection run's summary line and, with ``report``, its dataset's report."""
    console.print(f"run {summary['run_id']}: {summary['episodes']} episodes written "
                  f"({summary['skipped']} already committed) to {summary['store']}/{summary['dataset']}")
    refused = summary.get("refused_task_files") or []
    if refused:
        console.print(f"{len(refused)} task files refused and skipped (on_refused: skip):", highlight=False)
        for line in refused:
            console.print(f"  {line}", highlight=False, markup=False)
    if report:
        _print_report(summary["store"], summary["dataset"])


def _print_report(store: str, dataset: str, prices: Path | None = None) -> None:
    from osgym.analysis import analytics
    from osgym.analysis.report import CostInputs, print_report
    from osgym.replicas import cost

    try:
        _require_dataset(store, dataset)
        con = analytics.connect(store, dataset)
        inputs = CostInputs.of(con, cost.load_prices(prices))
    except (OsgymError, ValueError) as exc:
        raise _fail(exc if isinstance(exc, OsgymError) else OsgymError(str(exc))) from exc
    print_report(con, console, inputs)


@app.command()
def report(
    dataset: Annotated[str, typer.Argument(help="dataset name under the store")],
    store: Annotated[str, typer.Option(help="store root: a directory or s3://bucket/prefix")] = "./data",
    html: Annotated[Path | None, typer.Option(help="also write an HTML report with charts into this directory")] = None,
    prices: Annotated[Path | None, typer.Option(help="a price table (YAML) merged into osgym's own; default "
                                                     "OSGYM_PRICES")] = None,
) -> None:
    """Print the DuckDB quality and cost report of a dataset."""
    _print_report(store, dataset, prices)
    if html is not None:
        from osgym.analysis import analytics
        from osgym.analysis.report import CostInputs, write_html_report
        from osgym.replicas import cost

        con = analytics.connect(store, dataset)
        path = write_html_report(con, html, inputs=CostInputs.of(con, cost.load_prices(prices)))
        console.print(f"HTML report: {path}")


@app.command()
def show(
    episode_id: Annotated[str, typer.Argument(help="the episode to render")],
    dataset: Annotated[str, typer.Option(help="dataset name under the store")],
    store: Annotated[str, typer.Option(help="store root: a directory or s3://bucket/prefix")] = "./data",
    out: Annotated[Path, typer.Option(help="directory for the page and its images")] = Path("./report"),
    gif: Annotated[bool, typer.Option(help="also write an animated GIF of the trajectory")] = False,
) -> None:
    """Write an HTML page of one trajectory: every screenshot with its action drawn on it."""
    from osgym.analysis.report import write_trajectory_page
    from osgym.dataset import open_dataset

    try:
        path = write_trajectory_page(open_dataset(store, dataset), episode_id, out, gif=gif)
    except (OsgymError, KeyError, ValueError) as exc:
        raise _fail(exc) from exc
    console.print(f"trajectory page: {path}")


dataset_app = typer.Typer(help="Work with collected datasets.", no_args_is_help=True)
app.add_typer(dataset_app, name="dataset")


@dataset_app.command("export")
def dataset_export(
    dataset: Annotated[str, typer.Argument(help="dataset name under the store")],
    out: Annotated[Path, typer.Option(help="output directory (new or empty)")],
    store: Annotated[str, typer.Option(help="store root: a directory or s3://bucket/prefix")] = "./data",
    format: Annotated[str, typer.Option(help="jsonl (AgentNet-style) or sft (chat samples for TRL/LLaMA-Factory)")]
    = "jsonl",
    action_format: Annotated[str, typer.Option(help="sft: how actions are written: pyautogui, computer_13, "
                                                    "anthropic, uitars or osgym")] = "pyautogui",
    style: Annotated[str, typer.Option(help="sft: trl (content lists) or llamafactory (<image> strings)")] = "trl",
    per: Annotated[str, typer.Option(help="sft: one sample per step or per episode")] = "step",
    history: Annotated[int | None, typer.Option(help="sft: past screenshots per sample (default: 0 per step, "
                                                     "all per episode)")] = None,
    where: Annotated[str | None, typer.Option(help="sft: keep episodes where this SQL expression over "
                                                   "episode_quality holds")] = None,
    filter: Annotated[list[str] | None, typer.Option("--filter", help="sft: successful, clean (repeatable)")] = None,
    max_side: Annotated[int | None, typer.Option(help="sft: resize screenshots to at most this side")] = None,
    max_pixels: Annotated[int | None, typer.Option(help="sft: resize screenshots to at most this many pixels")]
    = None,
    coords: Annotated[str, typer.Option(help="sft, uitars: relative1000 or absolute")] = "relative1000",
    system_prompt: Annotated[str | None, typer.Option(help="sft: system prompt template ({instruction}, "
                                                           "{width}, {height})")] = None,
    user_prompt: Annotated[str, typer.Option(help="sft: first user turn's template")] = "{instruction}",
) -> None:
    """Export a dataset: AgentNet-style JSONL, or chat samples (Parquet) that SFT trainers load directly."""
    if format == "jsonl":
        from osgym.dataset import export_jsonl

        try:
            path = export_jsonl(store, dataset, out)
        except OsgymError as exc:
            raise _fail(exc) from exc
        console.print(f"exported to {path}")
        return
    if format != "sft":
        raise _fail(ConfigError(f"--format: expected jsonl or sft, actual {format!r}"))
    from osgym.analysis.selection import select_from_store
    from osgym.dataset.sft import export_sft, sft_options

    raw = {"action_format": action_format, "style": style, "per": per, "history": history,
               "max_side": max_side, "max_pixels": max_pixels, "coord_space": coords,
               "system_prompt": system_prompt, "user_prompt": user_prompt}
    try:
        options = sft_options(raw)
        selection = select_from_store(store, dataset, where=where, filters=filter or ())
        with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=err) as progress:
            bar = progress.add_task(f"export {dataset}", total=selection.kept)
            result = export_sft(store, dataset, out, options, selection=selection,
                                progress=lambda done, total: progress.update(bar, completed=done, total=total))
    except OsgymError as exc:
        raise _fail(exc) from exc
    dropped = ", ".join(f"{k} {v}" for k, v in sorted(result.dropped.items())) or "none"
    console.print(f"exported {result.samples} samples from {result.episodes_exported} episodes to {result.path} "
                  f"(filter kept {selection.kept} of {selection.total} episodes; dropped after it: {dropped})",
                  highlight=False, markup=False)


def main() -> None:
    app()


if __name__ == "__main__":
    main()


host_app = typer.Typer(help="Machine-wide settings for replicas (the operator's; needs root).", no_args_is_help=True)
app.add_typer(host_app, name="host")


@host_app.command("tune")
def host_tune(
    ksm: Annotated[bool, typer.Option("--ksm", help="run the kernel's samepage merging (ksmd) with its "
                                      "scan-time advisor")] = False,
    max_cpu: Annotated[int, typer.Option(help="ksmd's CPU bound, percent of one core")] = 20,
    scan_time: Annotated[int, typer.Option(help="seconds the advisor aims to take per full scan")] = 60,
    undo: Annotated[bool, typer.Option("--undo", help="put back the settings found before the first tune")] = False,
) -> None:
    """Turn on (or, with --undo, back off) KSM, which merges the identical pages of replicas."""
    from osgym.replicas import ksm as ksm_host

    if ksm == undo:
        raise _fail(ConfigError("say what to do: --ksm, or --undo"))
    try:
        changes = ksm_host.undo() if undo else ksm_host.tune(max_cpu, scan_time)
    except OsgymError as exc:
        raise _fail(exc) from exc
    if not changes:
        console.print("nothing to undo" if undo else "KSM was already set so; nothing changed")
    for c in changes:
        console.print(f"{ksm_host.KSM_DIR / c.knob}: {c.before} -> {c.after}", markup=False, highlight=False)
    if not undo and changes:
        console.print(f"earlier values kept in {ksm_host.STATE_FILE}; `osgym host tune --undo` restores them")


@host_app.command("status")
def host_status() -> None:
    """What ksmd is doing and the memory it saves."""
    from osgym.replicas import ksm as ksm_host

    try:
        s = ksm_host.status()
    except OsgymError as exc:
        raise _fail(exc) from exc
    cpu = ksm_host.ksmd_cpu_seconds()
    console.print(f"ksmd {'running' if s.run else 'stopped'} (advisor {s.advisor}); {s.pages_sharing} pages "
                  f"merged into {s.pages_shared} ({s.saved_mib:.1f} MiB saved), {s.full_scans} full scans, "
                  f"ksmd CPU {'?' if cpu is None else f'{cpu:.1f} s'} since boot", highlight=False)
