"""OSGym's action strings (agiopen-org/osgym ``POST /step``): ``click(x,y)&type(hello)``.

The calls OSGym's server accepts, in pixels of the screen it runs them on, joined by ``&``:
``click(x,y)``, ``left_double(x,y)``, ``right_single(x,y)``, ``drag(x1,y1,x2,y2)``,
``move(x,y)``, ``scroll(x,y,d)`` (``d`` wheel clicks, positive is up), ``hotkey(k1,k2,...)``,
``press(key)``, ``type(text)`` (the text is everything between the parentheses, taken as it
is), ``wait()``, ``call_user()`` (FAIL) and ``finish()`` (DONE). Arguments are split on commas
and stripped, as OSGym's server does; ``type`` keeps its text unsplit. A reply may wrap the
string in a fenced block, with a thought before it.

Only what OSGym's server accepts is written: a ``type`` text holds no ``)`` or ``&`` (its server
reads the text up to the first ``)`` and splits calls on ``&``), keys hold no ``,``.
"""

from __future__ import annotations

import re

from osgym.agents.formats._common import (
    PROMPT_OPENING,
    _excerpt,
    _extend,
    _make,
    paired,
    parse_fenced,
    scale_actions,
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
    MoveTo,
    Press,
    RightClick,
    Scroll,
    Typing,
    Wait,
)
from osgym.replicas.actions import Done as DoneAction

__all__ = ["FORMAT", "OSGYM_CALLS", "PROMPT", "osgym_string", "parse_osgym", "parse_osgym_response"]


OSGYM_CALLS = (
    "click", "left_double", "right_single", "drag", "move", "scroll", "hotkey", "press", "type",
    "wait", "call_user", "finish",
)
_CALL = re.compile(r"^(\w+)\((.*)\)$", re.DOTALL)
_ARITY = {"click": 2, "left_double": 2, "right_single": 2, "move": 2, "drag": 4, "scroll": 3,
          "press": 1, "wait": 0, "call_user": 0, "finish": 0}
_MAX_CALLS = 100


def _ints(name: str, args: list[str], screen: tuple[int, int] | None) -> list[int]:
    """Integer arguments; with a ``screen``, coordinates (all but a scroll's third) must lie on it."""
    out = []
    for i, arg in enumerate(args):
        if not re.fullmatch(r"-?\d+", arg):
            raise PolicyError(f"{name}: argument {i + 1}: expected an integer, actual {_excerpt(arg)}")
        value = int(arg)
        if screen is not None and not (name == "scroll" and i == 2):
            axis, size = ("x", screen[0]) if i % 2 == 0 else ("y", screen[1])
            if not 0 <= value < size:
                raise PolicyError(f"{name}: {axis}: expected 0..{size - 1} (the screen is {screen[0]}x{screen[1]}), "
                                  f"actual {value}")
        out.append(value)
    return out


def _osgym_call(text: str, screen: tuple[int, int] | None) -> list[Action]:
    match = _CALL.match(text.strip())
    if match is None:
        raise PolicyError(f"expected an OSGym call such as click(x,y), actual {_excerpt(text)}")
    name, inner = match.groups()
    if name not in OSGYM_CALLS:
        raise PolicyError(f"expected an OSGym call among {', '.join(OSGYM_CALLS)}, actual {_excerpt(name)}")
    if name == "type":
        return [_make(Typing, text=inner)]
    args = [a.strip() for a in inner.split(",")] if inner.strip() else []
    if name == "hotkey":
        if not args or any(not a for a in args):
            raise PolicyError(f"hotkey: expected key names joined by commas, actual {_excerpt(inner)}")
        return [_make(Hotkey, keys=args)]
    if len(args) != _ARITY[name]:
        raise PolicyError(f"{name}: expected {_ARITY[name]} arguments, actual {len(args)}")
    if name == "press":
        return [_make(Press, key=args[0])]
    if name == "wait":
        return [Wait()]
    if name == "call_user":
        return [Fail()]
    if name == "finish":
        return [DoneAction()]
    n = _ints(name, args, screen)
    if name == "drag":
        return [_make(MoveTo, x=n[0], y=n[1]), _make(DragTo, x=n[2], y=n[3])]
    if name == "scroll":
        return [_make(Scroll, x=n[0], y=n[1], dy=n[2])]
    if name == "click":
        return [_make(Click, x=n[0], y=n[1])]
    if name == "left_double":
        return [_make(DoubleClick, x=n[0], y=n[1])]
    if name == "right_single":
        return [_make(RightClick, x=n[0], y=n[1])]
    return [_make(MoveTo, x=n[0], y=n[1])]


def parse_osgym(text: str, *, screen: tuple[int, int] | None = None) -> list[Action]:
    """Parse an OSGym action string, calls joined by ``&``, into typed actions; with a ``screen`` of
    (width, height), a coordinate off it is refused, naming the call (what ``osgym serve`` does).

    >>> parse_osgym("click(10,20)&type(hi there)")
    [Click(action_type='CLICK', x=10, y=20, button='left', num_clicks=1), Typing(action_type='TYPING', text='hi there')]
    >>> parse_osgym("scroll(5, 6, -50)")
    [Scroll(action_type='SCROLL', dx=0, dy=-50, x=5, y=6)]

    Raises:
        PolicyError: on an unknown call, a wrong number of arguments or a bad value.
    """
    if not isinstance(text, str):
        raise PolicyError(f"expected an OSGym action string, actual {type(text).__name__}")
    parts = text.split("&")
    if len(parts) > _MAX_CALLS:
        raise PolicyError(f"expected at most {_MAX_CALLS} calls, actual {len(parts)}")
    actions: list[Action] = []
    for part in parts:
        if not part.strip() and len(parts) > 1:
            raise PolicyError(f"expected an OSGym call between '&'s, actual nothing in {_excerpt(text)}")
        _extend(actions, _osgym_call(part, screen))
    return actions


def parse_osgym_response(text: str) -> tuple[str | None, list[Action]]:
    """Split a reply into its thought and the actions of its OSGym string (fenced, or the whole reply).

    >>> parse_osgym_response("Open it.\\n```\\nleft_double(3,4)\\n```")
    ('Open it.', [DoubleClick(action_type='DOUBLE_CLICK', x=3, y=4)])

    Raises:
        PolicyError: as :func:`parse_osgym` does.
    """
    return parse_fenced(text, parse_osgym)


PROMPT = PROMPT_OPENING + """\
Reply with one short sentence of reasoning, then a code block holding the next action as one of \
these calls, several joined by &:
click(x,y) | left_double(x,y) | right_single(x,y) | drag(x1,y1,x2,y2) | move(x,y) | \
scroll(x,y,clicks) (positive clicks scroll up) | hotkey(key1,key2) | press(key) | type(text) | \
wait() | finish() once the task is complete | call_user() if it cannot be done
For example:
```
click(120,340)
```

Task: {instruction}"""
"""The default system prompt asking for OSGym action strings."""


def _parse_reply(text: str, ctx: ReplyContext) -> tuple[str | None, list[Action]]:
    thought, actions = parse_osgym_response(text)
    return thought, scale_actions(actions, ctx.image_size, ctx.screen)


# --------------------------------------------------------------------------- rendering

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
    return with_thought(thought, block)


FORMAT = ActionFormat("osgym", _parse_reply, _render, PROMPT, "OSGym's action strings, calls joined by &")
"""The ``osgym`` action format."""
