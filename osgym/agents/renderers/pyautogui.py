"""Typed actions as pyautogui code in a fenced block, the inverse of :mod:`osgym.agents.parsers.pyautogui`."""

from __future__ import annotations

from osgym.agents.renderers.base import RenderContext, Renderer, register_renderer
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

__all__ = ["pyautogui_code"]


def _at(a: Click | RightClick | DoubleClick | Scroll) -> list[str]:
    return [] if a.x is None else [str(a.x), str(a.y)]


def _line(a: Action) -> str:
    if isinstance(a, MoveTo):
        return f"pyautogui.moveTo({a.x}, {a.y})"
    if isinstance(a, Click):
        extra = [] if a.num_clicks == 1 else [f"clicks={a.num_clicks}"]
        extra += [] if a.button == "left" else [f"button={a.button!r}"]
        return f"pyautogui.click({', '.join(_at(a) + extra)})"
    if isinstance(a, RightClick):
        return f"pyautogui.rightClick({', '.join(_at(a))})"
    if isinstance(a, DoubleClick):
        return f"pyautogui.doubleClick({', '.join(_at(a))})"
    if isinstance(a, MouseDown | MouseUp):
        name = "mouseDown" if isinstance(a, MouseDown) else "mouseUp"
        return f"pyautogui.{name}(button={a.button!r})"
    if isinstance(a, DragTo):
        return f"pyautogui.dragTo({a.x}, {a.y})"
    if isinstance(a, Scroll):
        if a.dx and a.dy:
            raise Unrenderable(f"pyautogui: a scroll on both axes is two calls, actual {a}")
        at = [] if a.x is None else [f"x={a.x}", f"y={a.y}"]
        name, clicks = ("hscroll", a.dx) if a.dx else ("scroll", a.dy)
        return f"pyautogui.{name}({', '.join([str(clicks), *at])})"
    if isinstance(a, Typing):
        return f"pyautogui.write({a.text!r})"
    if isinstance(a, Press):
        return f"pyautogui.press({a.key!r})"
    if isinstance(a, KeyDown | KeyUp):
        return f"pyautogui.{'keyDown' if isinstance(a, KeyDown) else 'keyUp'}({a.key!r})"
    if isinstance(a, Hotkey):
        return f"pyautogui.hotkey({', '.join(repr(k) for k in a.keys)})"
    if isinstance(a, Wait):
        return f"time.sleep({a.seconds!r})"
    if isinstance(a, DoneAction | Fail):
        return a.action_type  # OSWorld's special codes, which the parser reads as names too
    raise Unrenderable(f"pyautogui: no call for {a}")  # pragma: no cover - every action type is above


def pyautogui_code(actions: list[Action]) -> str:
    """The pyautogui code of ``actions``, one call a line (``DONE``/``FAIL`` as OSWorld writes them).

    >>> pyautogui_code([Click(x=5, y=6, num_clicks=3), Typing(text="it's")])
    'pyautogui.click(5, 6, clicks=3)\\npyautogui.write("it\\'s")'
    """
    return "\n".join(_line(a) for a in actions)


def _render(thought: str | None, actions: list[Action], ctx: RenderContext) -> str:
    block = f"```python\n{pyautogui_code(actions)}\n```"
    return f"{thought}\n{block}" if thought else block


register_renderer(Renderer("pyautogui", _render, "pyautogui code in a fenced block"))
