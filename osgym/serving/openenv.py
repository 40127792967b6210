"""OpenEnv's environment protocol (the ``openenv-core`` package, which TRL's trainers use), under ``/openenv``.

OpenEnv's client (``EnvClient``, ``GenericEnvClient``) holds one WebSocket per environment session at
``<base_url>/ws``; here that is ``/openenv/ws``, so a client's base URL is ``http://host:port/openenv``.
Each socket is one session, and at most one episode (a leased replica) at a time. Messages are JSON text:

=====================================  ===========================================================================
client sends                           server answers
=====================================  ===========================================================================
``{"type": "reset", "data": {...}}``   ``{"type": "observation", "data": {"observation", "reward", "done"}}``
``{"type": "step", "data": {...}}``    the same; ``done`` when the episode ended (``DONE``/``FAIL``, max steps)
``{"type": "state"}``                  ``{"type": "state", "data": {"episode_id", "step_count", ...}}``
``{"type": "close"}``                  (the socket closes)
=====================================  ===========================================================================

A reset's ``data`` names the task as ``POST /v1/sessions`` does: ``task`` (a task file), or ``suite`` with
``template`` and ``seed``; ``observation`` (:class:`~osgym.serving.limits.ObservationOptions`),
``idle_timeout_s`` and ``episode_id`` are optional. A reset while an episode runs ends that episode first.
A step's ``data`` is ``{"actions": [...]}`` (typed computer_13) or ``{"text": ..., "format": ...}`` (a
registered action format, ``osgym`` by default). The observation holds the screenshot (base64), its
size, the instruction and the step; the reward is the task's score on the step that ends the episode.

Every failure is ``{"type": "error", "data": {"message", "code", "error"}}`` with OpenEnv's codes
(``INVALID_JSON``, ``UNKNOWN_TYPE``, ``VALIDATION_ERROR``, ``CAPACITY_REACHED``, ``EXECUTION_ERROR``,
``SESSION_ERROR``), and the socket stays open. A socket that closes ends its episode and gives its
replica back. OpenEnv's stateless HTTP ``/reset`` and ``/step`` cannot hold a desktop across steps:
under ``/openenv`` they answer 400 naming the WebSocket; ``/health``, ``/schema`` and ``/metadata`` answer.

Access: the server's bearer tokens. OpenEnv's client sends no headers of its own, but its WebSocket
library sends a URL's user info as HTTP Basic credentials, so under ``/openenv`` (only) a token is also
taken as Basic's password: ``http://osgym:<token>@host:port/openenv`` (:func:`bearer_from_basic`).
A socket from a web page of another origin is refused before the upgrade.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
from collections.abc import Callable
from typing import Any

import anyio.to_thread
from fastapi import FastAPI, WebSocket
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field, ValidationError
from starlette.websockets import WebSocketDisconnect

from osgym.agents.formats import ReplyContext, get_format
from osgym.errors import (
    ConfigError,
    LeaseTimeout,
    OsgymError,
    PolicyError,
    RequestRejected,
    TaskLoadError,
)
from osgym.replicas.actions import Action, parse_action
from osgym.replicas.observation import Observation
from osgym.serving.auth import Access, Caller, Forbidden, Unauthorized, same_origin
from osgym.serving.bodies import NativeStep, OpenRequest
from osgym.serving.client_task import load_client_task
from osgym.serving.sessions import Session, SessionLimit, SessionManager, SessionNotFound
from osgym.suites import generate

__all__ = ["MAX_MESSAGE_BYTES", "OPENENV_PREFIX", "add_openenv_routes", "bearer_from_basic"]

log = logging.getLogger(__name__)

OPENENV_PREFIX = "/openenv"
MAX_MESSAGE_BYTES = 8 * 2**20
"""The longest message read from a socket (characters), as for an HTTP body: more is refused (``VALIDATION_ERROR``)."""


def bearer_from_basic(authorization: str | None) -> str | None:
    """An ``Authorization`` header with HTTP Basic credentials, as the bearer token its password is; any
    other header unchanged (the user name is ignored).

    >>> bearer_from_basic("Basic " + base64.b64encode(b"osgym:s3cret").decode())
    'Bearer s3cret'
    >>> bearer_from_basic("Bearer abc"), bearer_from_basic(None)
    ('Bearer abc', None)
    """
    if authorization is None:
        return None
    scheme, _, encoded = authorization.partition(" ")
    if scheme.lower() != "basic":
        return authorization
    try:
        _user, sep, password = base64.b64decode(encoded.strip(), validate=True).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return "Basic"  # refused by Access.owner as another scheme
    return f"Bearer {password}" if sep and password else "Basic"


# ---- messages -------------------------------------------------------------------------------------------

class ResetData(OpenRequest):
    """A reset's ``data``: the task as ``POST /v1/sessions`` takes it (a seed is optional: 0), and OpenEnv's
    ``episode_id``."""

    seed: int | None = Field(None, ge=0)  # type: ignore[assignment]
    episode_id: str | None = Field(None, max_length=255)


class StepData(NativeStep):
    """A step's ``data``: typed ``actions``, or ``text`` in a registered action ``format``."""

    metadata: dict[str, Any] = Field(default_factory=dict, description="OpenEnv's Action field; ignored")


