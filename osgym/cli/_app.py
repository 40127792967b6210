"""The command line's app, its sub-apps, consoles and the helpers its commands share."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from typer.core import TyperGroup

from osgym.errors import ConfigError, OsgymError
from osgym.sigterm import exit_on_sigterm

if TYPE_CHECKING:  # Typer 0.29 carries its own copy of Click; TyperGroup's methods take its classes
    from typer._click import Context, HelpFormatter


class _Group(TyperGroup):
    """A group whose command list gives each command's first sentence whole.

    Help is Click's plain layout, not Typer's rich panels (``rich_markup_mode=None``): at 80 columns
    the panels cut long option names (``--max-sessions-per-to…``) to fit their table; Click's layout
    moves the option's help to the next line instead. Click's command list cuts a description at the
    terminal's width with "..."; this one wraps it.
    """

    def format_commands(self, ctx: Context, formatter: HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit=10_000)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def command_group(help_text: str) -> typer.Typer:
    """A group of commands (``osgym images``, ``osgym tasks``, ...) with the command line's help layout."""
    return typer.Typer(help=help_text, no_args_is_help=True, rich_markup_mode=None, cls=_Group)


class _App(typer.Typer):
    """The top-level app: SIGTERM is a clean exit (:mod:`osgym.sigterm`) however it is called.

    The installed ``osgym`` script calls the app itself (``osgym.cli:app``), not :func:`main`: without
    this, a plain ``kill`` ended ``osgym serve`` and ``osgym collect`` with Python's default, which
    runs no clean-up, and their replicas stayed up.
    """

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        exit_on_sigterm()  # so a scheduler's or `timeout`'s SIGTERM removes a run's replicas, as Ctrl-C does
        return super().__call__(*args, **kwargs)


app = _App(help="osgym: desktop replicas, agent episodes, Parquet datasets.", no_args_is_help=True,
           pretty_exceptions_enable=False, rich_markup_mode=None, cls=_Group)
images_app = command_group("Build and inspect replica images.")
pool_app = command_group("Inspect and clean up replica pools.")
suites_app = command_group("Describe the built-in task suites.")
tasks_app = command_group("Check task files (OSWorld's JSON) against what osgym supports; stage their assets.")
app.add_typer(images_app, name="images")
app.add_typer(tasks_app, name="tasks")
app.add_typer(pool_app, name="pool")
app.add_typer(suites_app, name="suites")


class TerminalConsole(Console):
    """A console that reads the terminal's width at each print.

    rich reads ``COLUMNS`` once, when a console is made, and the command line's consoles are made at import:
    a process that then runs commands at another width (a test's ``CliRunner(env=...)``; pytest-xdist's workers
    start with ``COLUMNS=80``) printed every one at the first width.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._width = self._height = None  # rich's size then asks the terminal and COLUMNS each time


console = TerminalConsole()
err = TerminalConsole(stderr=True)


def _fail(exc: BaseException) -> typer.Exit:
    # soft_wrap: an error names paths and commands a user copies; the terminal wraps it, rich does not break it
    err.print(f"[bold red]error:[/bold red] {exc}", markup=True, highlight=False, soft_wrap=True)
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
    """``python -m osgym``: the app (which makes SIGTERM a clean exit)."""
    app()
