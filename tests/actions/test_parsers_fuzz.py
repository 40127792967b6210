"""Property tests: whatever text or tool input arrives, a parser answers actions or PolicyError.

Nothing else may escape (no TypeError, RecursionError, ValidationError ...),
because the episode runner turns exactly PolicyError into a ``policy_error``.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from osgym.agents.formats import (
    parse_anthropic,
    parse_computer13_response,
    parse_pyautogui,
    parse_pyautogui_response,
    parse_uitars,
    parse_uitars_response,
    scale_actions,
)
from osgym.errors import PolicyError
from osgym.replicas.actions import _adapter

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Fragments of the grammars, so random strings reach deep into each parser.
TOKENS = [
    "pyautogui.", "time.sleep", "import pyautogui", "from pyautogui import ", "click", "doubleClick",
    "rightClick", "moveTo", "dragTo", "scroll", "hscroll", "typewrite", "write", "press", "hotkey",
    "keyDown", "mouseDown", "(", ")", "[", "]", ",", "=", "'", '"', "\\", "\n", " ", "x", "y", "clicks",
    "button", "presses", "-", "1", "0", "1e999", "100", "10000", "'left'", "'enter'", "WAIT", "DONE",
    "FAIL", "```", "```python\n", "```json\n", "Thought:", "Action:", "start_box=", "end_box=",
    "'(500,500)'", "'(1,2,3,4)'", "<|box_start|>", "<|box_end|>", "<point>", "</point>", "content=",
    "key=", "direction=", "'down'", "type", "drag", "finished", "call_user", "wait", "{", "}", ":",
    '"action_type"', '"CLICK"', '"parameters"', '"x"', '"keys"', "null", "true", "#", "\\n", "*", "**",
]
texts = st.one_of(
    st.text(max_size=200),
    st.lists(st.one_of(st.sampled_from(TOKENS), st.text(max_size=4)), max_size=40).map("".join),
)

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=20),
    st.sampled_from(["up", "down", "left", "right", "ctrl+s", "Return", "shift", "", "+", "a b"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=5), inner, max_size=3)),
    max_leaves=8,
)
ANTHROPIC_KEYS = ["coordinate", "start_coordinate", "text", "duration", "scroll_direction", "scroll_amount"]
ANTHROPIC_ACTIONS = [
    "key", "hold_key", "type", "mouse_move", "left_click", "right_click", "middle_click", "double_click",
    "triple_click", "left_click_drag", "left_mouse_down", "left_mouse_up", "scroll", "wait",
    "cursor_position", "screenshot", "zoom", "teleport",
]
tool_inputs = st.one_of(
    st.builds(
        lambda action, params: {"action": action, **params},
        st.sampled_from(ANTHROPIC_ACTIONS),
        st.dictionaries(st.sampled_from(ANTHROPIC_KEYS), values, max_size=4),
    ),
    st.dictionaries(st.text(max_size=8), values, max_size=4),
    values,
)


def only_actions_or_policy_error(parse, *args, **kwargs) -> None:
    try:
        actions = parse(*args, **kwargs)
    except PolicyError:
        return
    if isinstance(actions, tuple):
        thought, actions = actions
        assert thought is None or isinstance(thought, str)
    assert isinstance(actions, list)
    for action in actions:  # every action is a valid, serialisable computer_13 action
        assert _adapter.validate_python(action.to_json()) == action


@FUZZ
@given(texts)
def test_pyautogui_never_raises_anything_else(text: str) -> None:
    only_actions_or_policy_error(parse_pyautogui, text)
    only_actions_or_policy_error(parse_pyautogui_response, text)


@FUZZ
@given(texts)
def test_computer13_never_raises_anything_else(text: str) -> None:
    only_actions_or_policy_error(parse_computer13_response, text)


@FUZZ
@given(texts, st.sampled_from(["relative1000", "absolute"]))
def test_uitars_never_raises_anything_else(text: str, coord_space: str) -> None:
    only_actions_or_policy_error(parse_uitars, text, screen=(1920, 1080), coord_space=coord_space)
    only_actions_or_policy_error(parse_uitars_response, text, screen=(800, 600), coord_space=coord_space)


@FUZZ
@given(tool_inputs)
def test_anthropic_never_raises_anything_else(tool_input: object) -> None:
    only_actions_or_policy_error(parse_anthropic, tool_input)


@FUZZ
@given(
    st.integers(0, 16384), st.integers(0, 16384), st.integers(1, 8000), st.integers(1, 8000),
    st.integers(1, 8000), st.integers(1, 8000),
)
def test_scaled_coordinates_stay_on_screen(x: int, y: int, sw: int, sh: int, dw: int, dh: int) -> None:
    from osgym.replicas.actions import Click

    (scaled,) = scale_actions([Click(x=x, y=y)], (sw, sh), (dw, dh))
    assert 0 <= scaled.x < dw and 0 <= scaled.y < dh


@pytest.mark.parametrize("code", ["pyautogui.typewrite('C:\\\\dir')", "pyautogui.typewrite(r'a\\d')"])
def test_backslashes_in_strings(code: str) -> None:
    (action,) = parse_pyautogui(code)
    assert "\\" in action.text
