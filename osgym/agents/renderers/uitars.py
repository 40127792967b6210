"""Typed actions as UI-TARS text (``Thought: ... Action: click(start_box='(x,y)')``), the inverse of
:mod:`osgym.agents.parsers.uitars`.

Points are written on UI-TARS's 0..1000 grid (``relative1000``, UI-TARS 1.x) or in image pixels
(``absolute``). On the grid a coordinate rounds to the nearest of 1,001 positions, so it comes back
within half a grid step (``RenderContext.tolerance``). UI-TARS has no mouse-down or -up, no middle
or triple click, no click without a point, no drag without its start, and scrolls and waits of
one size only (``UITARS_SCROLL_CLICKS``, ``UITARS_WAIT_SECONDS``).
"""

from __future__ import annotations

from osgym.agents.parsers import UITARS_SCROLL_CLICKS, UITARS_WAIT_SECONDS
from osgym.agents.renderers.base import RenderContext, Renderer, is_drag, paired, register_renderer
from osgym.errors import Unrenderable
from osgym.replicas.actions import (
    Action,
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

__all__ = ["uitars_calls"]

_DIRECTIONS = {(0, 1): "up", (0, -1): "down", (-1, 0): "left", (1, 0): "right"}


def _box(x: int | None, y: int | None, ctx: RenderContext) -> str:
    if x is None or y is None:
        raise Unrenderable("uitars: every pointer action needs a point")
    if ctx.coord_space == "relative1000":
        w, h = ctx.image_size
        x, y = round(x * 1000 / w), round(y * 1000 / h)
    return f"'<|box_start|>({x},{y})<|box_end|>'"


def _call(a: Action, ctx: RenderContext) -> str:
    if isinstance(a, Click) and a.button == "left" and a.num_clicks == 1:
        return f"click(start_box={_box(a.x, a.y, ctx)})"
    if isinstance(a, DoubleClick):
        return f"left_double(start_box={_box(a.x, a.y, ctx)})"
    if isinstance(a, RightClick):
        return f"right_single(start_box={_box(a.x, a.y, ctx)})"
    if isinstance(a, MoveTo):
        return f"move_to(start_box={_box(a.x, a.y, ctx)})"
    if isinstance(a, Scroll) and (a.dx, a.dy) in {(dx * UITARS_SCROLL_CLICKS, dy * UITARS_SCROLL_CLICKS)
                                                  for dx, dy in _DIRECTIONS}:
        direction = _DIRECTIONS[(a.dx // UITARS_SCROLL_CLICKS, a.dy // UITARS_SCROLL_CLICKS)]
        at = "" if a.x is None else f"start_box={_box(a.x, a.y, ctx)}, "
        return f"scroll({at}direction={direction!r})"
    if isinstance(a, Typing):
        return f"type(content={a.text!r})"
    if isinstance(a, Press | KeyDown | KeyUp):
        name = {Press: "press", KeyDown: "keydown", KeyUp: "keyup"}[type(a)]
        return f"{name}(key={a.key!r})"
    if isinstance(a, Hotkey):
        return f"hotkey(key={' '.join(a.keys)!r})"
    if isinstance(a, Wait) and a.seconds == UITARS_WAIT_SECONDS:
        return "wait()"
    if isinstance(a, DoneAction):
        return "finished()"
    if isinstance(a, Fail):
        return "call_user()"
    raise Unrenderable(f"uitars: no UI-TARS call for {a}")


def uitars_calls(actions: list[Action], ctx: RenderContext) -> list[str]:
    """The UI-TARS calls of ``actions``: a move then a drag is one ``drag``, typing then Enter one ``type``.

    >>> uitars_calls([Typing(text="ls"), Press(key="enter")], RenderContext((100, 100)))
    ["type(content='ls\\\\n')"]

    Raises:
        Unrenderable: for an action UI-TARS has no call for.
    """
    calls: list[str] = []
    for a, nxt in paired(actions, _one_call):
        if isinstance(a, MoveTo) and isinstance(nxt, DragTo):
            calls.append(f"drag(start_box={_box(a.x, a.y, ctx)}, end_box={_box(nxt.x, nxt.y, ctx)})")
        elif isinstance(a, Typing) and nxt is not None:  # the text, then Enter: UI-TARS types "\n"
            calls.append(f"type(content={a.text + chr(10)!r})")
        else:
            calls.append(_call(a, ctx))
    return calls


def _one_call(a: Action, nxt: Action) -> bool:
    return is_drag(a, nxt) or (isinstance(a, Typing) and isinstance(nxt, Press) and nxt.key == "enter")


def _render(thought: str | None, actions: list[Action], ctx: RenderContext) -> str:
    action = "Action: " + "\n\n".join(uitars_calls(actions, ctx))
    return f"Thought: {thought}\n{action}" if thought else action


register_renderer(Renderer("uitars", _render, "Thought: ... Action: click(start_box='(x,y)')"))
