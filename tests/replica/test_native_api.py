"""The native control API's endpoints against a real replica: observation, processes, windows, files, recording."""

from __future__ import annotations

import io
import socket
import time
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from PIL import Image

from osgym.agents.policies.scripted import _control_enabled, _element_center, _focus_in
from osgym.errors import RequestRejected
from osgym.replicas.actions import MoveTo
from osgym.replicas.client import Replica
from osgym.replicas.hollow.protocol import A11yFind

ST = "{https://accessibility.ubuntu.example.org/ns/state}"


def test_jpeg_screenshot_with_quality_and_max_side(shared_replica: Replica) -> None:
    small = shared_replica.screenshot(format="jpeg", quality=30, max_side=640)
    big = shared_replica.screenshot(format="jpeg", quality=95)
    img = Image.open(io.BytesIO(small.data))
    assert img.format == "JPEG"
    assert img.size == (small.width, small.height) == (640, 400)
    assert Image.open(io.BytesIO(big.data)).size == (1280, 800)
    assert len(small.data) < len(big.data)


def test_screenshot_draws_the_cursor(shared_replica: Replica) -> None:
    shared_replica.act([MoveTo(x=1000, y=100)])  # over the bare (black) root window
    api = shared_replica.api
    with_cursor = Image.open(io.BytesIO(api.request("GET", "/screenshot", params={"cursor": "1"}).content))
    without = Image.open(io.BytesIO(api.request("GET", "/screenshot", params={"cursor": "0"}).content))
    box = (990, 90, 1030, 130)
    assert with_cursor.crop(box).tobytes() != without.crop(box).tobytes()
    far = (100, 600, 140, 640)
    assert with_cursor.crop(far).tobytes() == without.crop(far).tobytes()


def test_pointer_endpoint(shared_replica: Replica) -> None:
    shared_replica.act([MoveTo(x=7, y=9)])
    assert shared_replica.pointer() == (7, 9)


def test_execute_times_out_and_kills_the_command(shared_replica: Replica) -> None:
    t0 = time.monotonic()
    r = shared_replica.execute("echo started; sleep 30", timeout=1)
    assert r.status == "timeout"
    assert r.output == "started\n"
    assert time.monotonic() - t0 < 10
    assert "sleep 30" not in shared_replica.execute(["ps", "-eo", "args"]).output


def test_execute_splits_strings_like_a_shell_when_shell_is_false(shared_replica: Replica) -> None:
    r = shared_replica.execute("printf '%s|' 'a b' ~/x", shell=False)
    assert r.output == "a b|/home/user/x|"


def test_python_and_pyautogui_are_installed_and_quiet(shared_replica: Replica) -> None:
    code = "import pyautogui; pyautogui.FAILSAFE = False; pyautogui.moveTo(33, 44); print(pyautogui.size())"
    r = shared_replica.execute(["python", "-c", code])
    assert (r.returncode, r.output, r.error) == (0, "Size(width=1280, height=800)\n", "")
    assert shared_replica.pointer() == (33, 44)


def test_home_folders_exist(shared_replica: Replica) -> None:
    r = shared_replica.execute("ls -d ~/Desktop ~/Documents ~/Downloads && command -v ffmpeg tint2 pcmanfm ristretto")
    assert r.returncode == 0, r.error


def _windows(replica: Replica) -> list[dict[str, object]]:
    return replica.api.request("GET", "/windows").json()["windows"]  # type: ignore[no-any-return]


