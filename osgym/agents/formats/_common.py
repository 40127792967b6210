"""Helpers the action formats share: checked values, action building, fences and JSON to read a reply;
the pairing of actions that a format writes as one call.

Errors are :class:`~osgym.errors.PolicyError` saying what was expected and what came instead.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from osgym.errors import PolicyError
from osgym.replicas.actions import (
    MAX_ACTIONS_PER_REPLY,
    MAX_WAIT_PER_REPLY_S,
    Action,
    DragTo,
    Fail,
    Hotkey,
    MoveTo,
    Press,
    Wait,
)
from osgym.replicas.actions import Done as DoneAction

SPECIAL_CODES = {"WAIT": Wait, "DONE": DoneAction, "FAIL": Fail}
"""OSWorld's whole-reply special codes and the action each one means."""

MAX_REPEAT = 100
"""Most actions one call may expand into (``press(presses=N)``, long key lists)."""

_MAX_EXCERPT = 120
_MAX_JSON_STARTS = 32  # brackets tried as the start of the JSON in a reply
_A = TypeVar("_A", bound=BaseModel)

# --------------------------------------------------------------------------- reading a reply


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
    """One or more Waits summing to ``seconds`` (a Wait holds at most 60 s, a reply ``MAX_WAIT_PER_REPLY_S``)."""
    if seconds < 0 or seconds > MAX_WAIT_PER_REPLY_S:
        raise PolicyError(f"wait: expected 0..{MAX_WAIT_PER_REPLY_S:g} seconds, actual {seconds}")
    out: list[Action] = []
    while seconds > 60:
        out.append(Wait(seconds=60))
        seconds -= 60
    out.append(_make(Wait, seconds=seconds))
    return out


def _extend(actions: list[Action], more: Sequence[Action]) -> None:
    """Add ``more`` to one reply's ``actions``, refusing the reply as soon as it passes
    ``MAX_ACTIONS_PER_REPLY``, before a long reply is expanded any further.

    Raises:
        PolicyError: naming the limit.
    """
    if len(actions) + len(more) > MAX_ACTIONS_PER_REPLY:
        raise PolicyError(f"expected at most {MAX_ACTIONS_PER_REPLY} actions in one reply, "
                          f"actual more than {len(actions)}")
    actions.extend(more)


def scale_actions(
    actions: Sequence[Action], src: tuple[int, int], dst: tuple[int, int]
) -> list[Action]:
    """Map pixel coordinates from a ``src``-sized image onto a ``dst``-sized screen.

    Coordinates are scaled per axis, rounded and clamped into the screen.

    >>> from osgym.replicas.actions import Click, MoveTo
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


def parse_fenced(text: object, parse: Callable[[str], list[Action]]) -> tuple[str | None, list[Action]]:
    """A reply's thought and its actions: ``parse`` over each fenced block, or over the whole reply if it has none.

    >>> parse_fenced("Done.\\n```\\nx\\n```", lambda code: [])
    ('Done.', [])

    Raises:
        PolicyError: if ``text`` is not a string, or as ``parse`` does.
    """
    if not isinstance(text, str):
        raise PolicyError(f"expected a reply as a string, actual {type(text).__name__}")
    prose, blocks = split_fenced(text)
    if not blocks:
        return None, parse(text)
    actions: list[Action] = []
    for block in blocks:
        _extend(actions, parse(block))
    return prose, actions


PROMPT_OPENING = """\
You operate a Linux desktop computer with its mouse and keyboard to carry out a task for a user.
Each turn you see a screenshot of the screen, {width}x{height} pixels; coordinates are pixels of \
that screenshot, counted from its top-left corner.

"""
"""How every built-in format's prompt begins; each goes on with its own reply format."""


def _special(code: str) -> list[Action] | None:
    cls = SPECIAL_CODES.get(code.strip())
    return [cls()] if cls is not None else None


def _literal(node: ast.expr, what: str) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as exc:
        raise PolicyError(
            f"{what}: expected a constant, actual expression `{_source(node)}`"
        ) from exc


def _json_in(text: str, what: str) -> tuple[Any, int]:
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
    raise PolicyError(f"expected {what}, actual {_excerpt(stripped)}")


def _chord_action(keys: list[str]) -> Action:
    return _make(Press, key=keys[0]) if len(keys) == 1 else _make(Hotkey, keys=keys)


# --------------------------------------------------------------------------- writing a reply


def is_drag(a: Action, nxt: Action) -> bool:
    """Whether ``a`` then ``nxt`` is one drag: a ``MoveTo`` to its start, then a ``DragTo``."""
    return isinstance(a, MoveTo) and isinstance(nxt, DragTo)


def paired(actions: Sequence[Action], joins: Callable[[Action, Action], bool] = is_drag
           ) -> Iterator[tuple[Action, Action | None]]:
    """Each action, with the next one when the two are one call in a format (``joins``; by default a
    ``MoveTo`` then a ``DragTo``: one drag), else with None.

    >>> from osgym.replicas.actions import Click
    >>> [(type(a).__name__, type(b).__name__) for a, b in paired([MoveTo(x=1, y=2), DragTo(x=3, y=4), Click(x=5, y=6)])]
    [('MoveTo', 'DragTo'), ('Click', 'NoneType')]
    """
    i = 0
    while i < len(actions):
        a, nxt = actions[i], actions[i + 1] if i + 1 < len(actions) else None
        if nxt is not None and joins(a, nxt):
            yield a, nxt
            i += 2
        else:
            yield a, None
            i += 1


def with_thought(thought: str | None, text: str, sep: str = "\n") -> str:
    """A reply: the thought, then the format's text (just the text without a thought).

    >>> with_thought("Save.", "DONE"), with_thought(None, "DONE")
    ('Save.\\nDONE', 'DONE')
    """
    return f"{thought}{sep}{text}" if thought else text
