"""OSWorld's own client drives an apps replica in compatibility mode through OSWorld-format tasks.

``SetupController.setup(task["config"])`` runs each task's setup (its ``download`` steps fetch from a
local HTTP server on the host side, as OSWorld does, and upload through ``/setup/upload``);
``PythonController.execute_python_command`` solves it with pyautogui keyboard and mouse calls only;
``PythonController``'s getters read the outcome back. All of it is OSWorld's code from desktop-env 1.0.2,
run unchanged in the client venv (osworld_client_runner.py); the test only waits and asserts.

Waits poll OSWorld's ``get_accessibility_tree`` (or ``get_terminal_output``) against a deadline: the
window and the keyboard focus a person would wait for before typing, never a fixed sleep.
"""

from __future__ import annotations

import io
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openpyxl
import pytest
from docx import Document
from PIL import Image

from osgym.agents.policies.scripted import _focus_in
from osgym.replicas.client import Replica
from osgym.tasks.evaluate import evaluate
from osgym.tasks.spec import load_task
from tests.osworld_client.conftest import SCREEN, AssetServer, OSWorldClient

pytestmark = [pytest.mark.docker, pytest.mark.slow]

DESKTOP = "/home/user/Desktop"
APP_TIMEOUT_S = 90
"""How long a window may take to map and take the focus: a cold LibreOffice start took ~15 s on this
2-core machine with other replicas busy; the bound only matters when something is broken."""


def _until(what: str, probe: Callable[[], Any], ok: Callable[[Any], bool], timeout: float = APP_TIMEOUT_S) -> Any:
    """Poll ``probe()`` until ``ok`` holds for its value; fail naming ``what`` and the last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if ok(value):
            return value
        assert time.monotonic() < deadline, f"{what} not within {timeout} s; last: {str(value)[-2000:]}"
        time.sleep(0.3)


def _wait_focus(osworld: OSWorldClient, window: str, role: str = "") -> str:
    """OSWorld's accessibility tree, once ``window`` is active with the focus on an element of ``role``."""
    return _until(f"focus in {window!r} on {role or 'an element'}",
                  lambda: osworld.call("python", "get_accessibility_tree"),
                  lambda tree: tree is not None and _focus_in(tree, window, role))


def _titles(tree: str) -> list[str]:
    return [el.get("name", "") for app in ET.fromstring(tree) for el in app]


def _pyautogui(osworld: OSWorldClient, *commands: str) -> None:
    """Each command through OSWorld's ``execute_python_command`` (its pyautogui prefix), in order."""
    answers = osworld.calls(*(("python", "execute_python_command", [c]) for c in commands))
    for command, answer in zip(commands, answers, strict=True):
        assert answer is not None and answer["returncode"] == 0, (command, answer)


def _setup(osworld: OSWorldClient, config: list[dict[str, Any]]) -> None:
    assert osworld.call("setup", "setup", config) is True


def _score(osworld: OSWorldClient, task: dict[str, Any]) -> float:
    """osgym's own evaluator on the same replica, reached as OSWorld reaches it (tokenless, port 5000)."""
    with Replica("osworld-client", f"http://{osworld.host}:5000", None) as replica:
        return evaluate(replica, load_task(task), None)


def _docx(paragraphs: list[str]) -> bytes:
    doc = Document()
    for p in paragraphs:
        doc.add_paragraph(p)
    buf = io.BytesIO()
    doc.save(buf)
    return buf.getvalue()


def _xlsx(rows: list[list[Any]]) -> bytes:
    wb = openpyxl.Workbook()
    for row in rows:
        wb.active.append(row)  # type: ignore[union-attr]
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


def _png(rgb: tuple[int, int, int]) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (64, 36), rgb).save(buf, format="PNG")
    return buf.getvalue()


def _file_when(osworld: OSWorldClient, path: str, ok: Callable[[bytes], bool]) -> bytes:
    """``path`` read with OSWorld's ``get_file``, once ``ok`` holds (the app may still be writing it)."""
    def ok_or_partial(data: bytes | None) -> bool:
        try:
            return data is not None and ok(data)
        except Exception:  # a half-written document does not parse yet
            return False
    return _until(f"{path} as required", lambda: osworld.call("python", "get_file", path), ok_or_partial)  # type: ignore[no-any-return]


