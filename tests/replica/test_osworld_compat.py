"""OSWorld compatibility mode, driven with plain HTTP in the request shapes OSWorld's controllers send.

The replica runs as the pool will run it for OSWorld: OSGYM_COMPAT=1, TCP port 5000
published on its own loopback address 127.0.0.N, no token.
"""

from __future__ import annotations

import io
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator

import httpx
import pytest
from PIL import Image

PYAUTOGUI_PREFIX = "import pyautogui; import time; pyautogui.FAILSAFE = False; {command}"


@pytest.fixture(scope="module")
def vm(compat_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=compat_url, timeout=60) as client:
        yield client


def _windows(vm: httpx.Client) -> list[dict[str, object]]:
    return vm.get("/windows").json()["windows"]  # type: ignore[no-any-return]


def _wait_window(vm: httpx.Client, needle: str, timeout: float = 15) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    while True:
        for w in _windows(vm):
            if needle in str(w["title"]):
                return w
        assert time.monotonic() < deadline, f"no window {needle!r}: {_windows(vm)}"
        time.sleep(0.1)


def test_pyautogui_command_through_execute(vm: httpx.Client) -> None:
    command = PYAUTOGUI_PREFIX.format(command="pyautogui.moveTo(123, 234)")
    r = vm.post("/execute", headers={"Content-Type": "application/json"},
                content=f'{{"command": ["python", "-c", {command!r}], "shell": false}}'.replace("'", '"'))
    assert r.status_code == 200
    body = r.json()
    assert body == {"status": "success", "output": "", "error": "", "returncode": 0}
    assert vm.get("/cursor_position").json() == [123, 234]


def test_screenshot_accessibility_and_file(vm: httpx.Client) -> None:
    shot = vm.get("/screenshot")
    assert shot.status_code == 200
    assert shot.content[:8] == b"\x89PNG\r\n\x1a\n"
    assert Image.open(io.BytesIO(shot.content)).size == (1280, 800)

    at = vm.get("/accessibility").json()["AT"]
    assert ET.fromstring(at).tag == "desktop-frame"

    up = vm.post("/setup/upload", data={"file_path": "/home/user/Desktop/notes.txt"},
                 files={"file_data": ("notes.txt", b"osworld says hi\n")})
    assert up.status_code == 200
    got = vm.post("/file", data={"file_path": "/home/user/Desktop/notes.txt"})
    assert got.status_code == 200
    assert got.content == b"osworld says hi\n"
    assert vm.post("/file", data={"file_path": "/home/user/Desktop/missing.txt"}).status_code == 404
    assert vm.post("/file", data={}).status_code == 400
    assert vm.post("/file", data={"file_path": "/etc/shadow"}).status_code == 403


def test_setup_launch_and_activate_window(vm: httpx.Client) -> None:
    r = vm.post("/setup/launch", json={"command": ["mousepad"], "shell": False})
    assert r.status_code == 200
    assert "launched successfully" in r.text
    _wait_window(vm, "Mousepad")
    r = vm.post("/setup/launch", json={"command": "xterm -T compat-xterm -xrm 'XTerm*allowTitleOps: false'",
                                       "shell": True})
    assert r.status_code == 200
    xterm = _wait_window(vm, "compat-xterm")
    deadline = time.monotonic() + 10
    while not next(w for w in _windows(vm) if w["id"] == xterm["id"])["focused"]:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    r = vm.post("/setup/activate_window", json={"window_name": "Mousepad", "strict": False, "by_class": False})
    assert r.status_code == 200
    deadline = time.monotonic() + 10
    while not any(w["focused"] and "Mousepad" in str(w["title"]) for w in _windows(vm)):
        assert time.monotonic() < deadline, _windows(vm)
        time.sleep(0.05)
    assert vm.post("/setup/activate_window", json={"window_name": "nope", "timeout": 0}).status_code == 404
    assert vm.post("/setup/activate_window", json={}).status_code == 400
    r = vm.post("/setup/close_window", json={"window_name": "xterm", "by_class": True})
    assert r.status_code == 200
    deadline = time.monotonic() + 10
    while any("compat-xterm" in str(w["title"]) for w in _windows(vm)):
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_setup_open_file_opens_and_focuses_it(vm: httpx.Client) -> None:
    vm.post("/setup/upload", data={"file_path": "~/Documents/report.txt"},
            files={"file_data": ("report.txt", b"quarterly\n")})
    r = vm.post("/setup/open_file", json={"path": "~/Documents/report.txt"})
    assert r.status_code == 200, r.text
    w = _wait_window(vm, "report.txt")
    assert w["focused"]


def test_setup_execute_info_endpoints_and_sudo(vm: httpx.Client) -> None:
    r = vm.post("/setup/execute", json={"command": "echo password | sudo -S -p '' whoami", "shell": True})
    assert r.json()["output"] == "root\n"
    assert vm.post("/execute", json={"command": ["no-such-program"]}).status_code == 500
    assert vm.get("/platform").text == "Linux"
    assert vm.post("/screen_size").json() == {"width": 1280, "height": 800}
    assert vm.post("/desktop_path").json() == {"desktop_path": "/home/user/Desktop"}
    tree = vm.post("/list_directory", json={"path": "/home/user"}).json()["directory_tree"]
    names = {c["name"] for c in tree["children"]}
    assert {"Desktop", "Documents", "Downloads"} <= names
    assert vm.get("/terminal").json()["status"] == "success"
    assert vm.get("/health").status_code == 200  # tokenless


def test_recording(vm: httpx.Client) -> None:
    assert vm.post("/start_recording").json()["status"] == "success"
    vm.post("/execute", json={"command": ["python", "-c", PYAUTOGUI_PREFIX.format(command="pyautogui.moveTo(9, 9)")]})
    r = vm.post("/end_recording")
    assert r.status_code == 200
    assert r.content[4:8] == b"ftyp"
    assert vm.post("/end_recording").status_code == 409
