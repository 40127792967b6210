"""``osgym serve``: a replica pool, a session manager, a dataset writer and the HTTP app, in one process.

:func:`serving` builds the parts and tears them down in order (sessions ended and recorded, the
run's manifest committed, the pool's containers removed); :func:`serve` runs uvicorn on them until
interrupted; :class:`ServerThread` runs them on a background thread (tests, benchmarks, notebooks).

One server process is one dataset run (``run_id``): every episode it serves is a row, in the same
Parquet schema as a collected one. Shards commit on the writer's time bound (``shard_max_age_s``), so a
server that dies loses at most that much; the manifest is written when the server stops.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import FrameType
from typing import Any, Literal

import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel, ConfigDict, Field, model_validator

from osgym.collection.collector import new_run_id
from osgym.dataset.writer import DEFAULT_SHARD_MAX_AGE_S, DatasetWriter
from osgym.errors import ConfigError
from osgym.replicas.client import SettleMode
from osgym.replicas.parking import MIN_RESIDENT_MIB
from osgym.replicas.pool import ReplicaPool
from osgym.replicas.warm import tier_problem
from osgym.serving.app import create_app
from osgym.serving.auth import Access, new_token
from osgym.serving.limits import ServeLimits
from osgym.serving.liveview import LiveViews
from osgym.serving.sessions import SessionManager
from osgym.settings import settings
from osgym.sigterm import exit_on_sigterm

__all__ = ["ServeConfig", "ServerThread", "Serving", "serve", "serving"]


class ServeConfig(BaseModel):
    """What ``osgym serve`` runs: where it listens, its replicas, its limits and where episodes go."""

    model_config = ConfigDict(extra="forbid")
    host: str = "127.0.0.1"
    port: int = Field(20000, ge=0, le=65535)
    tier: str = Field("apps", pattern="^(desktop|apps)$")
    image: str | None = None
    """An image tag; default: the tier's current image (built if missing)."""
    replicas: int = Field(2, ge=1)
    standby: int = Field(1, ge=0)
    screen: tuple[int, int] = (1920, 1080)
    """OSGym's client checks that screenshots are 1920x1080."""
    reset: Literal["cold", "restore"] | None = None
    """How each session's replica starts: it boots, or it is restored from a checkpoint (osgym.replicas.restore);
    unset: ``OSGYM_REPLICA_RESET``."""
    warm: Literal["desktop", "libreoffice"] = "desktop"
    """With ``reset: restore``, the state checkpointed (osgym.replicas.warm); ``libreoffice`` on the apps tier only."""
    tokenless_loopback: bool = False
    live_view: bool = True
    """``POST /v1/sessions/{id}/view``: a view-only noVNC page per session, relayed by the server itself."""
    max_steps: int = Field(100, ge=1)
    idle_timeout_s: float = Field(600.0, gt=0)
    max_sessions_per_token: int = Field(8, ge=1)
    lease_timeout_s: float = Field(60.0, gt=0)
    settle_s: float = Field(0.5, ge=0)
    settle_mode: SettleMode = "damage"
    first_settle_s: float = Field(5.0, ge=0)
    """After a task's setup, wait up to this long for the screen to be quiet ``first_quiet_s`` (0: no wait)."""
    first_quiet_s: float = Field(0.5, ge=0, le=5)
    park_after_s: float | None = Field(None, gt=0)
    """Park the replica of a session idle this long (its memory beyond ``park_mib`` to its swap share; needs
    root, a swap share and zram: :mod:`osgym.serving.idle_parking`); None: never."""
    park_mib: int = Field(224, ge=MIN_RESIDENT_MIB)
    record: bool = True
    store: str = "data"
    dataset: str = "served"
    run_id: str | None = None
    shard_max_age_s: float = Field(DEFAULT_SHARD_MAX_AGE_S, gt=0)

    @model_validator(mode="after")
    def _parks_before_reclaim(self) -> ServeConfig:
        if self.park_after_s is not None and self.park_after_s >= self.idle_timeout_s:
            raise ValueError(f"park_after_s ({self.park_after_s:g}) must be under idle_timeout_s "
                             f"({self.idle_timeout_s:g}): a session is reclaimed before it would be parked")
        return self

    @model_validator(mode="after")
    def _warm_on_its_tier(self) -> ServeConfig:
        if problem := tier_problem(self.warm, self.tier):
            raise ValueError(problem)
        if self.warm != "desktop" and self.reset != "restore":
            raise ValueError("warm: a warm state is what reset: restore checkpoints; add --reset restore")
        return self

    def limits(self) -> ServeLimits:
        return ServeLimits(max_steps=self.max_steps, idle_timeout_s=self.idle_timeout_s,
                           max_sessions_per_owner=self.max_sessions_per_token, lease_timeout_s=self.lease_timeout_s,
                           settle_s=self.settle_s, settle_mode=self.settle_mode,
                           first_settle_s=self.first_settle_s,
                           first_quiet_s=self.first_quiet_s, park_after_s=self.park_after_s,
                           park_mib=self.park_mib)


@dataclass
class Serving:
    """The parts of a running server."""

    config: ServeConfig
    pool: ReplicaPool
    manager: SessionManager
    app: FastAPI
    writer: DatasetWriter | None
    printed_token: str | None = None
    """The token made at start when the operator configured none (printed once, never stored)."""
    run_id: str = ""
    views: LiveViews | None = None


