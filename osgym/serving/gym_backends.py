"""Where the Gymnasium env's sessions live: a session manager in this process, or ``osgym serve`` servers.

:class:`LocalBackend` drives a :class:`~osgym.serving.sessions.SessionManager` directly; :class:`HttpBackend`
drives one or several servers through their native ``/v1`` API (:mod:`osgym.serving.servers` places the
sessions and notices a lost server). :class:`~osgym.serving.gym_env.DesktopEnv` picks one from its arguments.
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from osgym.agents.formats import ReplyContext, get_format
from osgym.errors import ConfigError, OsgymError, ServerLost
from osgym.replicas.actions import Action, parse_action
from osgym.serving.client_task import load_client_task
from osgym.serving.limits import ObservationOptions
from osgym.serving.servers import RemoteSession, Server, ServerSet, ServerTimeouts
from osgym.serving.sessions import SessionManager
from osgym.suites import generate
from osgym.tasks.spec import TaskSpec

__all__ = ["Backend", "Frame", "HttpBackend", "LocalBackend", "Outcome"]

LOCAL_OWNER = "local"


@dataclass
class Frame:
    """One observation as a backend returns it: the encoded screenshot and the task's instruction."""

    screenshot: bytes
    instruction: str


@dataclass
class Outcome:
    frame: Frame
    reward: float
    terminated: bool
    truncated: bool
    termination: str | None = None
    error: str | None = None


class Backend(Protocol):
    """Where sessions live: this process (:class:`LocalBackend`) or servers (:class:`HttpBackend`).

    ``open`` returns a handle of its own for the session (``step`` and ``end`` take it back); ``server``
    asks for a given server (a group reset's), where the backend has several.
    """

    def open(self, task: TaskSpec | dict[str, Any] | None, suite: str, template: str | None, seed: int,
             observation: ObservationOptions, server: Server | None = None) -> tuple[Any, Frame]: ...
    def step(self, handle: Any, action: str | list[dict[str, Any]], action_format: str) -> Outcome: ...
    def end(self, handle: Any) -> None: ...
    def info(self, handle: Any) -> dict[str, Any]: ...
    def close(self) -> None: ...


class LocalBackend:
    """Sessions on a :class:`SessionManager` in this process; with ``own_pool``, it closes the pool too."""

    def __init__(self, manager: SessionManager, own_pool: bool = False) -> None:
        self.manager = manager
        self.own_pool = own_pool

    def open(self, task: TaskSpec | dict[str, Any] | None, suite: str, template: str | None, seed: int,
             observation: ObservationOptions, server: Server | None = None) -> tuple[int, Frame]:
        if isinstance(task, dict):
            task = load_client_task(task)
        spec = task or generate(suite, 1, seed, [template] if template else None)[0]
        s = self.manager.open(LOCAL_OWNER, spec, seed=seed, options=observation)
        return s.id, Frame(s.observation.screenshot, spec.instruction)

    def step(self, handle: int, action: str | list[dict[str, Any]], action_format: str) -> Outcome:
        session = self.manager.get(LOCAL_OWNER, handle)
        actions: list[Action]
        if isinstance(action, str):
            obs = session.observation
            ctx = ReplyContext(image_size=(obs.width, obs.height), screen=obs.screen)
            actions = get_format(action_format).parse(action, ctx)[1]
        else:
            actions = [parse_action(a) for a in action]
        out = self.manager.step(LOCAL_OWNER, handle, actions)
        frame = Frame(out.observation.screenshot, session.task.instruction)
        return Outcome(frame, out.reward, out.terminated, out.truncated, out.termination, out.error)

    def end(self, handle: int) -> None:
        try:
            self.manager.close(LOCAL_OWNER, handle)
        except OsgymError:
            pass  # already ended (finished, reclaimed)

    def info(self, handle: int) -> dict[str, Any]:
        return {"session_id": handle}

    def close(self) -> None:
        if self.own_pool:
            self.manager.shutdown()
            self.manager.pool.close()


class HttpBackend:
    """Sessions on ``osgym serve`` servers, through their native ``/v1`` API.

    ``url`` is one server's URL, a list of them, or a :class:`~osgym.serving.servers.ServerSet` shared with
    other envs (not closed with this backend). With several servers, each session goes to the one where
    this client may open the most sessions; a session on a server that is lost ends with
    :class:`~osgym.errors.ServerLost` naming it (:mod:`osgym.serving.servers`).
    """

    def __init__(self, url: str | Sequence[str] | ServerSet, token: str | None = None,
                 timeouts: ServerTimeouts = ServerTimeouts()) -> None:
        self.servers, self.own = ServerSet.given_or_new(url, token, timeouts)

    def screen(self) -> tuple[int, int]:
        """The servers' screen size (their health routes say it; no token needed).

        Raises:
            ServerLost: if no server answers.
            ConfigError: if the servers that answer have different screens.
        """
        screens: dict[str, tuple[int, int]] = {}
        for server in self.servers.servers:
            with contextlib.suppress(OsgymError):
                width, height = self.servers.request(server, "GET", "/v1/health",
                                                     timeout=self.servers.timeouts.probe)["screen"]
                screens[server.url] = (int(width), int(height))
        if not screens:
            raise ServerLost(", ".join(s.url for s in self.servers.servers), "no server answers GET /v1/health")
        if len(set(screens.values())) > 1:
            raise ConfigError(f"servers: expected one screen size, actual {screens}")
        return next(iter(screens.values()))

    def open(self, task: TaskSpec | dict[str, Any] | None, suite: str, template: str | None, seed: int,
             observation: ObservationOptions, server: Server | None = None) -> tuple[RemoteSession, Frame]:
        body: dict[str, Any] = {"seed": seed, "observation": observation.model_dump()}
        if task is not None:
            body["task"] = task.model_dump(mode="json", exclude_none=True) if isinstance(task, TaskSpec) else task
        else:
            body["suite"], body["template"] = suite, template
        session, out = self.servers.open("/v1/sessions", body, "session_id", server)
        return session, _frame(out["observation"])

    def step(self, handle: RemoteSession, action: str | list[dict[str, Any]], action_format: str) -> Outcome:
        body = {"text": action, "format": action_format} if isinstance(action, str) else {"actions": action}
        out = self.servers.request(handle.server, "POST", f"/v1/sessions/{handle.id}/step", session=handle,
                                   json=body)
        return Outcome(_frame(out["observation"]), float(out["reward"]), bool(out["terminated"]),
                       bool(out["truncated"]), out.get("termination"), out.get("error"))

    def end(self, handle: RemoteSession) -> None:
        try:
            self.servers.request(handle.server, "DELETE", f"/v1/sessions/{handle.id}", session=handle,
                                 timeout=self.servers.timeouts.probe)
        except OsgymError:
            pass  # ended already, or its server is gone: the server reclaims it after its idle timeout anyway

    def info(self, handle: RemoteSession) -> dict[str, Any]:
        return {"session_id": handle.id, "server": handle.url}

    def close(self) -> None:
        if self.own:
            self.servers.close()


def _frame(obs: dict[str, Any]) -> Frame:
    return Frame(base64.b64decode(obs["screenshot"]), str(obs["instruction"]))
