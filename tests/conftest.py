"""Shared fixtures: a real Docker daemon, the real replica image, and leak checks.

Every test that starts replicas does so through ``make_pool``, which closes the
pool; the session ends by asserting that no container this session started is left
behind, whatever its pool is called and whichever process started it (a ``osgym
collect`` subprocess too): the session gives every pool its own run directory
(``OSGYM_RUN_DIR``, inherited by subprocesses), and each container carries it in
its ``osgym.run_dir`` label. Containers of other sessions running at the same time
have another run directory and are neither counted nor touched.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import docker
import pytest

from osgym.replicas import images
from osgym.replicas.checkpoint import CRIU_RUNTIME, RUNC_CRIU
from osgym.replicas.client import Replica
from osgym.replicas.pool import POOL_LABEL, RUN_DIR_LABEL, ReplicaPool, reap
from tests.second_daemon import SecondDaemon

# pytest imports this file as ``conftest``; test modules import ``tests.conftest`` (SESSION,
# TEST_SCREEN). Without this alias Python would run it a second time, as another module: a
# second SESSION and run directory, which the leak check below would not know.
sys.modules.setdefault("tests.conftest", sys.modules[__name__])

# Flows in tests run on Prefect's ephemeral server (as `make run` does), in a throwaway PREFECT_HOME.
# prefect_test_harness is not used: its teardown was seen to hang for minutes here.
_PREFECT_HOME = tempfile.mkdtemp(prefix="osgym-test-prefect-")
os.environ["PREFECT_HOME"] = _PREFECT_HOME
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
# Prefect logs "Stopping temporary server" from an atexit hook, after pytest has closed the captured
# streams; without this the logging module prints a traceback under the test summary.
logging.raiseExceptions = False
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
os.environ.setdefault("DO_NOT_TRACK", "1")

SESSION = f"t{uuid.uuid4().hex[:6]}"
# Every pool this session starts, in this process or in a subprocess that inherits the
# environment, puts its sockets here and labels its containers with it (osgym.run_dir).
# Set, not setdefault: a pytest run started by a test must not share its parent's directory.
SESSION_RUN_DIR = Path(tempfile.gettempdir()) / f"osgym-{SESSION}"
os.environ["OSGYM_RUN_DIR"] = str(SESSION_RUN_DIR)
# Checkpoints that reset by restore makes (osgym.replicas.restore), kept for this session only: root's, 0700.
SESSION_CHECKPOINTS = Path("/var/tmp") / f"osgym-{SESSION}-checkpoints"
os.environ["OSGYM_CHECKPOINT_DIR"] = str(SESSION_CHECKPOINTS)
TEST_SCREEN = (1280, 800)


@contextlib.contextmanager
def held_replica(image: str, client: docker.DockerClient, purpose: str, **pool_kw: object) -> Iterator[Replica]:
    """One ready replica held for a module's tests (pool ``<session>-<purpose>-<random>``), removed on exit."""
    pool = ReplicaPool(image, 1, standby=0, name=f"{SESSION}-{purpose}-{uuid.uuid4().hex[:6]}",
                       docker_client=client, **pool_kw)  # type: ignore[arg-type]
    try:
        pool.start()
        yield pool.acquire()
    finally:
        pool.close()


@pytest.fixture(scope="session")
def docker_client() -> docker.DockerClient:
    try:
        client = docker.from_env(max_pool_size=32)
        client.ping()
    except docker.errors.DockerException as exc:
        pytest.fail(f"these tests need a Docker daemon: run `bash scripts/ensure-docker.sh` ({exc})")
    return client


@pytest.fixture(scope="session")
def image(docker_client: docker.DockerClient) -> str:
    """The replica image for the current inputs, built once if missing."""
    return images.build("desktop", client=docker_client, log=lambda _m: None).tag


def session_pools(client: docker.DockerClient) -> set[str]:
    """Pools with a container this session started (by its run-directory label, or a pool name
    made by ``pool_name``), whatever process started it."""
    # list without inspecting each container: another process may remove one between list and inspect
    listed = client.api.containers(all=True, filters={"label": POOL_LABEL})
    return {c["Labels"][POOL_LABEL] for c in listed
            if Path(c["Labels"].get(RUN_DIR_LABEL) or "/").parent == SESSION_RUN_DIR
            or c["Labels"][POOL_LABEL].startswith(SESSION)}


@pytest.fixture(scope="session", autouse=True)
def no_leaked_replicas() -> Iterator[None]:
    yield
    client = docker.from_env()
    mine = session_pools(client)
    for name in mine:
        reap(client, pool=name)
    shutil.rmtree(_PREFECT_HOME, ignore_errors=True)
    shutil.rmtree(SESSION_RUN_DIR, ignore_errors=True)
    remove_checkpoints(client, SESSION_CHECKPOINTS)
    assert not mine, f"pools that leaked replicas in this test session: {sorted(mine)}"


def remove_checkpoints(client: docker.DockerClient, root: Path) -> None:
    """Remove the checkpoints under ``root`` and the images their clones were made from (this daemon's)."""
    for meta in root.glob("*/meta.json"):
        with contextlib.suppress(OSError, ValueError, KeyError, docker.errors.DockerException):
            client.api.remove_image(json.loads(meta.read_text())["image"], force=True)
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def pool_name(request: pytest.FixtureRequest) -> str:
    return f"{SESSION}-{request.node.name[:30].replace('[', '-').replace(']', '')}-{uuid.uuid4().hex[:4]}".lower()