def test_os_terminal_task(osworld: OSWorldClient) -> None:
    """execute + launch; typed into xfce4-terminal; read with get_terminal_output and get_file."""
    task = {"id": "osworld-client-terminal", "snapshot": "os",
            "instruction": "In the terminal, write the product of 6 and 7 after 'osworld-' to answer.txt.",
            "config": [{"type": "execute", "parameters": {"command": ["mkdir", "-p", f"{DESKTOP}/work"]}},
                       {"type": "launch", "parameters": {"command": [
                           "xfce4-terminal", "--title", "osworld-term", f"--working-directory={DESKTOP}/work"]}}],
            "evaluator": {"func": "exact_match",
                          "result": {"type": "vm_command_line", "command": f"cat {DESKTOP}/work/answer.txt; true",
                                     "shell": True},
                          "expected": {"type": "rule", "rules": {"expected": "osworld-42\n"}}}}
    _setup(osworld, task["config"])  # type: ignore[arg-type]
    assert _score(osworld, task) == 0.0
    _wait_focus(osworld, "osworld-term", "terminal")
    _pyautogui(osworld, "pyautogui.typewrite('echo osworld-$((6*7)) | tee answer.txt\\n')")
    text = _until("the command's output in the terminal", lambda: osworld.call("python", "get_terminal_output"),
                  lambda t: t is not None and "\nosworld-42" in t)
    assert "echo osworld-$((6*7)) | tee answer.txt" in text
    assert osworld.call("python", "get_file", f"{DESKTOP}/work/answer.txt") == b"osworld-42\n"
    assert _score(osworld, task) == 1.0
    _pyautogui(osworld, "pyautogui.hotkey('ctrl', 'd')")  # exit the shell: the terminal closes
    _until("the terminal closed", lambda: osworld.call("python", "get_accessibility_tree"),
           lambda tree: not any("osworld-term" in t for t in _titles(tree)))


def test_gedit_task_with_download_and_activate_window(osworld: OSWorldClient, assets: AssetServer) -> None:
    """download (from the host's HTTP server) + launch gedit, a terminal over it, activate_window back."""
    assets.files["/notes.txt"] = b"first line\nsecond line\n"
    path = f"{DESKTOP}/notes.txt"
    config = [{"type": "download", "parameters": {"files": [{"url": assets.url("/notes.txt"), "path": path}]}},
              {"type": "launch", "parameters": {"command": ["gedit", path]}}]
    task = {"id": "osworld-client-gedit", "snapshot": "gedit", "config": config,
            "instruction": "In gedit, add the line 'added by pyautogui' at the end of notes.txt and save it.",
            "evaluator": {"func": "exact_match", "result": {"type": "vm_command_line", "command": f"cat {path}",
                                                            "shell": True},
                          "expected": {"type": "rule",
                                       "rules": {"expected": "first line\nsecond line\nadded by pyautogui\n"}}}}
    _setup(osworld, config)
    assert assets.hits["/notes.txt"] == 1  # fetched by the client, as OSWorld does, and uploaded
    _wait_focus(osworld, "notes.txt")
    _setup(osworld, [{"type": "launch", "parameters": {"command": "xfce4-terminal --title osworld-cover",
                                                       "shell": True}}])
    _wait_focus(osworld, "osworld-cover", "terminal")
    _setup(osworld, [{"type": "activate_window", "parameters": {"window_name": "notes.txt", "strict": False}}])
    _wait_focus(osworld, "notes.txt", "text")
    assert _score(osworld, task) == 0.0
    _pyautogui(osworld, "pyautogui.hotkey('ctrl', 'end')", "pyautogui.typewrite('\\nadded by pyautogui')")
    _until("gedit marks the document modified", lambda: osworld.call("python", "get_accessibility_tree"),
           lambda tree: any(t.startswith("*notes.txt") for t in _titles(tree)))
    _pyautogui(osworld, "pyautogui.hotkey('ctrl', 's')")
    _file_when(osworld, path, lambda b: b == b"first line\nsecond line\nadded by pyautogui\n")
    assert _score(osworld, task) == 1.0
    _setup(osworld, [{"type": "close_window", "parameters": {"window_name": "notes.txt", "strict": False}},
                     {"type": "close_window", "parameters": {"window_name": "osworld-cover", "strict": False}}])


