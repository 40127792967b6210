"""Run a task's ``config[]`` setup steps on a replica (OSWorld's SetupController semantics)."""

from __future__ import annotations

import logging
import time
from typing import Any

from osgym.errors import ActionFailed, RequestRejected, SetupError
from osgym.replicas.client import Replica
from osgym.replicas.execution import ExecResult
from osgym.tasks.browse_history import HistoryEntry, update_browse_history
from osgym.tasks.commands import check_command, step_command
from osgym.tasks.devtools import NO_BROWSER, ask
from osgym.tasks.files import Scratch, read_task_file
from osgym.tasks.privilege import needs_root
from osgym.tasks.spec import SetupStep

log = logging.getLogger(__name__)

ACTIVATE_WAIT_S = 60.0
"""How long an ``activate_window`` step waits for its window to appear (the replica's bound)."""


def _command(params: dict[str, Any], where: str) -> tuple[str | list[str], bool | None]:
    """The step's command and ``shell``, read as OSWorld reads them (:mod:`osgym.tasks.commands`)."""
    cmd: Any = params.get("command")
    try:
        check_command(cmd, where=f"{where}.parameters.command")
        return step_command(cmd, params.get("shell"))
    except ValueError as exc:
        raise SetupError(str(exc)) from None


def run_command(replica: Replica, command: str | list[str], shell: bool | None, timeout: float) -> ExecResult:
    """Run a setup or evaluator command: as root through Docker if it uses sudo, else as the agent's user.

    The agent's account has no sudo; a command that needs root goes through the worker's
    privileged path (:meth:`~osgym.replicas.client.Replica.execute_as_root`), whole.
    """
    if needs_root(command):
        return replica.execute_as_root(command, shell=shell, timeout=timeout)
    return replica.execute(command, shell=shell, timeout=timeout)


def run_step(replica: Replica, step: SetupStep, *, where: str = "config step", scratch: Scratch | None = None,
             tolerated: list[str] | None = None) -> None:
    """Run one setup step.

    ``download`` and ``upload_file`` read their sources on the host through
    :func:`osgym.tasks.files.read_task_file`: only files under ``OSGYM_TASK_FILES_DIR``, and remote
    URLs from the asset cache (``OSGYM_ASSET_CACHE``), never the network; nothing else reaches the replica.

    Args:
        where: the step in its task (``"task <id>: config[2]"``), for error messages.
        scratch: the evaluation's scratch directory, where an ``execute`` step's ``stdout`` parameter (a
            relative name) saves its output for a ``cache_file`` getter (OSWorld's cache directory);
            without one (``config[]`` steps) the output is not kept.
        tolerated: where a failure that setup goes on after (a command that exits non-zero without
            ``check``, as OSWorld tolerates it) is recorded, one message each (``"<where>: execute ... exited
            1: ..."``); the episode keeps them in its record (``Trajectory.setup_failures``). A probe (a step
            whose ``stdout`` the evaluator reads) that exits 1 has answered "no" and is not recorded.

    Raises:
        SetupError: naming ``where``, if the step fails inside the replica or names a source it may not read.
        ReplicaError: if the replica itself fails (the episode is retried elsewhere).
    """
    p = step.parameters
    try:
        if step.type in ("execute", "command"):
            cmd, shell = _command(p, where)
            res = run_command(replica, cmd, shell, float(p.get("timeout", 60)))
            # A postconfig step whose output the evaluator reads is a probe (``grep`` for an installed extension):
            # its exit status 1 is the answer "no" (grep, test, diff, cmp), which a do-nothing run must give,
            # not a step that failed; 2 and above still mean the probe could not look.
            probe = scratch is not None and bool(p.get("stdout"))
            if res.returncode != 0 and not (probe and res.returncode == 1 and not p.get("check")):
                said = f"{where}: {step.type} {cmd!r:.200} exited {res.returncode}: {res.error.strip()[:300]}"
                # OSWorld's setup goes on after a command that fails (task files rely on it, e.g. a
                # `pkill` of an app that is not running); osgym's own suites ask to stop (`check`).
                if p.get("check"):
                    raise SetupError(said)
                log.warning("%s (tolerated, as OSWorld does)", said)
                if tolerated is not None:
                    tolerated.append(said)
            if scratch is not None and p.get("stdout"):
                scratch.write(p["stdout"], res.output.encode(), where=f"{where}.parameters.stdout", error=SetupError)
        elif step.type == "launch":
            cmd, shell = _command(p, where)
            if needs_root(cmd):  # the agent's account has no sudo: as a root step, started in the background
                replica.launch_as_root(cmd, shell=shell)
            else:
                replica.launch(cmd, shell=shell)
        elif step.type == "open":
            replica.launch(["xdg-open", p["path"]])
        elif step.type == "change_wallpaper":
            replica.set_wallpaper(p["path"])
        elif step.type == "sleep":
            time.sleep(min(float(p.get("seconds", 1)), 60))
        elif step.type == "activate_window":
            # wmctrl's rule, as OSWorld's server; waiting for the window, which OSWorld's VM maps within a second
            # or two of the launch step before it (VS Code here: 15-20 s).
            replica.activate_window(p["window_name"], timeout=ACTIVATE_WAIT_S, strict=bool(p.get("strict")),
                                    by_class=bool(p.get("by_class")))
        elif step.type == "close_window":
            replica.close_window(p["window_name"], strict=bool(p.get("strict")), by_class=bool(p.get("by_class")))
        elif step.type == "wait_window":
            try:
                wait_window(replica, p["title"], float(p.get("timeout", 15)), focused=bool(p.get("focused")))
            except RequestRejected as exc:
                if exc.status != 404:
                    raise
                # An app that never maps its window is the replica misbehaving (seen under heavy host load),
                # not the task: retry the episode on a fresh replica.
                raise ActionFailed(f"setup: window {p['title']!r} did not appear on replica {replica.id}") from exc
        elif step.type in ("chrome_open_tabs", "chrome_close_tabs"):
            _browser_tabs(replica, step, where)
        elif step.type == "update_browse_history":
            update_browse_history(replica, [HistoryEntry.model_validate(e) for e in p["history"]], where=where)
        elif step.type in ("upload_file", "download"):
            files = p.get("files", [])
            for i, f in enumerate(files if isinstance(files, list) else [files]):
                if not isinstance(f, dict):
                    raise SetupError(f"{where}.parameters.files[{i}]: expected {{path, local_path or url}}, "
                                     f"actual {f!r:.80}")
                key = "local_path" if f.get("local_path") else "url"
                src = f.get(key)
                if not src:
                    raise SetupError(f"{where}.parameters.files[{i}]: {step.type} needs local_path or url")
                data = read_task_file(src, where=f"{where}.parameters.files[{i}].{key}", error=SetupError)
                replica.write_file(f["path"], data)
        else:  # TaskSpec validation keeps us from getting here
            raise SetupError(f"unsupported config type {step.type!r}")
    except KeyError as exc:
        raise SetupError(f"{where}: {step.type} step is missing parameter {exc}") from exc
    except RequestRejected as exc:
        raise SetupError(f"{where}: {step.type} step rejected by the replica: {exc}") from exc


