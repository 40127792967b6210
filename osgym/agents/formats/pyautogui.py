"""pyautogui code, as OSWorld agents emit it: read with :mod:`ast` and never executed, written one call a line.

The ``pyautogui`` format: pyautogui code in a fenced block, or OSWorld's ``WAIT``/``DONE``/``FAIL``,
in pixels of the image the model saw.
"""

from __future__ import annotations

import ast
from typing import Any, Literal

from osgym.agents.formats._common import (
    MAX_REPEAT,
    PROMPT_OPENING,
    SPECIAL_CODES,
    _count,
    _excerpt,
    _extend,
    _int,
    _literal,
    _make,
    _number,
    _source,
    _special,
    _string,
    _waits,
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

__all__ = ["FORMAT", "PROMPT", "parse_pyautogui", "parse_pyautogui_response", "pyautogui_code"]


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
            _extend(actions, _pg_statement(stmt, modules, functions))
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
    return parse_fenced(text, parse_pyautogui)


PROMPT = PROMPT_OPENING + """\
Reply with one short sentence of reasoning, then one Python code block that performs the next \
action with pyautogui, for example:
```python
pyautogui.click(120, 340)
```
Use only constant arguments and these functions: pyautogui.click, doubleClick, tripleClick, \
rightClick, middleClick, moveTo, dragTo, mouseDown, mouseUp, scroll, hscroll, write, press, \
keyDown, keyUp, hotkey, and time.sleep. No variables, loops or other modules.
Instead of code you may reply with ```WAIT``` to let the screen settle, ```DONE``` once the task \
is complete, or ```FAIL``` if the task cannot be done.

Task: {instruction}"""
"""The default system prompt asking for pyautogui code."""


def _parse_reply(text: str, ctx: ReplyContext) -> tuple[str | None, list[Action]]:
    thought, actions = parse_pyautogui_response(text)
    return thought, scale_actions(actions, ctx.image_size, ctx.screen)


# --------------------------------------------------------------------------- rendering


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
    return with_thought(thought, block)


FORMAT = ActionFormat("pyautogui", _parse_reply, _render, PROMPT, "pyautogui code in a fenced block, or WAIT/DONE/FAIL")
"""The ``pyautogui`` action format."""