def test_writer_task_with_download_and_open(osworld: OSWorldClient, assets: AssetServer) -> None:
    """download a .docx + open it (LibreOffice Writer); a paragraph typed at its end and saved."""
    assets.files["/report.docx"] = _docx(["Quarterly report", "Sales went up."])
    path = f"{DESKTOP}/report.docx"
    _setup(osworld, [{"type": "download", "parameters": {"files": [{"url": assets.url("/report.docx"), "path": path}]}},
                     {"type": "open", "parameters": {"path": path}}])
    _wait_focus(osworld, "report.docx", "paragraph")
    _pyautogui(osworld, "pyautogui.hotkey('ctrl', 'end')", "pyautogui.typewrite('\\nApproved by the board.')",
               "pyautogui.hotkey('ctrl', 's')")

    def paragraphs(data: bytes) -> list[str]:
        return [p.text for p in Document(io.BytesIO(data)).paragraphs]
    data = _file_when(osworld, path, lambda b: paragraphs(b)[-1:] == ["Approved by the board."])
    assert paragraphs(data) == ["Quarterly report", "Sales went up.", "Approved by the board."]
    _setup(osworld, [{"type": "execute", "parameters": {"command": "pkill -f soffice; true", "shell": True}}])


def test_calc_task_with_download_and_open(osworld: OSWorldClient, assets: AssetServer) -> None:
    """download a .xlsx + open it (LibreOffice Calc); a SUM formula typed into B1 and saved."""
    assets.files["/data.xlsx"] = _xlsx([[3], [4], [5]])
    path = f"{DESKTOP}/data.xlsx"
    task = {"id": "osworld-client-calc", "snapshot": "libreoffice_calc",
            "instruction": "Put the sum of A1:A3, as a formula, into B1 and save the file.",
            "config": [{"type": "download", "parameters": {"files": [{"url": assets.url("/data.xlsx"), "path": path}]}},
                       {"type": "open", "parameters": {"path": path}}],
            "evaluator": {"func": "compare_table", "result": {"type": "vm_file", "path": path, "dest": "data.xlsx"},
                          "options": {"rules": [{"type": "check_cell", "sheet_idx": 0, "coordinate": "B1",
                                                 "props": {"value": {"method": "eq", "ref": 12}}}]}}}
    _setup(osworld, task["config"])  # type: ignore[arg-type]
    _wait_focus(osworld, "data.xlsx", "table-cell")
    assert _score(osworld, task) == 0.0
    _pyautogui(osworld, "pyautogui.hotkey('ctrl', 'home')", "pyautogui.press('right')",
               "pyautogui.typewrite('=SUM(A1:A3)\\n')", "pyautogui.hotkey('ctrl', 's')")

    def b1(data: bytes) -> Any:
        return openpyxl.load_workbook(io.BytesIO(data)).active["B1"].value  # type: ignore[index]
    _file_when(osworld, path, lambda b: b1(b) == "=SUM(A1:A3)")
    values = openpyxl.load_workbook(io.BytesIO(osworld.call("python", "get_file", path)), data_only=True).active
    assert [values[f"A{i}"].value for i in (1, 2, 3)] == [3, 4, 5]  # type: ignore[index]
    assert values["B1"].value == 12  # type: ignore[index]  (LibreOffice stores the computed value too)
    assert _score(osworld, task) == 1.0
    _setup(osworld, [{"type": "execute", "parameters": {"command": "pkill -f soffice; true", "shell": True}}])


def test_wallpaper_task_and_screenshot(osworld: OSWorldClient, assets: AssetServer) -> None:
    """download a .png + change_wallpaper; the desktop shows it in get_screenshot, a 1920x1080 PNG."""
    rgb = (20, 160, 60)
    assets.files["/green.png"] = _png(rgb)
    path = "/home/user/Pictures/green.png"
    _setup(osworld, [{"type": "download", "parameters": {"files": [{"url": assets.url("/green.png"), "path": path}]}},
                     {"type": "change_wallpaper", "parameters": {"path": path}}])

    def shot() -> Image.Image:
        data = osworld.call("python", "get_screenshot")
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        return Image.open(io.BytesIO(data)).convert("RGB")
    img = _until("the new wallpaper on screen", shot, lambda im: im.getpixel((1500, 600)) == rgb, timeout=30)
    assert img.size == SCREEN


