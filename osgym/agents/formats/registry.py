"""The registry of action formats: a format's name to its :class:`~osgym.agents.formats.base.ActionFormat`.

The built-in formats are the ``FORMAT`` of each module of this package, listed below; a format defined
elsewhere (a test, another package) is added with one call::

    register_format(ActionFormat("shout", parse=..., render=..., prompt="...", summary="..."))

:class:`~osgym.agents.policies.openai.OpenAIPolicy` looks its ``action_format`` up here, ``osgym serve``
reads replies with it, and the SFT export writes the assistant's turns with :func:`render_reply`.

>>> {"pyautogui", "computer_13", "uitars", "anthropic", "osgym"} <= set(format_names())
True
"""

from __future__ import annotations

from collections.abc import Sequence

from osgym.agents.formats.anthropic import FORMAT as ANTHROPIC
from osgym.agents.formats.base import ActionFormat, RenderContext
from osgym.agents.formats.computer13 import FORMAT as COMPUTER_13
from osgym.agents.formats.osgym_strings import FORMAT as OSGYM
from osgym.agents.formats.pyautogui import FORMAT as PYAUTOGUI
from osgym.agents.formats.uitars import FORMAT as UITARS
from osgym.registry import Registry
from osgym.replicas.actions import Action

__all__ = ["BUILTIN_FORMATS", "format_names", "get_format", "register_format", "render_reply"]

BUILTIN_FORMATS = (ANTHROPIC, COMPUTER_13, OSGYM, PYAUTOGUI, UITARS)
"""The formats osgym ships: a new built-in format is a module here and one entry in this tuple."""

_FORMATS = Registry[ActionFormat]("action format")
for _fmt in BUILTIN_FORMATS:
    _FORMATS.add(_fmt.name, _fmt)


def register_format(fmt: ActionFormat) -> ActionFormat:
    """Add ``fmt`` to the registry and return it.

    Raises:
        ValueError: if the name is not made of letters, digits, ``_ . -``, or
            another format already has it.
    """
    return _FORMATS.add(fmt.name, fmt)


def format_names() -> tuple[str, ...]:
    """The registered format names, sorted.

    >>> [name for name in format_names() if name in ("pyautogui", "computer_13", "uitars", "anthropic", "osgym")]
    ['anthropic', 'computer_13', 'osgym', 'pyautogui', 'uitars']
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


def render_reply(name: str, thought: str | None, actions: Sequence[Action], ctx: RenderContext) -> str:
    """Write ``actions`` (with ``thought``) as a reply in format ``name``, checked by parsing it back
    (:meth:`ActionFormat.render_reply <osgym.agents.formats.base.ActionFormat.render_reply>`).

    >>> from osgym.replicas.actions import Done, Hotkey
    >>> print(render_reply("pyautogui", "Save.", [Hotkey(keys=["ctrl", "s"]), Done()], RenderContext((800, 600))))
    Save.
    ```python
    pyautogui.hotkey('ctrl', 's')
    DONE
    ```

    Raises:
        ConfigError: if no format is registered as ``name``, or it has no renderer.
        Unrenderable: if the format has no form for an action, or the reply would read back as
            other actions.
    """
    return get_format(name).render_reply(thought, actions, ctx)
