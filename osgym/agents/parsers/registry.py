"""The registry of action formats: how a model's reply becomes typed actions.

Each format module registers itself with one call at its end::

    register_format(ActionFormat("pyautogui", parse=_parse_reply, prompt=PROMPT, summary="..."))

and :class:`~osgym.agents.policies.openai.OpenAIPolicy` looks its ``action_format`` up here.

>>> fmt = ActionFormat("shout", parse=lambda text, ctx: (None, []), summary="nothing")
>>> fmt.name, fmt.prompt is None
('shout', True)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from osgym.registry import Registry
from osgym.replicas.actions import Action

__all__ = ["ActionFormat", "CoordSpace", "ReplyContext", "format_names", "get_format", "register_format"]

CoordSpace = Literal["relative1000", "absolute"]
"""How UI-TARS coordinates are expressed: ``relative1000`` (0..1000 on each axis,
UI-TARS 1.x) or ``absolute`` (pixels of the image the model saw)."""

@dataclass(frozen=True)
class ReplyContext:
    """What a reply parser needs besides the text: the image the model saw and the screen.

    Parsers return coordinates in screen pixels.
    """

    image_size: tuple[int, int]
    screen: tuple[int, int]
    coord_space: CoordSpace = "relative1000"
    """For formats whose coordinates are not image pixels (UI-TARS)."""


ReplyParser = Callable[[str, ReplyContext], tuple[str | None, list[Action]]]
"""``parse(reply, context) -> (thought, actions)``; raises :class:`~osgym.errors.PolicyError`."""


@dataclass(frozen=True)
class ActionFormat:
    """One action format: its name, its reply parser and the system prompt that asks for it.

    ``prompt`` may use ``{instruction}``, ``{width}`` and ``{height}``; a format
    without one needs a ``system_prompt`` from whoever uses it.
    """

    name: str
    parse: ReplyParser
    prompt: str | None = None
    summary: str = ""


def _load_builtins() -> None:
    import osgym.agents.parsers  # noqa: F401  (its __init__ imports every built-in format module)


_FORMATS = Registry[ActionFormat]("action format", _load_builtins)


def register_format(fmt: ActionFormat) -> ActionFormat:
    """Add ``fmt`` to the registry and return it.

    Raises:
        ValueError: if the name is not made of letters, digits, ``_ . -``, or
            another format already has it.
    """
    return _FORMATS.add(fmt.name, fmt)


def format_names() -> tuple[str, ...]:
    """The registered format names, sorted.

    >>> {"pyautogui", "computer_13", "uitars", "anthropic"} <= set(format_names())
    True
    """
    return _FORMATS.names()


def get_format(name: str) -> ActionFormat:
    """The format registered as ``name``.

    >>> get_format("pyautogui").name
    'pyautogui'

    Raises:
        ConfigError: naming the known formats, if none is registered as ``name``.
    """
    return _FORMATS.get(name)
