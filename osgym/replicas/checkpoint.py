"""Checkpoints of warmed replicas, restored into new containers (reset by restore, issue 41).

One concept: :func:`make_checkpoint` freezes a warmed replica's container with CRIU (Docker's experimental
``checkpoint create``) into a directory on the host, and keeps its filesystem as an image;
:func:`restore` makes a NEW container from that image and starts it from the checkpoint (``start
--checkpoint``), so that Docker sees every clone as its own container: exec, labels, removal and
accounting work on it as on a cold replica. Each clone has its own writable layer, network namespace and
run directory; its memory and tmpfs contents (``/tmp``, the agent's home) come from the checkpoint.

The daemon must run in experimental mode with a runtime that finds CRIU 4.2 (:data:`CRIU_RUNTIME`, the
runc wrapper that ``make criu`` installs), and the template must have run under that runtime:
``docker info`` shows both. docs/design-notes.md ("Reset by restore: the route") says why this route
and what each CRIU option in the wrapper's configuration is for.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import time
import uuid
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker
import requests

from osgym.errors import ReplicaError
from osgym.replicas.network import HOSTS_FILE, write_hosts
from osgym.replicas.provision import CTL_MOUNT

__all__ = ["CRIU_RUNTIME", "RUNC_CRIU", "Checkpoint", "CheckpointError", "Restored", "check_daemon", "make_checkpoint",
           "remove_checkpoint", "restore"]

CRIU_RUNTIME = "runc-criu"
"""The runtime name under which dockerd knows osgym's runc wrapper (``/opt/osgym/criu/bin/runc-criu``)."""
RUNC_CRIU = Path(os.environ.get("OSGYM_CRIU_PREFIX", "/opt/osgym/criu")) / "bin" / "runc-criu"
"""The runc wrapper ``make criu`` installs (scripts/criu/runc-criu), registered with dockerd as :data:`CRIU_RUNTIME`."""
RESTORE_CONF = RUNC_CRIU.parent.parent / "etc" / "restore.conf"
"""CRIU's options for a restore, which ``make criu`` installs beside the wrapper (scripts/criu/restore.conf)."""
NETNS_SCRIPT = "restore-netns"
"""The action script that sets up a clone's network namespace (scripts/criu/restore-netns.c), which
:data:`RESTORE_CONF` must name: without it a clone's loopback stays down."""
RESTORE_TIMEOUT_S = 30
"""How long CRIU may take to restore a clone (0.5-1.2 s here; minutes when a checkpoint's pages were damaged)."""
RESTORE_TIMEOUT_ENV = "OSGYM_RESTORE_TIMEOUT_S"
"""The clone's environment variable through which the runtime wrapper (scripts/criu/runc-criu) learns the bound."""
CHECKPOINT_NAME = "warm"
"""The checkpoint's name inside its directory (Docker keeps each under ``<dir>/<name>``)."""
CRIU_LOGS = Path(os.environ.get("OSGYM_CRIU_LOGS", "/var/log/osgym-criu"))
"""Where the wrapper keeps CRIU's logs of a failed checkpoint or restore, as ``<container id>-<log>``."""
IMAGES_POINTER = "osgym-images"
"""The file in a container's checkpoint that names the directory of CRIU's images (see scripts/criu/runc-criu)."""
SOCKET_TMP = "control.sock.tmp"
"""The name the server binds its socket under before renaming it: the name CRIU binds it under again."""


class CheckpointError(ReplicaError):
    """Raised when a checkpoint cannot be made or restored; the message carries the end of CRIU's log."""


@dataclass(frozen=True)
class Checkpoint:
    """A warmed replica frozen on one Docker host: CRIU's images in ``directory`` and its filesystem as
    ``image``. ``token`` is the template's control token, which every clone keeps in memory until it is
    given its own (the repr hides it)."""

    directory: Path
    image: str
    create: dict[str, Any]
    token: str = field(repr=False)
    dump_s: float = 0.0
    commit_s: float = 0.0

    @property
    def images_dir(self) -> Path:
        """Where CRIU's images are: Docker writes a checkpoint into ``<directory>/<name>``."""
        return self.directory / CHECKPOINT_NAME

    def size_bytes(self) -> int:
        """The CRIU images' size on disk."""
        return sum(p.stat().st_size for p in self.images_dir.rglob("*") if p.is_file())


def check_daemon(client: docker.DockerClient) -> None:
    """Raise :class:`CheckpointError` unless the daemon can checkpoint and restore (experimental,
    :data:`CRIU_RUNTIME`, and the restore options of this ``make criu``)."""
    info = client.info()
    missing = []
    if not info.get("ExperimentalBuild"):
        missing.append("experimental mode (dockerd --experimental)")
    if CRIU_RUNTIME not in (info.get("Runtimes") or {}):
        missing.append(f"the runtime {CRIU_RUNTIME} (make criu, then dockerd --add-runtime {CRIU_RUNTIME}={RUNC_CRIU})")
    try:
        conf = RESTORE_CONF.read_text()
    except OSError:
        conf = ""
    if not re.search(rf"^action-script\s+\S*/{NETNS_SCRIPT}\s*$", conf, re.MULTILINE):
        missing.append(f"CRIU's action script {NETNS_SCRIPT} in {RESTORE_CONF}, which sets up a clone's network "
                       "(installed by an older `make criu`: run it again)")
    if missing:
        raise CheckpointError(f"this Docker daemon cannot checkpoint replicas: it lacks {' and '.join(missing)}")


