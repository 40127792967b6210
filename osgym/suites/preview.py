"""A task's initial state as a picture (``osgym suites show --screenshot``): one replica of the task's tier,
the task's setup, one screenshot. The pool is closed (its replica removed) on every way out, errors and
Ctrl-C included."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from osgym.replicas import images
from osgym.replicas.client import Replica, Screenshot
from osgym.replicas.pool import ReplicaPool, limits_for
from osgym.tasks.setup import run_setup
from osgym.tasks.spec import SetupStep, TaskSpec

STABLE_FRAMES = 3
FRAME_INTERVAL_S = 0.5


def _settled(replica: Replica, settle_s: float) -> Screenshot:
    deadline = time.monotonic() + settle_s
    shot = replica.screenshot(format="png")
    same = 1
    while same < STABLE_FRAMES and time.monotonic() < deadline:
        time.sleep(FRAME_INTERVAL_S)  # the interval between frames compared, not a guess at readiness
        nxt = replica.screenshot(format="png")
        same = same + 1 if nxt.data == shot.data else 1
        shot = nxt
    return shot


def describe_step(step: SetupStep, width: int = 100) -> str:
    """One setup step in a line.

    >>> describe_step(SetupStep(type="launch", parameters={"command": ["gedit", "/tmp/a.txt"]}))
    'launch: gedit /tmp/a.txt'
    """
    p: dict[str, Any] = step.parameters
    if step.type in ("execute", "command", "launch"):
        cmd = p.get("command", "")
        text = " ".join(map(str, cmd)) if isinstance(cmd, list) else str(cmd)
    elif step.type == "wait_window":
        text = f"{p.get('title')!r}" + (" focused" if p.get("focused", True) else "")
    elif step.type in ("download", "upload_file"):
        text = ", ".join(str(f.get("path", "?")) for f in p.get("files", []) if isinstance(f, dict))
    else:
        text = ", ".join(f"{k}={v}" for k, v in p.items())
    line = f"{step.type}: {text}".replace("\n", "\\n")
    return line if len(line) <= width else line[: width - 1] + "…"


def initial_screenshot(task: TaskSpec, tier: str, out: str | Path, *, screen: tuple[int, int] = (1920, 1080),
                       docker_client: Any = None, name: str | None = None, settle_s: float = 30) -> tuple[int, int]:
    """Start one replica of ``tier``, run ``task``'s setup, save a PNG screenshot to ``out``; returns its size.

    A window the setup waited for is mapped but may not be painted yet (under load, seconds later): the
    picture is taken once ``STABLE_FRAMES`` frames in a row are the same, or after ``settle_s``.

    Raises:
        TaskError: if the setup fails.
        ReplicaError: if the replica does.
        OSError: if ``out`` cannot be written.
    """
    image = images.ensure_image(tier, client=docker_client)
    with ReplicaPool(image, 1, standby=0, name=name or f"osgym-show-{os.getpid()}", docker_client=docker_client,
                     screen=screen, limits=limits_for(tier)) as pool, pool.lease(timeout=300) as replica:
        run_setup(replica, task.config, task_id=task.id)
        shot = _settled(replica, settle_s)
    Path(out).write_bytes(shot.data)
    return shot.width, shot.height
