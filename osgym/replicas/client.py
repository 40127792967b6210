"""``Replica``: a handle on one desktop container and its control-API client.

Its requests go through :class:`~osgym.replicas.control.ControlClient` (keep-alive connections, one
deadline per request, capped answers, reads retried when they could not connect), re-exported here with
its settings (:class:`Timeouts`, :class:`ReadRetry`) for the callers that build one.
"""

from __future__ import annotations

import contextlib
import enum
import json as jsonlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from osgym.errors import ReplicaUnreachable
from osgym.replicas.accounting import Usage
from osgym.replicas.actions import _Action
from osgym.replicas.control import DEFAULT_TIMEOUTS, READ_RETRY, ControlClient, ReadRetry, Timeouts
from osgym.replicas.execution import ExecResult, launch_as_root, run_as_root
from osgym.replicas.hollow.protocol import A11yFind
from osgym.replicas.observation import Observation, Window
from osgym.replicas.transport import DEFAULT_CAPS, ResponseCaps

__all__ = ["DEFAULT_TIMEOUTS", "READ_RETRY", "SETTLE_MODES", "ControlClient", "ReadRetry", "Replica", "ReplicaState",
           "Screenshot", "SettleMode", "Timeouts"]


SettleMode = Literal["frames", "damage"]
"""How a replica tells that the screen settled after input (:meth:`Replica.act`'s ``mode``)."""
SETTLE_MODES: tuple[SettleMode, ...] = get_args(SettleMode)

class ReplicaState(enum.Enum):
    """Lifecycle of a replica: STARTING → READY ⇄ LEASED → CLOSED (or FAULTED → CLOSED)."""

    STARTING = "starting"
    READY = "ready"
    LEASED = "leased"
    FAULTED = "faulted"
    CLOSED = "closed"


@dataclass(frozen=True)
class Screenshot:
    """Screenshot bytes exactly as the replica encoded them."""

    data: bytes
    format: str
    width: int
    height: int
    windows: tuple[Window, ...] | None = None
    """The window list read just before the grab, when asked for (:meth:`Replica.screenshot`'s ``windows``)."""


A11Y_OBSERVE_S = 30.0
"""How long an observation waits for the accessibility tree. LibreOffice answers AT-SPI from its main
thread: a walk of a Calc window (every visible cell) took 6-8 s at load 10, and the first walk after
a document opened 24 s at load 23, past the replica's 10 s default; GIMP's (every menu of it is in the
tree) took over 10 s at load 25-45."""


def _windows(listed: list[dict[str, Any]]) -> tuple[Window, ...]:
    keys = Window.__dataclass_fields__
    return tuple(Window(**{k: v for k, v in w.items() if k in keys}) for w in listed)


def _window_request(title: str, timeout: float, strict: bool | None, by_class: bool | None) -> dict[str, Any]:
    body: dict[str, Any] = {"title": title}
    if timeout:
        body["timeout"] = timeout
    if strict is not None or by_class is not None:
        body.update(strict=bool(strict), by_class=bool(by_class))
    return body


