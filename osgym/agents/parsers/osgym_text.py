"""OSGym's action strings: ``click(x,y)``, ``drag(x1,y1,x2,y2)``, ``type(text)``, ... joined by ``&``.

This is the action space of OSGym's environment server (agiopen-org/osgym, ``action_space="os_gym"``),
which ``osgym serve`` speaks: coordinates are screen pixels (OSGym's client scales its model's
0..1000 grid to the screen before it sends them), arguments are positional and unquoted.

========================  ====================================================
``click(x,y)``            CLICK at (x, y)
``left_double(x,y)``      DOUBLE_CLICK at (x, y)
``right_single(x,y)``     RIGHT_CLICK at (x, y)
``drag(x1,y1,x2,y2)``     MOVE_TO (x1, y1), DRAG_TO (x2, y2)
``hotkey(k1,k2,...)``     HOTKEY (one key: PRESS)
``type(text)``            TYPING everything between the parentheses, commas included
``scroll(x,y,d)``         SCROLL ``d`` wheel clicks at (x, y), positive ``d`` up
``move(x,y)``             MOVE_TO (x, y)
``press(key)``            PRESS
``wait()``                WAIT ``OSGYM_WAIT_SECONDS``
``call_user()``           FAIL (the task cannot be done)
``finish()``              DONE
========================  ====================================================

>>> parse_osgym("click(10,20)&type(hello, world)", screen=(1920, 1080))
[Click(action_type='CLICK', x=10, y=20, button='left', num_clicks=1), Typing(action_type='TYPING', text='hello, world')]
>>> parse_osgym("scroll(5,6,-50)", screen=(1920, 1080))
[Scroll(action_type='SCROLL', dx=0, dy=-50, x=5, y=6)]
>>> parse_osgym("click(2000,20)", screen=(1920, 1080))
Traceback (most recent call last):
...
osgym.errors.PolicyError: click(2000,20): x: expected 0..1919 (the screen is 1920x1080), actual 2000
"""

from __future__ import annotations

import re

from osgym.agents.parsers._common import _chord_action, _excerpt, _make, scale_actions
from osgym.agents.parsers.registry import ActionFormat, ReplyContext, register_format
from osgym.errors import PolicyError
from osgym.replicas.actions import (
    MAX_ACTIONS_PER_REPLY,
    Action,
    Click,
    DoubleClick,
    DragTo,
    Fail,
    MoveTo,
    Press,
    RightClick,
    Scroll,
    Typing,
    Wait,
)
from osgym.replicas.actions import Done as DoneAction

__all__ = ["OSGYM_CALLS", "OSGYM_WAIT_SECONDS", "PROMPT", "parse_osgym"]

OSGYM_WAIT_SECONDS = 2.0
"""OSGym's ``wait()`` pauses for its step pause, 2 s."""

OSGYM_CALLS = ("click", "left_double", "right_single", "drag", "hotkey", "type", "scroll", "move", "press",
               "wait", "call_user", "finish")
_CALL = re.compile(r"^(\w+)\((.*)\)$", re.DOTALL)
_ARITY = {"click": 2, "left_double": 2, "right_single": 2, "move": 2, "drag": 4, "scroll": 3, "press": 1,
          "wait": 0, "call_user": 0, "finish": 0}


def _ints(call: str, name: str, args: list[str], screen: tuple[int, int]) -> list[int]:
    """Integer arguments; coordinates (all but a scroll's third) must lie on the screen."""
    out: list[int] = []
    for i, raw in enumerate(args):
        try:
            value = int(raw)
        except ValueError:
            raise PolicyError(f"{call}: argument {i + 1}: expected an integer, actual {_excerpt(raw)}") from None
        is_coord = not (name == "scroll" and i == 2)
        if is_coord:
            axis, size = ("x", screen[0]) if i % 2 == 0 else ("y", screen[1])
            if not 0 <= value < size:
                raise PolicyError(f"{call}: {axis}: expected 0..{size - 1} (the screen is {screen[0]}x{screen[1]}), "
                                  f"actual {value}")
        out.append(value)
    return out


