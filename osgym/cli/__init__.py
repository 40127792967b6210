"""The ``osgym`` command line (typer + rich): one module per group of commands."""

from osgym.cli import replicas, runs, tasks  # noqa: F401  (each registers its commands on ``app``)
from osgym.cli._app import app, main
from osgym.cli.runs import print_run

__all__ = ["app", "main", "print_run"]

if __name__ == "__main__":
    main()
