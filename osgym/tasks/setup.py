"""Run a task's ``config[]`` setup steps on a replica (OSWorld's SetupController semantics)."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from osgym.errors import ActionFailed, RequestRejected, SetupError
from osgym.replicas.client import ExecResult, Replica
from osgym.tasks.spec import SetupStep


def _command(params: dict[str, Any]) -> tuple[str | list[str], bool | None]:
    cmd = params.get("command")
    if cmd is None:
        raise SetupError("step needs a 'command'")
    return cmd, params.get("shell")


_SUDO = re.compile(r"(?:^|[\s;&|()`'\"])sudo(?:\s|$)")


def needs_root(command: str | list[str]) -> bool:
    """True if a task's command uses ``sudo`` (OSWorld: ``echo password | sudo -S ...``).

    >>> needs_root("echo password | sudo -S apt-get install -y x"), needs_root(["sudo", "id"])
    (True, True)
    >>> needs_root("echo pseudo-sudoers"), needs_root(["ls", "/etc/sudoers.d"])
    (False, False)
    """
    parts = [command] if isinstance(command, str) else command
    return any(isinstance(p, str) and _SUDO.search(p) is not None for p in parts)


def run_command(replica: Replica, command: str | list[str], shell: bool | None, timeout: float) -> ExecResult:
    """Run a setup or evaluator command: as root through Docker if it uses sudo, else as the agent's user.

    The agent's account has no sudo; a command that needs root goes through the worker's
    privileged path (:meth:`~osgym.replicas.client.Replica.execute_as_root`), whole.
    """
    if needs_root(command):
        return replica.execute_as_root(command, shell=shell, timeout=timeout)
    return replica.execute(command, shell=shell, timeout=timeout)


def _local_bytes(path_or_url: str) -> bytes:
    """Read a setup source from a local path or file:// URL (this machine has no internet)."""
    parsed = urlparse(path_or_url)
    if parsed.scheme in ("", "file"):
        path = Path(parsed.path if parsed.scheme == "file" else path_or_url)
        try:
            return path.read_bytes()
        except OSError as exc:
            raise SetupError(f"cannot read {path_or_url}: {exc}") from exc
    raise SetupError(f"only local paths and file:// URLs can be downloaded here, actual {path_or_url!r}")


def run_step(replica: Replica, step: SetupStep) -> None:
    """Run one setup step.

    Raises:
        SetupError: if the step fails inside the replica.
        ReplicaError: if the replica itself fails (the episode is retried elsewhere).
    """
    p = step.parameters
    try:
        if step.type in ("execute", "command"):
            cmd, shell = _command(p)
            res = run_command(replica, cmd, shell, float(p.get("timeout", 60)))
            if res.returncode != 0 and not p.get("ignore_errors", False):
                raise SetupError(f"{step.type} {cmd!r} exited {res.returncode}: {res.error.strip()[:300]}")
        elif step.type == "launch":
            cmd, shell = _command(p)
            replica.launch(cmd, shell=shell)
        elif step.type == "open":
            replica.launch(["xdg-open", p["path"]])
        elif step.type == "sleep":
            time.sleep(min(float(p.get("seconds", 1)), 60))
        elif step.type == "activate_window":
            replica.activate_window(p["window_name"])
        elif step.type == "close_window":
            replica.close_window(p["window_name"])
        elif step.type == "wait_window":
            try:
                replica.wait_window(p["title"], timeout=float(p.get("timeout", 15)), focused=bool(p.get("focused")))
            except RequestRejected as exc:
                if exc.status != 404:
                    raise
                # An app that never maps its window is the replica misbehaving (seen under heavy host load),
                # not the task: retry the episode on a fresh replica.
                raise ActionFailed(f"setup: window {p['title']!r} did not appear on replica {replica.id}") from exc
        elif step.type in ("upload_file", "download"):
            for f in p.get("files", []):
                src = f.get("local_path") or f.get("url")
                if not src:
                    raise SetupError(f"{step.type}: each file needs local_path or url")
                replica.write_file(f["path"], _local_bytes(src))
        else:  # TaskSpec validation keeps us from getting here
            raise SetupError(f"unsupported config type {step.type!r}")
    except KeyError as exc:
        raise SetupError(f"{step.type} step is missing parameter {exc}") from exc
    except RequestRejected as exc:
        raise SetupError(f"{step.type} step rejected by the replica: {exc}") from exc


def run_setup(replica: Replica, steps: list[SetupStep]) -> None:
    """Run ``steps`` in order."""
    for step in steps:
        run_step(replica, step)