def _criu_log(error: str, directory: Path, name: str, cid: str) -> str:
    """The errors and warnings at the end of CRIU's log: the one the runtime's error names (in the task's
    bundle, gone once the container is removed), the copy the wrapper kept (:data:`CRIU_LOGS`), or ``name``
    under ``directory``."""
    logs = [Path(p) for p in re.findall(r"(/[^\s:]+\.log)\b", error)]
    logs += [CRIU_LOGS / f"{cid}-{name}", *sorted(directory.rglob(name))]
    for log in logs:
        with contextlib.suppress(OSError):
            text = log.read_text(errors="replace")
            if not log.is_relative_to(directory):  # keep it: the bundle goes with the container
                (directory / log.name).write_text(text)
                log = directory / log.name
            lines = text.splitlines()
            errors = [ln.strip() for ln in lines if "Error" in ln or "Warn" in ln][-12:]
            return f"CRIU's log {log}:\n  " + "\n  ".join(errors or lines[-8:])
    return f"no CRIU log left (looked for {name} under {directory})"


def _post(client: docker.DockerClient, path: str, cid: str, *, json: dict[str, Any] | None = None,
          params: dict[str, str] | None = None) -> None:
    """POST to Docker's API where docker-py has no method (checkpoints); raises docker.errors.APIError."""
    api: Any = client.api
    url = api._url(path, cid)
    api._raise_for_status(api._post_json(url, data=json) if json is not None else api._post(url, params=params))


def make_checkpoint(client: docker.DockerClient, container_id: str, directory: Path, token: str) -> Checkpoint:
    """Checkpoint the running replica ``container_id`` into ``directory`` (created, must not exist) and
    commit its filesystem; the container stops (CRIU's dump ends its processes) and the caller removes it.

    Close every connection to the replica's control socket first (``replica.api.close()``): an accepted
    connection whose peer is on the host is a socket CRIU cannot find the other end of, and the dump fails.
    ``token`` is the replica's bearer token, which every clone keeps until :meth:`Replica.replace_token`.

    Raises:
        CheckpointError: if the daemon cannot checkpoint, ``directory`` exists, or CRIU's dump or the commit fails.
    """
    check_daemon(client)
    api = client.api
    inspect = api.inspect_container(container_id)
    if inspect["HostConfig"].get("Runtime") != CRIU_RUNTIME:
        raise CheckpointError(f"container {container_id[:12]} runs under {inspect['HostConfig'].get('Runtime')!r}, "
                              f"not {CRIU_RUNTIME}: only a replica started under CRIU's runtime can be checkpointed")
    try:
        directory.mkdir(parents=True, mode=0o700)
    except FileExistsError:
        raise CheckpointError(f"{directory} exists: a checkpoint goes into a new directory") from None
    t0 = time.monotonic()
    try:
        _post(client, "/containers/{0}/checkpoints", container_id,
              json={"CheckpointID": CHECKPOINT_NAME, "CheckpointDir": str(directory), "Exit": True})
    except (docker.errors.APIError, requests.RequestException) as exc:
        log = _criu_log(str(exc), directory, "dump.log", container_id)
        raise CheckpointError(f"checkpoint of {container_id[:12]} failed: {exc}\n{log}") from exc
    dump_s = time.monotonic() - t0
    t1 = time.monotonic()
    try:
        image = api.commit(container_id, repository="osgym-checkpoint", tag=uuid.uuid4().hex[:12],
                           pause=False)["Id"]
    except docker.errors.APIError as exc:
        raise CheckpointError(f"commit of the checkpointed {container_id[:12]} failed: {exc}") from exc
    config, host = inspect["Config"], inspect["HostConfig"]
    create = {"environment": config.get("Env") or [], "hostname": config.get("Hostname"),
              "labels": config.get("Labels") or {}, "host_config": host,
              "network_disabled": bool(config.get("NetworkDisabled"))}
    (directory / "create.json").write_text(json.dumps({"image": image, **create}, indent=1))
    return Checkpoint(directory, image, create, token, dump_s=dump_s, commit_s=time.monotonic() - t1)


@dataclass(frozen=True)
class Restored:
    """A clone: its container id and the seconds its creation and its restore took."""

    container_id: str
    create_s: float
    restore_s: float


