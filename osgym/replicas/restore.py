"""Reset by restore: a pool's replicas restored from a checkpoint of a warmed one (issue 41).

A pool made with ``reset="restore"`` uses :class:`RestoringProvisioner`. For each host it finds, or makes once,
a checkpoint of a replica brought to the pool's warm state (:mod:`osgym.replicas.warm`) and kept in
:class:`CheckpointCache`; every replica it then starts is a new container restored from that checkpoint
(:func:`osgym.replicas.checkpoint.restore`), with its own writable layer, network namespace, run directory
and token (the template's, which every clone holds at first, is replaced before the replica is ready).

A checkpoint is kept per Docker host, image, container configuration (screen, limits, environment) and warm
state, in ``OSGYM_CHECKPOINT_DIR`` (root's, mode 0700); a changed image or configuration makes another key, and
the checkpoints it replaces are removed. When a checkpoint cannot be made or a restore fails, the replica starts
cold instead, and the pool records why (a ``restore_failed`` event, with the end of CRIU's log): the episode
runs, and nothing hides that it ran on a cold replica.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import json
import os
import secrets
import shutil
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import docker.errors
import requests.exceptions

from osgym.errors import ConfigError, OsgymError, PoolError, ReplicaError, RequestRejected
from osgym.replicas.accounts import SERVER_UID
from osgym.replicas.checkpoint import CRIU_RUNTIME, Checkpoint, CheckpointError, check_daemon, make_checkpoint, restore
from osgym.replicas.client import Replica
from osgym.replicas.hosts import DockerHost
from osgym.replicas.provision import Provisioner
from osgym.replicas.spec import ReplicaSpec
from osgym.replicas.warm import check_warm_state, describe, warm_up
from osgym.settings import settings

__all__ = ["COLD", "RESTORE", "RESETS", "WARM_SCREENSHOT", "CheckpointCache", "RestoringProvisioner", "check_reset",
           "restore_refusals"]

COLD, RESTORE = "cold", "restore"
RESETS = (COLD, RESTORE)
WARM_SCREENSHOT = "warm.png"
"""The template's screenshot once warm, kept beside its checkpoint (``<key>/warm.png``)."""
TEMPLATE_START_S = 180.0
"""How long a template may take to start: it starts while the pool's first replicas wait for it."""


def check_reset(reset: str | None, warm: str, spec: ReplicaSpec, kind: str) -> str:
    """Return ``reset`` if a pool of ``spec`` can start its replicas that way, else raise :class:`ConfigError`;
    ``None``: the operator's ``OSGYM_REPLICA_RESET`` where the pool can restore, else ``cold``."""
    refused = restore_refusals(kind, spec.transport, spec.compat, networked=spec.network_kind is not None)
    if reset is None:
        reset = settings().replica_reset
        if reset == RESTORE and refused:
            return COLD
    if reset not in RESETS:
        raise ConfigError(f"reset: expected one of {', '.join(RESETS)}, actual {reset!r:.40}")
    check_warm_state(warm)
    if reset == RESTORE and refused:
        raise ConfigError(f"reset: restore works with container replicas on the unix transport without a "
                          f"network, actual {', '.join(refused)}: a clone's control socket comes back in its "
                          "run directory, and its new network namespace has no interface to restore into")
    return reset


def restore_refusals(kind: str, transport: str, compat: bool, *, networked: bool) -> list[str]:
    """What keeps replicas of this kind, transport, mode and network from being restored (empty: nothing).

    >>> restore_refusals("container", "unix", False, networked=False), restore_refusals("hollow", "unix", True,
    ...                                                                                  networked=False)
    ([], ['hollow replicas', 'compat'])
    """
    return [what for what, on in (("hollow replicas", kind != "container"), ("the tcp transport", transport != "unix"),
                                  ("compat", compat), ("a network", networked)) if on]


