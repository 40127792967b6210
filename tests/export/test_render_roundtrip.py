"""Rendering is the inverse of parsing: parse(render(actions)) == actions, for every action type and format.

Each sample is rendered in every registered format and parsed back with that format's own registered
parser (``get_format(name).parse``). A format either reproduces the actions exactly (in canonical form)
or refuses them with ``Unrenderable``; which samples each format refuses is pinned below, so a renderer
that starts refusing more, or writing something its parser reads differently, fails here.
"""

from __future__ import annotations

import pytest

from osgym.agents.formats import RenderContext, ReplyContext, canonical, format_names, get_format, render_reply
from osgym.errors import Unrenderable
from osgym.replicas.actions import (
    ACTION_TYPES,
    Action,
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

SAMPLES: dict[str, list[Action]] = {
    "move": [MoveTo(x=100, y=200)],
    "click": [Click(x=100, y=200)],
    "click_here": [Click()],
    "click_middle": [Click(x=1, y=2, button="middle")],
    "click_triple": [Click(x=1, y=2, num_clicks=3)],
    "click_right_double": [Click(x=1, y=2, button="right", num_clicks=2)],
    "mouse_down": [MouseDown()],
    "mouse_down_right": [MouseDown(button="right")],
    "mouse_up": [MouseUp()],
    "right_click": [RightClick(x=10, y=20)],
    "right_click_here": [RightClick()],
    "double_click": [DoubleClick(x=10, y=20)],
    "double_click_here": [DoubleClick()],
    "drag": [DragTo(x=300, y=400)],
    "move_drag": [MoveTo(x=1, y=2), DragTo(x=300, y=400)],
    "scroll_down5": [Scroll(dy=-5, x=50, y=60)],
    "scroll_right3": [Scroll(dx=3)],
    "scroll_both": [Scroll(dx=2, dy=2)],
    "type": [Typing(text="hello world")],
    "type_odd": [Typing(text="it's (a) & b\nline2")],
    "type_enter": [Typing(text="ls -l"), Press(key="enter")],
    "press": [Press(key="enter")],
    "press_upper": [Press(key="A")],
    "key_down": [KeyDown(key="shift")],
    "key_up": [KeyUp(key="shift")],
    "hotkey": [Hotkey(keys=["ctrl", "s"])],
    "hotkey_plus": [Hotkey(keys=["ctrl", "+"])],
    "wait5": [Wait(seconds=5.0)],
    "wait1": [Wait(seconds=1.0)],
    "fail": [Fail()],
    "done": [DoneAction()],
    "many": [Click(x=5, y=5), Typing(text="abc"), Hotkey(keys=["ctrl", "s"]), DoneAction()],
}

REFUSED: dict[str, set[str]] = {
    "computer_13": set(),
    "pyautogui": {"scroll_both"},
    "anthropic": {"click_right_double", "key_down", "key_up", "mouse_down_right", "scroll_both"},
    "uitars": {"click_here", "click_middle", "click_right_double", "click_triple", "double_click_here", "drag",
               "mouse_down", "mouse_down_right", "mouse_up", "press_upper", "right_click_here", "scroll_both",
               "scroll_right3", "wait1"},
    "osgym": {"click_here", "click_middle", "click_right_double", "click_triple", "double_click_here", "drag",
              "key_down", "key_up", "mouse_down", "mouse_down_right", "mouse_up", "right_click_here", "scroll_both",
              "scroll_right3", "type_odd", "wait5"},
}
CTX = RenderContext((1000, 1000))  # UI-TARS's grid is exact at 1000 px


def test_the_samples_cover_every_action_type_and_every_format_renders() -> None:
    assert {a.action_type for acts in SAMPLES.values() for a in acts} == set(ACTION_TYPES)
    assert set(REFUSED) == set(format_names())
    assert all(get_format(name).render is not None for name in format_names())


@pytest.mark.parametrize("fmt", sorted(REFUSED))
@pytest.mark.parametrize("sample", sorted(SAMPLES))
def test_parse_of_render_is_the_actions(fmt: str, sample: str) -> None:
    actions = SAMPLES[sample]
    if sample in REFUSED[fmt]:
        with pytest.raises(Unrenderable, match=fmt):
            render_reply(fmt, "a thought", actions, CTX)
        return
    reply = render_reply(fmt, "a thought", actions, CTX)
    thought, back = get_format(fmt).parse(reply, ReplyContext(image_size=(1000, 1000), screen=(1000, 1000)))
    assert back == canonical(actions)
    assert thought == "a thought"


@pytest.mark.parametrize("fmt", sorted(REFUSED))
def test_every_action_type_has_a_form_in_every_format_or_a_named_refusal(fmt: str) -> None:
    """Each type is written by the format unless the format has no call for it at all."""
    written = {a.action_type for name, acts in SAMPLES.items() if name not in REFUSED[fmt] for a in acts}
    missing = set(ACTION_TYPES) - written
    no_call = {"anthropic": {"KEY_DOWN", "KEY_UP"}, "uitars": {"MOUSE_DOWN", "MOUSE_UP"},
               "osgym": {"MOUSE_DOWN", "MOUSE_UP", "KEY_DOWN", "KEY_UP"}}
    assert missing == no_call.get(fmt, set())


def test_canonical_spellings_round_trip_as_the_other_spelling() -> None:
    for fmt in ("pyautogui", "anthropic", "uitars"):
        reply = render_reply(fmt, None, [Click(x=4, y=5, button="right"), Hotkey(keys=["Return"])], CTX)
        _, back = get_format(fmt).parse(reply, CTX.reply_context())
        assert back == [RightClick(x=4, y=5), Press(key="return")]


def test_uitars_relative_grid_comes_back_within_half_a_step() -> None:
    ctx = RenderContext((1920, 1080))
    for x, y in [(0, 0), (961, 539), (1919, 1079), (7, 1001)]:
        reply = render_reply("uitars", None, [Click(x=x, y=y)], ctx)
        _, back = get_format("uitars").parse(reply, ctx.reply_context())
        assert abs(back[0].x - x) <= ctx.tolerance("uitars") and abs(back[0].y - y) <= ctx.tolerance("uitars")
    exact = RenderContext((1920, 1080), coord_space="absolute")
    reply = render_reply("uitars", None, [Click(x=961, y=539)], exact)
    assert get_format("uitars").parse(reply, exact.reply_context())[1] == [Click(x=961, y=539)]


def test_a_thought_that_breaks_the_format_is_refused_not_written() -> None:
    with pytest.raises(Unrenderable, match="read back|parse back"):
        render_reply("pyautogui", "```python\npyautogui.click(1, 1)\n```", [Press(key="a")], CTX)
    with pytest.raises(Unrenderable, match="at least one action"):
        render_reply("pyautogui", None, [], CTX)