class ObservationData(BaseModel):
    """The observation a reset or step answers with (for ``/schema``)."""

    screenshot: str = Field(description="the screen, base64")
    format: str
    width: int
    height: int
    screen: list[int]
    instruction: str
    step: int
    a11y: str | None = None
    session_id: int
    task_id: str
    terminated: bool
    truncated: bool
    termination: str | None = None
    error: str | None = None


class StateData(BaseModel):
    """What a ``state`` message answers with."""

    episode_id: str | None = None
    step_count: int = 0
    session_id: int | None = None
    task_id: str | None = None
    instruction: str | None = None
    done: bool = False


_CODES: tuple[tuple[type[BaseException], str], ...] = (
    (SessionLimit, "CAPACITY_REACHED"), (LeaseTimeout, "CAPACITY_REACHED"), (SessionNotFound, "SESSION_ERROR"),
    (PolicyError, "VALIDATION_ERROR"), (TaskLoadError, "VALIDATION_ERROR"), (RequestRejected, "VALIDATION_ERROR"),
    (ConfigError, "VALIDATION_ERROR"), (OsgymError, "EXECUTION_ERROR"),
)


def _error(message: str, code: str, kind: str) -> dict[str, Any]:
    return {"type": "error", "data": {"message": message, "code": code, "error": kind}}


def _observation(session: Session, obs: Observation, *, terminated: bool = False, truncated: bool = False,
                 termination: str | None = None, error: str | None = None) -> dict[str, Any]:
    return {"format": obs.screenshot_format, "width": obs.width, "height": obs.height, "screen": list(obs.screen),
            "instruction": obs.instruction, "step": obs.step, "a11y": obs.a11y, "session_id": session.id,
            "task_id": session.task.id, "terminated": terminated, "truncated": truncated,
            "termination": termination, "error": error, "screenshot": obs.screenshot}


def observation_message(data: dict[str, Any]) -> str:
    """``{"type": "observation", "data": data}`` as JSON text, ``data["observation"]["screenshot"]`` (bytes)
    in base64. The base64 text needs no escaping, so it is spliced in last rather than scanned by the JSON
    encoder: on a 1280x800 frame that is half a millisecond less per step.

    >>> observation_message({"observation": {"step": 1, "screenshot": b"hi"}, "reward": 0.0, "done": False})
    '{"type": "observation", "data": {"reward": 0.0, "done": false, "observation": {"step": 1, "screenshot": "aGk="}}}'
    """
    obs = dict(data["observation"])
    shot = base64.b64encode(obs.pop("screenshot")).decode("ascii")
    rest = {k: v for k, v in data.items() if k != "observation"}
    head = json.dumps({"type": "observation", "data": {**rest, "observation": obs}})
    assert head.endswith("}}}") and obs, "the observation is the last, non-empty object of the message"
    return f'{head[:-3]}, "screenshot": "{shot}"}}}}}}'


