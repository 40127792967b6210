"""UI-TARS replies: ``Thought: ...`` then ``Action: click(start_box='(x,y)')``, read onto the screen and written
back on UI-TARS's grid.

Points are written on UI-TARS's 0..1000 grid (``relative1000``, UI-TARS 1.x) or in image pixels
(``absolute``). On the grid a coordinate rounds to the nearest of 1,001 positions, so it comes back
within half a grid step (``RenderContext.tolerance``). UI-TARS has no mouse-down or -up, no middle
or triple click, no click without a point, no drag without its start, and scrolls and waits of
one size only (``UITARS_SCROLL_CLICKS``, ``UITARS_WAIT_SECONDS``).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from typing import Any

from osgym.agents.formats._common import (
    _chord_action,
    _excerpt,
    _extend,
    _literal,
    _make,
    _source,
    _string,
    is_drag,
    paired,
)
from osgym.agents.formats.base import ActionFormat, CoordSpace, RenderContext, ReplyContext
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
    MoveTo,
    Press,
    RightClick,
    Scroll,
    Typing,
    Wait,
)
from osgym.replicas.actions import Done as DoneAction

__all__ = ["FORMAT", "PROMPT", "UITARS_SCROLL_CLICKS", "UITARS_WAIT_SECONDS", "parse_uitars", "parse_uitars_response",
           "uitars_calls"]


UITARS_SCROLL_CLICKS = 5
"""Wheel clicks for one UI-TARS ``scroll``, which carries no amount."""

UITARS_WAIT_SECONDS = 5.0
"""UI-TARS's ``wait()`` means "sleep 5 s and look again"."""


_ACTION_LABEL = re.compile(r"(?:^|\n)[ \t]*Action[ \t]*:", re.IGNORECASE)
_THOUGHT_LABEL = re.compile(r"^\s*(?:Thought|Reflection)\s*:\s*", re.IGNORECASE)
_BOX_MARKUP = re.compile(r"<\|box_start\|>|<\|box_end\|>|</?point>|</?bbox>")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_FALLBACK_CALL = re.compile(r"^\s*(\w+)\(\s*(\w+)\s*=\s*(['\"])(.*)\3\s*\)\s*$", re.DOTALL)
_UITARS_KEYS = {"arrowleft": "left", "arrowright": "right", "arrowup": "up", "arrowdown": "down"}
_UITARS_CALLS = (
    "click", "left_single", "left_double", "right_single", "drag", "select", "hotkey", "press",
    "keydown", "keyup", "type", "scroll", "wait", "finished", "call_user", "move_to", "hover",
)


def _uitars_point(
    value: Any, what: str, screen: tuple[int, int], coord_space: CoordSpace, image_size: tuple[int, int]
) -> dict[str, int]:
    text = _BOX_MARKUP.sub("", _string(value, what))
    numbers = [float(n) for n in _NUMBER.findall(text)]
    if len(numbers) == 4:  # a box: use its center
        numbers = [(numbers[0] + numbers[2]) / 2, (numbers[1] + numbers[3]) / 2]
    if len(numbers) != 2:
        raise PolicyError(f"{what}: expected '(x,y)' or '(x1,y1,x2,y2)', actual {_excerpt(value)}")
    width, height = screen
    if coord_space == "relative1000":
        limits = (1000.0, 1000.0)
    else:
        limits = (float(image_size[0]), float(image_size[1]))
    out = []
    for n, limit, size in zip(numbers, limits, (width, height), strict=True):
        if not 0 <= n <= limit:
            raise PolicyError(
                f"{what}: expected coordinates in 0..{limit:g} ({coord_space}), actual {_excerpt(value)}"
            )
        out.append(min(round(n * size / limit), size - 1))
    return {"x": out[0], "y": out[1]}


def _read_calls(section: str) -> list[tuple[str, dict[str, Any]]]:
    """Read ``name(key='value', ...)`` calls, one or more, from an Action section."""
    try:
        tree = ast.parse(section.strip(), mode="exec")
    except (SyntaxError, ValueError, MemoryError, RecursionError, Warning) as exc:
        # Models sometimes leave a quote unescaped in type(content='it's'): read one call by hand.
        match = _FALLBACK_CALL.match(section)
        if match is None:
            raise PolicyError(
                f"expected UI-TARS calls such as click(start_box='(x,y)'), actual {_excerpt(section)}"
            ) from exc
        name, key, _, raw = match.groups()
        value = raw.replace("\\n", "\n").replace("\\'", "'").replace('\\"', '"').replace("\\\\", "\\")
        return [(name, {key: value})]
    calls: list[tuple[str, dict[str, Any]]] = []
    for stmt in tree.body:
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
            shown = _source(stmt)
            raise PolicyError(f"expected a UI-TARS call such as click(...), actual `{shown}`")
        name = call.func.id
        if call.args:
            raise PolicyError(f"{name}: expected keyword arguments (start_box=...), actual positional ones")
        kwargs: dict[str, Any] = {}
        for kw in call.keywords:
            if kw.arg is None:
                raise PolicyError(f"{name}: expected keyword arguments, actual **")
            kwargs[kw.arg] = _literal(kw.value, f"{name} argument {kw.arg}")
        calls.append((name, kwargs))
    return calls


