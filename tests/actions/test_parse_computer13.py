"""parse_computer13_response, scale_actions and split_fenced."""

from __future__ import annotations

import pytest

from osgym.agents.formats import parse_computer13_response, scale_actions, split_fenced
from osgym.errors import PolicyError
from osgym.replicas.actions import (
    Click,
    DragTo,
    Fail,
    Hotkey,
    MoveTo,
    Press,
    Scroll,
    Typing,
    Wait,
)
from osgym.replicas.actions import Done as DoneAction


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"action_type": "CLICK", "x": 1, "y": 2}', (None, [Click(x=1, y=2)])),
        (
            '```json\n{"action_type": "CLICK", "parameters": {"x": 1, "y": 2, "button": "right"}}\n```',
            (None, [Click(x=1, y=2, button="right")]),
        ),
        (
            'Select all, then copy.\n```json\n[{"action_type": "HOTKEY", "keys": ["ctrl", "a"]},'
            ' {"action_type": "HOTKEY", "parameters": {"keys": ["ctrl", "c"]}}]\n```',
            ("Select all, then copy.", [Hotkey(keys=["ctrl", "a"]), Hotkey(keys=["ctrl", "c"])]),
        ),
        (
            'I type the name: {"action_type": "TYPING", "text": "notes.txt"}',
            ("I type the name:", [Typing(text="notes.txt")]),
        ),
        ('{"actions": [{"action_type": "PRESS", "key": "enter"}]}', (None, [Press(key="enter")])),
        ('{"action_type": "WAIT"}', (None, [Wait()])),
        ('{"action_type": "SCROLL", "parameters": {"dx": 0, "dy": -3}}', (None, [Scroll(dy=-3)])),
        ("DONE", (None, [DoneAction()])),
        ("```FAIL```", (None, [Fail()])),
        ('["DONE"]', (None, [DoneAction()])),
        ("[]", (None, [])),
        (
            '```json\n{"action_type": "MOVE_TO", "x": 5, "y": 5}\n```\n```json\n{"action_type": "DRAG_TO",'
            ' "x": 9, "y": 9}\n```',
            (None, [MoveTo(x=5, y=5), DragTo(x=9, y=9)]),
        ),
        ('Braces {in prose} first. {"action_type": "DONE"}', ("Braces {in prose} first.", [DoneAction()])),
    ],
)
def test_replies(text: str, expected: tuple) -> None:
    assert parse_computer13_response(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("I will click the OK button.", "expected computer_13 JSON"),
        ("```json\n{not json}\n```", "expected computer_13 JSON"),
        ('{"action_type": "TELEPORT"}', "expected action_type in MOVE_TO"),
        ('{"action_type": "CLICK", "x": -1, "y": 0}', "invalid CLICK action"),
        ('{"action_type": "CLICK", "x": 1, "y": 2, "speed": 3}', "invalid CLICK action"),
        ('{"action_type": "TYPING"}', "invalid TYPING action"),
        ('"hello"', "expected an action object or WAIT/DONE/FAIL"),
        ("[1, 2]", "expected an action object, actual int"),
        ("[[{\"action_type\": \"DONE\"}]]", "expected an action object, actual list"),
        ("[" + ",".join(['"DONE"'] * 101) + "]", "expected at most 100 actions"),
        ("[" * 5000 + "]" * 5000, "expected"),
        ("{" * 5000, "expected computer_13 JSON"),
    ],
    ids=lambda value: value[:40],
)
def test_rejections(text: str, message: str) -> None:
    # "invalid X action" messages come from osgym.replicas.actions.parse_action, word for word.
    with pytest.raises(PolicyError) as info:
        parse_computer13_response(text)
    assert message in str(info.value)


def test_non_string_input() -> None:
    with pytest.raises(PolicyError, match="expected a reply as a string, actual dict"):
        parse_computer13_response({"action_type": "DONE"})  # type: ignore[arg-type]


class TestScaleActions:
    def test_scales_every_coordinate_and_keeps_the_rest(self) -> None:
        actions = [Click(x=640, y=360), Scroll(dy=-2, x=0, y=719), Typing(text="x"), Click()]
        assert scale_actions(actions, (1280, 720), (1920, 1080)) == [
            Click(x=960, y=540),
            Scroll(dy=-2, x=0, y=1078),
            Typing(text="x"),
            Click(),
        ]

    def test_identity_when_sizes_match(self) -> None:
        actions = [MoveTo(x=3, y=4)]
        assert scale_actions(actions, (100, 100), (100, 100)) == actions

    def test_clamps_into_the_screen(self) -> None:
        assert scale_actions([DragTo(x=5000, y=5000)], (1280, 720), (1920, 1080)) == [DragTo(x=1919, y=1079)]

    def test_rejects_empty_sizes(self) -> None:
        with pytest.raises(PolicyError, match="expected positive image and screen sizes"):
            scale_actions([Click(x=1, y=1)], (0, 720), (1920, 1080))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain", ("plain", [])),
        ("```\ncode\n```", (None, ["code"])),
        ("```python\ncode\n```", (None, ["code"])),
        ("a\n```py\nx\n```\nb\n```\ny\n```\nc", ("a\nb\nc", ["x", "y"])),
        ("```WAIT```", (None, ["WAIT"])),
        ("unclosed ```python\nx", ("unclosed ```python\nx", [])),
    ],
)
def test_split_fenced(text: str, expected: tuple) -> None:
    assert split_fenced(text) == expected