class _SocketSession:
    """One socket's episodes: at most one live session of ``owner``'s at a time."""

    def __init__(self, manager: SessionManager, owner: str) -> None:
        self.manager = manager
        self.owner = owner
        self.session: Session | None = None
        """The live episode's session."""
        self.current: Session | None = None
        """The last episode's session, live or ended (``state`` reports it)."""
        self.episode_id: str | None = None
        self.done = False

    def reset(self, data: ResetData) -> dict[str, Any]:
        self.end()
        if (data.task is None) == (data.suite is None):
            raise ConfigError("reset: expected either task (a task file) or suite (a built-in suite), actual "
                              + ("both" if data.task is not None else "neither"))
        seed = data.seed or 0
        if data.task is not None:
            task = load_client_task(data.task)
        else:
            assert data.suite is not None
            task = generate(data.suite, 1, seed, [data.template] if data.template else None)[0]
        session = self.manager.open(self.owner, task, seed=seed, protocol="openenv", options=data.observation,
                                    idle_timeout_s=data.idle_timeout_s)
        self.session = self.current = session
        self.episode_id, self.done = data.episode_id, False
        return {"observation": _observation(session, session.observation), "reward": None, "done": False}

    def step(self, data: StepData) -> dict[str, Any]:
        if self.session is None:
            raise SessionNotFound("step: no episode on this socket"
                                  + (" (the last one ended)" if self.done else "") + ": send reset first")
        session = self.session
        if (data.actions is None) == (data.text is None):
            raise PolicyError("step: expected either actions (typed) or text (in an action format), actual "
                              + ("both" if data.actions is not None else "neither"))
        actions: list[Action]
        if data.actions is not None:
            actions = [parse_action(a) for a in data.actions]
        else:
            assert data.text is not None
            obs = session.observation
            actions = get_format(data.format).parse(data.text, ReplyContext(image_size=(obs.width, obs.height),
                                                                            screen=obs.screen))[1]
        try:
            out = self.manager.step(self.owner, session.id, actions)
        finally:
            if session.ended:  # the episode's end; or reclaimed after its idle timeout, or its replica failed
                self.session = None
        self.done = out.done
        return {"observation": _observation(session, out.observation, terminated=out.terminated,
                                            truncated=out.truncated, termination=out.termination, error=out.error),
                "reward": out.reward, "done": out.done}

    def state(self) -> dict[str, Any]:
        s = self.current
        return StateData(episode_id=self.episode_id, step_count=s.steps if s else 0, session_id=s.id if s else None,
                         task_id=s.task.id if s else None, instruction=s.task.instruction if s else None,
                         done=self.done).model_dump()

    def end(self) -> None:
        """End the live episode, if any (recorded as truncated; its replica goes back)."""
        session, self.session = self.session, None
        if session is not None:
            try:
                self.manager.close(self.owner, session.id)
            except SessionNotFound:
                pass  # it ended on its own meanwhile (reclaimed, or its replica failed)


async def _answer(episode: _SocketSession, text: str | None) -> dict[str, Any] | str | None:
    """The reply to one message (an observation's as JSON text already); None for ``close``."""
    if text is None:
        return _error("expected a JSON text message, actual a binary one", "INVALID_JSON", "ValueError")
    if len(text) > MAX_MESSAGE_BYTES:
        return _error(f"expected a message of at most {MAX_MESSAGE_BYTES} characters, actual {len(text)}",
                      "VALIDATION_ERROR", "ValueError")
    try:
        message = json.loads(text)
    except ValueError as exc:
        return _error(f"invalid JSON: {exc}", "INVALID_JSON", "ValueError")
    if not isinstance(message, dict):
        return _error(f"expected a JSON object, actual {type(message).__name__}", "INVALID_JSON", "ValueError")
    kind = message.get("type")
    extra = sorted(set(message) - {"type", "data"})
    if kind not in ("reset", "step", "state", "close"):
        return _error(f"expected a message type of reset, step, state or close, actual {kind!r:.60}",
                      "UNKNOWN_TYPE", "ValueError")
    if extra:
        return _error(f"{kind}: unexpected fields {extra}", "VALIDATION_ERROR", "ValueError")
    if kind == "close":
        return None
    data = message.get("data", {})
    if not isinstance(data, dict):
        return _error(f"{kind}: expected data to be a JSON object, actual {type(data).__name__}",
                      "VALIDATION_ERROR", "ValueError")
    try:
        if kind == "reset":
            reset = ResetData.model_validate(data)
            return observation_message(await anyio.to_thread.run_sync(episode.reset, reset))
        if kind == "step":
            step = StepData.model_validate(data)
            return observation_message(await anyio.to_thread.run_sync(episode.step, step))
        return {"type": "state", "data": episode.state()}
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "data"
        return _error(f"{kind}: {where}: {first.get('msg')}", "VALIDATION_ERROR", "ValidationError")
    except OsgymError as exc:
        code = next(c for cls, c in _CODES if isinstance(exc, cls))
        return _error(str(exc), code, type(exc).__name__)


