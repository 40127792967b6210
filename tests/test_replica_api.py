"""The replica's control API, against real containers."""

from __future__ import annotations

import io

import httpx
import pytest
from PIL import Image

from osgym.errors import RequestRejected
from osgym.replicas.actions import Click, Hotkey, MoveTo, Press, Typing
from osgym.replicas.client import Replica


def test_health_reports_the_screen(replica: Replica) -> None:
    h = replica.health()
    assert h["status"] == "ok"
    assert h["screen"] == [1280, 800]


def test_screenshot_is_a_real_png_of_the_screen(replica: Replica) -> None:
    shot = replica.screenshot()
    img = Image.open(io.BytesIO(shot.data))
    assert img.format == "PNG"
    assert img.size == (shot.width, shot.height) == (1280, 800)


def test_typing_into_a_terminal_changes_the_screen_and_the_disk(replica: Replica) -> None:
    replica.launch(["xterm"])
    w = replica.wait_window("xterm", focused=True)
    before = replica.screenshot().data
    replica.act([Click(x=w.center[0], y=w.center[1]), Typing(text="echo typed > /tmp/typed.txt"),
                 Press(key="enter")], settle=2.0)
    assert replica.screenshot().data != before
    assert replica.read_file("/tmp/typed.txt") == b"typed\n"


def test_hotkey_and_move_to(replica: Replica) -> None:
    replica.launch(["mousepad"])
    w = replica.wait_window("mousepad", focused=True)
    replica.act([Click(x=w.center[0], y=w.center[1]), Typing(text="abc"), Hotkey(keys=["ctrl", "a"]),
                 Typing(text="z"), MoveTo(x=5, y=6)], settle=1.0)
    assert replica.api.request("GET", "/pointer").json() == {"x": 5, "y": 6}
    replica.act([Hotkey(keys=["ctrl", "s"])])
    replica.wait_window("save as", focused=True)
    replica.act([], settle=3.0)  # the dialog maps before its name entry has the keyboard focus
    replica.act([Hotkey(keys=["ctrl", "a"]), Typing(text="/tmp/hk.txt")], settle=2.0)
    for _attempt in range(3):  # under load GTK's path completion pop-up can swallow the first Enter
        replica.act([Press(key="enter")])
        try:
            replica.wait_window("hk.txt", timeout=7)
            break
        except RequestRejected:
            continue
    else:
        raise AssertionError(f"not saved; windows: {replica.windows()}")
    assert replica.read_file("/tmp/hk.txt").strip() == b"z"


def test_execute_returns_output_and_exit_code(replica: Replica) -> None:
    ok = replica.execute(["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (ok.output, ok.error, ok.returncode) == ("out\n", "err\n", 3)
    assert replica.execute("whoami").output.strip() == "user"


def test_file_read_is_confined_to_home_and_tmp(replica: Replica) -> None:
    replica.write_file("/home/user/Desktop/x.txt", b"data")
    assert replica.read_file("~/Desktop/x.txt") == b"data"
    for path in ("/etc/passwd", "/home/user/../../etc/shadow"):
        with pytest.raises(RequestRejected) as info:
            replica.read_file(path)
        assert info.value.status == 403


def test_requests_need_the_replica_token(replica: Replica) -> None:
    sock = replica.api.endpoint[len("unix:"):]
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic x"}):
        with httpx.Client(transport=httpx.HTTPTransport(uds=sock), base_url="http://r") as c:
            assert c.get("/health", headers=headers).status_code == 401


def test_bad_requests_get_json_4xx_and_the_server_survives(replica: Replica) -> None:
    for body in (b"{", b"[]", b'{"actions": [{"action_type": "NOPE"}]}',
                 b'{"actions": [{"action_type": "CLICK", "x": -5, "y": 1}]}'):
        r = replica.api.send("POST", "/actions", content=body)
        assert r.status_code == 400, body
        assert "error" in r.json()
    assert replica.api.send("GET", "/nope").status_code == 404
    assert replica.health()["status"] == "ok"


def test_tcp_transport_publishes_on_loopback_only(make_pool) -> None:  # type: ignore[no-untyped-def]
    pool = make_pool(1, transport="tcp")
    with pool.lease() as r:
        r.container.reload()
        bindings = r.container.attrs["NetworkSettings"]["Ports"]["5000/tcp"]
        assert bindings and all(b["HostIp"] == "127.0.0.1" for b in bindings)
        assert r.api.endpoint.startswith("http://127.0.0.1:")
        assert r.health()["status"] == "ok"
        assert httpx.get(f"{r.api.endpoint}/health").status_code == 401
