"""parse_pyautogui and parse_pyautogui_response: pyautogui code read with ast, never run."""

from __future__ import annotations

import pytest

from osgym.agents.formats import parse_pyautogui, parse_pyautogui_response
from osgym.errors import PolicyError
from osgym.replicas.actions import (
    Click,
    DoubleClick,
    DragTo,
    Fail,
    Hotkey,
    KeyDown,
    KeyUp,
    MouseDown,
    MouseUp,
    MoveTo,
    Press,
    RightClick,
    Scroll,
    Typing,
    Wait,
)
from osgym.replicas.actions import Done as DoneAction


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("pyautogui.click(10, 20)", [Click(x=10, y=20)]),
        ("pyautogui.click(x=10, y=20)", [Click(x=10, y=20)]),
        ("pyautogui.click((10, 20))", [Click(x=10, y=20)]),
        ("pyautogui.click()", [Click()]),
        ("pyautogui.click(10.6, 20.2)", [Click(x=11, y=20)]),
        ("pyautogui.click(10, 20, 2)", [DoubleClick(x=10, y=20)]),
        ("pyautogui.click(10, 20, clicks=3, interval=0.1)", [Click(x=10, y=20, num_clicks=3)]),
        ("pyautogui.click(10, 20, button='right')", [RightClick(x=10, y=20)]),
        ("pyautogui.click(10, 20, button='middle')", [Click(x=10, y=20, button="middle")]),
        ("pyautogui.click(10, 20, button='secondary')", [RightClick(x=10, y=20)]),
        ("pyautogui.doubleClick(5, 6)", [DoubleClick(x=5, y=6)]),
        ("pyautogui.doubleClick()", [DoubleClick()]),
        ("pyautogui.doubleClick(5, 6, button='right')", [Click(x=5, y=6, button="right", num_clicks=2)]),
        ("pyautogui.tripleClick(5, 6)", [Click(x=5, y=6, num_clicks=3)]),
        ("pyautogui.rightClick(5, 6)", [RightClick(x=5, y=6)]),
        ("pyautogui.rightClick()", [RightClick()]),
        ("pyautogui.middleClick(5, 6)", [Click(x=5, y=6, button="middle")]),
        ("pyautogui.moveTo(100, 200, duration=0.5)", [MoveTo(x=100, y=200)]),
        ("pyautogui.moveTo(100, 200, 1, pyautogui.easeInQuad)", [MoveTo(x=100, y=200)]),
        ("pyautogui.moveTo(100, 200, tween=pyautogui.easeOutQuad)", [MoveTo(x=100, y=200)]),
        ("pyautogui.dragTo(300, 400, duration=1)", [DragTo(x=300, y=400)]),
        (
            "pyautogui.dragTo(300, 400, button='right')",
            [MouseDown(button="right"), MoveTo(x=300, y=400), MouseUp(button="right")],
        ),
        ("pyautogui.dragTo(300, 400, mouseDownUp=False)", [MoveTo(x=300, y=400)]),
        ("pyautogui.mouseDown()", [MouseDown()]),
        ("pyautogui.mouseDown(1, 2, button='right')", [MoveTo(x=1, y=2), MouseDown(button="right")]),
        ("pyautogui.mouseUp(button='left')", [MouseUp()]),
        ("pyautogui.mouseUp(7, 8)", [MoveTo(x=7, y=8), MouseUp()]),
        ("pyautogui.scroll(-3)", [Scroll(dy=-3)]),
        ("pyautogui.scroll(5, x=10, y=20)", [Scroll(dy=5, x=10, y=20)]),
        ("pyautogui.scroll(5, 10, 20)", [Scroll(dy=5, x=10, y=20)]),
        ("pyautogui.vscroll(2)", [Scroll(dy=2)]),
        ("pyautogui.hscroll(-4)", [Scroll(dx=-4)]),
        ("pyautogui.typewrite('hello world')", [Typing(text="hello world")]),
        ("pyautogui.typewrite('hi\\n', interval=0.05)", [Typing(text="hi\n")]),
        ("pyautogui.write(message='x')", [Typing(text="x")]),
        ("pyautogui.typewrite(['a', 'Enter'])", [Press(key="a"), Press(key="enter")]),
        ("pyautogui.press('enter')", [Press(key="enter")]),
        ("pyautogui.press('Enter')", [Press(key="enter")]),
        ("pyautogui.press('A')", [Press(key="A")]),
        ("pyautogui.press('tab', presses=3)", [Press(key="tab")] * 3),
        ("pyautogui.press('tab', 2, 0.1)", [Press(key="tab")] * 2),
        ("pyautogui.press(['down', 'enter'])", [Press(key="down"), Press(key="enter")]),
        ("pyautogui.press('x', presses=0)", []),
        ("pyautogui.keyDown('shift')", [KeyDown(key="shift")]),
        ("pyautogui.keyUp(key='shift')", [KeyUp(key="shift")]),
        ("pyautogui.hotkey('ctrl', 'c')", [Hotkey(keys=["ctrl", "c"])]),
        ("pyautogui.hotkey('Ctrl', 'Shift', 't', interval=0.1)", [Hotkey(keys=["ctrl", "shift", "t"])]),
        ("pyautogui.hotkey(['ctrl', 'v'])", [Hotkey(keys=["ctrl", "v"])]),
        ("time.sleep(0.5)", [Wait(seconds=0.5)]),
        ("time.sleep(2)", [Wait(seconds=2)]),
        ("time.sleep(90)", [Wait(seconds=60), Wait(seconds=30)]),
        ("pyautogui.sleep(1)", [Wait(seconds=1)]),
        ("", []),
        ("# nothing to do\n", []),
        ("pass", []),
        ("'a note'", []),
    ],
)
def test_single_calls(code: str, expected: list) -> None:
    assert parse_pyautogui(code) == expected


