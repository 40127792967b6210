"""The environment server's HTTP API (FastAPI): OSGym's protocol, exactly, and a native JSON API.

OSGym's protocol (agiopen-org/osgym ``main.py``), so that its client works unchanged:

==========================  ==========================  ==============================================
``POST /reset``             ``{task_config, timeout}``  ``{screenshot, problem, vm_id}``
``POST /step``              ``{action, vm_id}``         ``{screenshot, is_finish, reward}``
``POST /shutdown``          ``{vm_id}``                 ``{vm_id}``
``GET /screenshot?vmId=``                               ``{screenshot, vm_id}``
==========================  ==========================  ==============================================

``screenshot`` is a base64 JPEG of the whole screen; ``action`` is OSGym action text
(:mod:`osgym.agents.formats.osgym_strings`); ``timeout`` is how long the session may sit idle (capped by
the operator's limit); ``finish()`` or ``call_user()`` evaluates the task and ``reward`` is its score.

The native API, under ``/v1``: ``POST /v1/sessions`` (a task file, or a built-in suite and seed;
observation options), ``POST /v1/sessions/{id}/step`` (typed computer_13 actions, or text in any
registered action format), ``GET /v1/sessions/{id}/observation``, ``DELETE /v1/sessions/{id}``,
``GET /v1/formats``, ``GET /v1/capacity`` (the caller's free sessions here, for clients that spread
sessions over servers: :mod:`osgym.serving.servers`) and ``GET /v1/health`` (the only route without a token);
``GET /metrics``, the server's Prometheus metrics (:mod:`osgym.serving.metrics`).

The live view (:mod:`osgym.serving.liveview`): ``POST /v1/sessions/{id}/view`` issues a view token
to the session's owner; ``GET /view/{token}/...`` serves noVNC under that token (a browser sends no
bearer header: the token in the path is the credential; 401 without one, 403 for one that is not live),
and the websocket ``/view/{token}/websockify`` relays the replica's view-only VNC.

OpenEnv's protocol, under ``/openenv`` (:mod:`osgym.serving.openenv`): its client's WebSocket session at
``/openenv/ws``, and a bearer token also as HTTP Basic's password there.

Request bodies are capped as they arrive (:class:`~osgym.serving.body_cap.BodyCap`), whatever the
headers claim.

Every error is JSON ``{"message": ..., "error": <class>}`` with a 4xx status for what the client can
fix (a bad action or task file: 400; an unknown session: 404; too many sessions: 429) and a 5xx for
the server's side (no free replica: 503 with ``Retry-After``; a replica fault: 502).
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Literal

import anyio.to_thread
from fastapi import Depends, FastAPI, Query, Request, WebSocket
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, RedirectResponse, Response
from pydantic import BaseModel, Field

from osgym.agents.formats import ReplyContext, format_names, get_format, parse_osgym
from osgym.episodes.episode import StepOutcome
from osgym.errors import (
    ConfigError,
    LeaseTimeout,
    OsgymError,
    PolicyError,
    ReplicaError,
    RequestRejected,
    SetupError,
    TaskLoadError,
)
from osgym.replicas.actions import Action, parse_action
from osgym.replicas.observation import Observation
from osgym.serving.auth import Access, Caller, Forbidden, Unauthorized, same_origin
from osgym.serving.bodies import NativeStep, OpenRequest
from osgym.serving.body_cap import BodyCap
from osgym.serving.client_task import load_client_task
from osgym.serving.limits import OSGYM_OBSERVATION
from osgym.serving.liveview import LiveViews, ViewUnavailable, relay, vnc_socket_of
from osgym.serving.metrics import metrics_route
from osgym.serving.openenv import OPENENV_PREFIX, add_openenv_routes, bearer_from_basic
from osgym.serving.sessions import SessionLimit, SessionManager, SessionNotFound
from osgym.suites import generate

__all__ = ["MAX_BODY_BYTES", "create_app"]

MAX_BODY_BYTES = 8 * 2**20
"""The largest request body read: a task file or a decision is far smaller; more is refused (413)."""
THREADS = 256
"""Worker threads for the blocking routes (a reset may wait for a free replica): more than sessions."""

_STATUS: tuple[tuple[type[BaseException], int], ...] = (
    (Unauthorized, 401), (Forbidden, 403), (SessionNotFound, 404), (SessionLimit, 429), (LeaseTimeout, 503),
    (ViewUnavailable, 503),
    (PolicyError, 400), (TaskLoadError, 400), (RequestRejected, 400), (ConfigError, 400), (SetupError, 422),
    (ReplicaError, 502),
)


def _status(exc: BaseException) -> int:
    for cls, status in _STATUS:
        if isinstance(exc, cls):
            return status
    return 500


def _error(status: int, message: str, kind: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"message": message, "error": kind}, status_code=status, headers=headers)


# ---- request bodies ---------------------------------------------------------------------------------------

class ResetRequest(BaseModel):
    """OSGym's ``POST /reset``."""

    task_config: dict[str, Any]
    timeout: float = Field(ge=0)


