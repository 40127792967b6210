"""Built-in task suites, shipped as JSON package data."""

from __future__ import annotations

import json
from importlib import resources

from osgym.errors import TaskLoadError
from osgym.specs.task import TaskSpec, load_task


def list_suites() -> list[str]:
    """Names of the built-in suites."""
    return sorted(p.name[:-5] for p in resources.files(__name__).iterdir() if p.name.endswith(".json"))


def load_suite(name: str) -> list[TaskSpec]:
    """The tasks of a built-in suite.

    Raises:
        TaskLoadError: if there is no such suite or a task in it is invalid.
    """
    if name not in list_suites():
        raise TaskLoadError(f"suite: expected one of {list_suites()}, actual {name!r}")
    data = json.loads(resources.files(__name__).joinpath(f"{name}.json").read_text())
    return [load_task(t) for t in data["tasks"]]