@pytest.mark.parametrize(("code", "action"), [("WAIT", Wait()), ("DONE", DoneAction()), ("FAIL", Fail())])
def test_special_codes(code: str, action: object) -> None:
    assert parse_pyautogui(code) == [action]
    assert parse_pyautogui(f"  {code}\n") == [action]


def test_multiline_code_with_imports_and_aliases() -> None:
    code = """
import pyautogui
import time
import pyautogui as pg
from time import sleep
from pyautogui import hotkey as hk

pyautogui.click(100, 200)  # focus the editor
time.sleep(0.5)
pg.typewrite("print('hi')")
sleep(1)
hk('ctrl', 's')
DONE
"""
    assert parse_pyautogui(code) == [
        Click(x=100, y=200),
        Wait(seconds=0.5),
        Typing(text="print('hi')"),
        Wait(seconds=1),
        Hotkey(keys=["ctrl", "s"]),
        DoneAction(),
    ]


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("x = 5\npyautogui.click(x, 5)", "line 1: expected pyautogui or time.sleep calls, actual Assign"),
        ("pyautogui.click(x, 5)", "click argument x: expected a constant, actual expression `x`"),
        ("pyautogui.click(1 + 2, 5)", "expected a constant, actual expression `1 + 2`"),
        ("pyautogui.typewrite(f'{name}')", "expected a constant"),
        ("pyautogui.locateOnScreen('ok.png')", "actual pyautogui.locateOnScreen"),
        ("pyautogui.moveRel(10, 0)", "actual pyautogui.moveRel"),
        ("import os\nos.system('ls')", "expected import of pyautogui or time, actual import os"),
        ("from os import system", "expected import from pyautogui or time"),
        ("from pyautogui import locateOnScreen", "actual import of pyautogui.locateOnScreen"),
        ("subprocess.run(['ls'])", "actual subprocess.run"),
        ("print('hi')", "actual print"),
        ("for i in range(3):\n    pyautogui.press('a')", "actual For"),
        ("pyautogui.click(10, 20", "expected pyautogui code, actual invalid Python"),
        ("Sure! I will click the button.", "invalid Python"),
        ("pyautogui.click(-5, 10)", "invalid Click: x: expected greater than or equal to 0, actual -5"),
        ("pyautogui.click(1e999, 10)", "x: expected a finite number"),
        ("pyautogui.click('ok.png')", "x: expected a number, actual str"),
        ("pyautogui.click(True, 10)", "x: expected a number, actual bool"),
        ("pyautogui.click(10)", "expected both x and y"),
        ("pyautogui.click((1, 2, 3))", "expected an (x, y) pair"),
        ("pyautogui.click(1, 2, clicks=4)", "clicks: expected 1..3, actual 4"),
        ("pyautogui.click(1, 2, button='side')", "button: expected one of"),
        ("pyautogui.click(1, 2, wobble=True)", "expected keyword arguments among"),
        ("pyautogui.click(1, 2, x=3)", "expected each argument once, actual 'x' twice"),
        ("pyautogui.click(*pts)", "expected plain arguments"),
        ("pyautogui.click(**kw)", "expected keyword arguments"),
        ("pyautogui.click(1, 2, 1, 0, 'left', 0, None, False, True, 9)", "at most 9 positional"),
        ("pyautogui.moveTo()", "expected x and y coordinates"),
        ("pyautogui.dragTo(5)", "expected both x and y"),
        ("pyautogui.scroll()", "scroll: expected a clicks argument"),
        ("pyautogui.scroll(500)", "invalid Scroll"),
        ("pyautogui.scroll('down')", "clicks: expected a number"),
        ("pyautogui.typewrite()", "expected a message argument"),
        ("pyautogui.typewrite(42)", "message: expected a string"),
        ("pyautogui.typewrite('x' * 20000)", "expected a constant"),
        (f"pyautogui.typewrite('{'x' * 20000}')", "invalid Typing"),
        ("pyautogui.press()", "press: expected a keys argument"),
        ("pyautogui.press('')", "invalid Press"),
        ("pyautogui.press('a', presses=1000)", "presses: expected 0..100, actual 1000"),
        ("pyautogui.press(['a'] * 3, presses=50)", "expected a constant"),
        ("pyautogui.press(['a', 'b', 'c'], presses=50)", "expected at most 100 key presses"),
        ("pyautogui.press(5)", "keys: expected a key name or a list of them"),
        ("pyautogui.keyDown()", "keyDown: expected a key argument"),
        ("pyautogui.hotkey()", "hotkey: expected at least one key"),
        ("pyautogui.hotkey('a', 'b', 'c', 'd', 'e', 'f', 'g')", "invalid Hotkey"),
        ("pyautogui.hotkey('ctrl', 3)", "hotkey: expected a string"),
        ("time.sleep()", "sleep: expected a seconds argument"),
        ("time.sleep(-1)", "expected 0..120 seconds"),
        ("time.sleep(3600)", "expected 0..120 seconds"),
        ("pyautogui.click(1, 2)()", "expected a call of one of"),
        ("pyautogui.position()", "actual pyautogui.position"),
        ("DONE()", "expected a call of one of"),
        ("WAITING", "expected pyautogui or time.sleep calls, actual Expr"),
    ],
    ids=lambda value: value[:40],
)
def test_rejections_say_what_was_expected(code: str, message: str) -> None:
    with pytest.raises(PolicyError, match="expected") as info:
        parse_pyautogui(code)
    assert message in str(info.value)