WAIT_WINDOW_TURN_S = 60.0
"""The longest one wait for a window asks of the replica (its control server's bound); a ``wait_window`` step
with a longer ``timeout`` asks again until it is over."""


def wait_window(replica: Replica, title: str, timeout: float, *, focused: bool) -> None:
    """Wait until a window whose title or class contains ``title`` is mapped (and focused, if asked), at most
    ``timeout`` seconds, in turns of at most :data:`WAIT_WINDOW_TURN_S`.

    Raises:
        RequestRejected: 404 if no such window came within ``timeout``; another status if the replica refused.
        ReplicaError: if the replica itself fails.
    """
    deadline = time.monotonic() + timeout
    while True:
        left = max(0.0, deadline - time.monotonic())
        try:
            replica.wait_window(title, timeout=min(left, WAIT_WINDOW_TURN_S), focused=focused)
            return
        except RequestRejected as exc:
            if exc.status != 404 or left <= WAIT_WINDOW_TURN_S:
                raise


BROWSER_WAIT_S = 60.0
"""How long ``chrome_open_tabs`` waits for Chromium's DevTools (a ``launch`` step may have just started it)."""


def _browser_tabs(replica: Replica, step: SetupStep, where: str) -> None:
    """``chrome_open_tabs``: each URL in a new tab, then the browser's first tab closed (OSWorld's
    order); ``chrome_close_tabs``: the tabs showing these URLs closed. Through DevTools inside the
    replica (:mod:`osgym.tasks.devtools`); the URLs were checked at load to stay inside the replica."""
    if step.type == "chrome_open_tabs":
        request = {"op": "new_tabs", "urls": step.parameters["urls_to_open"], "wait": BROWSER_WAIT_S}
    else:
        request = {"op": "close_tabs", "urls": step.parameters["urls_to_close"]}
    answer = ask(replica, request, where=where, error=SetupError, timeout=BROWSER_WAIT_S + 60)
    if answer is NO_BROWSER:
        raise SetupError(f"{where}: {step.type}: Chromium is not running (no DevTools on the replica's "
                         "127.0.0.1:9222); launch it in an earlier step")


def run_setup(replica: Replica, steps: list[SetupStep], *, task_id: str = "?", field: str = "config",
              scratch: Scratch | None = None, tolerated: list[str] | None = None) -> None:
    """Run ``steps`` in order; errors name the task and the step (``task <id>: config[2]``). Failures that setup
    goes on after are appended to ``tolerated`` (see :func:`run_step`).

    Raises:
        SetupError: if a step fails or names a source it may not read (see :func:`run_step`).
        ReplicaError: if the replica itself fails.
    """
    for i, step in enumerate(steps):
        run_step(replica, step, where=f"task {task_id}: {field}[{i}]", scratch=scratch, tolerated=tolerated)