def test_launch_windows_activate_wait_and_close(shared_replica: Replica) -> None:
    # xterm's shell retitles the window, so the windows are told apart by WM instance name (-name).
    shared_replica.launch(["xterm", "-name", "firstterm"])
    shared_replica.wait_window("firstterm", focused=True)
    shared_replica.launch(["xterm", "-name", "secondterm"])
    shared_replica.wait_window("secondterm", focused=True)
    listed = _windows(shared_replica)
    by_instance = {w["wm_instance"]: w for w in listed}
    assert not by_instance["firstterm"]["focused"]
    assert all({"id", "title", "x", "y", "width", "height", "focused", "wm_class"} <= set(w) for w in listed)
    shared_replica.activate_window("firstterm")
    assert shared_replica.wait_window("firstterm", focused=True, timeout=5).focused
    for name in ("firstterm", "secondterm"):
        shared_replica.close_window(name)
    deadline = time.monotonic() + 10
    while any(w["wm_instance"].endswith("term") for w in _windows(shared_replica)):
        assert time.monotonic() < deadline, "windows did not close"
        time.sleep(0.05)
    with pytest.raises(RequestRejected) as info:
        shared_replica.activate_window("no-such-window")
    assert info.value.status == 404


def test_file_put_and_get_round_trip_and_confinement(shared_replica: Replica) -> None:
    data = bytes(range(256)) * 1000
    shared_replica.write_file("/tmp/sub/dir/blob.bin", data)
    assert shared_replica.read_file("/tmp/sub/dir/blob.bin") == data
    for path in ("/tmp/../etc/passwd", "~/../../etc/passwd", "/proc/self/environ", "/opt/osgym/api.py"):
        with pytest.raises(RequestRejected) as info:
            shared_replica.read_file(path)
        assert info.value.status == 403, path
    with pytest.raises(RequestRejected) as info:
        shared_replica.write_file("/etc/evil", b"x")
    assert info.value.status == 403
    with pytest.raises(RequestRejected) as info:
        shared_replica.read_file("/tmp/does-not-exist")
    assert info.value.status == 404


def _tree_once_it_names(replica: Replica, name: str, **kw: Any) -> ET.Element:
    """The tree once a top-level window whose name contains ``name`` is in it (at most 15 s): an application
    registers with AT-SPI, and names a new window there, shortly after the window manager maps it."""
    deadline = time.monotonic() + 15
    while True:
        root = ET.fromstring(replica.accessibility(**kw))
        if any(name in (top.get("name") or "") for app in root for top in app) or time.monotonic() > deadline:
            return root
        time.sleep(0.2)


def test_accessibility_tree_shows_an_applications_widgets(shared_replica: Replica) -> None:
    shared_replica.launch(["mousepad"])
    shared_replica.wait_window("mousepad", focused=True)
    root = _tree_once_it_names(shared_replica, "Mousepad")
    frames = [el for el in root.iter("frame") if "Mousepad" in el.get("name", "")]
    assert root.tag == "desktop-frame"
    assert frames, ET.tostring(root)[:500]
    assert frames[0].get(f"{ST}active") == "true"
    assert any(el.get("name") == "File" for el in frames[0].iter("menu"))
    small = ET.fromstring(shared_replica.accessibility(max_nodes=3))
    assert small.get("truncated") == "true"
    assert sum(1 for _ in small.iter()) <= 5
    # What is on screen only: the window and its menu bar, not the items of its closed menus.
    hidden = [el for el in frames[0].iter() if el.get(f"{ST}showing") != "true"]
    assert hidden, "every element of the window is on screen: nothing for showing_only to leave out"
    shown = ET.fromstring(shared_replica.accessibility(showing_only=True))
    shown_frames = [el for el in shown.iter("frame") if "Mousepad" in el.get("name", "")]
    assert shown_frames and any(el.get("name") == "File" for el in shown_frames[0].iter("menu"))
    off_screen = [f"{el.tag} {el.get('name')!r}" for app in shown for el in app.iter()
                  if el is not app and el.get(f"{ST}showing") != "true"]
    assert not off_screen, off_screen[:10]
    assert sum(1 for _ in shown_frames[0].iter()) < sum(1 for _ in frames[0].iter())
    # One window's tree: a second window, named for a file, and the first one left out.
    shared_replica.write_file("/tmp/osgym-one-window.txt", b"x")
    shared_replica.launch(["mousepad", "--opening-mode=window", "/tmp/osgym-one-window.txt"])
    shared_replica.wait_window("osgym-one-window", focused=True)
    both = _tree_once_it_names(shared_replica, "osgym-one-window", showing_only=True)
    names = [top.get("name") or "" for app in both for top in app]
    assert any("osgym-one-window" in n for n in names) and any("osgym-one-window" not in n for n in names), names
    one = ET.fromstring(shared_replica.accessibility(showing_only=True, window="OSGYM-one-WINDOW"))
    kept = [top.get("name") or "" for app in one for top in app]
    assert kept and kept == [n for n in names if "osgym-one-window" in n], (kept, names)
    assert [top for app in ET.fromstring(shared_replica.accessibility(window="no window is called this"))
            for top in app] == []
    shared_replica.close_window("osgym-one-window")
    for bad in ("x" * 201, "a\tb"):
        with pytest.raises(RequestRejected) as info:
            shared_replica.accessibility(window=bad)
        assert info.value.status == 400 and "window" in str(info.value)
    shared_replica.close_window("mousepad")


