"""parse_uitars and parse_uitars_response: UI-TARS action text, scaled to the screen."""

from __future__ import annotations

import pytest

from osgym.agents.formats import (
    UITARS_SCROLL_CLICKS,
    UITARS_WAIT_SECONDS,
    parse_uitars,
    parse_uitars_response,
)
from osgym.errors import PolicyError
from osgym.replicas.actions import (
    Click,
    DoubleClick,
    DragTo,
    Fail,
    Hotkey,
    KeyDown,
    KeyUp,
    MoveTo,
    Press,
    RightClick,
    Scroll,
    Typing,
    Wait,
)
from osgym.replicas.actions import Done as DoneAction

SCREEN = (1920, 1080)


def one(text: str, **kwargs: object) -> list:
    return parse_uitars(text, screen=kwargs.pop("screen", SCREEN), **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        ("click(start_box='(500,500)')", [Click(x=960, y=540)]),
        ("click(start_box='<|box_start|>(500,500)<|box_end|>')", [Click(x=960, y=540)]),
        ("click(start_box='(400,400,600,600)')", [Click(x=960, y=540)]),
        ("click(start_box='[400, 400, 600, 600]')", [Click(x=960, y=540)]),
        ("click(start_box='<|box_start|>(400,400,600,600)<|box_end|>')", [Click(x=960, y=540)]),
        ("click(point='<point>500 500</point>')", [Click(x=960, y=540)]),
        ("click(start_box='<bbox>400 400 600 600</bbox>')", [Click(x=960, y=540)]),
        ("click(start_box='(0,0)')", [Click(x=0, y=0)]),
        ("click(start_box='(1000,1000)')", [Click(x=1919, y=1079)]),
        ("click(start_box='(250.5,100.25)')", [Click(x=481, y=108)]),
        ("left_single(start_box='(500,500)')", [Click(x=960, y=540)]),
        ("left_double(start_box='(500,500)')", [DoubleClick(x=960, y=540)]),
        ("right_single(start_box='(500,500)')", [RightClick(x=960, y=540)]),
        ("hover(start_box='(500,500)')", [MoveTo(x=960, y=540)]),
        (
            "drag(start_box='(0,0)', end_box='(500,500)')",
            [MoveTo(x=0, y=0), DragTo(x=960, y=540)],
        ),
        (
            "drag(start_point='<point>0 0</point>', end_point='<point>500 500</point>')",
            [MoveTo(x=0, y=0), DragTo(x=960, y=540)],
        ),
        ("hotkey(key='ctrl c')", [Hotkey(keys=["ctrl", "c"])]),
        ("hotkey(key='Ctrl Shift T')", [Hotkey(keys=["ctrl", "shift", "t"])]),
        ("hotkey(key='ctrl+s')", [Hotkey(keys=["ctrl", "s"])]),
        ("hotkey(key='enter')", [Press(key="enter")]),
        ("hotkey(key='arrowleft')", [Press(key="left")]),
        ("press(key='tab')", [Press(key="tab")]),
        ("keydown(key='shift')", [KeyDown(key="shift")]),
        ("keyup(key='shift')", [KeyUp(key="shift")]),
        ("type(content='hello')", [Typing(text="hello")]),
        ("type(content='hello\\n')", [Typing(text="hello"), Press(key="enter")]),
        ("type(content='a\\nb')", [Typing(text="a\nb")]),
        ("type(content='\\n')", [Press(key="enter")]),
        ("type(content='it\\'s')", [Typing(text="it's")]),
        ("type(content='')", []),
        (
            "scroll(start_box='(500,500)', direction='down')",
            [Scroll(dy=-UITARS_SCROLL_CLICKS, x=960, y=540)],
        ),
        ("scroll(start_box='(500,500)', direction='up')", [Scroll(dy=UITARS_SCROLL_CLICKS, x=960, y=540)]),
        ("scroll(direction='left')", [Scroll(dx=-UITARS_SCROLL_CLICKS)]),
        ("scroll(direction='Right')", [Scroll(dx=UITARS_SCROLL_CLICKS)]),
        ("wait()", [Wait(seconds=UITARS_WAIT_SECONDS)]),
        ("finished()", [DoneAction()]),
        ("finished(content='The file is saved.')", [DoneAction()]),
        ("call_user()", [Fail()]),
    ],
)
def test_actions(action: str, expected: list) -> None:
    assert one(f"Thought: t\nAction: {action}") == expected