class CheckpointCache:
    """Checkpoints of warmed replicas kept in ``root``, one directory per key (``<key>/checkpoint`` holds CRIU's
    images and ``<key>/meta.json`` what a clone is created from). Safe across threads and processes: a key is
    made under an exclusive lock on ``<key>.lock``, into a temporary directory renamed in place when complete."""

    def __init__(self, root: Path):
        self.root = root

    def _open_root(self) -> None:
        if os.geteuid() != 0:
            raise CheckpointError("reset by restore needs root: a clone's checkpoint is placed in the Docker "
                                  "daemon's data-root, and CRIU's images must be in a directory only root can write")
        self.root.mkdir(parents=True, mode=0o700, exist_ok=True)
        st = self.root.lstat()
        if not self.root.is_dir() or self.root.is_symlink() or st.st_uid != 0 or st.st_mode & 0o022:
            raise CheckpointError(f"checkpoint directory {self.root} must be a directory of root's that no one else "
                                  "may write (OSGYM_CHECKPOINT_DIR)")

    def load(self, client: docker.DockerClient, key: str) -> Checkpoint | None:
        """The checkpoint kept under ``key``, or None if there is none, or it is incomplete (then removed)."""
        d = self.root / key
        try:
            meta = json.loads((d / "meta.json").read_text())
            token = (d / "token").read_text()
            client.images.get(meta["image"])
            cp = Checkpoint(d / "checkpoint", meta["image"], meta["create"], token)
            if (cp.images_dir / "inventory.img").is_file():
                return cp
        except (OSError, ValueError, KeyError, docker.errors.ImageNotFound):
            pass
        shutil.rmtree(d, ignore_errors=True)
        return None

    def get(self, client: docker.DockerClient, key: str, family: str,
            make: Callable[[Path], Checkpoint]) -> tuple[Checkpoint, bool]:
        """The checkpoint under ``key``, made by ``make(directory)`` (a directory that must not exist) if there is none;
        returns it and whether it was made now. Checkpoints of the same ``family`` (host, image repository,
        screen, warm state) under other keys are removed once a new one is made: the image or the
        configuration changed.

        Raises:
            CheckpointError: if the directory is not root's, or ``make`` fails.
        """
        self._open_root()
        with open(self.root / f"{key}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # another pool of this host may be making the same one
            found = self.load(client, key)
            if found is not None:
                return found, False
            tmp = self.root / f".{key}.{uuid.uuid4().hex[:8]}"
            tmp.mkdir(mode=0o700)
            try:
                cp = make(tmp / "checkpoint")
                with open(os.open(tmp / "token", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
                    f.write(cp.token)
                (tmp / "meta.json").write_text(json.dumps({"image": cp.image, "create": cp.create, "family": family,
                                                           "made_at": time.time(), "dump_s": cp.dump_s}, indent=1))
                os.rename(tmp, self.root / key)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
            self._prune(client, family, keep=key)
            return dataclasses.replace(cp, directory=self.root / key / "checkpoint"), True  # where it now is

    def _prune(self, client: docker.DockerClient, family: str, keep: str) -> None:
        for meta_file in self.root.glob("*/meta.json"):
            d = meta_file.parent
            with contextlib.suppress(OSError, ValueError):
                meta = json.loads(meta_file.read_text())
                if d.name != keep and meta.get("family") == family:
                    with contextlib.suppress(docker.errors.APIError):  # clones of it still run: next time
                        client.api.remove_image(meta["image"])
                        shutil.rmtree(d, ignore_errors=True)
                        (self.root / f"{d.name}.lock").unlink(missing_ok=True)


class RestoringProvisioner(Provisioner):
    """A :class:`~osgym.replicas.provision.Provisioner` whose replicas are restored from a checkpoint of a warmed
    one, falling back to a cold start (recorded as a ``restore_failed`` event) where that fails.

    Args:
        warm: the warm state the checkpoint is taken in (:data:`osgym.replicas.warm.WARM_STATES`).
        cache_dir: where checkpoints are kept (``OSGYM_CHECKPOINT_DIR``).
        pool: the pool class (:class:`~osgym.replicas.pool.ReplicaPool`), which starts the template: passed in,
            since the pool imports this module.
        **kw: as :class:`~osgym.replicas.provision.Provisioner`.
    """

    def __init__(self, spec: ReplicaSpec, *, warm: str, cache_dir: Path, pool: Any, **kw: Any):
        super().__init__(spec, **kw)
        self.warm, self.pool_class = warm, pool
        self.cache = CheckpointCache(cache_dir)
        self._checkpoints: dict[str, Checkpoint | CheckpointError] = {}
        self._host_locks: dict[str, threading.Lock] = {}
        self._locks_lock = threading.Lock()

    def key(self, host: DockerHost) -> tuple[str, str]:
        """The cache key of this pool's checkpoint on ``host``, and its family (see :meth:`CheckpointCache.get`)."""
        # the template's configuration: this pool's but for the runtime (_make starts it under CRIU's), named below
        cfg = self.container_config("", Path("/"), None)
        host_kw = {k: v for k, v in cfg["host_kw"].items() if k not in ("binds", "runtime")}
        image_id = host.client.images.get(self.spec.image).id
        daemon = host.client.info()["ID"]
        described = json.dumps({"daemon": daemon, "image": image_id, "env": cfg["environment"], "host": host_kw,
                                "network_disabled": cfg.get("network_disabled", False),
                                "warm": self.warm, "how": describe(self.warm), "runtime": CRIU_RUNTIME},
                               sort_keys=True, default=str)
        screen = f"{self.spec.screen[0]}x{self.spec.screen[1]}"
        family = f"{daemon}:{self.spec.image.rsplit(':', 1)[0]}:{screen}:{self.warm}"
        return hashlib.sha256(described.encode()).hexdigest()[:20], family

    def checkpoint(self, host: DockerHost) -> Checkpoint:
        """This pool's checkpoint on ``host``: found in the cache, or made now (once; other starts wait for it).

        Raises:
            CheckpointError: if it cannot be made (the same error for every later start on this host).
        """
        with self._locks_lock:
            lock = self._host_locks.setdefault(host.name, threading.Lock())
        with lock:
            known = self._checkpoints.get(host.name)
            if isinstance(known, CheckpointError):
                raise known
            if known is not None:
                return known
            try:
                check_daemon(host.client)
                key, family = self.key(host)
                cp, made = self.cache.get(host.client, key, family, lambda d: self._make(host, d))
            except CheckpointError as exc:
                self._checkpoints[host.name] = exc
                raise
            except (OsgymError, docker.errors.DockerException, requests.exceptions.RequestException) as exc:
                if self.registry.closed:
                    raise PoolError(f"pool {self.spec.pool_name} closed while its checkpoint was made") from exc
                err = CheckpointError(f"no checkpoint of a warm ({self.warm}) replica on {host.name}: "
                                      f"{type(exc).__name__}: {exc}")
                self._checkpoints[host.name] = err
                raise err from exc
            self._checkpoints[host.name] = cp
            self.recorder.record("checkpointed", "", host.name, f"{'made' if made else 'found'} {cp.directory}",
                                 elapsed_s=cp.dump_s if made else None)
            return cp

    def _make(self, host: DockerHost, directory: Path) -> Checkpoint:
        """Start a template replica under CRIU's runtime, warm it, and checkpoint it into ``directory``."""
        spec = self.spec
        template = self.pool_class(spec.image, 1, standby=0, name=f"{spec.pool_name}-warm", docker_client=host.client,
                               host_name=host.name, limits=spec.limits, screen=spec.screen,
                               memory_merge=spec.memory_merge, runtime=CRIU_RUNTIME, health_interval=0, reset=COLD,
                               start_timeout=max(spec.start_timeout, TEMPLATE_START_S), timeouts=spec.timeouts,
                               run_dir=spec.run_dir.parent, sample_interval=0, force=True)
        try:
            template.start()
            replica = template.acquire(timeout=TEMPLATE_START_S)
            token = secrets.token_urlsafe(24)  # the template's, which its clones hold until given their own
            replica.replace_token(token)
            (directory.parent / WARM_SCREENSHOT).write_bytes(warm_up(replica, self.warm))
            replica.api.close()  # CRIU cannot dump a connection whose other end is on the host
            assert replica.container is not None
            return make_checkpoint(host.client, replica.container.id, directory, token)
        finally:
            template.close()

    def start_one(self, host: DockerHost) -> Replica:
        """Restore one replica on ``host`` from this pool's checkpoint; start it cold if that fails.

        Raises:
            ReplicaError: if the cold start that follows a failed restore fails too.
            PoolError: if the pool closed.
        """
        try:
            return self.restore_one(host, self.checkpoint(host))
        except (CheckpointError, ReplicaError, RequestRejected) as exc:
            if self.registry.closed:
                raise PoolError(f"pool {self.spec.pool_name} is closed") from exc
            with self.registry.lock:
                self.stats.restore_failures += 1
            self.recorder.record("restore_failed", "", host.name, f"{type(exc).__name__}: {exc}"[:4000])
            return super().start_one(host)

    def restore_one(self, host: DockerHost, cp: Checkpoint) -> Replica:
        """Restore a new replica from ``cp`` on ``host``, give it its own token, wait until it is ready, queue it.

        Raises:
            CheckpointError: if CRIU's restore fails; ReplicaError: if the clone does not answer as a replica.
        """
        spec = self.spec
        rid = uuid.uuid4().hex[:10]
        token = secrets.token_urlsafe(24)
        rdir = spec.run_dir / rid
        t0 = time.monotonic()
        rdir.mkdir(mode=0o700)
        os.chown(rdir, SERVER_UID, SERVER_UID)
        cid: str | None = None
        try:
            labels = self.container_config(rid, rdir, None)["labels"]
            done = restore(host.client, cp, name=f"{spec.pool_name}-{rid}", labels=labels, run_dir=rdir)
            cid = done.container_id
            replica = Replica(rid, f"unix:{rdir / 'control.sock'}", cp.token, host=host.name,
                              container=host.client.containers.prepare_model({"Id": cid}), timeouts=spec.timeouts,
                              socket_owner=SERVER_UID, confine_root_steps=True)
            replica.loopback = None  # type: ignore[attr-defined]
            t_restored = time.monotonic()
            replica.replace_token(token)  # from here on, the template's token opens nothing
            t_token = time.monotonic()
            _, t_health, t_shot = self.wait_ready(replica, host, t0)
        except BaseException:
            if cid is not None:
                with contextlib.suppress(docker.errors.DockerException, requests.exceptions.RequestException):
                    host.client.api.remove_container(cid, force=True)
            shutil.rmtree(rdir, ignore_errors=True)
            raise
        with self.registry.lock:
            self.registry.add(replica, host)
            self.stats.started += 1
            self.stats.restored += 1
        self.recorder.replica(replica, "created", "restored")
        self.accountant.track(rid, cid)
        return self.queue_ready(replica, t0, {"create": done.create_s, "restore": done.restore_s,
                                              "token": t_token - t_restored, "health": t_health - t_token,
                                              "screenshot": t_shot - t_health})
