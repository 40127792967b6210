"""The hollow server answers osgym's control protocol as a replica's own server does: the token is checked,
and bad requests are refused with the same status a real replica (a container of the desktop image) gives."""

from __future__ import annotations

import json
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import docker
import pytest

from osgym.errors import RequestRejected
from osgym.replicas.client import Replica
from osgym.replicas.hollow.protocol import A11yFind
from osgym.replicas.hollow.provision import HollowHost
from osgym.replicas.unix_socket import connect_unix
from tests.conftest import held_replica

SCREEN = (1280, 800)
TOKEN = "hollow-test-token-0123456789abcdef"


@pytest.fixture(scope="module")
def hollow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[HollowHost, Path]]:
    where = tmp_path_factory.mktemp("hollow")
    server = HollowHost(str(where / "server.log"))
    server.start()
    try:
        yield server, where
    finally:
        server.stop()


@pytest.fixture(scope="module")
def hollow(hollow_server: tuple[HollowHost, Path]) -> tuple[str, str]:
    """A hollow replica's socket and token."""
    server, where = hollow_server
    server.call({"op": "add", "id": "a", "path": str(where / "a.sock"), "token": TOKEN, "screen": list(SCREEN)})
    return str(where / "a.sock"), TOKEN


@pytest.fixture(scope="module")
def real(image: str, docker_client: docker.DockerClient) -> Iterator[tuple[str, str]]:
    """A real replica's socket and token."""
    with held_replica(image, docker_client, "hollow-ref", screen=SCREEN) as replica:
        yield replica.api.endpoint[len("unix:"):], replica.api.headers["Authorization"].split(" ", 1)[1]


def exchange(path: str, raw: bytes, timeout: float = 10.0) -> tuple[int, dict[str, str], bytes, bool]:
    """Send ``raw`` on a new connection; the answer's status, headers, body, and whether the server then closed."""
    with closing(connect_unix(path, owner=None, timeout=timeout)) as s:
        s.sendall(raw)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            assert chunk, f"connection closed before an answer: {data!r}"
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        while len(body) < int(headers.get("content-length", 0)):
            chunk = s.recv(65536)
            assert chunk
            body += chunk
        s.settimeout(timeout)
        try:
            closed = s.recv(1) == b""
        except TimeoutError:
            closed = False
        return int(lines[0].split(" ")[1]), headers, body, closed


def request(method: str, target: str, token: str | None, body: bytes = b"", **headers: str) -> bytes:
    head = [f"{method} {target} HTTP/1.1", "Host: replica"]
    if token is not None:
        head.append(f"Authorization: Bearer {token}")
    if "Content-Length" not in headers and "Transfer-Encoding" not in headers:
        head.append(f"Content-Length: {len(body)}")
    head += [f"{k.replace('_', '-')}: {v}" for k, v in headers.items()]
    head.append("Connection: close")
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def actions(*acts: dict, **extra: object) -> bytes:
    return json.dumps({"actions": list(acts), **extra}).encode()


REFUSED = {
    "no token": ("GET", "/health", None, b"", {}, 401),
    "wrong token": ("GET", "/health", "wrong", b"", {}, 401),
    "wrong token, body never sent": ("POST", "/actions", "wrong", b"", {"Content-Length": "100000"}, 401),
    "chunked body": ("POST", "/actions", "", b"0\r\n\r\n", {"Transfer-Encoding": "chunked"}, 411),
    "bad Content-Length": ("POST", "/actions", "", b"", {"Content-Length": "abc"}, 400),
    "no such route": ("GET", "/no-such-route", "", b"", {}, 404),
    "method not allowed": ("DELETE", "/health", "", b"", {}, 405),
    "body too large": ("POST", "/actions", "", b"", {"Content-Length": str(17 * 2**20)}, 413),
    "not JSON": ("POST", "/actions", "", b"not json", {}, 400),
    "unknown action": ("POST", "/actions", "", actions({"action_type": "JUMP"}), {}, 400),
    "click off screen": ("POST", "/actions", "", actions({"action_type": "CLICK", "x": 99999, "y": 5}), {}, 400),
    "x without y": ("POST", "/actions", "", actions({"action_type": "CLICK", "x": 5}), {}, 400),
    "bad settle mode": ("POST", "/actions", "", actions(settle={"timeout": 1, "mode": "psychic"}), {}, 400),
    "too much waiting": ("POST", "/actions", "", actions(*[{"action_type": "WAIT", "seconds": 60}] * 3), {}, 400),
    "screenshot format": ("GET", "/screenshot?format=gif", "", b"", {}, 400),
    "screenshot max_side": ("GET", "/screenshot?max_side=8", "", b"", {}, 400),
    "screenshot windows": ("GET", "/screenshot?windows=yes", "", b"", {}, 400),
    "find role": ("GET", "/accessibility?find_name=Save&find_role=Push%20Button", "", b"", {}, 400),
    "find nothing": ("GET", "/accessibility?find_sized=1", "", b"", {}, 400),
    "find unknown": ("GET", "/accessibility?find_name=Save&find_colour=red", "", b"", {}, 400),
    "empty command": ("POST", "/execute", "", b'{"command": ""}', {}, 400),
    "zero timeout": ("POST", "/execute", "", b'{"command": "true", "timeout": 0}', {}, 400),
    "file outside home": ("GET", "/files?path=/etc/passwd", "", b"", {}, 403),
    "missing file": ("GET", "/files?path=~/no-such-file-here", "", b"", {}, 404),
    "token too short": ("POST", "/token", "", b'{"token": "short"}', {}, 400),
    "token with a space": ("POST", "/token", "", json.dumps({"token": "a" * 20 + " " + "b" * 10}).encode(), {}, 400),
    "health": ("GET", "/health", "", b"", {}, 200),
}