def _uitars_keys(value: Any) -> list[str]:
    text = _string(value, "key").strip().lower()
    parts = text.split() if " " in text else ([text] if text == "+" else text.split("+"))
    keys = [_UITARS_KEYS.get(p, p) for p in parts if p]
    if not keys:
        raise PolicyError(f"key: expected key names such as 'ctrl c', actual {_excerpt(value)}")
    return keys


def parse_uitars_response(
    text: str,
    *,
    screen: tuple[int, int],
    coord_space: CoordSpace = "relative1000",
    image_size: tuple[int, int] | None = None,
) -> tuple[str | None, list[Action]]:
    """Split a UI-TARS reply into its thought and its actions, scaled to ``screen``.

    The reply reads ``Thought: ...`` then ``Action: ...``, one or more calls:
    ``click``, ``left_double``, ``right_single``, ``drag``, ``hotkey``,
    ``press``, ``keydown``, ``keyup``, ``type``, ``scroll``, ``wait``,
    ``finished`` (DONE) and ``call_user`` (FAIL). Points are ``(x,y)``, boxes
    ``(x1,y1,x2,y2)`` (their center is used), bare or inside
    ``<|box_start|>...<|box_end|>`` or ``<point>x y</point>`` markup.

    Args:
        text: the model's reply.
        screen: the screen size ``(width, height)`` the actions run on.
        coord_space: ``"relative1000"`` (the default, UI-TARS 1.x): each axis
            runs 0..1000; ``"absolute"``: pixels of an ``image_size`` image.
        image_size: the size of the image the model saw, for ``"absolute"``;
            defaults to ``screen``.

    >>> parse_uitars_response("Thought: open it\\nAction: left_double(start_box='(10,20,30,40)')",
    ...                       screen=(1000, 1000))
    ('open it', [DoubleClick(action_type='DOUBLE_CLICK', x=20, y=30)])
    >>> parse_uitars_response("Action: type(content='hi\\\\n')", screen=(100, 100))[1]
    [Typing(action_type='TYPING', text='hi'), Press(action_type='PRESS', key='enter')]

    Raises:
        PolicyError: if there is no call, a call is unknown, an argument is
            missing, or a coordinate is outside the coordinate space.
    """
    if not isinstance(text, str):
        raise PolicyError(f"expected a UI-TARS reply as a string, actual {type(text).__name__}")
    if coord_space not in ("relative1000", "absolute"):
        raise PolicyError(f"coord_space: expected 'relative1000' or 'absolute', actual {coord_space!r}")
    image = image_size or screen
    if min(*screen, *image) <= 0:
        raise PolicyError(f"expected positive screen and image sizes, actual {screen} and {image}")
    label = _ACTION_LABEL.search(text)
    if label is None:
        thought, section = None, text
    else:
        thought = _THOUGHT_LABEL.sub("", text[: label.start()]).strip() or None
        section = text[label.end():]
    if not section.strip():
        raise PolicyError(f"expected an Action such as click(start_box='(x,y)'), actual {_excerpt(text)}")

    def point(args: dict[str, Any], *names: str) -> dict[str, int]:
        for name in names:
            if args.get(name) is not None:
                return _uitars_point(args[name], name, screen, coord_space, image)
        raise PolicyError(f"expected a {names[0]} argument, actual none")

    actions: list[Action] = []
    for name, args in _read_calls(section):
        _extend(actions, _uitars_action(name, args, point))
    return thought, actions