@contextlib.contextmanager
def serving(config: ServeConfig, *, docker_client: Any = None, pool_name: str | None = None,
            tokens: list[str] | None = None) -> Iterator[Serving]:
    """Start the pool, the writer and the manager; on exit end every session, commit the run, close the pool.

    Tokens come from ``tokens``, else ``OSGYM_SERVE_TOKENS``; with neither and no tokenless loopback
    access, one is made (``Serving.printed_token``).

    Raises:
        ConfigError: bad tokens, tokenless access off loopback, or a bad store.
        PoolError, CapacityError: if the pool cannot start.
    """
    from osgym.replicas.images import ensure_image

    configured = tokens if tokens is not None else [t.get_secret_value() for t in settings().serve_tokens]
    made = None
    if not configured and not config.tokenless_loopback:
        made = new_token()
        configured = [made]
    access = Access.with_tokens(configured, open_loopback=config.tokenless_loopback, host=config.host)
    image = config.image or ensure_image(config.tier, client=docker_client)
    run_id = config.run_id or new_run_id()
    writer = None
    if config.record:
        try:
            writer = DatasetWriter(config.store, config.dataset, run_id, shard_max_age_s=config.shard_max_age_s,
                                   run_config={"serve": config.model_dump(mode="json", exclude={"run_id"}),
                                               "image": image})
        except ValueError as exc:
            raise ConfigError(f"serve: store {config.store!r} dataset {config.dataset!r}: {exc}") from exc
    pool = ReplicaPool(image, config.replicas, standby=config.standby, name=pool_name,
                       docker_client=docker_client, screen=config.screen, reset=config.reset, warm=config.warm)
    manager: SessionManager | None = None
    views = LiveViews() if config.live_view else None
    try:
        pool.start()
        manager = SessionManager(pool, run_id=run_id, image=image, sink=writer.add if writer else None,
                                 limits=config.limits())
        app = create_app(manager, access, views)
        yield Serving(config, pool, manager, app, writer, made, run_id, views)
    except BaseException:
        if writer is not None and manager is None:
            writer.abort()
        raise
    finally:
        # Each step runs even if one before it raised or a second Ctrl-C or SIGTERM cut it short (ExitStack),
        # so the replicas never outlive the server (pool.close itself holds such signals until it is done).
        with contextlib.ExitStack() as teardown:
            if writer is not None:
                teardown.callback(lambda: writer.finalize() if writer.state == "open" else None)
            teardown.callback(pool.close)
            if views is not None:
                teardown.callback(views.close)
            if manager is not None:
                teardown.callback(manager.shutdown)  # first: every live session becomes a row before the commit


class _Server(uvicorn.Server):
    """uvicorn's server, which also calls ``on_exit`` at the first Ctrl-C or SIGTERM.

    uvicorn stops gracefully: it waits for every request under way, then raises the signal again. A reset
    waiting for a free replica would hold it for up to the lease timeout (a minute by default) while the
    replicas stay up, and whoever sent the signal may not wait (a supervisor's SIGKILL, a second signal).
    """

    def __init__(self, config: uvicorn.Config, on_exit: Callable[[], None]) -> None:
        super().__init__(config)
        self._on_exit = on_exit

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        # on a thread: a signal handler must not wait for a lock that the code it interrupted may hold
        threading.Thread(target=self._on_exit, name="osgym-serve-drain", daemon=True).start()


def serve(config: ServeConfig, log: Callable[[str], None] = print) -> None:
    """Run the server in the foreground until interrupted (Ctrl-C or SIGTERM), then stop it cleanly.

    At the signal, opens waiting for a replica fail at once (:meth:`SessionManager.drain`); the requests
    acting on a replica finish, then the sessions are recorded, the replicas removed and the run committed.
    """
    exit_on_sigterm()  # uvicorn raises SIGTERM again when it has stopped: under Python's default, nothing cleans up
    with serving(config) as s:
        if s.printed_token:
            log(f"token (shown once; clients send 'Authorization: Bearer <token>'): {s.printed_token}")
        where = f"{config.store}/{config.dataset} run {s.run_id}" if s.writer else "not recorded"
        view = "; live views: POST /v1/sessions/{id}/view" if s.views else ""
        log(f"serving {config.replicas} {config.tier} replicas at {config.screen[0]}x{config.screen[1]} on "
            f"http://{config.host}:{config.port} (OSGym protocol, /v1, OpenEnv at /openenv); episodes: {where}{view}")
        server = _Server(uvicorn.Config(s.app, host=config.host, port=config.port, log_level="warning"),
                         on_exit=s.manager.drain)
        with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how an operator stops it (uvicorn.run's too)
            server.run()


class ServerThread:
    """Run an app with uvicorn on a background thread, on a free port of 127.0.0.1 (or ``port``).

    Example::

        with serving(config) as s, ServerThread(s.app) as server:
            httpx.post(f"{server.url}/reset", ...)
    """

    def __init__(self, app: FastAPI, host: str = "127.0.0.1", port: int = 0) -> None:
        if port == 0:
            with socket.socket() as sock:
                sock.bind((host, 0))
                port = sock.getsockname()[1]
        self.url = f"http://{host}:{port}"
        self._server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning",
                                                     timeout_keep_alive=30))
        self._thread = threading.Thread(target=self._server.run, name="osgym-serve", daemon=True)

    def __enter__(self) -> ServerThread:
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise ConfigError(f"the server did not start on {self.url}")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=30)