def test_a_find_read_holds_only_the_element_that_the_windows_tree_would_give(shared_replica: Replica) -> None:
    """``find`` (what the scripted policy's waits ask for) stops the replica's walk at one element: the policy's
    checks read the same answer from it as from the window's whole on-screen tree."""
    # Mousepad is one process per session: one still quitting (an earlier test closed its last window) would take
    # this launch over and then exit with it
    gone = shared_replica.execute("for i in $(seq 50); do pgrep -x mousepad || exit 0; sleep 0.2; done; exit 1",
                                  shell=True)
    assert gone.returncode == 0, f"a mousepad is still running: {gone.output}"
    shared_replica.write_file("/tmp/osgym-find.txt", b"x")
    shared_replica.launch(["mousepad", "--opening-mode=window", "/tmp/osgym-find.txt"])
    shared_replica.wait_window("osgym-find", focused=True)

    def find(**kw: Any) -> str:
        return shared_replica.accessibility(showing_only=True, window="osgym-find", find=A11yFind(**kw))

    deadline = time.monotonic() + 15  # the text view takes the focus shortly after the window maps
    while ET.fromstring(focused := find(focused=True)).get("found") != "true" and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ET.fromstring(focused).get("found") == "true", focused
    tree = shared_replica.accessibility(showing_only=True, window="osgym-find")
    first_focused = next(el for app in ET.fromstring(tree) for top in app if top.get(f"{ST}active") == "true"
                         for el in top.iter() if el.get(f"{ST}focused") == "true")
    [[top]] = [list(app) for app in ET.fromstring(focused) if len(app)]
    assert [(el.tag, el.get("name")) for el in top] == [(first_focused.tag, first_focused.get("name"))]
    assert _focus_in(focused, "osgym-find", "") and _focus_in(tree, "osgym-find", "")
    menu = find(name="File", role="menu", sized=True)
    assert _element_center(menu, "osgym-find", "File", "menu") == _element_center(tree, "osgym-find", "File", "menu")
    assert _element_center(menu, "osgym-find", "File", "menu") is not None
    assert _control_enabled(find(name="File", role="menu"), "osgym-find", "File", "menu") \
        == _control_enabled(tree, "osgym-find", "File", "menu") is True
    missing = ET.fromstring(find(name="no element is called this", role="push-button"))
    assert missing.get("found") == "false" and [el for app in missing for top in app for el in top] == []
    for bad, word in ((A11yFind(name="File", role="Push Button"), "find_role"), (A11yFind(sized=True), "find")):
        with pytest.raises(RequestRejected) as info:
            shared_replica.accessibility(find=bad)
        assert info.value.status == 400 and word in str(info.value)
    shared_replica.close_window("osgym-find")


