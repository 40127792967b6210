"""parse_anthropic: the input of Anthropic's computer-use tool onto typed actions."""

from __future__ import annotations

import pytest

from osgym.agents.formats import parse_anthropic, xdotool_chords
from osgym.errors import PolicyError
from osgym.replicas.actions import (
    Click,
    DoubleClick,
    DragTo,
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


@pytest.mark.parametrize(
    ("tool_input", "expected"),
    [
        ({"action": "key", "text": "Return"}, [Press(key="Return")]),
        ({"action": "key", "text": "ctrl+s"}, [Hotkey(keys=["ctrl", "s"])]),
        ({"action": "key", "text": "ctrl+shift+t"}, [Hotkey(keys=["ctrl", "shift", "t"])]),
        ({"action": "key", "text": "ctrl+a BackSpace"}, [Hotkey(keys=["ctrl", "a"]), Press(key="BackSpace")]),
        ({"action": "key", "text": "KP_0"}, [Press(key="KP_0")]),
        ({"action": "type", "text": "hello\nworld"}, [Typing(text="hello\nworld")]),
        ({"action": "mouse_move", "coordinate": [10, 20]}, [MoveTo(x=10, y=20)]),
        ({"action": "left_click"}, [Click()]),
        ({"action": "left_click", "coordinate": [10, 20]}, [Click(x=10, y=20)]),
        ({"action": "left_click", "coordinate": (10.4, 19.6)}, [Click(x=10, y=20)]),
        ({"action": "right_click", "coordinate": [1, 2]}, [RightClick(x=1, y=2)]),
        ({"action": "right_click"}, [RightClick()]),
        ({"action": "middle_click", "coordinate": [1, 2]}, [Click(x=1, y=2, button="middle")]),
        ({"action": "double_click", "coordinate": [1, 2]}, [DoubleClick(x=1, y=2)]),
        ({"action": "triple_click", "coordinate": [1, 2]}, [Click(x=1, y=2, num_clicks=3)]),
        (
            {"action": "left_click_drag", "start_coordinate": [1, 2], "coordinate": [30, 40]},
            [MoveTo(x=1, y=2), DragTo(x=30, y=40)],
        ),
        ({"action": "left_click_drag", "coordinate": [30, 40]}, [DragTo(x=30, y=40)]),
        ({"action": "left_mouse_down"}, [MouseDown()]),
        ({"action": "left_mouse_up"}, [MouseUp()]),
        ({"action": "left_mouse_down", "coordinate": [5, 5]}, [MoveTo(x=5, y=5), MouseDown()]),
        (
            {"action": "scroll", "coordinate": [100, 200], "scroll_direction": "up", "scroll_amount": 3},
            [Scroll(dy=3, x=100, y=200)],
        ),
        ({"action": "scroll", "scroll_direction": "down", "scroll_amount": 5}, [Scroll(dy=-5)]),
        ({"action": "scroll", "scroll_direction": "left", "scroll_amount": 2}, [Scroll(dx=-2)]),
        ({"action": "scroll", "scroll_direction": "right", "scroll_amount": 2}, [Scroll(dx=2)]),
        ({"action": "scroll", "scroll_direction": "up", "scroll_amount": 0}, [Scroll()]),
        ({"action": "wait", "duration": 2}, [Wait(seconds=2)]),
        ({"action": "wait", "duration": 0.25}, [Wait(seconds=0.25)]),
        ({"action": "wait", "duration": 100}, [Wait(seconds=60), Wait(seconds=40)]),
        (
            {"action": "hold_key", "text": "shift", "duration": 1.5},
            [KeyDown(key="shift"), Wait(seconds=1.5), KeyUp(key="shift")],
        ),
        (
            {"action": "hold_key", "text": "ctrl+alt", "duration": 1},
            [KeyDown(key="ctrl"), KeyDown(key="alt"), Wait(seconds=1), KeyUp(key="alt"), KeyUp(key="ctrl")],
        ),
        ({"action": "screenshot"}, []),
        ({"action": "cursor_position"}, []),
        ({"action": "zoom", "region": [0, 0, 10, 10]}, []),
    ],
)
def test_actions(tool_input: dict, expected: list) -> None:
    assert parse_anthropic(tool_input) == expected


@pytest.mark.parametrize(
    ("tool_input", "expected"),
    [
        (
            {"action": "left_click", "coordinate": [5, 6], "text": "shift"},
            [KeyDown(key="shift"), Click(x=5, y=6), KeyUp(key="shift")],
        ),
        (
            {"action": "left_click", "coordinate": [5, 6], "text": "ctrl+shift"},
            [KeyDown(key="ctrl"), KeyDown(key="shift"), Click(x=5, y=6), KeyUp(key="shift"), KeyUp(key="ctrl")],
        ),
        (
            {"action": "scroll", "coordinate": [5, 6], "scroll_direction": "up", "scroll_amount": 1,
             "text": "ctrl"},
            [KeyDown(key="ctrl"), Scroll(dy=1, x=5, y=6), KeyUp(key="ctrl")],
        ),
        ({"action": "left_click", "coordinate": [5, 6], "text": ""}, [Click(x=5, y=6)]),
        ({"action": "left_click", "coordinate": [5, 6], "text": None}, [Click(x=5, y=6)]),
    ],
)
def test_modifier_keys_held_around_mouse_actions(tool_input: dict, expected: list) -> None:
    assert parse_anthropic(tool_input) == expected


@pytest.mark.parametrize(
    ("tool_input", "message"),
    [
        ("left_click", "expected a tool input object, actual str"),
        ({}, "expected action in key, "),
        ({"action": "fly"}, "actual fly"),
        ({"action": 3}, "actual 3"),
        ({"action": "key"}, "key: expected a text parameter, actual none"),
        ({"action": "key", "text": ""}, "expected a key name"),
        ({"action": "key", "text": "ctrl+"}, "expected keys joined by '+'"),
        ({"action": "key", "text": 5}, "text: expected a string, actual int"),
        ({"action": "type"}, "type: expected a text parameter"),
        ({"action": "type", "text": "x" * 10_001}, "invalid Typing"),
        (
            {"action": "type", "text": "hi", "coordinate": [1, 2]},
            "type: expected parameters among text, actual coordinate",
        ),
        ({"action": "screenshot", "text": "x"}, "screenshot: expected parameters among none, actual text"),
        ({"action": "mouse_move"}, "mouse_move: expected a coordinate parameter"),
        ({"action": "left_click", "coordinate": [1]}, "coordinate: expected [x, y], actual [1]"),
        ({"action": "left_click", "coordinate": "1,2"}, "coordinate: expected [x, y]"),
        ({"action": "left_click", "coordinate": [-1, 2]}, "invalid Click: x: expected greater than or equal to 0"),
        ({"action": "left_click", "coordinate": ["1", 2]}, "coordinate[0]: expected a number, actual str"),
        ({"action": "left_click", "coordinate": [float("nan"), 2]}, "expected a finite number"),
        ({"action": "left_click", "coordinate": [True, 2]}, "expected a number, actual bool"),
        ({"action": "left_click_drag", "start_coordinate": [1, 2]}, "expected a coordinate parameter"),
        ({"action": "scroll", "scroll_amount": 3}, "expected a scroll_direction parameter"),
        ({"action": "scroll", "scroll_direction": "up"}, "expected a scroll_amount parameter"),
        ({"action": "scroll", "scroll_direction": "sideways", "scroll_amount": 1}, "expected up, down, left or right"),
        ({"action": "scroll", "scroll_direction": ["up"], "scroll_amount": 1}, "expected up, down, left or right"),
        ({"action": "scroll", "scroll_direction": "up", "scroll_amount": 1.5}, "scroll_amount: expected an integer"),
        ({"action": "scroll", "scroll_direction": "up", "scroll_amount": -1}, "scroll_amount: expected 0..100"),
        ({"action": "wait"}, "wait: expected a duration parameter"),
        ({"action": "wait", "duration": -1}, "expected 0..120 seconds"),
        ({"action": "wait", "duration": "2"}, "duration: expected a number, actual str"),
        ({"action": "hold_key", "text": "shift"}, "hold_key: expected a duration parameter"),
        ({"action": "left_click", "coordinate": [1, 2], "text": "ctrl++shift"}, "expected keys joined by '+'"),
    ],
)
def test_rejections(tool_input: object, message: str) -> None:
    with pytest.raises(PolicyError, match="expected") as info:
        parse_anthropic(tool_input)  # type: ignore[arg-type]
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("text", "chords"),
    [
        ("a", [["a"]]),
        ("Return", [["Return"]]),
        ("alt+Tab", [["alt", "Tab"]]),
        ("ctrl+a Delete", [["ctrl", "a"], ["Delete"]]),
        ("  ctrl+c  ", [["ctrl", "c"]]),
        ("+", [["+"]]),
        ("ctrl++", [["ctrl", "+"]]),
    ],
)
def test_xdotool_chords(text: str, chords: list[list[str]]) -> None:
    assert xdotool_chords(text) == chords