@pytest.mark.parametrize("kind", ["hollow", "real"])
def test_bad_requests_are_refused_as_a_real_replica_refuses_them(kind: str, request: pytest.FixtureRequest) -> None:
    path, token = request.getfixturevalue(kind)
    got = {}
    for name, (method, target, tok, body, headers, _) in REFUSED.items():
        t0 = time.monotonic()
        status, head, data, closed = exchange(path, globals()["request"](
            method, target, token if tok == "" else tok, body, **headers))
        got[name] = status
        assert head.get("content-type") == "application/json", (name, head)
        if status >= 400:
            assert "error" in json.loads(data), (name, data)
        if status == 401:  # refused on its headers: the server neither waits for the body nor keeps the connection
            assert closed and time.monotonic() - t0 < 5, name
    assert got == {name: case[-1] for name, case in REFUSED.items()}


PROTOCOL_CASES = ("no such route", "method not allowed", "not JSON", "unknown action", "click off screen",
                  "x without y", "bad settle mode", "too much waiting", "screenshot format", "screenshot max_side",
                  "find role", "find nothing", "find unknown", "token too short", "token with a space")
"""The refusals that ``replica_images/server/protocol.py`` words, for a real replica and a hollow one alike."""


def test_the_protocol_s_refusals_are_worded_as_a_real_replica_words_them(real: tuple[str, str],
                                                                         hollow: tuple[str, str]) -> None:
    answers: dict[str, dict[str, tuple[int, str]]] = {}
    for kind, (path, token) in (("real", real), ("hollow", hollow)):
        answers[kind] = {}
        for name in PROTOCOL_CASES:
            method, target, _, body, headers, _ = REFUSED[name]
            status, _, data, _ = exchange(path, request(method, target, token, body, **headers))
            answers[kind][name] = (status, json.loads(data)["error"])
    assert answers["hollow"] == answers["real"]
    key = actions({"action_type": "PRESS", "key": "no such key!"})
    got = {kind: exchange(path, request("POST", "/actions", token, key))[0] for kind, (path, token) in
           (("real", real), ("hollow", hollow))}
    assert got == {"real": 400, "hollow": 400}


def test_the_hollow_replica_reads_requests_with_the_server_s_own_file() -> None:
    """One file, not a copy that could drift: osgym's module is the replica server's file, through a link."""
    from osgym.replicas.hollow import protocol

    server_file = Path(__file__).resolve().parents[2] / "replica_images" / "server" / "protocol.py"
    assert Path(protocol.__file__).resolve() == server_file.resolve()
    assert Path(protocol.__file__).is_symlink()


def test_the_real_client_drives_a_hollow_replica(hollow_server: tuple[HollowHost, Path]) -> None:
    server, where = hollow_server
    server.call({"op": "add", "id": "b", "path": str(where / "b.sock"), "token": "tok-b", "screen": [640, 480]})
    server.call({"op": "add", "id": "c", "path": str(where / "c.sock"), "token": "tok-c", "screen": [640, 480]})
    with Replica("b", f"unix:{where / 'b.sock'}", "tok-b") as b:
        assert b.health()["screen"] == [640, 480] and b.screen == (640, 480)
        first = b.screenshot()
        assert first.data.startswith(b"\x89PNG") and (first.width, first.height) == (640, 480)
        small = b.screenshot(format="jpeg", max_side=320)
        assert small.data.startswith(b"\xff\xd8") and (small.width, small.height) == (320, 240)
        answer = b.act([{"action_type": "CLICK", "x": 10, "y": 20}], settle=1.0, mode="damage")
        assert answer["pointer"] == [10, 20] and answer["settled_by"] == "damage"
        assert b.screenshot().data != first.data, "an action moves the synthetic screen on"
        assert b.execute("echo hi").returncode == 0
        find = A11yFind(name="Save", role="push-button")  # as a real replica answers a find that finds nothing
        assert ET.fromstring(b.accessibility(showing_only=True, find=find)).get("found") == "false"
        assert ET.fromstring(b.accessibility()).get("found") is None
        b.write_file("~/notes.txt", b"hello")
        assert b.read_file("/home/user/notes.txt") == b"hello"
        with pytest.raises(RequestRejected) as refused:
            b.read_file("/etc/shadow")
        assert refused.value.status == 403
        b.replace_token("tok-b-replaced-0123456789abcdef")
        assert b.health()["status"] == "ok"
    status, _, _, _ = exchange(str(where / "b.sock"), request("GET", "/health", "tok-b"))
    assert status == 401, "the replaced token opens nothing"
    # each replica has its own token: b's is refused on c's socket
    status, _, _, closed = exchange(str(where / "c.sock"), request("GET", "/health", "tok-b"))
    assert status == 401 and closed
    assert exchange(str(where / "c.sock"), request("GET", "/health", "tok-c"))[0] == 200
    assert server.call({"op": "ping"})["replicas"] >= 2
    server.call({"op": "remove", "id": "c"})
    assert not (where / "c.sock").exists()
    with pytest.raises(OSError):
        connect_unix(str(where / "c.sock"), owner=None, timeout=2)