def _one(call: str, screen: tuple[int, int]) -> list[Action]:
    match = _CALL.match(call)
    if match is None:
        raise PolicyError(f"expected an OSGym action such as click(x,y), actual {_excerpt(call)}")
    name, raw = match.group(1), match.group(2)
    if name not in OSGYM_CALLS:
        raise PolicyError(f"expected an OSGym action among {', '.join(OSGYM_CALLS)}, actual {_excerpt(name)}")
    if name == "type":  # the text is everything between the parentheses, as OSGym's server reads it
        return [_make(Typing, text=raw)] if raw else []
    args = [a.strip() for a in raw.split(",")] if raw.strip() else []
    if name == "hotkey":
        keys = [k.lower() for k in args if k]
        if not keys:
            raise PolicyError(f"{_excerpt(call)}: expected one or more key names, actual none")
        return [_chord_action(keys)]
    if len(args) != _ARITY[name]:
        raise PolicyError(f"{_excerpt(call)}: expected {_ARITY[name]} argument(s), actual {len(args)}")
    if name == "press":
        return [_make(Press, key=args[0].lower())]
    if name == "wait":
        return [Wait(seconds=OSGYM_WAIT_SECONDS)]
    if name == "call_user":
        return [Fail()]
    if name == "finish":
        return [DoneAction()]
    n = _ints(_excerpt(call), name, args, screen)
    if name == "click":
        return [_make(Click, x=n[0], y=n[1])]
    if name == "left_double":
        return [_make(DoubleClick, x=n[0], y=n[1])]
    if name == "right_single":
        return [_make(RightClick, x=n[0], y=n[1])]
    if name == "move":
        return [_make(MoveTo, x=n[0], y=n[1])]
    if name == "drag":
        return [_make(MoveTo, x=n[0], y=n[1]), _make(DragTo, x=n[2], y=n[3])]
    return [_make(Scroll, x=n[0], y=n[1], dy=n[2])]  # scroll


def parse_osgym(text: str, *, screen: tuple[int, int]) -> list[Action]:
    """Parse OSGym action text (calls joined by ``&``) into typed actions on a ``screen`` of (width, height).

    Raises:
        PolicyError: naming the call, if one is unknown, has the wrong number or kind of arguments, or
            points off the screen; or if there are more than ``MAX_ACTIONS_PER_REPLY`` actions.
    """
    if not isinstance(text, str):
        raise PolicyError(f"expected OSGym action text, actual {type(text).__name__}")
    calls = [c.strip() for c in text.split("&")] if "&" in text else [text.strip()]
    actions: list[Action] = []
    for call in calls:
        if not call:
            raise PolicyError(f"expected an OSGym action between '&'s, actual nothing in {_excerpt(text)}")
        actions.extend(_one(call, screen))
        if len(actions) > MAX_ACTIONS_PER_REPLY:
            raise PolicyError(f"expected at most {MAX_ACTIONS_PER_REPLY} actions, actual more in {_excerpt(text)}")
    return actions


PROMPT = """\
You operate a computer through actions. Reply with one or more actions joined by &:
click(x,y) left_double(x,y) right_single(x,y) drag(x1,y1,x2,y2) hotkey(k1,k2) type(text) \
scroll(x,y,d) (positive d scrolls up) wait() call_user() (the task cannot be done) finish() (the task is done).
Coordinates are pixels of the {width}x{height} screen.

Task: {instruction}"""
"""The default system prompt asking for OSGym action text."""


def _parse_reply(text: str, ctx: ReplyContext) -> tuple[str | None, list[Action]]:
    # a model sees a possibly downscaled screenshot: its pixels are mapped onto the screen
    return None, scale_actions(parse_osgym(text.strip(), screen=ctx.image_size), ctx.image_size, ctx.screen)


register_format(ActionFormat("osgym", _parse_reply, PROMPT, "click(x,y)&type(text)&finish(), screen pixels"))