def test_recording_produces_an_mp4(shared_replica: Replica) -> None:
    shared_replica.start_recording(fps=10)
    with pytest.raises(RequestRejected) as info:
        shared_replica.start_recording()
    assert info.value.status == 409
    shared_replica.act([MoveTo(x=100, y=100), MoveTo(x=600, y=500)], settle=0.5)
    mp4 = shared_replica.stop_recording()
    assert mp4[4:8] == b"ftyp"
    assert len(mp4) > 1000
    with pytest.raises(RequestRejected):
        shared_replica.api.request("POST", "/recording/stop")


def _raw(replica: Replica, request: bytes) -> tuple[int, bytes]:
    """Send raw bytes to the replica's Unix socket and return (status, body)."""
    token = replica.api.headers["Authorization"].encode()
    request = request.replace(b"AUTH", token)
    sock_path = replica.api.endpoint[len("unix:"):]
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(10)
        s.connect(sock_path)
        s.sendall(request)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
            if b"\r\n\r\n" in data:
                head, _, body = data.partition(b"\r\n\r\n")
                length = int(next((h.split(b":")[1] for h in head.split(b"\r\n") if
                                   h.lower().startswith(b"content-length")), b"0"))
                if len(body) >= length:
                    break
    status = int(data.split(b" ", 2)[1])
    return status, data.partition(b"\r\n\r\n")[2]


@pytest.mark.parametrize(("request_bytes", "status"), [
    (b"POST /actions HTTP/1.1\r\nAuthorization: AUTH\r\nContent-Length: 999999999\r\n\r\n", 413),
    (b"POST /actions HTTP/1.1\r\nAuthorization: AUTH\r\nContent-Length: -4\r\n\r\n", 400),
    (b"POST /actions HTTP/1.1\r\nAuthorization: AUTH\r\nContent-Length: ten\r\n\r\n", 400),
    (b"POST /actions HTTP/1.1\r\nAuthorization: AUTH\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 411),
    (b"BREW /health HTTP/1.1\r\nAuthorization: AUTH\r\n\r\n", 501),
    (b"PATCH /health HTTP/1.1\r\nAuthorization: AUTH\r\n\r\n", 501),
    (b"DELETE /health HTTP/1.1\r\nAuthorization: AUTH\r\nConnection: close\r\n\r\n", 405),
])
def test_protocol_errors_are_json(shared_replica: Replica, request_bytes: bytes, status: int) -> None:
    got, body = _raw(shared_replica, request_bytes)
    assert got == status
    assert b'"error"' in body
    assert shared_replica.health()["status"] == "ok"


def test_desktop_tier_says_it_has_no_wallpaper_and_xterm_no_terminal_text(shared_replica: Replica) -> None:
    """The openbox desktop has no wallpaper to set (409, not a crash or a silent success), and xterm's
    text is not in the accessibility tree: /terminal answers null, as OSWorld's does with no terminal."""
    with pytest.raises(RequestRejected) as exc:
        shared_replica.set_wallpaper("/usr/share/pixmaps/debian-logo.png")
    assert exc.value.status == 409 and "apps tier" in str(exc.value)
    shared_replica.launch(["xterm", "-T", "no-a11y-xterm", "-xrm", "XTerm*allowTitleOps: false"])
    shared_replica.wait_window("no-a11y-xterm", timeout=15, focused=True)
    try:
        assert shared_replica.terminal() is None
    finally:
        shared_replica.close_window("no-a11y-xterm")


def test_token_is_replaced_and_the_old_one_refused(replica: Replica) -> None:
    old_token = replica.api.headers["Authorization"].split()[1]  # the one the pool gave it
    for bad in ("short", "x" * 257, "has a space in it, twenty-four+", "é" * 30):
        with pytest.raises(RequestRejected, match="400"):
            replica.replace_token(bad)
    assert replica.health()["status"] == "ok"  # a refused token changes nothing
    replica.replace_token("n" * 32)
    assert replica.health()["status"] == "ok"
    with Replica("old", replica.api.endpoint, old_token, socket_owner=replica.api.socket_owner) as old:
        with pytest.raises(RequestRejected, match="401"):
            old.health()
