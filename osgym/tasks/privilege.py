"""What in a task needs more than the agent's rights: root steps (``sudo``) and files read on the host.

A task step whose command uses ``sudo`` runs as root in the replica (through Docker, not through
the agent's account: :mod:`osgym.replicas.execution`); a setup step or getter with a local source
reads a file of the host's task-files directory (:mod:`osgym.tasks.files`). A collection's task
files are chosen by its operator. A client of ``osgym serve`` holds only a token, so the server
lists these with :func:`root_steps` and :func:`local_sources` and refuses them unless the operator
allowed them (``OSGYM_SERVE_ALLOW_ROOT_STEPS``, ``OSGYM_SERVE_ALLOW_TASK_FILES``).
"""

from __future__ import annotations

import re
from typing import Any

from osgym.errors import TaskLoadError
from osgym.tasks.files import REMOTE_SCHEMES, check_source
from osgym.tasks.spec import COMMAND_STEPS, TaskSpec

__all__ = ["COMMAND_GETTERS", "local_sources", "needs_root", "root_steps"]

_SUDO = re.compile(r"(?:^|[\s;&|()`'\"])sudo(?:\s|$)")
COMMAND_GETTERS = frozenset({"vm_command_line", "vm_command_error"})
"""Getters that run a task's command in the replica (as root when it uses ``sudo``)."""


def needs_root(command: Any) -> bool:
    """True if a task's command uses ``sudo`` (OSWorld: ``echo password | sudo -S ...``).

    >>> needs_root("echo password | sudo -S apt-get install -y x"), needs_root(["sudo", "id"])
    (True, True)
    >>> needs_root("echo pseudo-sudoers"), needs_root(["ls", "/etc/sudoers.d"])
    (False, False)
    """
    parts = [command] if isinstance(command, str) else command if isinstance(command, list) else []
    return any(isinstance(p, str) and _SUDO.search(p) is not None for p in parts)


def _steps(task: TaskSpec) -> list[tuple[str, Any]]:
    return [(f"{field}[{i}]", step) for field, steps in (("config", task.config),
                                                          ("evaluator.postconfig", task.evaluator.postconfig))
            for i, step in enumerate(steps)]


def _getters(task: TaskSpec) -> list[tuple[str, Any]]:
    ev = task.evaluator
    listed = isinstance(ev.func, list)
    return [(f"evaluator.{field}{f'[{i}]' if listed else ''}", g)
            for field, gs in (("result", ev.results), ("expected", ev.expecteds)) for i, g in enumerate(gs)
            if g is not None]


def root_steps(task: TaskSpec) -> list[str]:
    """Where ``task`` runs a command as root: its steps and getters whose command uses ``sudo``.

    >>> t = TaskSpec.model_validate({"id": "t", "instruction": "i", "evaluator": {"func": "infeasible"},
    ...     "config": [{"type": "execute", "parameters": {"command": "echo password | sudo -S id"}}]})
    >>> root_steps(t)
    ['config[0]']
    """
    found = [where for where, step in _steps(task)
             if step.type in COMMAND_STEPS and needs_root(step.parameters.get("command"))]
    found += [where for where, g in _getters(task)
              if g.type in COMMAND_GETTERS and needs_root(g.options.get("command"))]
    return found


def _local(source: Any) -> bool:
    try:
        return check_source(source, where="") not in REMOTE_SCHEMES
    except TaskLoadError:  # not a source at all: load_task has refused it already
        return False


def local_sources(task: TaskSpec) -> list[str]:
    """Where ``task`` reads a file of the host (a path or ``file://`` URL: the operator's task-files directory).

    >>> t = TaskSpec.model_validate({"id": "t", "instruction": "i", "evaluator": {"func": "infeasible"},
    ...     "config": [{"type": "download", "parameters": {"files": [{"path": "/tmp/a", "url": "answers/a.xlsx"}]}}]})
    >>> local_sources(t)
    ['config[0].parameters.files[0].url']
    """
    found = []
    for where, step in _steps(task):
        files = step.parameters.get("files", []) if step.type in ("download", "upload_file") else []
        for j, f in enumerate(files if isinstance(files, list) else [files]):
            for key in ("local_path", "url"):
                if isinstance(f, dict) and f.get(key) and _local(f[key]):
                    found.append(f"{where}.parameters.files[{j}].{key}")
    for where, g in _getters(task):
        if g.type == "cloud_file":
            paths = g.options.get("path")
            for j, p in enumerate(paths if isinstance(paths, list) else [paths]):
                if p and _local(p):
                    found.append(f"{where}.path" + (f"[{j}]" if isinstance(paths, list) else ""))
    return found
