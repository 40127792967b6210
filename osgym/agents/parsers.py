"""Parsers from other action spaces onto the typed computer_13 actions.

Four inputs are understood, each by one function that returns a list of typed
actions (:mod:`osgym.agents.actions`) or raises :class:`~osgym.errors.PolicyError`:

* :func:`parse_pyautogui`: pyautogui code as OSWorld agents emit it, read with
  :mod:`ast` and never executed. :func:`parse_pyautogui_response` first takes
  the code out of a model reply (fenced blocks, OSWorld's ``WAIT``/``DONE``/``FAIL``).
* :func:`parse_computer13_response`: a model reply holding computer_13 JSON,
  flat or OSWorld's nested ``{"action_type": ..., "parameters": {...}}`` form.
* :func:`parse_anthropic`: the ``input`` of an Anthropic computer-use tool call.
* :func:`parse_uitars` and :func:`parse_uitars_response`: UI-TARS action text.

Coordinates come out in whatever space the input used, except for UI-TARS,
which is scaled to the screen. :func:`scale_actions` maps pixel coordinates
from the image a model saw onto the screen.

>>> parse_pyautogui("import pyautogui\\npyautogui.click(10, 20)")
[Click(action_type='CLICK', x=10, y=20, button='left', num_clicks=1)]
>>> parse_anthropic({"action": "key", "text": "ctrl+s"})
[Hotkey(action_type='HOTKEY', keys=['ctrl', 's'])]
>>> parse_uitars("Action: click(start_box='(500,500)')", screen=(1920, 1080))
[Click(action_type='CLICK', x=960, y=540, button='left', num_clicks=1)]
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from osgym.agents.actions import (
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
    parse_action,
)
from osgym.agents.actions import Done as DoneAction
from osgym.errors import PolicyError

__all__ = [
    "CoordSpace",
    "MAX_REPEAT",
    "SPECIAL_CODES",
    "UITARS_SCROLL_CLICKS",
    "UITARS_WAIT_SECONDS",
    "parse_anthropic",
    "parse_computer13_response",
    "parse_pyautogui",
    "parse_pyautogui_response",
    "parse_uitars",
    "parse_uitars_response",
    "scale_actions",
    "split_fenced",
    "xdotool_chords",
]

CoordSpace = Literal["relative1000", "absolute"]
"""How UI-TARS coordinates are expressed: ``relative1000`` (0..1000 on each axis,
UI-TARS 1.x) or ``absolute`` (pixels of the image the model saw)."""

SPECIAL_CODES = {"WAIT": Wait, "DONE": DoneAction, "FAIL": Fail}
"""OSWorld's whole-reply special codes and the action each one means."""

MAX_REPEAT = 100
"""Most actions one call may expand into (``press(presses=N)``, long key lists)."""

UITARS_SCROLL_CLICKS = 5
"""Wheel clicks for one UI-TARS ``scroll``, which carries no amount."""

UITARS_WAIT_SECONDS = 5.0
"""UI-TARS's ``wait()`` means "sleep 5 s and look again"."""

_MAX_EXCERPT = 120
_MAX_JSON_STARTS = 32  # brackets tried as the start of the JSON in a reply
_A = TypeVar("_A", bound=BaseModel)


# --------------------------------------------------------------------------- helpers


def _excerpt(value: Any) -> str:
    try:
        text = value if isinstance(value, str) else repr(value)
    except (RecursionError, ValueError):  # deeply nested data, or an int too long to print
        text = f"<{type(value).__name__}>"
    text = text.replace("\n", "\\n")
    return text if len(text) <= _MAX_EXCERPT else text[: _MAX_EXCERPT - 3] + "..."


def _source(node: ast.AST) -> str:
    """A short excerpt of the source of ``node``, for error messages."""
    try:
        return _excerpt(ast.unparse(node))
    except (ValueError, RecursionError, MemoryError):
        return f"<{type(node).__name__}>"


def _make(cls: type[_A], **fields: Any) -> _A:
    """Build an action, turning validation errors into PolicyError."""
    try:
        return cls(**fields)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err.get("loc", ())) or "?"
        msg = str(err["msg"])
        for prefix in ("Input should be ", "Input should "):
            if msg.startswith(prefix):
                msg = msg[len(prefix):]
                break
        raise PolicyError(
            f"invalid {cls.__name__}: {where}: expected {msg}, actual {_excerpt(err.get('input'))}"
        ) from exc


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PolicyError(f"{what}: expected a number, actual {type(value).__name__} {_excerpt(value)}")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise PolicyError(f"{what}: expected a finite number, actual {_excerpt(value)}")
    return number


