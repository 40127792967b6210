"""The command line's app, its sub-apps, consoles and the helpers its commands share."""

from __future__ import annotations

from typing import Any

import typer
from rich.console import Console

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




def main() -> None:
    from osgym.sigterm import exit_on_sigterm

    exit_on_sigterm()  # so a scheduler's or `timeout`'s SIGTERM removes a run's replicas, as Ctrl-C does
    app()
