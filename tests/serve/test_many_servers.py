"""Two ``osgym serve`` servers on two Docker daemons behind one client; the second server and its daemon die.

Server A runs on the main daemon, server B on the second daemon of ``tests/second_daemon.py`` (a second host).
The Gymnasium envs and the OSGym-protocol client get both URLs (and one of a server that is down): sessions go
where there is free capacity and a group reset keeps its group on one server. B is killed (SIGKILL, with its
daemon) while a vector env steps on it: its sessions end with ``ServerLost`` naming B within seconds, A's go on,
new sessions open on A, and A leaves no container behind. Runs in the ``second-daemon`` group (its fixture);
kills the daemon and starts it again.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import docker
import httpx
import pytest
from serve_support import TOKEN, plain_task

from osgym.errors import ConfigError, OsgymError, ServerLost
from osgym.replicas.images import BASE_IMAGE
from osgym.replicas.pool import POOL_LABEL, RUN_DIR_LABEL
from osgym.serving.gym_env import DesktopEnv, DesktopVectorEnv
from osgym.serving.osgym_client import OSGymClient
from osgym.serving.server import ServeConfig, ServerThread, serving
from osgym.serving.servers import ServerSet, ServerTimeouts
from tests.conftest import SESSION, SESSION_RUN_DIR
from tests.second_daemon import SecondDaemon

ROOT = Path(__file__).resolve().parents[2]
LOST_WITHIN_S = 20.0
"""A session on a killed server must fail this soon (a refused connection and one probe: well under a second)."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Served:
    """An ``osgym serve`` process (desktop tier, 1280x800), its URL and its log."""

    def __init__(self, name: str, replicas: int, tmp: Path, docker_host: str | None = None) -> None:
        port = _free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.log = tmp / f"{name}.log"
        env = {**os.environ, "OSGYM_SERVE_TOKENS": TOKEN, "PYTHONPATH": str(ROOT)}
        if docker_host:
            env["DOCKER_HOST"] = docker_host
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "osgym", "serve", "--tier", "desktop", "--replicas", str(replicas),
                 "--standby", "0", "--screen", "1280x800", "--port", str(port), "--store", str(tmp / name),
                 "--dataset", "many", "--no-live-view"],
                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)

    def wait_ready(self, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while True:
            assert self.proc.poll() is None, f"{self.url} exited: {self.log.read_text()[-3000:]}"
            try:
                if httpx.get(f"{self.url}/v1/health", timeout=5).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, f"{self.url} not up in {timeout} s: {self.log.read_text()[-3000:]}"
            time.sleep(0.5)

    def capacity(self) -> dict[str, object]:
        r = httpx.get(f"{self.url}/v1/capacity", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10)
        assert r.status_code == 200, r.text
        body: dict[str, object] = r.json()
        return body

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # stops cleanly: sessions recorded, replicas removed
            try:
                self.proc.wait(timeout=90)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def two_servers(second_daemon: SecondDaemon, image: str, tmp_path: Path) -> Iterator[tuple[Served, Served]]:
    try:
        d2 = docker.DockerClient(base_url=second_daemon.url, timeout=60)
        d2.ping()
    except docker.errors.DockerException:  # an earlier test of the group killed it (tests/pool/test_two_hosts.py)
        d2 = second_daemon.start()
    try:
        d2.images.get(BASE_IMAGE)  # `osgym serve` looks for the base before the tier's image (images.build)
    except docker.errors.ImageNotFound:
        save = subprocess.Popen(["docker", "save", BASE_IMAGE], stdout=subprocess.PIPE)
        load = subprocess.run(["docker", "-H", second_daemon.url, "load", "-q"], stdin=save.stdout,
                              capture_output=True, timeout=600)
        save.wait(timeout=60)
        assert load.returncode == 0, load.stderr
    a = Served("a", 3, tmp_path)
    b = Served("b", 3, tmp_path, docker_host=second_daemon.url)
    try:
        a.wait_ready()
        b.wait_ready()
        yield a, b
    finally:
        a.stop()
        b.stop()
        if b.proc.returncode == -signal.SIGKILL:  # the test killed B and its daemon: start it again, clean
            d2 = second_daemon.start()
            for c in d2.containers.list(all=True, filters={"label": POOL_LABEL}):
                c.remove(force=True)


@pytest.mark.docker
def test_sessions_spread_over_two_servers_and_one_lost_ends_only_its_own(
        two_servers: tuple[Served, Served], second_daemon: SecondDaemon, docker_client: docker.DockerClient) -> None:
    a, b = two_servers
    dead = f"http://127.0.0.1:{_free_port()}"  # a server that is down from the start: never placed on, no wait
    urls = [b.url, a.url, dead]
    vec = DesktopVectorEnv(2, url=urls, token=TOKEN, group_size=2, suite="desktop-basics")
    client = OSGymClient(urls, token=TOKEN)
    env = DesktopEnv(url=urls, token=TOKEN, task=plain_task())
    try:
        # 3 free on each: the group of 2 goes to one server, the first of a tie (B)
        obs, info = vec.reset(seed=3)
        assert list(info["server"]) == [b.url, b.url] and len(set(obs["instruction"])) == 1
        # then B has 1 free and A 3: the next two sessions go to A ...
        _, info = env.reset()
        assert info["server"] == a.url
        first = client.reset(plain_task(), timeout=300)
        assert first["server"] == a.url and first["problem"] == plain_task()["instruction"]
        # ... and with 1 free on each (and 1 ready replica on each), the next to the first of the tie again
        second = client.reset(plain_task(), timeout=300)
        assert second["server"] == b.url
        cap_a, cap_b = a.capacity(), b.capacity()
        assert (cap_a["sessions"], cap_a["free"], cap_a["session_limit"]) == (2, 1, 3), cap_a
        assert (cap_b["sessions"], cap_b["free"], cap_b["session_limit"]) == (3, 0, 3), cap_b

        # B dies (the server and its Docker daemon, SIGKILL) while the vector env steps on it
        stepped: list[float] = []
        ended: list[tuple[float, object]] = []

        def keep_stepping() -> None:
            try:
                while True:
                    out = vec.step([f"move({10 + len(stepped)},10)"] * 2)
                    if out[3].any():
                        ended.append((time.monotonic(), out))
                        return
                    stepped.append(time.monotonic())
            except BaseException as exc:  # an error, not a truncation: the test fails naming it
                ended.append((time.monotonic(), exc))

        stepper = threading.Thread(target=keep_stepping, daemon=True)
        stepper.start()
        deadline = time.monotonic() + 60
        while len(stepped) < 2 and not ended:
            assert time.monotonic() < deadline, "the vector env did not step on B"
            time.sleep(0.05)
        assert not ended, ended
        b.proc.kill()
        killed = time.monotonic()
        second_daemon.kill()
        stepper.join(timeout=LOST_WITHIN_S + 30)
        assert not stepper.is_alive(), "the vector env's step on the lost server hangs"
        ((at, out),) = ended
        assert isinstance(out, tuple), repr(out)
        _, reward, terminated, truncated, infos = out
        # both sub-envs' DesktopEnv.step raised ServerLost naming B: their episodes end, truncated
        assert list(truncated) == [True, True] and not terminated.any(), infos
        assert all(e.startswith(f"ServerLost: server {b.url}: ") for e in infos["error"]), infos["error"]
        assert list(infos["server"]) == [None, None]
        assert at - killed < LOST_WITHIN_S, f"{at - killed:.1f} s to notice the lost server"
        print(f"\nB killed after {len(stepped)} steps on it; the vector step ended {at - killed:.2f} s later: "
              f"{infos['error'][0]}")
        t0 = time.monotonic()
        with pytest.raises(ServerLost, match=b.url) as lost:  # the OSGym client's session there: gone, at once
            client.step(second["vm_id"], "wait()")
        assert lost.value.url == b.url and time.monotonic() - t0 < LOST_WITHIN_S

        # A's sessions go on
        assert env.step("move(5,5)")[4].get("error") is None
        assert client.step(first["vm_id"], "move(6,6)")["is_finish"] is False

        # new sessions go to the survivor and work: the vector env's sub-envs reset on A at their next step
        env.close()  # room on A for both
        obs, reward, terminated, truncated, infos = vec.step(["wait()", "wait()"])
        assert list(infos["server"]) == [a.url, a.url] and not truncated.any(), infos
        obs, reward, terminated, truncated, infos = vec.step(["move(7,7)", "move(8,8)"])
        assert not truncated.any() and list(infos["error"]) == [None, None], infos
        client.shutdown(first["vm_id"])
        again = client.reset(plain_task(), timeout=300)
        assert again["server"] == a.url
        assert client.step(again["vm_id"], "move(9,9)")["is_finish"] is False
        assert not client.servers.server(b.url).up  # down until a probe after its backoff answers
        assert not client.servers.server(dead).up
    finally:
        env.close()
        client.close()
        vec.close()
    assert a.capacity()["sessions"] == 0
    a.stop()
    assert a.proc.returncode == 0, a.log.read_text()[-3000:]
    left = [c["Names"] for c in docker_client.api.containers(all=True, filters={"label": POOL_LABEL})
            if Path(c["Labels"].get(RUN_DIR_LABEL) or "/").parent == SESSION_RUN_DIR
            and c["Labels"][POOL_LABEL].startswith("osgym-")]
    assert not left, f"server A left containers behind: {left}"


def test_no_server_up_fails_at_once_naming_each_and_a_down_one_is_retried_with_backoff() -> None:
    dead = [f"http://127.0.0.1:{_free_port()}" for _ in range(2)]  # nothing listens there: refused at once
    now = [100.0]
    servers = ServerSet(dead, TOKEN, ServerTimeouts(retry_s=2, max_retry_s=5), clock=lambda: now[0])
    try:
        t0 = time.monotonic()
        with pytest.raises(ServerLost, match="no server can take a session") as lost, servers.reserve():
            pass
        assert time.monotonic() - t0 < 5 and all(f"{u}: no answer (ConnectError" in str(lost.value) for u in dead)
        first = servers.server(dead[0])
        assert not first.up and first.retry_at == 102.0
        backoffs = []
        for _ in range(4):  # probed again only once its backoff has passed: 2 s, then 4, then at most 5
            now[0] = first.retry_at - 0.5
            with pytest.raises(ServerLost), servers.reserve():
                pass
            now[0] = first.retry_at
            with pytest.raises(ServerLost), servers.reserve():
                pass
            backoffs.append(first.backoff)
        assert backoffs == [4, 5, 5, 5]
        with pytest.raises(ConfigError, match="expected one of"):
            servers.server("http://elsewhere:1")
    finally:
        servers.close()
    with pytest.raises(ServerLost, match="no server answers"):  # an env over servers that are all down
        DesktopEnv(url=dead, token=TOKEN)
    for bad in ([], ["ftp://host:1"], [dead[0], dead[0] + "/"]):
        with pytest.raises(ConfigError):
            ServerSet(bad)
    client = OSGymClient(dead, token=TOKEN)
    with pytest.raises(OsgymError, match="a session this client opened, actual 7"):
        client.step(7, "wait()")
    client.close()


@pytest.mark.docker
def test_a_restarted_server_s_sessions_are_lost(image: str, docker_client: docker.DockerClient,
                                                tmp_path: Path) -> None:
    port = _free_port()
    config = ServeConfig(tier="desktop", image=image, replicas=1, standby=0, screen=(1280, 800), settle_s=0.3,
                         live_view=False, record=False, store=str(tmp_path))
    client = OSGymClient([f"http://127.0.0.1:{port}"], token=TOKEN)
    try:
        with serving(config, docker_client=docker_client, pool_name=f"{SESSION}-restart-{uuid.uuid4().hex[:6]}",
                     tokens=[TOKEN]) as s, ServerThread(s.app, port=port):
            vm = client.reset(plain_task(), timeout=300)["vm_id"]
            assert client.step(vm, "move(3,3)")["is_finish"] is False
        # a new process on the same address (another run): it knows no session 1, and the client says why
        with serving(config, docker_client=docker_client, pool_name=f"{SESSION}-restart-{uuid.uuid4().hex[:6]}",
                     tokens=[TOKEN]) as s, ServerThread(s.app, port=port):
            with pytest.raises(ServerLost, match="restarted"):
                client.step(vm, "move(4,4)")
            again = client.reset(plain_task(), timeout=300)["vm_id"]  # a new session there works
            assert client.step(again, "move(5,5)")["is_finish"] is False
    finally:
        client.close()
