"""The ``osgym`` command line (typer + rich)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from osgym.errors import OsgymError

app = typer.Typer(help="osgym: desktop replicas, agent episodes, Parquet datasets.", no_args_is_help=True,
                  pretty_exceptions_enable=False)
images_app = typer.Typer(help="Build and inspect replica images.", no_args_is_help=True)
pool_app = typer.Typer(help="Inspect and clean up replica pools.", no_args_is_help=True)
app.add_typer(images_app, name="images")
app.add_typer(pool_app, name="pool")
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
def images_build(tier: Annotated[str, typer.Option(help="desktop or desktop-full")] = "desktop") -> None:
    """Build the base image (debootstrap) and the replica image, unless they are up to date."""
    from osgym import images

    try:
        res = images.build(tier, client=_docker(), log=lambda m: console.print(m, markup=False, highlight=False))
    except OsgymError as exc:
        raise _fail(exc) from exc
    console.print(f"{res.tag} {'built' if res.built else 'up to date'}")


@images_app.command("tag")
def images_tag(tier: str = "desktop") -> None:
    """Print the tag the current inputs build to."""
    from osgym import images

    console.print(images.image_tag(tier))


@pool_app.command("reap")
def pool_reap(pool: Annotated[str | None, typer.Option(help="only this pool")] = None) -> None:
    """Remove replicas (and their run directories) left by interrupted runs. Touches only osgym-labelled containers."""
    from osgym.pool import reap

    n = reap(_docker(), pool=pool)
    console.print(f"removed {n} container(s)" + (f" of pool {pool}" if pool else ""))


def _load_flow() -> Any:
    """Import ``flows.collect`` from the repository root (flows/ is not an installed package)."""
    try:
        from flows import collect as mod
    except ImportError:
        root = Path(os.environ.get("OSGYM_PROJECT_DIR", Path(__file__).resolve().parent.parent))
        sys.path.insert(0, str(root))
        try:
            from flows import collect as mod
        except ImportError as exc:
            raise _fail(OsgymError(f"cannot import flows/collect.py from {root}: run from the osgym checkout "
                                   f"or set OSGYM_PROJECT_DIR ({exc})")) from exc
    return mod


@app.command()
def collect(
    recipe: Annotated[Path, typer.Argument(help="recipe YAML, e.g. datasets/smoke.yaml")],
    run_id: Annotated[str | None, typer.Option(help="resume or name this run")] = None,
    store: Annotated[str | None, typer.Option(help="override the recipe's store (dir or s3://bucket/prefix)")] = None,
    episodes: Annotated[int | None, typer.Option(help="override the number of episodes")] = None,
    replicas: Annotated[int | None, typer.Option(help="override the number of replicas")] = None,
    report: Annotated[bool, typer.Option(help="print the report at the end")] = True,
) -> None:
    """Collect a dataset with the Prefect flow `collect`, then print its report."""
    from osgym.recipe import load_recipe

    try:
        rec = load_recipe(recipe, store=store, episodes=episodes, replicas=replicas)
    except OsgymError as exc:
        raise _fail(exc) from exc
    _docker()
    mod = _load_flow()
    counts = {"ok": 0, "failed": 0, "retried": 0}
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[detail]}"), TimeElapsedColumn(), console=console) as progress:
        bar = progress.add_task(f"collect {rec.name}", total=rec.episodes, detail="starting replicas")

        def on_result(result: Any) -> None:
            counts["ok" if result.success else "failed"] += 1
            counts["retried"] += int(result.attempts > 1)
            elapsed = max(progress.tasks[0].elapsed or 1e-9, 1e-9)
            done = counts["ok"] + counts["failed"]
            progress.update(bar, advance=1, detail=f"ok {counts['ok']} failed {counts['failed']} "
                            f"retried {counts['retried']} | {60 * done / elapsed:.1f} ep/min")

        mod.LISTENERS.append(on_result)
        try:
            summary = mod.collect(rec.model_dump(mode="json"), run_id=run_id)
        except OsgymError as exc:
            raise _fail(exc) from exc
        finally:
            mod.LISTENERS.remove(on_result)
        progress.update(bar, completed=rec.episodes - summary.get("skipped", 0) + summary.get("skipped", 0))
    console.print(f"run {summary['run_id']}: {summary['episodes']} episodes written "
                  f"({summary['skipped']} already committed) to {rec.store}/{rec.dataset_name}")
    if report:
        _print_report(rec.store, rec.dataset_name)


def _print_report(store: str, dataset: str) -> None:
    from osgym import analytics
    from osgym.report import print_report

    try:
        con = analytics.connect(store, dataset)
    except OsgymError as exc:
        raise _fail(exc) from exc
    print_report(con, console)


@app.command()
def report(
    dataset: Annotated[str, typer.Argument(help="dataset name under the store")],
    store: Annotated[str, typer.Option(help="store root: a directory or s3://bucket/prefix")] = "./data",
    html: Annotated[Path | None, typer.Option(help="also write an HTML report with charts into this directory")] = None,
) -> None:
    """Print the DuckDB quality and cost report of a dataset."""
    _print_report(store, dataset)
    if html is not None:
        from osgym import analytics
        from osgym.report import write_html_report

        path = write_html_report(analytics.connect(store, dataset), html)
        console.print(f"HTML report: {path}")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