def _uitars_action(
    name: str, args: dict[str, Any], point: Callable[..., dict[str, int]]
) -> list[Action]:
    if name in ("click", "left_single"):
        return [_make(Click, **point(args, "start_box", "point"))]
    if name == "left_double":
        return [_make(DoubleClick, **point(args, "start_box", "point"))]
    if name == "right_single":
        return [_make(RightClick, **point(args, "start_box", "point"))]
    if name in ("move_to", "hover"):
        return [_make(MoveTo, **point(args, "start_box", "point"))]
    if name in ("drag", "select"):
        start = point(args, "start_box", "start_point")
        end = point(args, "end_box", "end_point")
        return [_make(MoveTo, **start), _make(DragTo, **end)]
    if name == "hotkey":
        keys = _uitars_keys(args.get("key", args.get("hotkey")))
        return [_chord_action(keys)]
    if name in ("press", "keydown", "keyup"):
        keys = _uitars_keys(args.get("key", args.get("press")))
        if len(keys) != 1:
            raise PolicyError(f"{name}: expected one key, actual {keys}")
        if name == "press":
            return [_make(Press, key=keys[0])]
        return [_make(KeyDown, key=keys[0]) if name == "keydown" else _make(KeyUp, key=keys[0])]
    if name == "type":
        content = _string(args.get("content", ""), "content")
        enter = False
        for ending in ("\\n", "\n"):
            if content.endswith(ending):
                content, enter = content[: -len(ending)], True
                break
        typed: list[Action] = [_make(Typing, text=content)] if content else []
        return [*typed, Press(key="enter")] if enter else typed
    if name == "scroll":
        direction = _string(args.get("direction", ""), "direction").strip().lower()
        deltas = {"up": (0, 1), "down": (0, -1), "left": (-1, 0), "right": (1, 0)}
        if direction not in deltas:
            raise PolicyError(
                f"scroll direction: expected up, down, left or right, actual {_excerpt(direction)}"
            )
        at = point(args, "start_box", "point") if args.get("start_box") or args.get("point") else {}
        dx, dy = deltas[direction]
        return [_make(Scroll, dx=dx * UITARS_SCROLL_CLICKS, dy=dy * UITARS_SCROLL_CLICKS, **at)]
    if name == "wait":
        return [Wait(seconds=UITARS_WAIT_SECONDS)]
    if name == "finished":
        return [DoneAction()]
    if name == "call_user":
        return [Fail()]
    raise PolicyError(f"expected a UI-TARS call among {', '.join(_UITARS_CALLS)}, actual {_excerpt(name)}")


def parse_uitars(
    text: str,
    *,
    screen: tuple[int, int],
    coord_space: CoordSpace = "relative1000",
    image_size: tuple[int, int] | None = None,
) -> list[Action]:
    """Parse UI-TARS action text into typed actions; see :func:`parse_uitars_response`.

    >>> parse_uitars("Action: hotkey(key='ctrl c')", screen=(1920, 1080))
    [Hotkey(action_type='HOTKEY', keys=['ctrl', 'c'])]
    >>> parse_uitars("Action: scroll(start_box='(0,1000)', direction='down')", screen=(200, 100))
    [Scroll(action_type='SCROLL', dx=0, dy=-5, x=0, y=99)]

    Raises:
        PolicyError: as :func:`parse_uitars_response` does.
    """
    return parse_uitars_response(text, screen=screen, coord_space=coord_space, image_size=image_size)[1]


PROMPT = """\
You are a GUI agent. You are given a task, your previous actions and screenshots, and you \
perform the next action to complete the task.

## Output Format
Thought: ...
Action: ...

## Action Space
click(start_box='<|box_start|>(x1,y1)<|box_end|>')
left_double(start_box='<|box_start|>(x1,y1)<|box_end|>')
right_single(start_box='<|box_start|>(x1,y1)<|box_end|>')
drag(start_box='<|box_start|>(x1,y1)<|box_end|>', end_box='<|box_start|>(x3,y3)<|box_end|>')
hotkey(key='')  # keys separated by spaces, lowercase, at most 3
type(content='')  # end content with \\n to submit it
scroll(start_box='<|box_start|>(x1,y1)<|box_end|>', direction='down or up or right or left')
wait()  # wait 5 s and look again
finished()  # the task is complete
call_user()  # the task cannot be done

## Note
- Write a short plan in Thought and name the target of the next action.

## User Instruction
{instruction}"""
"""The default system prompt for UI-TARS models."""


def _parse_reply(text: str, ctx: ReplyContext) -> tuple[str | None, list[Action]]:
    return parse_uitars_response(text, screen=ctx.screen, coord_space=ctx.coord_space, image_size=ctx.image_size)


# --------------------------------------------------------------------------- rendering

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


FORMAT = ActionFormat("uitars", _parse_reply, _render, PROMPT, "Thought: ... Action: click(start_box='(x,y)')")
"""The ``uitars`` action format."""
