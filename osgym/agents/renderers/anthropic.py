"""Typed actions as Anthropic computer-use tool inputs (JSON in a fenced block), the inverse of
:mod:`osgym.agents.parsers.anthropic`.

The tool has no way to end a task, so ``DONE`` and ``FAIL`` are written as OSWorld's codes in
their own block. It has no key-down or key-up of its own, and only the left button goes down
and up: those actions have no form here.
"""

from __future__ import annotations

import json
from typing import Any

from osgym.agents.renderers.base import RenderContext, Renderer, paired, register_renderer
from osgym.errors import Unrenderable
from osgym.replicas.actions import (
    Action,
    Click,
    DoubleClick,
    DragTo,
    Fail,
    Hotkey,
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

__all__ = ["tool_inputs"]

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
    return f"{thought}\n{text}" if thought else text


register_renderer(Renderer("anthropic", _render, "computer-use tool input JSON in fenced blocks"))
