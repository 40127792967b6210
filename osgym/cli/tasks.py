"""``osgym tasks`` and ``osgym suites``: task files, their assets, the built-in suites."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from osgym.cli._app import _docker, _fail, console, err, suites_app, tasks_app
from osgym.errors import ConfigError, OsgymError

if TYPE_CHECKING:
    from osgym.tasks.spec import TaskSpec

_EXCLUDE_HELP = "skip task files under a directory, or files, of this name (repeatable), e.g. Windows"


@tasks_app.command("check")
def tasks_check(
    directory: Annotated[Path, typer.Argument(help="a directory of task JSON files (searched recursively)")],
    exclude: Annotated[list[str] | None, typer.Option(help=_EXCLUDE_HELP)] = None,
    cache: Annotated[str | None, typer.Option(
        help="an asset cache (directory or s3://bucket/prefix): refuse tasks that name a URL it lacks; with --run, "
             "the cache the tasks read their assets from (default OSGYM_ASSET_CACHE)")] = None,
    live_files: Annotated[bool, typer.Option(
        "--live-files", help="also list each file refused only for live sites, with the sites it opens")] = False,
    run: Annotated[bool, typer.Option(
        "--run", help="also run every task file that loads on real replicas and judge each faithful or not: no "
                      "episode errs, no setup step fails (not even a tolerated one), noop scores 0 (unless "
                      "infeasible)")] = False,
    policy: Annotated[str | None, typer.Option(help="(--run) the policy: noop [default: noop]")] = None,
    repeat: Annotated[int | None, typer.Option(help="(--run) episodes per task file [default: 3]")] = None,
    replicas: Annotated[int | None, typer.Option(help="(--run) replicas running at once [default: 2]")] = None,
    tier: Annotated[str | None, typer.Option(help="(--run) the replicas' tier: apps or desktop [default: apps]")]
    = None,
    out: Annotated[Path | None, typer.Option(help="(--run) write the per-task table here, as Markdown")] = None,
) -> None:
    """Load every task file under DIRECTORY: per-domain counts of loaded files, files refused only for the live
    websites they open, and refused files; then every refused setup type, metric and getter with the number of
    files that use it (exit code 0). With --cache, a task naming a URL the cache lacks is refused
    ("asset not cached: <url>"). With --run, also run each file that loads --repeat times with a do-nothing
    policy and say which are faithful (they set up and score as in OSWorld's VM), with the cause for the others;
    exit code 0 whatever the verdicts, 2 on bad input."""
    from osgym.tasks.assets import AssetCache
    from osgym.tasks.check import check_dir

    if not run:
        given = [name for name, value in (("--policy", policy), ("--repeat", repeat), ("--replicas", replicas),
                                          ("--tier", tier), ("--out", out)) if value is not None]
        if given:
            raise _fail(ConfigError(f"tasks check: {', '.join(given)}: only with --run (add --run)"))
        try:
            report = check_dir(directory, exclude=frozenset(exclude or []),
                               cache=AssetCache(cache) if cache is not None else None)
        except OsgymError as exc:
            raise _fail(exc) from exc
        typer.echo(report.render(live_files=live_files))  # plain text: long names and reasons are not wrapped
        return
    if live_files:
        raise _fail(ConfigError("tasks check: --live-files lists what the check without --run refuses; drop --run"))
    _check_run(directory, exclude or [], cache, policy or "noop", 3 if repeat is None else repeat,
               2 if replicas is None else replicas, tier or "apps", out)


def _check_run(directory: Path, exclude: list[str], cache: str | None, policy: str, repeat: int, replicas: int,
               tier: str, out: Path | None) -> None:
    """``tasks check --run``: the fidelity run with a progress bar, its summary, and the table to ``out``."""
    from osgym.collection.collector import EpisodeSummary
    from osgym.collection.fidelity import check_options, run_fidelity

    try:
        check_options(directory, repeat=repeat, replicas=replicas, tier=tier, policy=policy)
        if out is not None and not out.parent.is_dir():  # before any replica starts, not after
            raise ConfigError(f"tasks check --out: no directory {str(out.parent)!r}")
    except OsgymError as exc:
        raise _fail(exc) from exc
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[detail]}"), TimeElapsedColumn(), console=err) as progress:
        bar = progress.add_task("planning", total=None, detail="")

        def on_episode(s: EpisodeSummary) -> None:
            progress.update(bar, advance=1, detail=f"{s.task_id[:8]} {s.error_class or 'ok'}")

        try:
            report = run_fidelity(directory, repeat=repeat, replicas=replicas, tier=tier, policy=policy,
                                  exclude=exclude, cache=cache,
                                  on_start=lambda n: progress.update(bar, total=n, description=f"{policy} episodes"),
                                  on_episode=on_episode)
        except OsgymError as exc:
            raise _fail(exc) from exc
    typer.echo(report.summary())
    if out is not None:
        try:
            out.write_text(report.markdown())
        except OSError as exc:
            raise _fail(OSError(f"tasks check --out: cannot write {str(out)!r}: {exc}")) from exc
        typer.echo(f"table: {out}")
    else:
        typer.echo(report.markdown())


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
    from osgym.suites.sample import write_sample
    from osgym.suites.sample_apps import stage_assets, write_apps_sample
    from osgym.tasks.assets import AssetCache

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

    from osgym import suites

    table = Table("suite", "templates", "infeasible", "description")
    for name in suites.list_suites():
        ts = suites.templates(name)
        table.add_row(name, str(len(ts)), str(sum(t.infeasible for t in ts)), suites.describe(name))
    console.print(table)


@suites_app.command("show")
def suites_show(
    name: Annotated[str, typer.Argument(help="suite name, e.g. desktop-basics")],
    variants: Annotated[int, typer.Option(help="also print this many generated variants")] = 0,
    seed: Annotated[int, typer.Option(help="seed for the generated variants (with --template: the variant)")] = 0,
    template: Annotated[str | None, typer.Option(help="print one variant of this template (its --seed)")] = None,
    screenshot: Annotated[Path | None, typer.Option(
        help="print one variant and save a PNG of its initial state: one replica of the suite's tier runs its "
             "setup (removed afterwards, also on errors and Ctrl-C)")] = None,
) -> None:
    """Show a suite's templates (id, domain, apps, difficulty, oracle length) and, optionally, generated variants;
    with --template or --screenshot, one variant in full (instruction, template, difficulty, setup)."""
    from rich.table import Table

    from osgym import suites

    try:
        templates = suites.templates(name)
        sample = suites.generate(name, variants, seed) if variants else []
        one = None
        if template is not None or screenshot is not None:
            one = (suites.templates(name, [template])[0].variant(seed) if template is not None
                   else suites.generate(name, 1, seed)[0])
    except OsgymError as exc:
        raise _fail(exc) from exc
    if one is None:
        table = Table("template", "domain", "apps", "difficulty", "oracle ops", "answer", "description",
                      title=f"{name}: {suites.describe(name)}")
        for t in templates:
            task = t.variant(0)
            table.add_row(t.id, t.domain, ",".join(task.related_apps), str(t.difficulty),
                          str(len(task.oracle or [])), "FAIL" if t.infeasible else "DONE", t.description)
        console.print(table)
    if sample:
        out = Table("template", "variant", "instruction", title=f"{len(sample)} variants, seed {seed}")
        for task in sample:
            out.add_row(task.id, task.variant, task.instruction)
        console.print(out)
    if one is not None:
        _show_variant(name, one, screenshot)


def _show_variant(name: str, task: TaskSpec, screenshot: Path | None) -> None:
    from osgym import suites
    from osgym.suites.preview import describe_step, initial_screenshot

    t = suites.templates(name, [task.id])[0]
    typer.echo(f"suite: {name}\ntemplate: {t.id} (difficulty {t.difficulty}, domain {t.domain})\n"
               f"variant: {task.variant}\napps: {', '.join(task.related_apps) or '-'}\n"
               f"instruction: {task.instruction}\nsetup:")
    for step in task.config:
        typer.echo(f"  {describe_step(step)}")
    typer.echo(f"evaluator: {', '.join(task.evaluator.funcs)}; oracle: {len(task.oracle or [])} ops")
    if screenshot is None:
        return
    if not screenshot.parent.is_dir():  # before a replica starts, not after
        raise _fail(ConfigError(f"suites show --screenshot: no directory {str(screenshot.parent)!r}"))
    tier = suites.required_tier(name) or "desktop"
    client = _docker()
    try:
        with err.status(f"starting a {tier} replica and running the setup"):
            w, h = initial_screenshot(task, tier, screenshot, docker_client=client)
    except OSError as exc:
        raise _fail(OSError(f"suites show --screenshot: cannot write {str(screenshot)!r}: {exc}")) from exc
    except OsgymError as exc:
        raise _fail(exc) from exc
    typer.echo(f"initial state ({w}x{h}) saved to {screenshot}")


@suites_app.command("export")
def suites_export(
    name: Annotated[str, typer.Argument(help="suite name, e.g. apps-smoke")],
    out: Annotated[Path, typer.Option(help="a new (or empty) directory: examples/<domain>/<id>.json, test_all.json")],
    variants: Annotated[int, typer.Option(help="how many distinct variants to write")] = 1,
    seed: Annotated[int, typer.Option(help="seed of the draw (the same seed writes the same files)")] = 0,
) -> None:
    """Write N distinct variants of a suite as OSWorld task files, in OSWorld's layout (a recipe's task_dir and
    task_index read it too). Ids are UUIDs fixed by suite, template and variant; osgym's oracle, template and
    difficulty are under each file's "osgym" key. Nothing is left behind on an error."""
    from osgym.suites.export import export_variants, write_export

    try:
        with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=err, transient=True) as progress:
            bar = progress.add_task(f"draw {name}", total=max(variants, 0))
            tasks = export_variants(name, variants, seed, on_task=lambda k: progress.update(bar, completed=k))
            progress.update(bar, description=f"write {name}", total=len(tasks), completed=0)
            paths = write_export(out, tasks, on_file=lambda i: progress.update(bar, completed=i))
    except OSError as exc:
        raise _fail(OSError(f"suites export: cannot write {str(out)!r}: {exc}")) from exc
    except OsgymError as exc:
        raise _fail(exc) from exc
    typer.echo(f"{len(paths)} task files of {name} (seed {seed}) under {out / 'examples'}, "
               f"index {out / 'test_all.json'}")
