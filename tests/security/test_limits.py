"""Resource limits on the control channel and on what one agent reply can do.

- the replica's server refuses an unauthorized body on its headers, and an authorized one
  larger than its route takes, before reading it;
- it serves a bounded number of connections, answers 503 past them, and drops a connection
  whose request trickles in past its deadline (slow loris);
- the host's client streams answers with a cap and an overall deadline, so an impostor
  that answers without end makes it fail fast with a replica fault;
- a reply holds a bounded number of actions and of seconds of waiting, and the episode
  deadline holds inside a step: a reply of long sleeps ends as a timeout row at the
  deadline and the replica is released;
- container logs, /tmp and downloads are bounded; file reads cannot be steered outside
  the home directory and /tmp by a symlink swapped in after the path was checked.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import importlib.util
import os
import re
import socket
import socketserver
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import docker
import docker.errors
import pytest

from osgym.agents.formats import parse_anthropic, parse_pyautogui_response
from osgym.agents.policies.base import Decision
from osgym.episodes import EpisodeLimits, run_episode
from osgym.errors import PolicyError, ReplicaError, ReplicaUnreachable, RequestRejected, ResponseTooLarge
from osgym.replicas.actions import MAX_ACTIONS_PER_REPLY, Wait, check_reply
from osgym.replicas.client import ControlClient, Replica, Timeouts
from osgym.replicas.pool import ReplicaLimits, ReplicaPool
from osgym.suites import load_suite

_SERVER_DIR = Path(__file__).resolve().parents[2] / "replica_images" / "server"


def _server_limits() -> Any:
    """The replica server's ``limits`` module (stdlib only), for its constants."""
    spec = importlib.util.spec_from_file_location("osgym_replica_limits", _SERVER_DIR / "limits.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SERVER_LIMITS = _server_limits()
MIB = 2**20


def _sock_path(replica: Replica) -> str:
    assert replica.api.endpoint.startswith("unix:")
    return replica.api.endpoint[len("unix:"):]


def _read_head(s: socket.socket) -> bytes:
    """Bytes up to the end of an HTTP response's headers (the socket's timeout bounds the wait)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
        assert len(data) < 1_000_000
    return data.partition(b"\r\n\r\n")[0]


def _closed_by_peer(s: socket.socket, within: float) -> bool:
    """Whether the server closes ``s`` within ``within`` seconds (reading and dropping what it sends)."""
    end = time.monotonic() + within
    while (left := end - time.monotonic()) > 0:
        s.settimeout(left)
        try:
            if not s.recv(65536):
                return True
        except TimeoutError:
            return False
        except (ConnectionResetError, BrokenPipeError):
            return True
    return False


@pytest.fixture
def limits_replica(make_pool: Callable[..., ReplicaPool]) -> Iterator[Replica]:
    with make_pool(1).lease() as r:
        yield r


# ---------------------------------------------------------------------------- the server's bodies


def test_an_unauthorized_64_mib_body_is_refused_on_its_headers(limits_replica: Replica) -> None:
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(5)
        s.connect(_sock_path(limits_replica))
        s.sendall(b"PUT /files?path=/tmp/big HTTP/1.1\r\nHost: r\r\nContent-Length: %d\r\n\r\n" % (64 * MIB))
        t0 = time.monotonic()
        head = _read_head(s)  # before a byte of the body was sent: the server does not wait for it
        assert head.startswith(b"HTTP/1.1 401"), head[:200]
        assert b"connection: close" in head.lower()
        assert time.monotonic() - t0 < 2
        assert _closed_by_peer(s, 5), "the server kept the connection open for the unread body"
        with pytest.raises(OSError):  # the body is not wanted: the server hung up
            for _ in range(64):
                s.sendall(b"\0" * MIB)
    assert limits_replica.execute("test -e /tmp/big || echo absent").output.strip() == "absent"
    assert limits_replica.health()["status"] == "ok"


def test_an_authorized_body_larger_than_its_route_takes_is_refused_unread(limits_replica: Replica) -> None:
    token = limits_replica.api.headers["Authorization"].encode()
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(5)
        s.connect(_sock_path(limits_replica))
        # 17 MiB: within the old global 64 MiB, more than a JSON route needs
        s.sendall(b"POST /actions HTTP/1.1\r\nAuthorization: " + token + b"\r\nContent-Length: %d\r\n\r\n" % (17 * MIB))
        head = _read_head(s)
        assert head.startswith(b"HTTP/1.1 413"), head[:200]
        assert _closed_by_peer(s, 5)
    assert limits_replica.health()["status"] == "ok"


# ---------------------------------------------------------------------------- the server's connections


def test_slow_loris_connections_are_bounded_answered_503_and_dropped(limits_replica: Replica) -> None:
    path = _sock_path(limits_replica)
    cap, header_timeout = SERVER_LIMITS.MAX_CONNECTIONS, SERVER_LIMITS.HEADER_TIMEOUT
    slow: list[socket.socket] = []
    try:
        # Slow clients, fewer than the cap (the host's own client may hold a connection or two):
        # they do not block an authorized client.
        for _ in range(cap - 2):
            s = socket.socket(socket.AF_UNIX)
            slow.append(s)
            s.connect(path)
            s.sendall(b"GET /health HTTP/1.1\r\n")  # never finished
        t0 = time.monotonic()
        assert limits_replica.health()["status"] == "ok"
        assert time.monotonic() - t0 < 5
        # Past the cap, a connection gets a clear 503 at once, before it sends anything.
        refused = None
        for _ in range(4):
            s = socket.socket(socket.AF_UNIX)
            slow.append(s)
            s.settimeout(1)
            s.connect(path)
            try:
                refused = _read_head(s)
                break
            except TimeoutError:  # it got a slot: one more slow client
                s.sendall(b"GET /health HTTP/1.1\r\n")
        assert refused is not None, "no connection was refused past the cap"
        assert refused.startswith(b"HTTP/1.1 503"), refused[:200]
        # A burst past the cap: every connect waits in the listen backlog and gets its 503; none
        # fails with EAGAIN (a backlog of 5 overflowed this way on a quiet machine).
        burst = []
        for _ in range(2 * cap):
            s = socket.socket(socket.AF_UNIX)
            slow.append(s)
            burst.append(s)
            s.settimeout(2)
            s.connect(path)
        heads = [_read_head(s) for s in burst]
        assert all(h.startswith(b"HTTP/1.1 503") for h in heads), [h[:40] for h in heads]
        # Trickling one byte a second does not keep a slow request alive past its deadline.
        open_ = [s for s in slow if s.fileno() != -1]
        end = time.monotonic() + header_timeout + 5
        while open_ and time.monotonic() < end:
            for s in list(open_):
                s.setblocking(False)
                try:
                    if s.recv(65536) == b"":
                        open_.remove(s)
                        continue
                except BlockingIOError:
                    pass
                except OSError:
                    open_.remove(s)
                    continue
                try:
                    s.send(b"X")
                except OSError:
                    open_.remove(s)
            time.sleep(1)
        assert not open_, f"{len(open_)} slow connections still open {header_timeout + 5:g} s later"
        assert limits_replica.health()["status"] == "ok"
    finally:
        for s in slow:
            s.close()


# ---------------------------------------------------------------------------- the client's answers


class _Impostor(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    """A process answering on a replica's socket path: headers, then a body of the test's choosing."""

    daemon_threads = True

    def __init__(self, path: str, answer: Callable[[socket.socket], None]):
        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                self.request.settimeout(30)
                data = b""
                while b"\r\n\r\n" not in data and len(data) < 65536:
                    chunk = self.request.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                with contextlib.suppress(OSError):
                    answer(self.request)

        super().__init__(path, Handler)


def _endless(s: socket.socket) -> None:
    s.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n")  # no length: until close
    for _ in range(1024):  # 64 MiB at most, so that the test ends on a client without a cap too
        s.sendall(b" " * 65536)


def _announced(s: socket.socket) -> None:
    s.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % 2**40)
    for _ in range(1024):
        s.sendall(b" " * 65536)


def _trickle(s: socket.socket) -> None:
    s.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n")
    for _ in range(100):  # 10 s at most: a byte each 0.1 s keeps every single read under its timeout
        s.sendall(b" ")
        time.sleep(0.1)


def _trickle_headers(s: socket.socket) -> None:
    s.sendall(b"HTTP/1.1 200 OK\r\n")
    for _ in range(100):  # a header that never ends, a byte each 0.1 s
        s.sendall(b"X")
        time.sleep(0.1)


@functools.cache
def _bomb_body() -> bytes:
    return gzip.compress(b" " * (100 * MIB), compresslevel=1)  # about 400 KiB on the wire


def _bomb(s: socket.socket) -> None:
    body = _bomb_body()
    s.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
              b"Content-Length: %d\r\n\r\n" % len(body) + body)


@pytest.mark.parametrize(("answer", "error", "says", "within"), [
    (_endless, ResponseTooLarge, "answer passed 4194304 bytes", 5.0),
    (_announced, ResponseTooLarge, f"answer of {2**40} bytes announced", 2.0),
    (_trickle, ReplicaUnreachable, "timed out after 1 s", 3.0),
    (_trickle_headers, ReplicaUnreachable, "timed out after 1 s", 3.0),
    (_bomb, ResponseTooLarge, "encoded as 'gzip'", 2.0),
], ids=["endless", "announced-too-large", "trickle-body", "trickle-headers", "gzip-bomb"])
def test_an_impostor_answering_without_end_makes_the_client_fail_fast(
        answer: Callable[[socket.socket], None], error: type[ReplicaError], says: str, within: float) -> None:
    _bomb_body()  # compressed before the client's 1 s starts, whichever answer runs
    with tempfile.TemporaryDirectory(prefix="osgym-impostor-") as d:
        path = os.path.join(d, "control.sock")
        server = _Impostor(path, answer)
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        thread.start()
        client = ControlClient(f"unix:{path}", "token", Timeouts(read=1.0))
        try:
            t0 = time.monotonic()
            with pytest.raises(error, match=re.escape(says)) as info:
                client.request("GET", "/health")
            elapsed = time.monotonic() - t0
        finally:
            client.close()
            server.shutdown()
            server.server_close()
            thread.join(10)
    assert elapsed < within, f"the client took {elapsed:.1f} s"
    assert isinstance(info.value, ReplicaError)  # the episode moves to a fresh replica
    assert "/health" in str(info.value)


# ---------------------------------------------------------------------------- one reply


def test_a_reply_past_the_caps_is_a_clear_parse_error() -> None:
    with pytest.raises(PolicyError, match=f"at most {MAX_ACTIONS_PER_REPLY} actions in one reply"):
        parse_pyautogui_response("```python\n" + "time.sleep(60)\n" * 200 + "```")
    with pytest.raises(PolicyError, match="at most 120 s of WAIT in one reply"):
        check_reply(parse_pyautogui_response("time.sleep(60)\ntime.sleep(60)\ntime.sleep(1)")[1])
    with pytest.raises(PolicyError, match="expected 0..120 seconds"):
        parse_anthropic({"action": "wait", "duration": 600})


class _Replies:
    """A policy that answers every observation with the same actions."""

    name = "replies"

    def __init__(self, actions: list[Any]):
        self.actions = actions

    def config(self) -> dict[str, Any]:
        return {}

    def reset(self, task: Any, *, seed: int) -> None:
        pass

    def act(self, observation: Any, history: list[Any]) -> Decision:
        return Decision(list(self.actions), thought="sleeping")


def _no_setup_task() -> Any:
    task = load_suite("desktop-basics")[0]
    return task.model_copy(update={"config": []})


def test_a_reply_of_too_many_actions_is_refused_whole_as_a_policy_error(limits_replica: Replica) -> None:
    policy = _Replies([Wait(seconds=0.1)] * (MAX_ACTIONS_PER_REPLY + 50))
    t0 = time.monotonic()
    traj = run_episode(limits_replica, _no_setup_task(), policy, limits=EpisodeLimits(max_steps=1, settle_s=0))
    assert time.monotonic() - t0 < 5  # none of its waits ran
    assert traj.termination == "error" and traj.error_class == "policy_error", traj.termination
    assert f"at most {MAX_ACTIONS_PER_REPLY} actions" in (traj.error_message or "")


def test_a_reply_of_long_sleeps_ends_at_the_deadline_as_a_timeout_and_frees_the_replica(
        make_pool: Callable[..., ReplicaPool], docker_client: docker.DockerClient) -> None:
    pool = make_pool(1)
    _, actions = parse_pyautogui_response("time.sleep(60)\ntime.sleep(60)")  # as long as one reply may wait
    deadline_s = 4.0
    with pool.lease() as r:
        cid = r.container.id
        t0 = time.monotonic()
        traj = run_episode(r, _no_setup_task(), _Replies(actions),
                           limits=EpisodeLimits(max_steps=5, deadline_s=deadline_s, settle_s=0))
        elapsed = time.monotonic() - t0
    assert traj.termination == "timeout" and traj.error_class == "timeout", (traj.termination, traj.error_message)
    assert elapsed < deadline_s + 3, f"the episode took {elapsed:.1f} s for a {deadline_s} s deadline"
    assert [s.action_type for s in traj.steps] == ["WAIT,WAIT"]
    assert "deadline passed" in (traj.steps[0].error or "")
    # The lease is over: the container goes, and the pool hands out a fresh replica.
    end = time.monotonic() + 30
    while time.monotonic() < end:
        try:
            docker_client.api.inspect_container(cid)
        except docker.errors.NotFound:
            break
        time.sleep(0.2)
    else:
        pytest.fail(f"container {cid[:12]} still exists 30 s after its lease ended")
    with pool.lease(timeout=60) as fresh:
        assert fresh.health()["status"] == "ok"


# ---------------------------------------------------------------------------- logs, disk, files


def test_container_logs_and_tmp_are_bounded(make_pool: Callable[..., ReplicaPool]) -> None:
    pool = make_pool(1, limits=ReplicaLimits(tmp_mib=32, log_mib=2))
    with pool.lease() as r:
        r.container.reload()
        host_config = r.container.attrs["HostConfig"]
        assert host_config["LogConfig"] == {"Type": "json-file", "Config": {"max-size": "2m", "max-file": "2"}}
        assert "size=32m" in host_config["Tmpfs"]["/tmp"]
        fill = r.execute("head -c 48M /dev/zero > /tmp/fill", timeout=30)
        assert fill.returncode != 0 and "No space left on device" in fill.error
        assert 30 * MIB <= int(r.execute("stat -c %s /tmp/fill").output) <= 32 * MIB
        with pytest.raises(ReplicaError, match="507"):
            r.write_file("/tmp/more", b"\0" * MIB)  # /tmp is full: a clear 507, nothing half-written
        assert "more" not in r.execute("ls /tmp").output
        r.execute("rm -f /tmp/fill")
        r.write_file("/tmp/more", b"\0" * MIB)
        assert r.health()["status"] == "ok"


_SWAPPER = r"""
import os, sys, time
os.chdir("/home/user")
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    try:
        os.unlink("sw.l")
    except FileNotFoundError:
        pass
    os.symlink("/etc/passwd", "sw.l")
    os.rename("sw.l", "swap")
    with open("sw.f", "w") as f:
        f.write("safe")
    os.rename("sw.f", "swap")
"""


def test_a_symlink_swapped_in_after_the_check_does_not_lead_outside(limits_replica: Replica) -> None:
    r = limits_replica
    r.write_file("/tmp/swapper.py", _SWAPPER.encode())
    r.launch(["python3", "/tmp/swapper.py", "30"])
    safe = refused = leaked = 0
    end = time.monotonic() + 20
    for _ in range(400):
        if time.monotonic() > end:
            break
        try:
            data = r.read_file("/home/user/swap")
        except RequestRejected:
            refused += 1
            continue
        if b"root:" in data:
            leaked += 1
        else:
            safe += 1
    assert leaked == 0, f"{leaked} reads returned /etc/passwd through a swapped-in symlink"
    assert safe and refused, (safe, refused)  # the race was live both ways


def test_a_file_larger_than_the_download_cap_is_refused(limits_replica: Replica) -> None:
    limits_replica.execute("truncate -s 300M /home/user/huge")  # sparse: no disk used
    with pytest.raises(RequestRejected) as info:
        limits_replica.read_file("/home/user/huge")
    assert info.value.status == 413
    limits_replica.execute("mkfifo /tmp/pipe")
    with pytest.raises(RequestRejected) as info:  # a FIFO never hangs a server thread on open
        limits_replica.read_file("/tmp/pipe")
    assert info.value.status in (400, 404)


def test_the_writable_layer_size_reaches_docker_only_where_the_operator_sets_it(
        image: str, docker_client: docker.DockerClient, monkeypatch: pytest.MonkeyPatch) -> None:
    # overlay2 bounds a writable layer only on xfs with pquota: the size is an operator setting, unset by default,
    # read once, when a pool is made.
    def host_kw() -> dict[str, Any]:
        pool = ReplicaPool(image, 1, standby=0, name=f"lim-cfg-{os.getpid()}", docker_client=docker_client)
        try:
            kw: dict[str, Any] = pool.provisioner.container_config("r", Path("/nonexistent"), None)["host_kw"]
            return kw
        finally:
            pool.close()

    monkeypatch.delenv("OSGYM_REPLICA_DISK_MIB", raising=False)
    assert "storage_opt" not in host_kw()
    monkeypatch.setenv("OSGYM_REPLICA_DISK_MIB", "2048")
    assert host_kw()["storage_opt"] == {"size": "2048m"}