class StepRequest(BaseModel):
    """OSGym's ``POST /step``."""

    action: str = Field(max_length=20_000)
    vm_id: int


class ShutdownRequest(BaseModel):
    """OSGym's ``POST /shutdown`` (``"all"``: every session of this client)."""

    vm_id: int | Literal["all"]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _observation_json(obs: Observation) -> dict[str, Any]:
    return {"screenshot": _b64(obs.screenshot), "format": obs.screenshot_format, "width": obs.width,
            "height": obs.height, "screen": list(obs.screen), "instruction": obs.instruction, "step": obs.step,
            "a11y": obs.a11y}


def _outcome_json(out: StepOutcome) -> dict[str, Any]:
    return {"observation": _observation_json(out.observation), "reward": out.reward, "terminated": out.terminated,
            "truncated": out.truncated, "termination": out.termination, "error": out.error}


VIEW_PREFIX = "/view"
VIEW_HEADERS = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff"}
"""The view's pages carry their token in the URL: never cached, never sent on as a referrer."""


def create_app(manager: SessionManager, access: Access, views: LiveViews | None = None) -> FastAPI:
    """The server's routes over ``manager``, admitting requests that ``access`` lets in; with ``views``,
    the live view's too (the views of sessions that end are revoked)."""

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        anyio.to_thread.current_default_thread_limiter().total_tokens = THREADS
        yield

    app = FastAPI(title="osgym environment server", lifespan=lifespan, docs_url=None, redoc_url=None,
                  openapi_url=None)

    @app.middleware("http")
    async def authenticate(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        # before the body is read or validated: a stranger learns nothing about the routes' shapes
        path = request.url.path
        if path != "/v1/health" and not (views is not None and (path + "/").startswith(VIEW_PREFIX + "/")):
            caller = Caller(request.client.host if request.client else None,
                            request.client.port if request.client else None, request.headers.get("host"),
                            request.headers.get("origin"), request.scope.get("server"))
            authorization = request.headers.get("authorization")
            if path.startswith(OPENENV_PREFIX + "/"):  # OpenEnv's client can send a token only in its URL
                authorization = bearer_from_basic(authorization)
            try:
                request.state.owner = access.owner(authorization, caller)
            except (Unauthorized, Forbidden) as exc:
                status = _status(exc)
                return _error(status, str(exc), type(exc).__name__,
                              {"WWW-Authenticate": "Bearer"} if status == 401 else None)
        return await call_next(request)

    @app.exception_handler(OsgymError)
    async def osgym_error(_request: Request, exc: OsgymError) -> JSONResponse:
        status = _status(exc)
        headers = {"Retry-After": "5"} if status == 503 else None
        return _error(status, str(exc), type(exc).__name__, headers)

    @app.exception_handler(RequestValidationError)
    async def bad_request(_request: Request, exc: RequestValidationError) -> JSONResponse:
        errs = exc.errors()
        first = errs[0] if errs else {"loc": (), "msg": "invalid request"}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body") or "body"
        return _error(422, f"{where}: {first.get('msg')}", "RequestValidationError")

    def owner(request: Request) -> str:
        who: str = request.state.owner  # set by ``authenticate`` for every route but the health check
        return who

    # ---- OSGym's protocol ------------------------------------------------------------------------------
    @app.post("/reset")
    def reset(body: ResetRequest, who: str = Depends(owner)) -> dict[str, Any]:
        task = load_client_task(body.task_config)
        session = manager.open(who, task, protocol="osgym", options=OSGYM_OBSERVATION,
                               idle_timeout_s=body.timeout or None)
        return {"screenshot": _b64(session.observation.screenshot), "problem": task.instruction,
                "vm_id": session.id}

    @app.post("/step")
    def step(body: StepRequest, who: str = Depends(owner)) -> dict[str, Any]:
        session = manager.get(who, body.vm_id)
        actions = parse_osgym(body.action, screen=session.observation.screen)
        out = manager.step(who, body.vm_id, actions)
        return {"screenshot": _b64(out.observation.screenshot), "is_finish": out.done, "reward": out.reward}

    @app.post("/shutdown")
    def shutdown(body: ShutdownRequest, who: str = Depends(owner)) -> dict[str, Any]:
        ids = manager.sessions_of(who) if body.vm_id == "all" else [body.vm_id]
        for sid in ids:
            manager.close(who, sid)
        return {"vm_id": body.vm_id}

    @app.get("/screenshot")
    def screenshot(vm_id: int = Query(alias="vmId"), who: str = Depends(owner)) -> dict[str, Any]:
        return {"screenshot": _b64(manager.observe(who, vm_id).screenshot), "vm_id": vm_id}

    # ---- the native API --------------------------------------------------------------------------------
    @app.get("/v1/health")
    def health() -> dict[str, Any]:
        return {"status": "ok", "sessions": len(manager), "replicas_healthy": manager.pool.healthy,
                "screen": list(manager.pool.screen)}

    @app.get("/v1/capacity")
    def capacity(who: str = Depends(owner)) -> dict[str, Any]:
        return manager.capacity(who)

    @app.get("/v1/formats")
    def formats(_who: str = Depends(owner)) -> dict[str, Any]:
        return {"formats": list(format_names())}

    @app.get("/v1/sessions")
    def sessions(who: str = Depends(owner)) -> dict[str, Any]:
        return {"sessions": manager.sessions_of(who)}

    @app.post("/v1/sessions")
    def open_session(body: OpenRequest, who: str = Depends(owner)) -> dict[str, Any]:
        if (body.task is None) == (body.suite is None):
            raise ConfigError("expected either task (a task file) or suite (a built-in suite), actual "
                              + ("both" if body.task is not None else "neither"))
        if body.task is not None:
            task = load_client_task(body.task)
        else:
            assert body.suite is not None
            task = generate(body.suite, 1, body.seed, [body.template] if body.template else None)[0]
        session = manager.open(who, task, seed=body.seed, options=body.observation,
                               idle_timeout_s=body.idle_timeout_s)
        return {"session_id": session.id, "task_id": task.id, "instruction": task.instruction,
                "observation": _observation_json(session.observation)}

    @app.post("/v1/sessions/{session_id}/step")
    def native_step(session_id: int, body: NativeStep, who: str = Depends(owner)) -> dict[str, Any]:
        session = manager.get(who, session_id)
        actions: list[Action]
        if (body.actions is None) == (body.text is None):
            raise PolicyError("expected either actions (typed) or text (in an action format), actual "
                              + ("both" if body.actions is not None else "neither"))
        if body.actions is not None:
            actions = [parse_action(a) for a in body.actions]
        else:
            assert body.text is not None
            obs = session.observation
            ctx = ReplyContext(image_size=(obs.width, obs.height), screen=obs.screen)
            actions = get_format(body.format).parse(body.text, ctx)[1]
        return _outcome_json(manager.step(who, session_id, actions))

    @app.get("/v1/sessions/{session_id}/observation")
    def native_observation(session_id: int, who: str = Depends(owner)) -> dict[str, Any]:
        return _observation_json(manager.observe(who, session_id))

    @app.delete("/v1/sessions/{session_id}")
    def native_close(session_id: int, who: str = Depends(owner)) -> dict[str, Any]:
        manager.close(who, session_id)
        return {"session_id": session_id}

    metrics_route(app, manager)  # GET /metrics: Prometheus' text format, with a token (osgym.serving.metrics)
    if views is not None:
        _view_routes(app, manager, views, owner)
    add_openenv_routes(app, manager, access)
    app.add_middleware(BodyCap, max_bytes=MAX_BODY_BYTES)
    return app


def _view_routes(app: FastAPI, manager: SessionManager, views: LiveViews, owner: Callable[[Request], str]) -> None:
    manager.end_hooks.append(views.session_ended)

    @app.post("/v1/sessions/{session_id}/view")
    def open_view(session_id: int, request: Request, who: str = Depends(owner)) -> dict[str, Any]:
        session = manager.get(who, session_id)
        with session.lock:  # not while the session ends: its views are revoked then
            if session.ended:
                raise SessionNotFound(f"no session {session_id}: it ended")
            sock = vnc_socket_of(session.replica.api.endpoint)
            session.replica.api.request("POST", "/view/start")
            ticket = views.issue(session_id, sock, session.replica.api.socket_owner)
        base = str(request.base_url).rstrip("/")
        return {"session_id": session_id, "token": ticket.token, "page": ticket.page, "url": f"{base}{ticket.page}",
                "websocket": f"ws{base.removeprefix('http')}{ticket.websocket_path}"}

    @app.websocket(VIEW_PREFIX + "/{token}/websockify")
    async def view_socket(websocket: WebSocket, token: str) -> None:
        origin = websocket.headers.get("origin")
        if origin is not None and not same_origin(origin, websocket.headers.get("host")):
            await websocket.close(code=1008)  # a page of another site: refused before the upgrade (403)
            return
        await relay(websocket, views, token)

    @app.get(VIEW_PREFIX)
    @app.get(VIEW_PREFIX + "/")
    def view_without_token() -> Response:
        return _error(401, "expected a view token: /view/{token}/vnc.html (POST /v1/sessions/{id}/view issues one)",
                      "Unauthorized")

    @app.get(VIEW_PREFIX + "/{token}")
    @app.get(VIEW_PREFIX + "/{token}/{path:path}")
    def view_file(token: str, path: str = "") -> Response:
        if not path and views.valid(token):  # the short URL: on to the page, set up for this view
            return RedirectResponse(views.page(token), status_code=303, headers=VIEW_HEADERS)
        try:
            return FileResponse(views.file(token, path), headers=VIEW_HEADERS)
        except PermissionError as exc:
            return _error(403, str(exc), "Forbidden")
        except FileNotFoundError:
            return _error(404, f"no file {path!r} in the live view", "NotFound")