def restore(client: docker.DockerClient, checkpoint: Checkpoint, *, name: str, labels: dict[str, str],
            run_dir: Path | None = None, time_limit_s: int = RESTORE_TIMEOUT_S) -> Restored:
    """Create the container ``name`` from ``checkpoint`` and start it from the checkpoint.

    ``labels`` replace the template's (a clone is its own replica); ``run_dir`` is the clone's control
    directory, bound where the template's was, where its socket appears as ``control.sock`` when this returns.
    CRIU's restore is stopped after ``time_limit_s`` (by the runtime wrapper, which reads it from the clone's
    environment), and the restore fails.

    Raises:
        CheckpointError: if the container cannot be created or CRIU's restore fails (the container is removed).
    """
    api = client.api
    host_config = dict(checkpoint.create["host_config"])
    if run_dir is not None:
        # the clone's own run directory where the template's was, and the hosts file in it (no network)
        ours = {CTL_MOUNT: f"{run_dir}:{CTL_MOUNT}:rw", "/etc/hosts": f"{run_dir / HOSTS_FILE}:/etc/hosts:ro"}
        binds = [ours.get(b.split(":")[1], b) for b in host_config.get("Binds") or []]
        host_config["Binds"] = binds if ours[CTL_MOUNT] in binds else [*binds, ours[CTL_MOUNT]]
        if ours["/etc/hosts"] in binds:
            try:
                write_hosts(run_dir)
            except OSError as exc:
                raise CheckpointError(f"cannot write clone {name}'s hosts file in {run_dir}: {exc}") from exc
    t0 = time.monotonic()
    try:
        cid = api.create_container(checkpoint.image, name=name, detach=True, hostname=checkpoint.create["hostname"],
                                   environment=[*checkpoint.create["environment"],
                                                f"{RESTORE_TIMEOUT_ENV}={int(time_limit_s)}"], labels=labels,
                                   host_config=host_config,
                                   # the template's: CRIU restores into the mounts and namespaces it had
                                   network_disabled=checkpoint.create.get("network_disabled", False))["Id"]
    except docker.errors.APIError as exc:
        raise CheckpointError(f"creating the clone {name} failed: {exc}") from exc
    t1 = time.monotonic()
    try:
        _place_images(client, cid, checkpoint.images_dir)
    except OSError as exc:  # before the API call: requests' and docker's errors are OSErrors too
        with contextlib.suppress(docker.errors.APIError):
            api.remove_container(cid, force=True)
        raise CheckpointError(f"cannot place the checkpoint in clone {name}'s directory ({exc}): restoring needs "
                              f"the daemon's data-root on this host, and root") from exc
    try:
        _post(client, "/containers/{0}/start", cid, params={"checkpoint": CHECKPOINT_NAME})
    except (docker.errors.APIError, requests.RequestException) as exc:
        log = _criu_log(str(exc), checkpoint.directory, "restore.log", cid)
        with contextlib.suppress(docker.errors.APIError):
            api.remove_container(cid, force=True)
        raise CheckpointError(f"restoring {name} from {checkpoint.directory} failed: {exc}\n{log}") from exc
    restore_s = time.monotonic() - t1
    if run_dir is not None:
        try:
            os.rename(run_dir / SOCKET_TMP, run_dir / "control.sock")
        except FileNotFoundError:
            with contextlib.suppress(docker.errors.APIError):
                api.remove_container(cid, force=True)
            raise CheckpointError(f"clone {name} was restored without its control socket {SOCKET_TMP} in "
                                  f"{run_dir}: was the template a unix-transport replica?") from None
    return Restored(cid, t1 - t0, restore_s)


_DOCKER_ROOTS: weakref.WeakKeyDictionary[docker.DockerClient, Path] = weakref.WeakKeyDictionary()


def _docker_root(client: docker.DockerClient) -> Path:
    """The daemon's data-root, asked once per client: ``info()`` takes about 10 ms, on every restore's path."""
    root = _DOCKER_ROOTS.get(client)
    if root is None:
        root = _DOCKER_ROOTS[client] = Path(client.info()["DockerRootDir"])
    return root


def _place_images(client: docker.DockerClient, cid: str, images: Path) -> None:
    """Put the checkpoint where Docker 20.10 restores from, the new container's own checkpoint directory
    (``start --checkpoint-dir`` answers "custom checkpointdir is not supported"): not the images themselves,
    which Docker would copy through containerd's content store on every restore, but a file naming them,
    which the runtime's wrapper (``runc-criu``) hands to CRIU in place of the copy."""
    root = _docker_root(client) / "containers" / cid / "checkpoints" / CHECKPOINT_NAME
    root.mkdir(parents=True, mode=0o700)
    (root / IMAGES_POINTER).write_text(str(images))
    # Docker uploads the directory to containerd's content store, by digest: clones restored at once would
    # upload the same bytes, and all but one fail ("commit failed: content sha256:... already exists")
    (root / "osgym-clone").write_text(cid)


def remove_checkpoint(client: docker.DockerClient, checkpoint: Checkpoint) -> None:
    """Remove the checkpoint's directory and image (clones made from it must be removed first)."""
    with contextlib.suppress(docker.errors.ImageNotFound):
        client.api.remove_image(checkpoint.image, force=False)
    shutil.rmtree(checkpoint.directory, ignore_errors=True)