def test_error_names_the_line() -> None:
    with pytest.raises(PolicyError, match=r"^line 3: "):
        parse_pyautogui("import pyautogui\npyautogui.click(1, 2)\npyautogui.click(x, 2)")


def test_code_is_never_executed(tmp_path) -> None:
    marker = tmp_path / "ran"
    with pytest.raises(PolicyError):
        parse_pyautogui(f"open({str(marker)!r}, 'w').write('x')")
    assert not marker.exists()


def test_pathological_sources_fail_cleanly() -> None:
    for code in ("(" * 500, "a" + ".b" * 50_000 + "()", "pyautogui.click(" + "9" * 5000 + ", 1)", "\x00"):
        with pytest.raises(PolicyError):
            parse_pyautogui(code)


def test_non_string_input() -> None:
    with pytest.raises(PolicyError, match="expected pyautogui code as a string, actual bytes"):
        parse_pyautogui(b"pyautogui.click(1, 2)")  # type: ignore[arg-type]


class TestResponse:
    def test_fenced_code_and_thought(self) -> None:
        text = "The Save button is top left.\n```python\nimport pyautogui\npyautogui.click(12, 34)\n```\n"
        assert parse_pyautogui_response(text) == ("The Save button is top left.", [Click(x=12, y=34)])

    def test_several_blocks_run_in_order(self) -> None:
        text = "First:\n```python\npyautogui.press('a')\n```\nthen\n```\npyautogui.press('b')\n```"
        thought, actions = parse_pyautogui_response(text)
        assert actions == [Press(key="a"), Press(key="b")]
        assert thought == "First:\nthen"

    def test_bare_code(self) -> None:
        assert parse_pyautogui_response("pyautogui.scroll(-2)") == (None, [Scroll(dy=-2)])

    @pytest.mark.parametrize("text", ["```DONE```", "```\nDONE\n```", "DONE", "Finished.\n```DONE```"])
    def test_special_codes_in_fences(self, text: str) -> None:
        assert parse_pyautogui_response(text)[1] == [DoneAction()]

    def test_prose_only_is_rejected(self) -> None:
        with pytest.raises(PolicyError, match="expected pyautogui code, actual invalid Python"):
            parse_pyautogui_response("I think we are done here.")

    def test_bad_block_is_rejected(self) -> None:
        with pytest.raises(PolicyError, match="os.system"):
            parse_pyautogui_response("```python\nimport pyautogui\nos.system('ls')\n```")