def _int(value: Any, what: str) -> int:
    return round(_number(value, what))


def _count(value: Any, what: str, lo: int = 0, hi: int = MAX_REPEAT) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise PolicyError(f"{what}: expected an integer, actual {type(value).__name__} {_excerpt(value)}")
    if not lo <= value <= hi:
        raise PolicyError(f"{what}: expected {lo}..{hi}, actual {value}")
    return value


def _string(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise PolicyError(f"{what}: expected a string, actual {type(value).__name__} {_excerpt(value)}")
    return value


def _waits(seconds: float) -> list[Action]:
    """One or more Waits summing to ``seconds`` (a Wait holds at most 60 s)."""
    if seconds < 0 or seconds > 600:
        raise PolicyError(f"wait: expected 0..600 seconds, actual {seconds}")
    out: list[Action] = []
    while seconds > 60:
        out.append(Wait(seconds=60))
        seconds -= 60
    out.append(_make(Wait, seconds=seconds))
    return out


def scale_actions(
    actions: Sequence[Action], src: tuple[int, int], dst: tuple[int, int]
) -> list[Action]:
    """Map pixel coordinates from a ``src``-sized image onto a ``dst``-sized screen.

    Coordinates are scaled per axis, rounded and clamped into the screen.

    >>> scale_actions([Click(x=640, y=400)], (1280, 800), (1920, 1200))
    [Click(action_type='CLICK', x=960, y=600, button='left', num_clicks=1)]
    >>> scale_actions([MoveTo(x=5000, y=0)], (100, 100), (100, 100))
    [MoveTo(action_type='MOVE_TO', x=99, y=0)]

    Raises:
        PolicyError: if a size is not positive.
    """
    (sw, sh), (dw, dh) = src, dst
    if min(sw, sh, dw, dh) <= 0:
        raise PolicyError(f"expected positive image and screen sizes, actual {src} and {dst}")
    out: list[Action] = []
    for action in actions:
        x, y = getattr(action, "x", None), getattr(action, "y", None)
        update: dict[str, int] = {}
        if x is not None:
            update["x"] = min(max(round(x * dw / sw), 0), dw - 1)
        if y is not None:
            update["y"] = min(max(round(y * dh / sh), 0), dh - 1)
        out.append(action.model_copy(update=update) if update else action)
    return out


_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+.-]*[ \t]*\n)?(.*?)```", re.DOTALL)


def split_fenced(text: str) -> tuple[str | None, list[str]]:
    """Split a model reply into its prose and its fenced code blocks.

    >>> split_fenced("Click OK.\\n```python\\npyautogui.click(1, 2)\\n```")
    ('Click OK.', ['pyautogui.click(1, 2)'])
    >>> split_fenced("```DONE```")
    (None, ['DONE'])
    >>> split_fenced("no code")
    ('no code', [])
    """
    blocks = [m.group(2).strip() for m in _FENCE.finditer(text)]
    prose = "\n".join(part.strip() for part in _FENCE.split(text)[::3] if part.strip())
    return (prose or None), blocks


def _special(code: str) -> list[Action] | None:
    cls = SPECIAL_CODES.get(code.strip())
    return [cls()] if cls is not None else None


# --------------------------------------------------------------------------- pyautogui

_IGNORED = {"interval", "duration", "tween", "logScreenshot", "_pause"}
_BUTTONS: dict[str, Literal["left", "middle", "right"]] = {
    "left": "left", "primary": "left", "right": "right", "secondary": "right", "middle": "middle",
}
_SIGNATURES: dict[str, tuple[str, ...]] = {
    "click": ("x", "y", "clicks", "interval", "button", "duration", "tween", "logScreenshot", "_pause"),
    "doubleClick": ("x", "y", "interval", "button", "duration", "tween", "logScreenshot", "_pause"),
    "tripleClick": ("x", "y", "interval", "button", "duration", "tween", "logScreenshot", "_pause"),
    "rightClick": ("x", "y", "duration", "tween", "logScreenshot", "_pause"),
    "middleClick": ("x", "y", "duration", "tween", "logScreenshot", "_pause"),
    "moveTo": ("x", "y", "duration", "tween", "logScreenshot", "_pause"),
    "dragTo": ("x", "y", "duration", "tween", "button", "logScreenshot", "_pause", "mouseDownUp"),
    "mouseDown": ("x", "y", "button", "duration", "tween", "logScreenshot", "_pause"),
    "mouseUp": ("x", "y", "button", "duration", "tween", "logScreenshot", "_pause"),
    "scroll": ("clicks", "x", "y", "logScreenshot", "_pause"),
    "vscroll": ("clicks", "x", "y", "logScreenshot", "_pause"),
    "hscroll": ("clicks", "x", "y", "logScreenshot", "_pause"),
    "typewrite": ("message", "interval", "logScreenshot", "_pause"),
    "write": ("message", "interval", "logScreenshot", "_pause"),
    "press": ("keys", "presses", "interval", "logScreenshot", "_pause"),
    "keyDown": ("key", "logScreenshot", "_pause"),
    "keyUp": ("key", "logScreenshot", "_pause"),
    "hotkey": (),  # *keys, interval=
    "sleep": ("seconds",),
}
_PYAUTOGUI_CALLS = tuple(f"pyautogui.{name}" for name in _SIGNATURES) + ("time.sleep",)


def _pg_key(value: Any, what: str) -> str:
    key = _string(value, what)
    # pyautogui lower-cases named keys but keeps single characters ('A' is shift+a).
    return key.lower() if len(key) > 1 else key


def _pg_button(value: Any) -> Literal["left", "middle", "right"]:
    if not isinstance(value, str) or value.lower() not in _BUTTONS:
        raise PolicyError(f"button: expected one of {', '.join(_BUTTONS)}, actual {_excerpt(value)}")
    return _BUTTONS[value.lower()]


def _pg_point(args: dict[str, Any], required: bool) -> tuple[int, int] | None:
    x, y = args.get("x"), args.get("y")
    if isinstance(x, tuple | list) and y is None:  # click((x, y))
        if len(x) != 2:
            raise PolicyError(f"x: expected an (x, y) pair, actual {_excerpt(x)}")
        x, y = x
    if x is None and y is None:
        if required:
            raise PolicyError("expected x and y coordinates, actual none")
        return None
    if x is None or y is None:
        if x is not None:
            _int(x, "x")  # a string here is an image to locate: say so before the missing y
        raise PolicyError(f"expected both x and y, actual x={_excerpt(x)}, y={_excerpt(y)}")
    return _int(x, "x"), _int(y, "y")


def _pg_xy(point: tuple[int, int] | None) -> dict[str, int]:
    return {} if point is None else {"x": point[0], "y": point[1]}


def _pg_click(args: dict[str, Any], clicks: int, button: str | None = None) -> list[Action]:
    point = _pg_point(args, required=False)
    btn = button or _pg_button(args.get("button", "left"))
    if "clicks" in args:
        clicks = _count(args["clicks"], "clicks", 1, 3)
    if btn == "right" and clicks == 1:
        return [_make(RightClick, **_pg_xy(point))]
    if btn == "left" and clicks == 2:
        return [_make(DoubleClick, **_pg_xy(point))]
    return [_make(Click, **_pg_xy(point), button=btn, num_clicks=clicks)]


def _pg_keys(value: Any, what: str) -> list[str]:
    if isinstance(value, str):
        return [_pg_key(value, what)]
    if isinstance(value, list | tuple):
        if len(value) > MAX_REPEAT:
            raise PolicyError(f"{what}: expected at most {MAX_REPEAT} keys, actual {len(value)}")
        return [_pg_key(k, what) for k in value]
    raise PolicyError(f"{what}: expected a key name or a list of them, actual {_excerpt(value)}")


def _pg_action(name: str, args: dict[str, Any], extra: list[Any]) -> list[Action]:
    """Map one bound pyautogui (or time) call onto actions."""
    if name == "click":
        return _pg_click(args, 1)
    if name == "doubleClick":
        return _pg_click({**args, "clicks": 2}, 2)
    if name == "tripleClick":
        return _pg_click({**args, "clicks": 3}, 3)
    if name == "rightClick":
        return _pg_click(args, 1, "right")
    if name == "middleClick":
        return _pg_click(args, 1, "middle")
    if name == "moveTo":
        return [_make(MoveTo, **_pg_xy(_pg_point(args, required=True)))]
    if name == "dragTo":
        xy = _pg_xy(_pg_point(args, required=True))
        button = _pg_button(args.get("button", "left"))
        if args.get("mouseDownUp", True) is False:
            return [_make(MoveTo, **xy)]
        if button == "left":
            return [_make(DragTo, **xy)]
        return [MouseDown(button=button), _make(MoveTo, **xy), MouseUp(button=button)]
    if name in ("mouseDown", "mouseUp"):
        point = _pg_point(args, required=False)
        button = _pg_button(args.get("button", "left"))
        pre: list[Action] = [_make(MoveTo, **_pg_xy(point))] if point else []
        return [*pre, MouseDown(button=button) if name == "mouseDown" else MouseUp(button=button)]
    if name in ("scroll", "vscroll", "hscroll"):
        if "clicks" not in args:
            raise PolicyError(f"{name}: expected a clicks argument, actual none")
        clicks = _int(args["clicks"], "clicks")
        point = _pg_point(args, required=False)
        delta = {"dx": clicks} if name == "hscroll" else {"dy": clicks}
        return [_make(Scroll, **delta, **_pg_xy(point))]
    if name in ("typewrite", "write"):
        if "message" not in args:
            raise PolicyError(f"{name}: expected a message argument, actual none")
        message = args["message"]
        if isinstance(message, list | tuple):  # typewrite(['a', 'enter']) presses keys
            return [_make(Press, key=k) for k in _pg_keys(message, "message")]
        return [_make(Typing, text=_string(message, "message"))]
    if name == "press":
        if "keys" not in args:
            raise PolicyError("press: expected a keys argument, actual none")
        keys = _pg_keys(args["keys"], "keys")
        presses = _count(args.get("presses", 1), "presses")
        if len(keys) * presses > MAX_REPEAT:
            total = len(keys) * presses
            raise PolicyError(f"press: expected at most {MAX_REPEAT} key presses, actual {total}")
        return [_make(Press, key=k) for _ in range(presses) for k in keys]
    if name in ("keyDown", "keyUp"):
        if "key" not in args:
            raise PolicyError(f"{name}: expected a key argument, actual none")
        key = _pg_key(args["key"], "key")
        return [_make(KeyDown, key=key) if name == "keyDown" else _make(KeyUp, key=key)]
    if name == "hotkey":
        chord: Any = extra[0] if len(extra) == 1 and isinstance(extra[0], list | tuple) else extra
        if not chord:
            raise PolicyError("hotkey: expected at least one key, actual none")
        return [_make(Hotkey, keys=_pg_keys(list(chord), "hotkey"))]
    if name == "sleep":
        if "seconds" not in args:
            raise PolicyError("sleep: expected a seconds argument, actual none")
        return _waits(_number(args["seconds"], "seconds"))
    raise AssertionError(name)  # pragma: no cover - _SIGNATURES and this function agree


def _literal(node: ast.expr, what: str) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as exc:
        raise PolicyError(
            f"{what}: expected a constant, actual expression `{_source(node)}`"
        ) from exc


def _bind(name: str, call: ast.Call) -> tuple[dict[str, Any], list[Any]]:
    """Bind a call's arguments to the parameter names of pyautogui's function."""
    params = _SIGNATURES[name]
    args: dict[str, Any] = {}
    extra: list[Any] = []
    for i, node in enumerate(call.args):
        if isinstance(node, ast.Starred):
            raise PolicyError(f"{name}: expected plain arguments, actual `{_source(node)}`")
        if name == "hotkey":
            extra.append(_literal(node, f"{name} argument {i + 1}"))
            continue
        if i >= len(params):
            raise PolicyError(
                f"{name}: expected at most {len(params)} positional arguments, actual {len(call.args)}"
            )
        if params[i] not in _IGNORED:
            args[params[i]] = _literal(node, f"{name} argument {params[i]}")
    for kw in call.keywords:
        if kw.arg is None:
            shown = _source(kw.value)
            raise PolicyError(f"{name}: expected keyword arguments, actual `**{shown}`")
        allowed = ("interval", "logScreenshot", "_pause") if name == "hotkey" else params
        if kw.arg not in allowed:
            raise PolicyError(
                f"{name}: expected keyword arguments among {', '.join(allowed)}, actual {kw.arg!r}"
            )
        if kw.arg in args:
            raise PolicyError(f"{name}: expected each argument once, actual {kw.arg!r} twice")
        if kw.arg not in _IGNORED:  # timing and easing, which need not be constants
            args[kw.arg] = _literal(kw.value, f"{name} argument {kw.arg}")
    return args, extra


def _parse_module(code: str, what: str) -> ast.Module:
    try:
        return ast.parse(code, mode="exec")
    except (SyntaxError, ValueError, MemoryError, RecursionError, Warning) as exc:
        detail = getattr(exc, "msg", None) or str(exc) or type(exc).__name__
        line = getattr(exc, "lineno", None)
        where = f" at line {line}" if line else ""
        raise PolicyError(
            f"expected {what}, actual invalid Python{where}: {detail}: {_excerpt(code)}"
        ) from exc


def parse_pyautogui(code: str) -> list[Action]:
    """Parse pyautogui code, as OSWorld agents emit it, into typed actions.

    The code is read with :mod:`ast` and never executed. It may span several
    lines and import ``pyautogui`` and ``time`` (also under aliases). Statements
    must be calls of pyautogui's mouse and keyboard functions or ``time.sleep``,
    with constant arguments. A reply that is exactly ``WAIT``, ``DONE`` or
    ``FAIL`` is OSWorld's special code for that action.

    >>> parse_pyautogui("pyautogui.hotkey('ctrl', 'c')")
    [Hotkey(action_type='HOTKEY', keys=['ctrl', 'c'])]
    >>> parse_pyautogui("pyautogui.press('tab', presses=2)")
    [Press(action_type='PRESS', key='tab'), Press(action_type='PRESS', key='tab')]
    >>> parse_pyautogui("DONE")
    [Done(action_type='DONE')]

    Raises:
        PolicyError: on invalid Python, any other statement or call, a
            non-constant argument, or an argument out of range.
    """
    if not isinstance(code, str):
        raise PolicyError(f"expected pyautogui code as a string, actual {type(code).__name__}")
    special = _special(code)
    if special is not None:
        return special
    tree = _parse_module(code, "pyautogui code")
    modules: dict[str, str] = {}  # local name -> "pyautogui" or "time"
    functions: dict[str, str] = {}  # local name -> "pyautogui.click" etc.
    actions: list[Action] = []
    for stmt in tree.body:
        try:
            actions.extend(_pg_statement(stmt, modules, functions))
        except PolicyError as exc:
            raise PolicyError(f"line {stmt.lineno}: {exc}") from exc
    return actions


def _pg_statement(stmt: ast.stmt, modules: dict[str, str], functions: dict[str, str]) -> list[Action]:
    if isinstance(stmt, ast.Import):
        for alias in stmt.names:
            if alias.name not in ("pyautogui", "time"):
                raise PolicyError(f"expected import of pyautogui or time, actual import {alias.name}")
            modules[alias.asname or alias.name] = alias.name
        return []
    if isinstance(stmt, ast.ImportFrom):
        if stmt.module not in ("pyautogui", "time") or stmt.level:
            raise PolicyError(f"expected import from pyautogui or time, actual from {stmt.module} import")
        for alias in stmt.names:
            qualified = f"{stmt.module}.{alias.name}"
            if qualified not in _PYAUTOGUI_CALLS:
                raise PolicyError(
                    f"expected one of {', '.join(_PYAUTOGUI_CALLS)}, actual import of {qualified}"
                )
            functions[alias.asname or alias.name] = qualified
        return []
    if isinstance(stmt, ast.Pass):
        return []
    if isinstance(stmt, ast.Expr):
        value = stmt.value
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            return []  # a bare string is a no-op, as a docstring is
        if isinstance(value, ast.Name) and value.id in SPECIAL_CODES:
            return [SPECIAL_CODES[value.id]()]
        if isinstance(value, ast.Call):
            return _pg_call(value, modules, functions)
    raise PolicyError(
        f"expected pyautogui or time.sleep calls, actual {type(stmt).__name__} "
        f"`{_source(stmt)}`"
    )


def _pg_call(call: ast.Call, modules: dict[str, str], functions: dict[str, str]) -> list[Action]:
    func = call.func
    qualified: str | None = None
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        module = modules.get(func.value.id, func.value.id)
        qualified = f"{module}.{func.attr}"
    elif isinstance(func, ast.Name):
        qualified = functions.get(func.id)
    if qualified is None or qualified not in _PYAUTOGUI_CALLS:
        shown = qualified or _source(func)
        raise PolicyError(
            f"expected a call of one of {', '.join(_PYAUTOGUI_CALLS)}, actual {_excerpt(shown)}"
        )
    name = qualified.split(".", 1)[1]
    args, extra = _bind(name, call)
    return _pg_action(name, args, extra)


def parse_pyautogui_response(text: str) -> tuple[str | None, list[Action]]:
    """Split a model reply into its thought and the actions of its pyautogui code.

    Fenced code blocks (```` ```python ... ``` ````) hold the code; the prose
    around them is the thought. A reply without fences is all code.

    >>> parse_pyautogui_response("I click.\\n```python\\npyautogui.click(5, 6)\\n```")
    ('I click.', [Click(action_type='CLICK', x=5, y=6, button='left', num_clicks=1)])
    >>> parse_pyautogui_response("```FAIL```")
    (None, [Fail(action_type='FAIL')])

    Raises:
        PolicyError: as :func:`parse_pyautogui` does.
    """
    if not isinstance(text, str):
        raise PolicyError(f"expected a reply as a string, actual {type(text).__name__}")
    prose, blocks = split_fenced(text)
    if not blocks:
        return None, parse_pyautogui(text)
    actions: list[Action] = []
    for block in blocks:
        actions.extend(parse_pyautogui(block))
    return prose, actions


# --------------------------------------------------------------------------- computer_13 JSON


def _c13_one(value: Any) -> list[Action]:
    if isinstance(value, str):
        special = _special(value)
        if special is None:
            raise PolicyError(f"expected an action object or WAIT/DONE/FAIL, actual {_excerpt(value)}")
        return special
    if not isinstance(value, dict):
        raise PolicyError(f"expected an action object, actual {type(value).__name__} {_excerpt(value)}")
    return [parse_action(value)]


def _c13_value(value: Any) -> list[Action]:
    """Actions from decoded JSON: one action, a list of them, or ``{"actions": [...]}``."""
    if isinstance(value, dict) and "actions" in value and "action_type" not in value:
        value = value["actions"]
    if not isinstance(value, list):
        return _c13_one(value)
    if len(value) > MAX_REPEAT:
        raise PolicyError(f"expected at most {MAX_REPEAT} actions, actual {len(value)}")
    return [action for item in value for action in _c13_one(item)]


def _json_in(text: str) -> tuple[Any, int]:
    """The first JSON object or array in ``text``, and where it starts."""
    stripped = text.strip()
    try:
        return json.loads(stripped), 0
    except (ValueError, RecursionError):
        pass
    decoder = json.JSONDecoder()
    for attempt, match in enumerate(re.finditer(r"[\[{]", text)):
        if attempt >= _MAX_JSON_STARTS:
            break
        try:
            return decoder.raw_decode(text, match.start())[0], match.start()
        except (ValueError, RecursionError):
            continue
    raise PolicyError(f"expected computer_13 JSON (an action object or a list), actual {_excerpt(stripped)}")


def parse_computer13_response(text: str) -> tuple[str | None, list[Action]]:
    """Split a model reply into its thought and its computer_13 JSON actions.

    The JSON is one action object or a list of them, flat or OSWorld-nested,
    in fenced blocks or bare; ``WAIT``, ``DONE`` and ``FAIL`` are accepted too.

    >>> parse_computer13_response('```json\\n{"action_type": "PRESS", "parameters": {"key": "enter"}}\\n```')
    (None, [Press(action_type='PRESS', key='enter')])
    >>> parse_computer13_response('Typing now. [{"action_type": "TYPING", "text": "hi"}]')[1]
    [Typing(action_type='TYPING', text='hi')]

    Raises:
        PolicyError: if no JSON is found or an action is invalid.
    """
    if not isinstance(text, str):
        raise PolicyError(f"expected a reply as a string, actual {type(text).__name__}")
    prose, blocks = split_fenced(text)
    if not blocks:
        special = _special(text)
        if special is not None:
            return None, special
        value, start = _json_in(text)
        return text[:start].strip() or None, _c13_value(value)
    actions: list[Action] = []
    for block in blocks:
        special = _special(block)
        actions.extend(special if special is not None else _c13_value(_json_in(block)[0]))
    return prose, actions


# --------------------------------------------------------------------------- Anthropic computer use

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


def _chord_action(keys: list[str]) -> Action:
    return _make(Press, key=keys[0]) if len(keys) == 1 else _make(Hotkey, keys=keys)


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


# --------------------------------------------------------------------------- UI-TARS

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


def _uitars_calls(section: str) -> list[tuple[str, dict[str, Any]]]:
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
    for name, args in _uitars_calls(section):
        actions.extend(_uitars_action(name, args, point))
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
