"""OSGym's action strings (agiopen-org/osgym's ``POST /step``) onto typed actions, and errors that name the problem."""

from __future__ import annotations

import pytest

from osgym.agents.formats import ReplyContext, get_format, parse_osgym, parse_osgym_response
from osgym.errors import PolicyError
from osgym.replicas.actions import (
    Click,
    DoubleClick,
    DragTo,
    Fail,
    Hotkey,
    MoveTo,
    Press,
    RightClick,
    Scroll,
    Typing,
    Wait,
)
from osgym.replicas.actions import Done as DoneAction


@pytest.mark.parametrize(("text", "actions"), [
    ("click(10,20)", [Click(x=10, y=20)]),
    ("left_double(1, 2)", [DoubleClick(x=1, y=2)]),
    ("right_single(3,4)", [RightClick(x=3, y=4)]),
    ("drag(1,2,30,40)", [MoveTo(x=1, y=2), DragTo(x=30, y=40)]),
    ("move(5,6)", [MoveTo(x=5, y=6)]),
    ("scroll(5,6,-50)", [Scroll(x=5, y=6, dy=-50)]),
    ("hotkey(ctrl,shift,t)", [Hotkey(keys=["ctrl", "shift", "t"])]),
    ("hotkey(enter)", [Hotkey(keys=["enter"])]),
    ("press(tab)", [Press(key="tab")]),
    ("type(Hello, world (ok))", [Typing(text="Hello, world (ok)")]),
    ("wait()", [Wait()]),
    ("call_user()", [Fail()]),
    ("finish()", [DoneAction()]),
    ("click(1,2) & type(abc) & finish()", [Click(x=1, y=2), Typing(text="abc"), DoneAction()]),
])
def test_osgym_strings_parse_as_its_server_reads_them(text: str, actions: list[object]) -> None:
    assert parse_osgym(text) == actions


@pytest.mark.parametrize(("text", "message"), [
    ("tap(1,2)", "expected an OSGym call among click"),
    ("click(1)", "click: expected 2 arguments, actual 1"),
    ("click(1.5,2)", "click: argument 1: expected an integer, actual 1.5"),
    ("click 1 2", "expected an OSGym call such as click\\(x,y\\)"),
    ("hotkey()", "hotkey: expected key names"),
    ("scroll(1,2,500)", "invalid Scroll: dy"),
])
def test_bad_osgym_strings_say_what_was_expected(text: str, message: str) -> None:
    with pytest.raises(PolicyError, match=message):
        parse_osgym(text)


def test_the_registered_format_reads_a_fenced_reply_and_scales_to_the_screen() -> None:
    assert parse_osgym_response("I click OK.\n```\nclick(50,25)\n```") == ("I click OK.", [Click(x=50, y=25)])
    thought, actions = get_format("osgym").parse("```\nclick(50,25)\n```",
                                                 ReplyContext(image_size=(100, 50), screen=(1000, 500)))
    assert thought is None and actions == [Click(x=500, y=250)]
