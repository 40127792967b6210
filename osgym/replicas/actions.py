"""Typed actions: OSWorld's computer_13 action space as frozen pydantic models.

An action serialises to flat JSON with an ``action_type`` tag, which is also
what the replica's ``POST /actions`` accepts:

>>> Click(x=10, y=20).model_dump(exclude_none=True)
{'action_type': 'CLICK', 'x': 10, 'y': 20, 'button': 'left', 'num_clicks': 1}
>>> parse_action({"action_type": "TYPING", "text": "hi"})
Typing(action_type='TYPING', text='hi')

OSWorld's nested form ``{"action_type": ..., "parameters": {...}}`` is accepted
as well. Parsers for other action spaces live in :mod:`osgym.agents.formats`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from osgym.errors import PolicyError

Button = Literal["left", "middle", "right"]
Coord = Annotated[int, Field(ge=0, le=16384)]


class _Action(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    def to_json(self) -> dict[str, Any]:
        """The flat JSON form sent to the replica and stored in the dataset."""
        return self.model_dump(exclude_none=True)


class _OptionalPoint(_Action):
    """An action that happens at ``(x, y)`` if given, else where the pointer is: both or neither."""

    @model_validator(mode="after")
    def _both_or_neither(self) -> _OptionalPoint:
        x, y = getattr(self, "x", None), getattr(self, "y", None)
        if (x is None) != (y is None):
            raise ValueError(f"expected both x and y or neither, actual x={x!r} y={y!r}")
        return self


class MoveTo(_Action):
    """Move the pointer to ``(x, y)``."""

    action_type: Literal["MOVE_TO"] = "MOVE_TO"
    x: Coord
    y: Coord


class Click(_OptionalPoint):
    """Click ``button`` ``num_clicks`` times, at ``(x, y)`` if given, else where the pointer is."""

    action_type: Literal["CLICK"] = "CLICK"
    x: Coord | None = None
    y: Coord | None = None
    button: Button = "left"
    num_clicks: Annotated[int, Field(ge=1, le=3)] = 1


class MouseDown(_Action):
    """Press and hold a mouse button."""

    action_type: Literal["MOUSE_DOWN"] = "MOUSE_DOWN"
    button: Button = "left"


class MouseUp(_Action):
    """Release a mouse button."""

    action_type: Literal["MOUSE_UP"] = "MOUSE_UP"
    button: Button = "left"


class RightClick(_OptionalPoint):
    """Right-click at ``(x, y)`` if given, else where the pointer is."""

    action_type: Literal["RIGHT_CLICK"] = "RIGHT_CLICK"
    x: Coord | None = None
    y: Coord | None = None


class DoubleClick(_OptionalPoint):
    """Double-click at ``(x, y)`` if given, else where the pointer is."""

    action_type: Literal["DOUBLE_CLICK"] = "DOUBLE_CLICK"
    x: Coord | None = None
    y: Coord | None = None


class DragTo(_Action):
    """Drag with the left button held from the pointer to ``(x, y)``."""

    action_type: Literal["DRAG_TO"] = "DRAG_TO"
    x: Coord
    y: Coord


class Scroll(_OptionalPoint):
    """Scroll by ``dx`` and ``dy`` wheel clicks: positive ``dy`` is up (as in pyautogui), positive ``dx`` right."""

    action_type: Literal["SCROLL"] = "SCROLL"
    dx: Annotated[int, Field(ge=-100, le=100)] = 0
    dy: Annotated[int, Field(ge=-100, le=100)] = 0
    x: Coord | None = None
    y: Coord | None = None


class Typing(_Action):
    """Type ``text`` as keystrokes."""

    action_type: Literal["TYPING"] = "TYPING"
    text: Annotated[str, Field(max_length=10_000)]


class Press(_Action):
    """Press and release one key, by xdotool/pyautogui name (``enter``, ``a``, ``F2``)."""

    action_type: Literal["PRESS"] = "PRESS"
    key: Annotated[str, Field(min_length=1, max_length=32)]


class KeyDown(_Action):
    """Press and hold one key."""

    action_type: Literal["KEY_DOWN"] = "KEY_DOWN"
    key: Annotated[str, Field(min_length=1, max_length=32)]


class KeyUp(_Action):
    """Release one key."""

    action_type: Literal["KEY_UP"] = "KEY_UP"
    key: Annotated[str, Field(min_length=1, max_length=32)]


class Hotkey(_Action):
    """Press keys together, in order, then release them in reverse (``["ctrl", "s"]``)."""

    action_type: Literal["HOTKEY"] = "HOTKEY"
    keys: Annotated[list[Annotated[str, Field(min_length=1, max_length=32)]], Field(min_length=1, max_length=6)]


class Wait(_Action):
    """Do nothing for ``seconds``."""

    action_type: Literal["WAIT"] = "WAIT"
    seconds: Annotated[float, Field(ge=0, le=60)] = 1.0


class Fail(_Action):
    """End the episode declaring the task infeasible."""

    action_type: Literal["FAIL"] = "FAIL"


class Done(_Action):
    """End the episode declaring the task complete."""

    action_type: Literal["DONE"] = "DONE"


Action = Annotated[
    MoveTo | Click | MouseDown | MouseUp | RightClick | DoubleClick | DragTo | Scroll
    | Typing | Press | KeyDown | KeyUp | Hotkey | Wait | Fail | Done,
    Field(discriminator="action_type"),
]
"""Any one computer_13 action."""

ACTION_TYPES: tuple[str, ...] = (
    "MOVE_TO", "CLICK", "MOUSE_DOWN", "MOUSE_UP", "RIGHT_CLICK", "DOUBLE_CLICK", "DRAG_TO", "SCROLL",
    "TYPING", "PRESS", "KEY_DOWN", "KEY_UP", "HOTKEY", "WAIT", "FAIL", "DONE",
)
TERMINAL_TYPES = frozenset({"DONE", "FAIL"})

MAX_ACTIONS_PER_REPLY = 100
"""Most actions one decision (one model reply) may hold. The replica accepts 200 per request;
a reply past this is refused whole, as a policy error, before anything of it runs."""

MAX_WAIT_PER_REPLY_S = 120.0
"""Most seconds of ``WAIT`` one decision may hold in all (each ``Wait`` holds at most 60 s)."""

_adapter: TypeAdapter[Action] = TypeAdapter(Action)


def check_reply(actions: Sequence[_Action]) -> None:
    """Refuse one decision's actions if they are more, or wait longer, than a reply may.

    The episode deadline bounds a reply too, but a reply of 200 one-minute waits would
    otherwise hold a replica for hours on a long deadline.

    >>> check_reply([Wait(seconds=60), Wait(seconds=60), Done()])
    >>> check_reply([Wait(seconds=60)] * 3)
    Traceback (most recent call last):
    ...
    osgym.errors.PolicyError: expected at most 120 s of WAIT in one reply, actual 180 s

    Raises:
        PolicyError: naming the limit, if there are more than ``MAX_ACTIONS_PER_REPLY`` actions
            or more than ``MAX_WAIT_PER_REPLY_S`` seconds of waiting.
    """
    if len(actions) > MAX_ACTIONS_PER_REPLY:
        raise PolicyError(f"expected at most {MAX_ACTIONS_PER_REPLY} actions in one reply, actual {len(actions)}")
    waits = sum(a.seconds for a in actions if isinstance(a, Wait))
    if waits > MAX_WAIT_PER_REPLY_S:
        raise PolicyError(f"expected at most {MAX_WAIT_PER_REPLY_S:g} s of WAIT in one reply, actual {waits:g} s")


def parse_action(data: dict[str, Any]) -> Action:
    """Validate one action from its flat or OSWorld-nested JSON form.

    Raises:
        PolicyError: if ``data`` is not a known action with valid fields.
    """
    if not isinstance(data, dict):
        raise PolicyError(f"expected an action object, actual {type(data).__name__}: {data!r:.200}")
    if isinstance(data.get("parameters"), dict):
        data = {"action_type": data.get("action_type"), **data["parameters"]}
    kind = data.get("action_type")
    if kind not in ACTION_TYPES:
        raise PolicyError(f"expected action_type in {', '.join(ACTION_TYPES)}, actual {kind!r}")
    try:
        return _adapter.validate_python(data)
    except ValidationError as exc:
        raise PolicyError(f"invalid {kind} action {data!r:.200}: {exc.errors()[0]['msg']}") from exc
