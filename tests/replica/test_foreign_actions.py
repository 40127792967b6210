"""Actions in the three foreign formats (pyautogui, Anthropic computer-use, UI-TARS), parsed and performed."""

from __future__ import annotations

import time
from pathlib import Path

from osgym.agents.formats import parse_anthropic, parse_pyautogui, parse_uitars
from osgym.errors import RequestRejected
from osgym.replicas.actions import Click
from osgym.replicas.client import Replica


def test_pyautogui_code_types_text_that_the_editor_saves(replica: Replica) -> None:
    replica.launch(["mousepad"])
    w = replica.wait_window("mousepad", focused=True)
    replica.act([Click(x=w.center[0], y=w.center[1])])
    replica.act(parse_pyautogui("import pyautogui\npyautogui.typewrite('hello from pyautogui')\n"
                                "pyautogui.hotkey('ctrl', 's')"))
    replica.wait_window("save as", focused=True)
    replica.act([], settle=3.0)  # the dialog maps before its name entry has the keyboard focus
    replica.act(parse_pyautogui("pyautogui.hotkey('ctrl', 'a')\npyautogui.write('/tmp/pg.txt')"), settle=2.0)
    for _attempt in range(3):  # under load GTK's path completion pop-up can swallow the first Enter
        replica.act(parse_pyautogui("pyautogui.press('enter')"))
        try:
            replica.wait_window("pg.txt", timeout=7)
            break
        except RequestRejected:
            continue
    else:
        Path("/tmp/osgym-save-failure.png").write_bytes(replica.screenshot().data)  # for diagnosis
        raise AssertionError(f"not saved; windows: {replica.windows()}")
    assert replica.read_file("/tmp/pg.txt").decode().strip() == "hello from pyautogui"


def test_anthropic_left_click_focuses_the_window_under_it(replica: Replica) -> None:
    replica.launch(["xterm", "-name", "leftterm", "-geometry", "40x10+20+20"])
    replica.wait_window("leftterm", focused=True)
    replica.launch(["xterm", "-name", "rightterm", "-geometry", "40x10+700+400"])
    replica.wait_window("rightterm", focused=True)
    left = next(w for w in replica.api.request("GET", "/windows").json()["windows"] if w["wm_instance"] == "leftterm")
    x, y = left["x"] + left["width"] // 2, left["y"] + left["height"] // 2
    replica.act(parse_anthropic({"action": "left_click", "coordinate": [x, y]}))
    focused = replica.wait_window("leftterm", focused=True, timeout=5)
    assert focused.focused
    assert [w.wm_class for w in replica.windows() if w.focused] == ["XTerm"]
    assert sum(w.focused for w in replica.windows()) == 1


def test_uitars_scroll_changes_the_screen(replica: Replica) -> None:
    replica.write_file("/home/user/Documents/long.txt", "".join(f"line {i}\n" for i in range(400)).encode())
    replica.launch(["mousepad", "/home/user/Documents/long.txt"])
    replica.wait_window("long.txt", focused=True)
    replica.act([], settle=3.0)
    before = replica.screenshot().data
    deadline = time.monotonic() + 5
    while replica.screenshot().data != before:  # the screen is still; a change below is the scroll's
        assert time.monotonic() < deadline, "the desktop never stopped changing"
        replica.act([], settle=1.0)
        before = replica.screenshot().data
    actions = parse_uitars("Thought: read further down.\nAction: scroll(start_box='(500,500)', direction='down')",
                           screen=(1280, 800))
    assert [a.action_type for a in actions] == ["SCROLL"]
    replica.act(actions, settle=2.0)
    assert replica.screenshot().data != before