def test_get_vm_wallpaper(osworld: OSWorldClient) -> None:
    """OSWorld posts an empty body to /wallpaper and takes the image's bytes (osgym's own client posts a path)."""
    data = osworld.call("python", "get_vm_wallpaper")
    assert isinstance(data, bytes), data
    with Image.open(io.BytesIO(data)) as img:
        img.load()
        assert img.width > 0 and img.height > 0


def test_other_python_controller_methods(osworld: OSWorldClient, tmp_path: Path) -> None:
    """The rest of PythonController that an agent loop or a getter calls, unchanged."""
    platform, size, desktop, tree = osworld.calls(
        ("python", "get_vm_platform", []), ("python", "get_vm_screen_size", []),
        ("python", "get_vm_desktop_path", []), ("python", "get_vm_directory_tree", ["/home/user"]))
    assert platform == "Linux"
    assert size == {"width": SCREEN[0], "height": SCREEN[1]}
    assert desktop == DESKTOP
    assert {"Desktop", "Documents"} <= {c["name"] for c in tree["children"]}
    _setup(osworld, [{"type": "launch", "parameters": {"command": ["gedit"]}}])
    _wait_focus(osworld, "gedit", "text")
    window = osworld.call("python", "get_vm_window_size", "gedit")
    assert window["width"] > 100 and window["height"] > 100, window
    _setup(osworld, [{"type": "close_window", "parameters": {"window_name": "gedit", "by_class": True}}])
    script, bash = osworld.calls(("python", "run_python_script", ["print(6 * 7)"]),
                                 ("python", "run_bash_script", ["echo $((6 * 7)) && pwd", 30, "/tmp"]))
    assert script["status"] == "success" and script["output"].strip() == "42", script
    assert bash["returncode"] == 0 and bash["output"].split() == ["42", "/tmp"], bash
    dest = tmp_path / "rec.mp4"
    osworld.calls(("python", "start_recording", []),
                  ("python", "execute_action", [{"action_type": "MOVE_TO", "parameters": {"x": 100, "y": 200}}]),
                  ("python", "end_recording", [str(dest)]))
    assert dest.read_bytes()[4:8] == b"ftyp"


def test_other_setup_steps(osworld: OSWorldClient, tmp_path: Path) -> None:
    """upload_file (a file of the client's), command with ``stdout`` into the client's cache_dir, an
    execute that exits non-zero (tolerated, as OSWorld does), sleep."""
    local = tmp_path / "local.txt"
    local.write_bytes(b"from the client\n")
    path = "/home/user/Documents/uploaded.txt"
    _setup(osworld, [{"type": "upload_file", "parameters": {"files": [{"local_path": str(local), "path": path}]}},
                     {"type": "command", "parameters": {"command": ["cat", path], "stdout": "cat-out.txt"}},
                     {"type": "execute", "parameters": {"command": "exit 3", "shell": True}},
                     {"type": "sleep", "parameters": {"seconds": 0.1}}])
    assert (osworld.cache_dir / "cat-out.txt").read_bytes() == b"from the client\n"
    assert osworld.call("python", "get_file", path) == b"from the client\n"


def test_setup_steps_in_every_shape_osworlds_server_accepts(osworld: OSWorldClient) -> None:
    """OSWorld's server hands ``shell`` to subprocess as it came: ``"shell": "true"`` (two Chrome tasks'
    postconfig, five multi_apps tasks) runs through the shell, ``0`` splits a string into words, a list with a
    true ``shell`` runs its first item as the script (SetupController's own ``[cmd]`` shape), and a launch takes
    the same. Each step's effect is read back inside the replica (OSWorld's ``setup`` returns True even when
    the server refuses a step)."""
    out = "/tmp/osworld-shapes"
    _setup(osworld, [
        {"type": "execute", "parameters": {"command": f"echo string-true > {out}", "shell": "true"}},
        {"type": "execute", "parameters": {"command": [f"echo list-$0 >> {out}", "ok"], "shell": True}},
        {"type": "command", "parameters": {"command": "mkdir /tmp/osworld-shapes-split;", "shell": 0}},
        {"type": "execute", "parameters": {"command": "echo password | sudo -S mkdir ~/Desktop/osworld-sudo-dir",
                                           "shell": "true"}},
        {"type": "launch", "parameters": {"command": f"echo launched > {out}-launch", "shell": "true"}},
    ])
    probe = [{"type": "command", "parameters": {
        "command": f"cat {out} {out}-launch; ls -d /tmp/osworld-shapes-split*; stat -c %U ~/Desktop/osworld-sudo-dir",
        "shell": "true", "stdout": "shapes.txt"}}]
    saved = osworld.cache_dir / "shapes.txt"

    def effects() -> str:
        saved.unlink(missing_ok=True)
        _setup(osworld, probe)
        return saved.read_text() if saved.exists() else "(the probe's command was refused)"

    _until("the steps' effects", effects, lambda got: got == (
        "string-true\nlist-ok\nlaunched\n/tmp/osworld-shapes-split;\nroot\n"), timeout=60)