@pytest.mark.parametrize("kind", ["hollow", "real"])
def test_an_observation_is_one_request_with_the_window_list_read_before_the_grab(
        kind: str, request: pytest.FixtureRequest) -> None:
    path, token = request.getfixturevalue(kind)
    with Replica(kind, f"unix:{path}", token) as r:
        if kind == "hollow":
            r.wait_window("osgym-observe-check", timeout=0.1)  # a hollow replica makes the window it is asked for
        shot = r.screenshot(windows=True)
        assert shot.windows is not None and list(shot.windows) == r.windows()
        assert r.screenshot().windows is None, "only when asked"
        paths: list[str] = []
        send = r.api.send
        r.api.send = lambda method, path, **kw: (paths.append(path), send(method, path, **kw))[1]  # type: ignore
        obs = r.observe("check", 0)
        assert paths == ["/screenshot"], paths
        assert obs.windows == shot.windows and obs.screenshot.startswith(b"\x89PNG")


def test_a_window_list_too_long_for_a_header_is_read_on_its_own(hollow_server: tuple[HollowHost, Path]) -> None:
    server, where = hollow_server
    server.call({"op": "add", "id": "w", "path": str(where / "w.sock"), "token": "tok-w", "screen": [320, 240]})
    with Replica("w", f"unix:{where / 'w.sock'}", "tok-w") as r:
        for i in range(400):  # ~100 bytes each as JSON: past the 32 KiB a header may carry
            r.wait_window(f"window {i:03d} " + "x" * 40, timeout=0.1)
        assert r.screenshot(windows=True).windows is None
        obs = r.observe("many", 0)
        assert len(obs.windows) == 400 and obs.windows == tuple(r.windows())
    server.call({"op": "remove", "id": "w"})


def test_a_request_line_too_long_is_refused(hollow: tuple[str, str]) -> None:
    path, token = hollow
    status, _, _, closed = exchange(path, request("GET", "/health?" + "x" * 70_000, token))
    assert status == 431 and closed


def test_the_hollow_server_refuses_bad_commands(hollow_server: tuple[HollowHost, Path]) -> None:
    server, where = hollow_server
    from osgym.errors import ReplicaUnreachable

    with pytest.raises(ReplicaUnreachable, match="op: expected add, remove or ping"):
        server.call({"op": "explode"})
    with pytest.raises(ReplicaUnreachable, match="KeyError"):
        server.call({"op": "add", "id": "z"})
    assert server.call({"op": "ping"})["ok"]


def test_a_socket_connection_is_one_per_replica_not_a_thread(hollow_server: tuple[HollowHost, Path]) -> None:
    """Hundreds of replicas cost the server no thread: it stays at its loop and its command reader."""
    server, where = hollow_server
    for i in range(300):
        server.call({"op": "add", "id": f"n{i}", "path": str(where / f"n{i}.sock"), "token": f"t{i}",
                     "screen": [320, 240]})
    clients = [Replica(f"n{i}", f"unix:{where / f'n{i}.sock'}", f"t{i}") for i in range(300)]
    try:
        assert all(c.health()["status"] == "ok" for c in clients)
        proc = server._proc
        assert proc is not None
        threads = int(next(line.split()[1] for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines()
                           if line.startswith("Threads:")))
        assert threads <= 4, threads
    finally:
        for c in clients:
            c.close()
        for i in range(300):
            server.call({"op": "remove", "id": f"n{i}"})


def test_the_hollow_server_ends_with_its_input_and_leaves_no_socket(tmp_path: Path) -> None:
    """A pool whose process dies closes the server's input: the server removes its sockets and exits."""
    server = HollowHost(str(tmp_path / "server.log"))
    server.start()
    server.call({"op": "add", "id": "x", "path": str(tmp_path / "x.sock"), "token": "t", "screen": [320, 240]})
    assert (tmp_path / "x.sock").exists()
    proc = server._proc
    assert proc is not None and proc.stdin is not None
    proc.stdin.close()
    assert proc.wait(timeout=15) == 0
    assert not (tmp_path / "x.sock").exists()
    server.stop()
