"""Typed actions as OSGym's action strings, the inverse of :mod:`osgym.agents.parsers.osgym_strings`.

Only what OSGym's server accepts is written: a ``type`` text holds no ``)`` or ``&`` (its server
reads the text up to the first ``)`` and splits calls on ``&``), keys hold no ``,``.
"""

from __future__ import annotations

from osgym.agents.renderers.base import RenderContext, Renderer, paired, register_renderer
from osgym.errors import Unrenderable
from osgym.replicas.actions import (
    Action,
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

__all__: list[str] = []

_ENDS: dict[type, str] = {Fail: "call_user()", DoneAction: "finish()"}


def _key(key: str) -> str:
    if any(c in key for c in ",)&") or key != key.strip():
        raise Unrenderable(f"osgym: a key name holds no ',', ')', '&' or outer spaces, actual {key!r}")
    return key


def _call(a: Action) -> str:
    if isinstance(a, Click) and a.x is not None and a.button == "left" and a.num_clicks == 1:
        return f"click({a.x},{a.y})"
    if isinstance(a, DoubleClick) and a.x is not None:
        return f"left_double({a.x},{a.y})"
    if isinstance(a, RightClick) and a.x is not None:
        return f"right_single({a.x},{a.y})"
    if isinstance(a, MoveTo):
        return f"move({a.x},{a.y})"
    if isinstance(a, Scroll) and not a.dx and a.x is not None:
        return f"scroll({a.x},{a.y},{a.dy})"
    if isinstance(a, Typing):
        if ")" in a.text or "&" in a.text:
            raise Unrenderable(f"osgym: type() text holds no ')' or '&', actual {a.text[:80]!r}")
        return f"type({a.text})"
    if isinstance(a, Press):
        return f"press({_key(a.key)})"
    if isinstance(a, Hotkey):
        return f"hotkey({','.join(_key(k) for k in a.keys)})"
    if isinstance(a, Wait) and a.seconds == Wait().seconds:
        return "wait()"
    if type(a) in _ENDS:
        return _ENDS[type(a)]
    raise Unrenderable(f"osgym: no OSGym call for {a}")


def osgym_string(actions: list[Action]) -> str:
    """``actions`` as one OSGym string; a move followed by a drag is one ``drag``.

    >>> osgym_string([MoveTo(x=1, y=2), DragTo(x=3, y=4), Typing(text="hi")])
    'drag(1,2,3,4)&type(hi)'

    Raises:
        Unrenderable: for an action OSGym has no call for.
    """
    calls = [f"drag({a.x},{a.y},{end.x},{end.y})" if isinstance(a, MoveTo) and isinstance(end, DragTo) else _call(a)
             for a, end in paired(actions)]
    return "&".join(calls)


def _render(thought: str | None, actions: list[Action], ctx: RenderContext) -> str:
    block = f"```\n{osgym_string(actions)}\n```"
    return f"{thought}\n{block}" if thought else block


register_renderer(Renderer("osgym", _render, "OSGym's action strings in a fenced block"))
