"""computer_13 JSON in a model reply, flat or OSWorld's nested ``{"action_type": ..., "parameters": {...}}``;
written flat, in a fenced block.
"""

from __future__ import annotations

import json
from typing import Any

from osgym.agents.formats._common import (
    MAX_REPEAT,
    PROMPT_OPENING,
    _excerpt,
    _extend,
    _json_in,
    _special,
    scale_actions,
    split_fenced,
    with_thought,
)
from osgym.agents.formats.base import ActionFormat, RenderContext, ReplyContext
from osgym.errors import PolicyError
from osgym.replicas.actions import Action, parse_action

__all__ = ["FORMAT", "PROMPT", "parse_computer13_response"]


_WHAT = "computer_13 JSON (an action object or a list)"


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
        value, start = _json_in(text, _WHAT)
        return text[:start].strip() or None, _c13_value(value)
    actions: list[Action] = []
    for block in blocks:
        special = _special(block)
        _extend(actions, special if special is not None else _c13_value(_json_in(block, _WHAT)[0]))
    return prose, actions


PROMPT = PROMPT_OPENING + """\
Reply with one short sentence of reasoning, then a JSON code block holding the next action, or a \
list of actions, each an object with an "action_type" and its fields:
MOVE_TO x y | CLICK x? y? button? num_clicks? | MOUSE_DOWN button? | MOUSE_UP button? | \
RIGHT_CLICK x? y? | DOUBLE_CLICK x? y? | DRAG_TO x y | SCROLL dx dy (positive dy scrolls up) | \
TYPING text | PRESS key | KEY_DOWN key | KEY_UP key | HOTKEY keys (a list) | WAIT seconds? | \
FAIL | DONE
For example:
```json
{{"action_type": "CLICK", "x": 120, "y": 340}}
```
Use DONE once the task is complete and FAIL if the task cannot be done.

Task: {instruction}"""
"""The default system prompt asking for computer_13 JSON."""


def _parse_reply(text: str, ctx: ReplyContext) -> tuple[str | None, list[Action]]:
    thought, actions = parse_computer13_response(text)
    return thought, scale_actions(actions, ctx.image_size, ctx.screen)


# --------------------------------------------------------------------------- rendering


def _render(thought: str | None, actions: list[Action], ctx: RenderContext) -> str:
    items = [a.to_json() for a in actions]
    body = json.dumps(items[0] if len(items) == 1 else items, ensure_ascii=False)
    block = f"```json\n{body}\n```"
    return with_thought(thought, block)


FORMAT = ActionFormat("computer_13", _parse_reply, _render, PROMPT, "computer_13 JSON, flat or OSWorld-nested")
"""The ``computer_13`` action format."""