def test_chromium_task_with_download_and_launch(osworld: OSWorldClient, assets: AssetServer) -> None:
    """download two pages + launch Chromium on the first; a new tab typed to the second, read from the
    accessibility tree (the window's title follows the page)."""
    assets.files["/first.html"] = b"<html><head><title>osworld first page</title></head><body>first</body></html>"
    assets.files["/second.html"] = b"<html><head><title>osworld second page</title></head><body>second</body></html>"
    first, second = f"{DESKTOP}/first.html", f"{DESKTOP}/second.html"
    _setup(osworld, [{"type": "download", "parameters": {"files": [
                          {"url": assets.url("/first.html"), "path": first},
                          {"url": assets.url("/second.html"), "path": second}]}},
                     {"type": "launch", "parameters": {"command": ["chromium", first]}}])
    _wait_focus(osworld, "osworld first page")
    _pyautogui(osworld, "pyautogui.hotkey('ctrl', 't')")
    _until("a new tab", lambda: osworld.call("python", "get_accessibility_tree"),
           lambda tree: not any("osworld first page" in t for t in _titles(tree)))
    _pyautogui(osworld, f"pyautogui.typewrite('file://{second}\\n')")
    tree = _until("the second page in the window's title", lambda: osworld.call("python", "get_accessibility_tree"),
                  lambda tree: any("osworld second page" in t for t in _titles(tree)))
    assert "osworld first page" in tree  # still open, in the first tab
    _setup(osworld, [{"type": "execute", "parameters": {"command": "pkill -f chromium; true", "shell": True}}])


def test_chrome_task_opens_tabs_through_devtools(osworld: OSWorldClient, assets: AssetServer) -> None:
    """OSWorld's Chrome task shape: ``google-chrome --remote-debugging-port=1337`` and socat in front of it on
    9222 (both as OSWorld's task files launch them), then ``chrome_open_tabs``: OSWorld's Playwright connects
    over CDP to the replica's 9222, published on its loopback address, and opens the pages; osgym's
    ``open_tabs_info`` getter reads the tabs back through DevTools inside the replica."""
    names = ("alpha", "beta")
    urls = [f"file://{DESKTOP}/tab-{n}.html" for n in names]
    for n in names:
        assets.files[f"/tab-{n}.html"] = f"<html><head><title>osworld tab {n}</title></head></html>".encode()
    task = {"id": "osworld-client-chrome-tabs", "snapshot": "chrome", "instruction": "Keep the two tabs open.",
            "config": [{"type": "download", "parameters": {"files": [
                           {"url": assets.url(f"/tab-{n}.html"), "path": f"{DESKTOP}/tab-{n}.html"} for n in names]}},
                       {"type": "launch", "parameters": {"command": ["google-chrome", "--remote-debugging-port=1337"]}},
                       {"type": "launch", "parameters": {"command": ["socat", "tcp-listen:9222,fork",
                                                                     "tcp:localhost:1337"]}},
                       {"type": "chrome_open_tabs", "parameters": {"urls_to_open": urls}}],
            "evaluator": {"func": "is_expected_tabs", "result": {"type": "open_tabs_info"},
                          "expected": {"type": "rule", "rules": {"type": "url", "urls": urls}}}}
    _setup(osworld, task["config"])  # type: ignore[arg-type]
    _until("both tabs in the accessibility tree", lambda: osworld.call("python", "get_accessibility_tree"),
           lambda tree: tree is not None and "osworld tab beta" in tree)
    assert _score(osworld, task) == 1.0
    _setup(osworld, [{"type": "execute", "parameters": {"command": "pkill -f 'chromium|socat'; true", "shell": True}}])