class Replica:
    """One desktop replica: a container plus its control API.

    Use it as a context manager or call :meth:`close`; ``close()`` is idempotent.
    Replicas normally come from :meth:`osgym.replicas.pool.ReplicaPool.lease`.
    """

    def __init__(
        self,
        replica_id: str,
        endpoint: str,
        token: str | None,
        *,
        host: str = "local",
        container: Any = None,
        timeouts: Timeouts = DEFAULT_TIMEOUTS,
        caps: ResponseCaps = DEFAULT_CAPS,
        socket_owner: int | None = None,
        confine_root_steps: bool = True,
    ):
        self.id = replica_id
        self.confine_root_steps = confine_root_steps
        """Root steps run with an empty bounding set (native replicas); OSWorld compatibility replicas keep
        Docker's set for them, as their agent may sudo anyway."""
        self.host = host
        self.container = container
        self.state = ReplicaState.STARTING
        self.created_at = time.time()
        self.ready_at: float | None = None
        self.api = ControlClient(endpoint, token, timeouts, caps, socket_owner=socket_owner)
        self.screen: tuple[int, int] = (0, 0)
        self.usage: Usage | None = None  # what the last lease used; set by the pool at release

    def __repr__(self) -> str:
        return f"<Replica {self.id} {self.state.value} on {self.host}>"

    def __enter__(self) -> Replica:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def deadline(self, at: float | None) -> contextlib.AbstractContextManager[None]:
        """Within the block, requests end by ``at`` (``time.monotonic()``) or raise EpisodeTimeout;
        see :meth:`ControlClient.deadline`."""
        return self.api.deadline(at)

    # ---- observation ------------------------------------------------------
    def health(self, timeout: float | None = None) -> dict[str, Any]:
        data: dict[str, Any] = self.api.request("GET", "/health", timeout=timeout or self.api.timeouts.health).json()
        width, height = data.get("screen", (0, 0))
        self.screen = (int(width), int(height))
        return data

    def screenshot(self, format: str = "png", quality: int = 80, max_side: int | None = None, *,
                   windows: bool = False) -> Screenshot:
        """The screen, encoded by the replica; with ``windows``, the window list read just before the grab comes
        in the same answer (None if it was too long for a header: then read :meth:`windows` first)."""
        params: dict[str, Any] = {"format": format, "quality": quality}
        if max_side:
            params["max_side"] = max_side
        if windows:
            params["windows"] = 1
        r = self.api.request("GET", "/screenshot", params=params)
        listed = r.headers.get("X-Windows")
        return Screenshot(r.content, format, int(r.headers["X-Width"]), int(r.headers["X-Height"]),
                          _windows(jsonlib.loads(listed)) if listed is not None else None)

    def windows(self) -> list[Window]:
        return list(_windows(self.api.request("GET", "/windows").json()["windows"]))

    def observe(self, instruction: str, step: int, *, format: str = "png", quality: int = 80,
                max_side: int | None = None, a11y: bool | Literal["showing"] = False,
                a11y_window: str | None = None, a11y_find: A11yFind | None = None) -> Observation:
        """A screenshot plus the window list, as a policy sees it; with ``a11y``, the accessibility tree too
        (``"showing"``: only what is on screen; ``a11y_window``: only the top-level windows whose title contains
        it; ``a11y_find``: only the element it names; see :meth:`accessibility`).

        The structured state is read *before* the screenshot, so that the screenshot is at least as
        recent as what a policy acts on: a window in the list, or a button the tree shows sensitive,
        is never one that appeared only after the picture was taken. The window list comes with the
        screenshot, read by the replica just before its grab (one request, not two, per observation).
        """
        tree = (self.accessibility(timeout=A11Y_OBSERVE_S, showing_only=a11y == "showing", window=a11y_window,
                                   find=a11y_find) if a11y else None)
        shot = self.screenshot(format, quality, max_side, windows=True)
        windows = shot.windows
        if windows is None:  # too many windows for a header: the list first, then the picture again
            windows = tuple(self.windows())
            shot = self.screenshot(format, quality, max_side)
        screen = self.screen if self.screen != (0, 0) else (shot.width, shot.height)
        return Observation(shot.data, shot.format, shot.width, shot.height, instruction, step, windows,
                           a11y=tree, screen=screen)

    # ---- acting -----------------------------------------------------------
    def act(self, actions: Sequence[_Action | dict[str, Any]], settle: float = 0.0,
            quiet: float | None = None, *, mode: SettleMode | None = None,
            minimum: float | None = None) -> dict[str, Any]:
        """Perform actions in order; with ``settle`` > 0, wait up to that long for the screen to stop changing.

        ``mode`` is how the replica tells: ``frames`` (its default) compares screenshots until none changed
        for ``quiet`` seconds (0.15 s if None); ``damage`` waits on the X server's reports of drawing until
        ``quiet`` seconds passed without one (0.1 s if None), and at least ``minimum`` seconds after the input
        (0.2 s if None; frames' default is 0). The answer's ``settled_by`` names the mode used.
        """
        body: dict[str, Any] = {"actions": [a.to_json() if isinstance(a, _Action) else a for a in actions]}
        if settle:
            rule = {"timeout": settle, "interval": 0.05, "quiet": quiet, "mode": mode, "min": minimum}
            body["settle"] = {k: v for k, v in rule.items() if v is not None}
        waits = sum(float(getattr(a, "seconds", 0) or 0) for a in actions if not isinstance(a, dict))
        answer: dict[str, Any] = self.api.request("POST", "/actions", json=body,
                                                  timeout=self.api.timeouts.read + waits + settle).json()
        return answer

    def execute(self, command: str | list[str], *, shell: bool | None = None, timeout: float = 60) -> ExecResult:
        body: dict[str, Any] = {"command": command, "timeout": timeout}
        if shell is not None:
            body["shell"] = shell
        d = self.api.request("POST", "/execute", json=body, timeout=timeout + 5).json()
        return ExecResult(d["status"], d["output"], d["error"], d["returncode"])

    def execute_as_root(self, command: str | list[str], *, shell: bool | None = None,
                        timeout: float = 60) -> ExecResult:
        """Run a task step's command as root, through Docker (``docker exec --user root``).

        This is the worker's privileged path for setup and evaluator steps that need root
        (OSWorld's ``echo password | sudo -S ...``); the agent's account has no sudo, and the
        control server would run the command as the agent. ``sudo`` inside the command is a shim
        that runs its command with root's HOME, while the step's shell expands ``~`` as the user's, as on
        Ubuntu (``replica_images/server/rootbin/sudo``, :mod:`osgym.replicas.execution`). The command keeps none of
        capability (native replicas: uid 0 owns root's files, nothing more), runs at most
        :data:`~osgym.replicas.execution.MAX_ROOT_STEP_S`, and its output is capped
        (:mod:`osgym.replicas.execution`). ``command`` and ``shell`` mean what they mean for :meth:`execute`.

        Raises:
            ReplicaUnreachable: if the replica has no container handle or Docker fails.
        """
        if self.container is None:
            raise ReplicaUnreachable(f"replica {self.id}: no container handle for a root step")
        return run_as_root(self.container, self.id, command, shell=shell, timeout=timeout,
                           confine=self.confine_root_steps)

    def launch_as_root(self, command: str | list[str], *, shell: bool | None = None) -> None:
        """Start a task step's command as root and return at once (a ``launch`` step that uses ``sudo``),
        without CAP_SETUID and CAP_SETGID as :meth:`execute_as_root`.

        Raises:
            ReplicaUnreachable: if the replica has no container handle or Docker fails.
        """
        if self.container is None:
            raise ReplicaUnreachable(f"replica {self.id}: no container handle for a root step")
        launch_as_root(self.container, self.id, command, shell=shell, confine=self.confine_root_steps)

    def replace_token(self, token: str) -> None:
        """Give the replica a new bearer token and use it from now on (a clone restored from a checkpoint
        starts with the template's: :mod:`osgym.replicas.checkpoint`)."""
        self.api.request("POST", "/token", json={"token": token})
        self.api.set_token(token)

    def launch(self, command: str | list[str], *, shell: bool | None = None) -> int:
        body: dict[str, Any] = {"command": command}
        if shell is not None:
            body["shell"] = shell
        return int(self.api.request("POST", "/launch", json=body).json()["pid"])

    def wait_window(self, title: str, timeout: float = 10.0, focused: bool = False) -> Window:
        d = self.api.request("POST", "/windows/wait", json={"title": title, "timeout": timeout, "focused": focused},
                             timeout=timeout + 5).json()["window"]
        return Window(**{k: v for k, v in d.items() if k in Window.__dataclass_fields__})

    def activate_window(self, title: str, *, timeout: float = 0.0, strict: bool | None = None,
                        by_class: bool | None = None) -> None:
        """Raise and focus the first window that ``title`` names, waiting up to ``timeout`` seconds (at most 60)
        for one to appear.

        ``title`` names a window by osgym's rule (a case-insensitive substring of its title or class); given
        ``strict`` or ``by_class``, by wmctrl's, as OSWorld's ``activate_window`` step does (``by_class``: the
        class as ``instance.class``; ``strict``: the whole string, case-sensitively).

        Raises:
            RequestRejected: 404 if no such window came within ``timeout``.
        """
        self.api.request("POST", "/windows/activate", json=_window_request(title, timeout, strict, by_class),
                         timeout=timeout + 10 if timeout else None)

    def close_window(self, title: str, *, timeout: float = 0.0, strict: bool | None = None,
                     by_class: bool | None = None) -> None:
        """Close the first window that ``title`` names (the rules of :meth:`activate_window`).

        Raises:
            RequestRejected: 404 if no such window came within ``timeout``.
        """
        self.api.request("POST", "/windows/close", json=_window_request(title, timeout, strict, by_class),
                         timeout=timeout + 10 if timeout else None)

    def pointer(self) -> tuple[int, int]:
        """Where the pointer is now, in screen pixels."""
        d = self.api.request("GET", "/pointer").json()
        return int(d["x"]), int(d["y"])

    def accessibility(self, *, timeout: float = 10.0, max_nodes: int = 20_000, showing_only: bool = False,
                      window: str | None = None, find: A11yFind | None = None) -> str:
        """The AT-SPI accessibility tree as XML (OSWorld's layout: ``desktop-frame`` root, ``st:``/``cp:`` attributes).
        With ``showing_only``, what is not on screen is left out with its subtree (closed menus, off-screen
        cells and paragraphs): what a policy can click or find focused, read several times faster. With
        ``window``, every application's top-level windows but those whose title contains it (any case) are left
        out: a dialog of LibreOffice's reads in about a third of the time of the whole desktop. With ``find``, the
        walk (on screen only) stops at the first element it names, and the tree holds only that element under
        its top-level window (:class:`~osgym.replicas.hollow.protocol.A11yFind`; the root says ``found``): a
        policy waiting for one button or caret reads Calc's window in about half the CPU.

        Raises:
            RequestRejected: 413 if the tree is larger than the replica's bound.
            ActionFailed: 504 if the applications did not answer within ``timeout``.
        """
        params: dict[str, Any] = {"timeout": timeout, "max_nodes": max_nodes, "showing": int(showing_only)}
        if window is not None:
            params["window"] = window
        if find is not None:
            params.update(find.params())
        return self.api.request("GET", "/accessibility", params=params, timeout=timeout + 5).text

    def terminal(self, *, timeout: float = 10.0) -> str | None:
        """The text of the focused terminal, read from its accessible text as OSWorld's ``/terminal``
        does; None when no terminal has the focus. xterm has no accessible text: the apps tier's
        xfce4-terminal has.

        Raises:
            ActionFailed: 504 if the applications did not answer within ``timeout``.
        """
        out = self.api.request("GET", "/terminal", params={"timeout": timeout}, timeout=timeout + 5).json()["output"]
        return out if isinstance(out, str) else None

    def wallpaper(self) -> str:
        """The path of the desktop's wallpaper image (apps tier).

        Raises:
            RequestRejected: 409 on a tier without a wallpaper (the desktop tier).
        """
        return str(self.api.request("GET", "/wallpaper").json()["path"])

    def set_wallpaper(self, path: str) -> str:
        """Show the image at ``path`` (inside the replica; ``~`` expands to the user's home) as the
        wallpaper, as OSWorld's ``change_wallpaper`` setup step does. Returns the absolute path.

        Raises:
            RequestRejected: 404 if there is no such file, 409 on a tier without a wallpaper.
        """
        return str(self.api.request("POST", "/wallpaper", json={"path": path}).json()["path"])

    def start_recording(self, fps: int = 10) -> None:
        """Start an mp4 screen recording inside the replica (one at a time)."""
        self.api.request("POST", "/recording/start", json={"fps": fps})

    def stop_recording(self) -> bytes:
        """Stop the recording and return the mp4's bytes."""
        self.api.request("POST", "/recording/stop", timeout=30)
        return self.api.request("GET", "/recording", timeout=60).content

    def read_file(self, path: str) -> bytes:
        return self.api.request("GET", "/files", params={"path": path}).content

    def write_file(self, path: str, data: bytes) -> None:
        self.api.request("PUT", "/files", params={"path": path}, content=data)

    # ---- lifecycle --------------------------------------------------------
    def close(self) -> None:
        """Close the control client. The pool removes the container.

        The client is closed whatever the state says: the pool marks a released replica CLOSED
        before it discards it, and a state check here left that replica's socket open.
        """
        self.api.close()  # idempotent
        self.state = ReplicaState.CLOSED
