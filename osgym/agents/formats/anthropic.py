"""The ``input`` of an Anthropic computer-use tool call (``{"action": "left_click", ...}``), read and written as
JSON in fenced blocks.

The tool has no way to end a task, so ``DONE`` and ``FAIL`` are written as OSWorld's codes in
their own block. It has no key-down or key-up of its own, and only the left button goes down
and up: those actions have no form here. The format has no default prompt.
"""

from __future__ import annotations

import json
from typing import Any

from osgym.agents.formats._common import (
    MAX_REPEAT,
    _chord_action,
    _count,
    _excerpt,
    _extend,
    _int,
    _json_in,
    _make,
    _number,
    _special,
    _string,
    _waits,
    paired,
    scale_actions,
    split_fenced,
    with_thought,
)
from osgym.agents.formats.base import ActionFormat, RenderContext, ReplyContext
from osgym.errors import PolicyError, Unrenderable
from osgym.replicas.actions import (
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

__all__ = ["FORMAT", "parse_anthropic", "parse_anthropic_response", "tool_inputs", "xdotool_chords"]


_ANTHROPIC_ACTIONS: dict[str, frozenset[str]] = {
    "key": frozenset({"text"}),
    "hold_key": frozenset({"text", "duration"}),
    "type": frozenset({"text"}),
    "mouse_move": frozenset({"coordinate", "text"}),
    "left_click": frozenset({"coordinate", "text"}),
    "right_click": frozenset({"coordinate", "text"}),
    "middle_click": frozenset({"coordinate", "text"}),
    "double_click": frozenset({"coordinate", "text"}),
    "triple_click": frozenset({"coordinate", "text"}),
    "left_click_drag": frozenset({"start_coordinate", "coordinate", "text"}),
    "left_mouse_down": frozenset({"coordinate", "text"}),
    "left_mouse_up": frozenset({"coordinate", "text"}),
    "scroll": frozenset({"coordinate", "scroll_direction", "scroll_amount", "text"}),
    "wait": frozenset({"duration"}),
    "cursor_position": frozenset(),
    "screenshot": frozenset(),
    "zoom": frozenset({"region"}),
}
_OBSERVE_ONLY = frozenset({"cursor_position", "screenshot", "zoom"})
_SpecialActions = (Wait, Fail, DoneAction)


def xdotool_chords(text: str) -> list[list[str]]:
    """Split xdotool ``key`` syntax into chords: ``"ctrl+a Delete"`` is two.

    >>> xdotool_chords("ctrl+shift+t")
    [['ctrl', 'shift', 't']]
    >>> xdotool_chords("ctrl+a BackSpace")
    [['ctrl', 'a'], ['BackSpace']]
    >>> xdotool_chords("ctrl++")
    [['ctrl', '+']]

    Raises:
        PolicyError: if ``text`` holds no key or an empty key name.
    """
    chords: list[list[str]] = []
    for word in text.split():
        if word == "+":
            chords.append(["+"])
            continue
        tail = ["+"] if word.endswith("++") else []
        body = word[:-2] if tail else word
        keys = body.split("+") + tail
        if any(not k for k in keys):
            raise PolicyError(f"expected keys joined by '+', actual {_excerpt(word)}")
        chords.append(keys)
    if not chords:
        raise PolicyError(f"expected a key name such as 'Return' or 'ctrl+s', actual {_excerpt(text)}")
    return chords


def _coordinate(value: Any, what: str) -> tuple[int, int]:
    if not isinstance(value, list | tuple) or len(value) != 2:
        raise PolicyError(f"{what}: expected [x, y], actual {_excerpt(value)}")
    return _int(value[0], f"{what}[0]"), _int(value[1], f"{what}[1]")


def _modifiers(tool_input: dict[str, Any], actions: list[Action]) -> list[Action]:
    """Hold the modifier keys named in ``text`` around mouse ``actions``."""
    text = tool_input.get("text")
    if text is None or text == "":
        return actions
    keys = [k for chord in xdotool_chords(_string(text, "text")) for k in chord]
    downs: list[Action] = [_make(KeyDown, key=k) for k in keys]
    ups: list[Action] = [_make(KeyUp, key=k) for k in reversed(keys)]
    return [*downs, *actions, *ups]


def parse_anthropic(tool_input: dict[str, Any]) -> list[Action]:
    """Map the input of an Anthropic computer-use tool call onto typed actions.

    ``key`` and ``hold_key`` take xdotool key syntax. ``text`` on a mouse action
    names modifier keys held for it. ``scroll`` follows pyautogui's sign
    convention (up is positive ``dy``, right is positive ``dx``).
    ``screenshot``, ``cursor_position`` and ``zoom`` only observe, so they map
    to no action. Coordinates are left in the space the model saw.

    >>> parse_anthropic({"action": "left_click_drag", "start_coordinate": [1, 2], "coordinate": [3, 4]})
    [MoveTo(action_type='MOVE_TO', x=1, y=2), DragTo(action_type='DRAG_TO', x=3, y=4)]
    >>> parse_anthropic({"action": "scroll", "coordinate": [5, 5], "scroll_direction": "down",
    ...                  "scroll_amount": 3})
    [Scroll(action_type='SCROLL', dx=0, dy=-3, x=5, y=5)]
    >>> parse_anthropic({"action": "screenshot"})
    []

    Raises:
        PolicyError: on an unknown action, a missing or unexpected parameter,
            or a value of the wrong type or range.
    """
    if not isinstance(tool_input, dict):
        raise PolicyError(f"expected a tool input object, actual {type(tool_input).__name__}")
    action = tool_input.get("action")
    if not isinstance(action, str) or action not in _ANTHROPIC_ACTIONS:
        raise PolicyError(f"expected action in {', '.join(_ANTHROPIC_ACTIONS)}, actual {_excerpt(action)}")
    allowed = _ANTHROPIC_ACTIONS[action]
    unexpected = sorted(str(k) for k in tool_input if k != "action" and k not in allowed)
    if unexpected:
        raise PolicyError(
            f"{action}: expected parameters among {', '.join(sorted(allowed)) or 'none'}, "
            f"actual {', '.join(unexpected)}"
        )
    if action in _OBSERVE_ONLY:
        return []

    def required(name: str) -> Any:
        if tool_input.get(name) is None:
            raise PolicyError(f"{action}: expected a {name} parameter, actual none")
        return tool_input[name]

    def at() -> dict[str, int]:
        value = tool_input.get("coordinate")
        if value is None:
            return {}
        x, y = _coordinate(value, "coordinate")
        return {"x": x, "y": y}

    if action == "key":
        return [_chord_action(keys) for keys in xdotool_chords(_string(required("text"), "text"))]
    if action == "hold_key":
        keys = [k for chord in xdotool_chords(_string(required("text"), "text")) for k in chord]
        seconds = _number(required("duration"), "duration")
        return [
            *(_make(KeyDown, key=k) for k in keys),
            *_waits(seconds),
            *(_make(KeyUp, key=k) for k in reversed(keys)),
        ]
    if action == "type":
        return [_make(Typing, text=_string(required("text"), "text"))]
    if action == "wait":
        return _waits(_number(required("duration"), "duration"))
    if action == "mouse_move":
        required("coordinate")
        return _modifiers(tool_input, [_make(MoveTo, **at())])
    if action == "left_click":
        return _modifiers(tool_input, [_make(Click, **at())])
    if action == "right_click":
        return _modifiers(tool_input, [_make(RightClick, **at())])
    if action == "middle_click":
        return _modifiers(tool_input, [_make(Click, **at(), button="middle")])
    if action == "double_click":
        return _modifiers(tool_input, [_make(DoubleClick, **at())])
    if action == "triple_click":
        return _modifiers(tool_input, [_make(Click, **at(), num_clicks=3)])
    if action == "left_click_drag":
        required("coordinate")
        end = at()
        moves: list[Action] = []
        if tool_input.get("start_coordinate") is not None:
            sx, sy = _coordinate(tool_input["start_coordinate"], "start_coordinate")
            moves.append(_make(MoveTo, x=sx, y=sy))
        return _modifiers(tool_input, [*moves, _make(DragTo, **end)])
    if action in ("left_mouse_down", "left_mouse_up"):
        pre: list[Action] = [_make(MoveTo, **at())] if tool_input.get("coordinate") is not None else []
        button: Action = MouseDown() if action == "left_mouse_down" else MouseUp()
        return _modifiers(tool_input, [*pre, button])
    if action == "scroll":
        direction = required("scroll_direction")
        amount = _count(required("scroll_amount"), "scroll_amount")
        signs = {"up": (0, 1), "down": (0, -1), "left": (-1, 0), "right": (1, 0)}
        if not isinstance(direction, str) or direction not in signs:
            raise PolicyError(
                f"scroll_direction: expected up, down, left or right, actual {_excerpt(direction)}"
            )
        sx, sy = signs[direction]
        return _modifiers(tool_input, [_make(Scroll, dx=sx * amount, dy=sy * amount, **at())])
    raise AssertionError(action)  # pragma: no cover - every key of _ANTHROPIC_ACTIONS is handled


def parse_anthropic_response(text: str) -> tuple[str | None, list[Action]]:
    """Split a reply holding computer-use tool inputs as JSON into its thought and actions.

    For models served without tool calling: the JSON is one tool input, or a
    list of them, fenced or bare. Coordinates stay in the space the model saw.
    The tool has no way to end a task, so OSWorld's ``WAIT``, ``DONE`` and ``FAIL``
    (the whole reply, or a fenced block) are read as those actions.

    >>> parse_anthropic_response('Saving.\\n```json\\n{"action": "key", "text": "ctrl+s"}\\n```')
    ('Saving.', [Hotkey(action_type='HOTKEY', keys=['ctrl', 's'])])

    Raises:
        PolicyError: if no JSON is found or a tool input is invalid.
    """
    if not isinstance(text, str):
        raise PolicyError(f"expected a reply as a string, actual {type(text).__name__}")
    what = "computer-use tool input JSON (an object with an action, or a list)"
    prose, blocks = split_fenced(text)
    if not blocks:
        special = _special(text)
        if special is not None:  # the tool has no done/fail: OSWorld's codes end an episode
            return None, special
    values: list[Any] = []
    if blocks:
        for block in blocks:
            special = _special(block)
            values.append(special if special is not None else _json_in(block, what)[0])
    else:
        value, start = _json_in(text, what)
        prose, values = text[:start].strip() or None, [value]
    inputs = [item for v in values for item in (v if isinstance(v, list) else [v])]
    if len(inputs) > MAX_REPEAT:
        raise PolicyError(f"expected at most {MAX_REPEAT} tool inputs, actual {len(inputs)}")
    actions: list[Action] = []
    for item in inputs:
        _extend(actions, [item] if isinstance(item, _SpecialActions) else parse_anthropic(item))
    return prose, actions


def _parse_reply(text: str, ctx: ReplyContext) -> tuple[str | None, list[Action]]:
    thought, actions = parse_anthropic_response(text)
    return thought, scale_actions(actions, ctx.image_size, ctx.screen)


# --------------------------------------------------------------------------- rendering

_CLICKS = {("left", 1): "left_click", ("middle", 1): "middle_click", ("left", 3): "triple_click"}


def _with_point(name: str, a: Click | RightClick | DoubleClick | Scroll) -> dict[str, Any]:
    return {"action": name} if a.x is None else {"action": name, "coordinate": [a.x, a.y]}


def _input(a: Action) -> dict[str, Any]:
    if isinstance(a, MoveTo):
        return {"action": "mouse_move", "coordinate": [a.x, a.y]}
    if isinstance(a, Click) and (a.button, a.num_clicks) in _CLICKS:
        return _with_point(_CLICKS[(a.button, a.num_clicks)], a)
    if isinstance(a, RightClick):
        return _with_point("right_click", a)
    if isinstance(a, DoubleClick):
        return _with_point("double_click", a)
    if isinstance(a, DragTo):
        return {"action": "left_click_drag", "coordinate": [a.x, a.y]}
    if isinstance(a, MouseDown | MouseUp) and a.button == "left":
        return {"action": "left_mouse_down" if isinstance(a, MouseDown) else "left_mouse_up"}
    if isinstance(a, Scroll) and not (a.dx and a.dy):
        direction, amount = ("right", a.dx) if a.dx > 0 else ("left", -a.dx) if a.dx else (
            ("up", a.dy) if a.dy >= 0 else ("down", -a.dy))
        return {**_with_point("scroll", a), "scroll_direction": direction, "scroll_amount": amount}
    if isinstance(a, Typing):
        return {"action": "type", "text": a.text}
    if isinstance(a, Press):
        return {"action": "key", "text": a.key}
    if isinstance(a, Hotkey):
        return {"action": "key", "text": "+".join(a.keys)}
    if isinstance(a, Wait):
        return {"action": "wait", "duration": a.seconds}
    raise Unrenderable(f"anthropic: the computer-use tool has no action for {a}")


def tool_inputs(actions: list[Action]) -> list[dict[str, Any] | str]:
    """The tool inputs of ``actions``; a move then a drag is one ``left_click_drag``; DONE/FAIL stay codes.

    >>> tool_inputs([MoveTo(x=1, y=2), DragTo(x=3, y=4), DoneAction()])
    [{'action': 'left_click_drag', 'coordinate': [3, 4], 'start_coordinate': [1, 2]}, 'DONE']

    Raises:
        Unrenderable: for an action the tool has no form for.
    """
    out: list[dict[str, Any] | str] = []
    for a, end in paired(actions):
        if isinstance(a, MoveTo) and isinstance(end, DragTo):
            out.append({"action": "left_click_drag", "coordinate": [end.x, end.y], "start_coordinate": [a.x, a.y]})
        else:
            out.append(a.action_type if isinstance(a, DoneAction | Fail) else _input(a))
    return out


def _render(thought: str | None, actions: list[Action], ctx: RenderContext) -> str:
    blocks: list[str] = []
    run: list[dict[str, Any]] = []

    def flush() -> None:
        if run:
            body = json.dumps(run[0] if len(run) == 1 else run, ensure_ascii=False)
            blocks.append(f"```json\n{body}\n```")
            run.clear()

    for item in tool_inputs(actions):
        if isinstance(item, str):
            flush()
            blocks.append(f"```\n{item}\n```")
        else:
            run.append(item)
    flush()
    text = "\n".join(blocks)
    return with_thought(thought, text)


FORMAT = ActionFormat("anthropic", _parse_reply, _render, None, "computer-use tool input JSON (no default prompt)")
"""The ``anthropic`` action format."""
