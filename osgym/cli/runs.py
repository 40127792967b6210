"""``osgym collect``, ``serve``, ``report``, ``show`` and ``dataset``: runs and what they wrote."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from osgym.cli._app import _docker, _fail, _plan_profile, _require_dataset, app, command_group, console, err
from osgym.errors import ConfigError, OsgymError

if TYPE_CHECKING:
    from osgym.collection import Collection
    from osgym.collection.recipe import Recipe


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
    metrics_port: Annotated[int | None, typer.Option(
        help="serve Prometheus metrics at http://HOST:PORT/metrics while the run lasts (README, \"Metrics\")")] = None,
    metrics_host: Annotated[str, typer.Option(
        help="address of --metrics-port; the endpoint has no token: keep it on loopback or a private network")
    ] = "127.0.0.1",
) -> None:
    """Collect a dataset in this process (no Prefect), then print its report.

    The run is osgym.collection.run_collection, the same code the Prefect flow `collect` runs.
    """
    from osgym.collection import Collection
    from osgym.collection.recipe import load_recipe
    from osgym.metrics import Metrics, exposition

    try:
        rec = load_recipe(recipe, store=store, episodes=episodes, replicas=replicas)
        profile = _plan_profile(rec.store, plan_from_run, None) if plan_from_run else None
        metrics = Metrics() if metrics_port is not None else None
        run = Collection(rec, run_id=run_id, profile=profile, metrics=metrics)  # bad suites or tasks fail here
    except OsgymError as exc:
        raise _fail(exc) from exc
    for refusal in run.refused:  # on_refused: skip; under fail, Collection has raised with the list
        err.print(f"skipped task file {refusal}", markup=False, highlight=False)
    _docker()
    with contextlib.ExitStack() as stack:
        if metrics is not None and metrics_port is not None:
            try:
                where = stack.enter_context(exposition(metrics, metrics_port, metrics_host))
            except OsgymError as exc:
                raise _fail(exc) from exc
            err.print(f"metrics: {where.url}", markup=False, highlight=False)
        summary = _collect_with_progress(run, rec)
    print_run(summary, report=report)


def _collect_with_progress(run: Collection, rec: Recipe) -> dict[str, Any]:
    """Run ``run`` under a progress bar; returns its summary."""
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
    return summary


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port (OSGym's is 20000)")] = 20000,
    tier: Annotated[str, typer.Option(help="replica tier: apps (OSGym's tasks) or desktop")] = "apps",
    replicas: Annotated[int, typer.Option(help="replicas that may be leased at once")] = 2,
    standby: Annotated[int, typer.Option(help="extra ready replicas, to hide resets")] = 1,
    screen: Annotated[str, typer.Option(help="WIDTHxHEIGHT; OSGym's client expects 1920x1080")] = "1920x1080",
    reset: Annotated[str | None, typer.Option(help="cold: each replica boots; restore: each is restored from a "
                                                  "checkpoint of a warmed one (root, `make criu`); default: "
                                                  "OSGYM_REPLICA_RESET, else cold")] = None,
    warm: Annotated[str, typer.Option(help="with --reset restore, the state checkpointed: desktop, or "
                                          "libreoffice (apps tier: LibreOffice resident, no window)")] = "desktop",
    tokenless_loopback: Annotated[bool, typer.Option(
        "--tokenless-loopback", help="also accept requests without a token (OSGym's client sends none); "
                                     "only with --host 127.0.0.1")] = False,
    max_steps: Annotated[int, typer.Option(help="steps per episode; the last one ends and evaluates it")] = 100,
    idle_timeout: Annotated[float, typer.Option(help="seconds a session may sit idle before it is reclaimed")] = 600,
    max_sessions_per_token: Annotated[int, typer.Option(help="sessions one client may hold")] = 8,
    park_after: Annotated[float | None, typer.Option(
        help="park an idle session's replica after this many seconds: only --park-mib stays resident, the rest "
             "goes to its swap share (needs root, OSGYM_REPLICA_SWAP_MIB and `osgym host tune --zram`)")] = None,
    park_mib: Annotated[int, typer.Option(help="resident memory of a parked replica")] = 224,
    store: Annotated[str, typer.Option(help="where episodes are recorded (dir or s3://bucket/prefix)")] = "data",
    dataset: Annotated[str, typer.Option(help="dataset name under the store")] = "served",
    record: Annotated[bool, typer.Option(help="record every served episode into the dataset")] = True,
    run_id: Annotated[str | None, typer.Option(help="the dataset run (default: a new one)")] = None,
    live_view: Annotated[bool, typer.Option(help="POST /v1/sessions/{id}/view: a view-only noVNC page per "
                                                 "session, relayed by the server (needs Debian's novnc)")] = True,
) -> None:
    """Serve replicas to RL trainers: OSGym's protocol (/reset, /step, /shutdown, /screenshot), /v1, and
    OpenEnv's (its client's WebSocket session, base URL http://host:port/openenv).

    Clients send 'Authorization: Bearer <token>' with a token from OSGYM_SERVE_TOKENS; without one, a
    token is made and printed once (OpenEnv's client: the token as the URL's password). Every episode is
    recorded into the dataset (one run per process).
    """
    from pydantic import ValidationError

    from osgym.serving.server import ServeConfig
    from osgym.serving.server import serve as run_server

    width, sep, height = screen.partition("x")
    try:
        if not (sep and width.isdigit() and height.isdigit()):
            raise ConfigError(f"--screen: expected WIDTHxHEIGHT (e.g. 1920x1080), actual {screen!r}")
        config = ServeConfig(host=host, port=port, tier=tier, replicas=replicas, standby=standby,
                             screen=(int(width), int(height)), reset=reset, warm=warm,
                             tokenless_loopback=tokenless_loopback,
                             max_steps=max_steps, idle_timeout_s=idle_timeout,
                             max_sessions_per_token=max_sessions_per_token, park_after_s=park_after,
                             park_mib=park_mib, store=store, dataset=dataset,
                             record=record, run_id=run_id, live_view=live_view)
    except ValidationError as exc:
        e = exc.errors()[0]
        option = "-".join(str(p) for p in e["loc"]).replace("_", "-")  # none for a check across options
        raise _fail(ConfigError(f"--{option}: {e['msg']}" if option else e["msg"])) from exc
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


dataset_app = command_group("Work with collected datasets.")
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
    allow_hollow: Annotated[bool, typer.Option("--allow-hollow", help="export episodes of hollow replicas too "
                                                                      "(load tests, not agent data)")] = False,
) -> None:
    """Export a dataset: AgentNet-style JSONL, or chat samples (Parquet) that SFT trainers load directly."""
    if format == "jsonl":
        from osgym.dataset import export_jsonl

        try:
            path = export_jsonl(store, dataset, out, allow_hollow=allow_hollow)
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
                                progress=lambda done, total: progress.update(bar, completed=done, total=total),
                                allow_hollow=allow_hollow)
    except OsgymError as exc:
        raise _fail(exc) from exc
    dropped = ", ".join(f"{k} {v}" for k, v in sorted(result.dropped.items())) or "none"
    console.print(f"exported {result.samples} samples from {result.episodes_exported} episodes to {result.path} "
                  f"(filter kept {selection.kept} of {selection.total} episodes; dropped after it: {dropped})",
                  highlight=False, markup=False)