def test_thought_and_several_actions() -> None:
    text = (
        "Thought: The dialog is open. I will type the name and confirm.\n"
        "Action: type(content='report.txt')\n\nhotkey(key='enter')"
    )
    thought, actions = parse_uitars_response(text, screen=SCREEN)
    assert thought == "The dialog is open. I will type the name and confirm."
    assert actions == [Typing(text="report.txt"), Press(key="enter")]


def test_reflection_and_summary_stay_in_the_thought() -> None:
    text = "Reflection: it failed.\nAction_Summary: retry.\nAction: wait()"
    thought, actions = parse_uitars_response(text, screen=SCREEN)
    assert thought == "it failed.\nAction_Summary: retry."
    assert actions == [Wait(seconds=UITARS_WAIT_SECONDS)]


def test_without_labels_the_text_is_the_action() -> None:
    assert parse_uitars_response("click(start_box='(500,500)')", screen=SCREEN) == (None, [Click(x=960, y=540)])


def test_unescaped_quote_is_read_by_hand() -> None:
    assert one("Action: type(content='it's done\\n')") == [Typing(text="it's done"), Press(key="enter")]


def test_absolute_coordinates_scale_from_the_image_the_model_saw() -> None:
    actions = one("Action: click(start_box='(640,360)')", coord_space="absolute", image_size=(1280, 720))
    assert actions == [Click(x=960, y=540)]
    assert one("Action: click(start_box='(1500,900)')", coord_space="absolute") == [Click(x=1500, y=900)]


def test_relative_coordinates_scale_to_any_screen() -> None:
    assert one("Action: click(start_box='(500,250)')", screen=(800, 600)) == [Click(x=400, y=150)]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Thought: I am not sure.", "expected UI-TARS calls such as click(start_box='(x,y)')"),
        ("Thought: done", "expected a UI-TARS call such as click(...), actual `Thought: done`"),
        ("Action:", "expected an Action such as click"),
        ("Action:   \n", "expected an Action such as click"),
        ("Action: click()", "expected a start_box argument, actual none"),
        ("Action: click(start_box='(1500,20)')", "start_box: expected coordinates in 0..1000 (relative1000)"),
        ("Action: click(start_box='(-5,20)')", "expected coordinates in 0..1000"),
        ("Action: click(start_box='(1,2,3)')", "expected '(x,y)' or '(x1,y1,x2,y2)'"),
        ("Action: click(start_box='here')", "expected '(x,y)' or '(x1,y1,x2,y2)'"),
        ("Action: click(start_box=(1, 2))", "start_box: expected a string, actual tuple"),
        ("Action: click(start_box=box)", "expected a constant, actual expression `box`"),
        ("Action: click('(1,2)')", "expected keyword arguments"),
        ("Action: long_press(start_box='(1,2)')", "expected a UI-TARS call among click"),
        ("Action: press_home()", "actual press_home"),
        ("Action: x = 1", "expected a UI-TARS call such as click(...), actual `x = 1`"),
        ("Action: pyautogui.click(1, 2)", "expected a UI-TARS call such as click"),
        ("Action: scroll(direction='diagonal')", "expected up, down, left or right"),
        ("Action: scroll(start_box='(1,1)')", "expected up, down, left or right"),
        ("Action: hotkey()", "key: expected a string, actual NoneType"),
        ("Action: hotkey(key='   ')", "expected key names"),
        ("Action: press(key='ctrl c')", "press: expected one key"),
        ("Action: type(content=5)", "content: expected a string"),
        ("Action: drag(start_box='(1,2)')", "expected a end_box argument"),
        ("Action: click(start_box='(1,2)'", "expected UI-TARS calls"),
    ],
)
def test_rejections(text: str, message: str) -> None:
    with pytest.raises(PolicyError, match="expected") as info:
        parse_uitars(text, screen=SCREEN)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"screen": (0, 1080)}, "expected positive screen and image sizes"),
        ({"screen": SCREEN, "image_size": (0, 0)}, "expected positive screen and image sizes"),
        ({"screen": SCREEN, "coord_space": "normalized"}, "coord_space: expected 'relative1000' or 'absolute'"),
    ],
)
def test_bad_parameters(kwargs: dict, message: str) -> None:
    with pytest.raises(PolicyError, match=message):
        parse_uitars("Action: wait()", **kwargs)


def test_non_string_input() -> None:
    with pytest.raises(PolicyError, match="expected a UI-TARS reply as a string, actual NoneType"):
        parse_uitars(None, screen=SCREEN)  # type: ignore[arg-type]