def _caller(websocket: WebSocket) -> Caller:
    client = websocket.client
    return Caller(client.host if client else None, client.port if client else None, websocket.headers.get("host"),
                  websocket.headers.get("origin"), websocket.scope.get("server"))


async def _deny(websocket: WebSocket, status: int, message: str, kind: str) -> None:
    """Refuse the upgrade with a JSON answer where the server can send one (uvicorn can), else close (403)."""
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    try:
        await websocket.send_denial_response(JSONResponse({"message": message, "error": kind}, status, headers))
    except RuntimeError:  # no denial-response extension
        await websocket.close(code=1008)


def add_openenv_routes(app: FastAPI, manager: SessionManager, access: Access) -> None:
    """OpenEnv's routes under :data:`OPENENV_PREFIX`: the session socket, health, schema and metadata. The HTTP
    routes are authenticated by the app's middleware (with :func:`bearer_from_basic`); the socket here."""

    @app.websocket(OPENENV_PREFIX + "/ws")
    async def session_socket(websocket: WebSocket) -> None:
        origin = websocket.headers.get("origin")
        if origin is not None and not same_origin(origin, websocket.headers.get("host")):
            await _deny(websocket, 403, "a socket from a web page of another origin is refused", "Forbidden")
            return
        try:
            owner = access.owner(bearer_from_basic(websocket.headers.get("authorization")), _caller(websocket))
        except (Unauthorized, Forbidden) as exc:
            await _deny(websocket, 401 if isinstance(exc, Unauthorized) else 403, str(exc), type(exc).__name__)
            return
        await websocket.accept()
        episode = _SocketSession(manager, owner)
        try:
            while True:
                received = await websocket.receive()
                if received["type"] == "websocket.disconnect":
                    break
                try:
                    reply = await _answer(episode, received.get("text"))
                except Exception as exc:  # a bug of ours: the client gets a clear error, the log the traceback
                    log.exception("openenv socket: unexpected failure")
                    reply = _error(f"internal error ({type(exc).__name__}); the server's log has the details",
                                   "SESSION_ERROR", "InternalError")
                if reply is None:
                    await websocket.close()
                    break
                await websocket.send_text(reply if isinstance(reply, str) else json.dumps(reply))
        except (WebSocketDisconnect, OSError):  # OSError: uvicorn's ClientDisconnected, a reply to a gone client
            pass
        finally:  # however the socket ended: its episode ends and its replica goes back
            await anyio.to_thread.run_sync(episode.end)

    for method, path in (("POST", "/reset"), ("POST", "/step"), ("GET", "/state")):
        app.add_api_route(OPENENV_PREFIX + path, _stateless(path), methods=[method])

    @app.get(OPENENV_PREFIX + "/health")
    def health() -> dict[str, Any]:
        # serving: replicas being replaced, or all leased, are no fault of the server's
        return {"status": "healthy", "sessions": len(manager), "replicas_healthy": manager.pool.healthy}

    @app.get(OPENENV_PREFIX + "/schema")
    def schema() -> dict[str, Any]:
        return {"action": StepData.model_json_schema(), "observation": ObservationData.model_json_schema(),
                "state": StateData.model_json_schema()}

    @app.get(OPENENV_PREFIX + "/metadata")
    def metadata() -> dict[str, Any]:
        return {"name": "osgym", "description": "Desktop-OS replicas: a screenshot per step, computer_13 actions "
                "or action text; a reset names a task file or a built-in suite, template and seed."}


def _stateless(path: str) -> Callable[[], JSONResponse]:
    def refuse() -> JSONResponse:
        return JSONResponse({"message": f"OpenEnv's HTTP {path} is stateless, and a desktop episode holds a replica "
                             f"across steps: use the WebSocket session at {OPENENV_PREFIX}/ws (OpenEnv's EnvClient "
                             "does)", "error": "UseWebSocket"}, status_code=400)
    return refuse