@pytest.fixture
def make_pool(image: str, docker_client: docker.DockerClient, pool_name: str) -> Iterator[Callable[..., ReplicaPool]]:
    """Start pools that are always closed after the test."""
    pools: list[ReplicaPool] = []

    def make(size: int = 1, **kw: object) -> ReplicaPool:
        kw.setdefault("screen", TEST_SCREEN)
        kw.setdefault("standby", 0)
        p = ReplicaPool(image, size, name=f"{pool_name}-{len(pools)}", docker_client=docker_client, **kw)
        pools.append(p)
        p.start()
        return p

    yield make
    for p in pools:
        p.close()


@pytest.fixture
def replica(make_pool: Callable[..., ReplicaPool]) -> Iterator[object]:
    pool = make_pool(1)
    with pool.lease() as r:
        yield r


@pytest.fixture(scope="session")
def second_daemon(image: str) -> Iterator[SecondDaemon]:
    """A second local dockerd with the replica image loaded (once per session: ~1 GB, takes a while)."""
    # a failure, not a skip: a skipped test would let multi-host recovery pass unproven
    if os.geteuid() != 0 or shutil.which("dockerd") is None:
        pytest.fail("the two-host tests start a second dockerd, which needs root and dockerd: run them as root "
                    "on a machine with docker.io installed (make test does)")
    # experimental with osgym's CRIU runtime where `make criu` installed it: tests/pool/test_checkpoint.py
    criu = ("--experimental", "--add-runtime", f"{CRIU_RUNTIME}={RUNC_CRIU}") if RUNC_CRIU.exists() else ()
    d = SecondDaemon(Path(tempfile.mkdtemp(prefix="osgym-d2-", dir="/var/tmp")), extra_args=criu)
    try:
        d.start()
        save = subprocess.Popen(["docker", "save", image], stdout=subprocess.PIPE)
        load = subprocess.run(["docker", "-H", d.url, "load", "-q"], stdin=save.stdout, capture_output=True,
                              timeout=600)
        save.wait(timeout=60)
        if load.returncode != 0 or save.returncode != 0:
            raise RuntimeError(f"loading {image} into the second daemon failed: {load.stderr.decode()[-2000:]}")
        yield d
    finally:
        d.destroy()


SHARED_GROUPS = {
    "second_daemon": "second-daemon",  # one second dockerd (and a copy of the image in it) per worker that needs one
}
"""Session fixtures costly enough that their tests share one worker under ``pytest -n`` (pytest-xdist)."""
PREFECT_MODULES = ("tests/deploy/", "tests/test_collect_flow.py", "tests/pool/test_interrupted_", "tests/store/",
                   "tests/pool/test_maintenance.py", "tests/security/test_operator_switches.py",
                   "tests/hollow/test_hollow_flow.py")
"""Tests that start Prefect's server: one worker runs them all, so that one server per run starts, not one each."""
APPS_TIER_MODULES = ("tests/apps/", "tests/osworld_client/", "tests/security/test_disk_bound.py")
"""Tests that start apps-tier replicas (XFCE with Chromium, LibreOffice, GIMP...): one worker runs them, one module
after another. Two cores cannot start several such desktops at once without every test in them slowing down (seen:
nine apps replicas starting together under three workers, the load at 17)."""


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Group tests for ``pytest -n N --dist loadgroup`` (``make test``): a module's tests stay on one worker (its
    module-scoped replicas start once), and the tests that share a costly session fixture, Prefect's server or the
    apps tier share one worker. Without ``-n`` the marks change nothing.

    First among the hooks: pytest-xdist reads the marks in its own hook of the same name, in each worker, and
    a mark added after it has read them groups nothing (seen: two apps-tier modules on two workers at once)."""
    for item in items:
        path = item.nodeid.split("::")[0]
        names = set(getattr(item, "fixturenames", ()))
        group = next((g for f, g in SHARED_GROUPS.items() if f in names), None)
        if group is None and path.startswith(PREFECT_MODULES):
            group = "prefect"
        if group is None and path.startswith(APPS_TIER_MODULES):
            group = "apps-tier"
        item.add_marker(pytest.mark.xdist_group(group or path))


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    """Start building the reference venvs the selected tests use (OSWorld's, OpenEnv's), so that the minutes of
    downloads and installs on a clean machine overlap the tests before them. Here, as the tests start to
    run, rather than at collection: ``--collect-only`` must not install anything."""
    if session.config.option.collectonly:
        return
    from tests.metrics.conftest import NEEDED
    from tests.osworld_client.conftest import CLIENT_NEEDED
    from tests.osworld_venv import build_in_background

    needs = [set(getattr(item, "fixturenames", ())) for item in session.items]
    if any("client_python" in n for n in needs):  # OSWorld's own client (tests/osworld_client)
        build_in_background(CLIENT_NEEDED)
    if any("osworld" in n and "client_python" not in n for n in needs):  # the metric reference
        build_in_background(NEEDED)
    if any("openenv_python" in n for n in needs):  # OpenEnv's client (tests/serve/test_openenv.py)
        from tests.openenv_venv import openenv_venv

        build_in_background(openenv_venv)
