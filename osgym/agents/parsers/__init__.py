"""Parsers from other action spaces onto the typed computer_13 actions, one module per format.

Each function returns a list of typed actions (:mod:`osgym.replicas.actions`) or
raises :class:`~osgym.errors.PolicyError`:

* :mod:`~osgym.agents.parsers.pyautogui`: :func:`parse_pyautogui` reads pyautogui code as
  OSWorld agents emit it, with :mod:`ast`, never executing it; :func:`parse_pyautogui_response`
  first takes the code out of a model reply (fenced blocks, OSWorld's ``WAIT``/``DONE``/``FAIL``).
* :mod:`~osgym.agents.parsers.computer13`: :func:`parse_computer13_response`, a reply holding
  computer_13 JSON, flat or OSWorld's nested ``{"action_type": ..., "parameters": {...}}`` form.
* :mod:`~osgym.agents.parsers.anthropic`: :func:`parse_anthropic`, the ``input`` of an Anthropic
  computer-use tool call; :func:`parse_anthropic_response`, such inputs as JSON in a reply.
* :mod:`~osgym.agents.parsers.uitars`: :func:`parse_uitars` and :func:`parse_uitars_response`,
  UI-TARS action text.
* :mod:`~osgym.agents.parsers.osgym_strings`: :func:`parse_osgym` and :func:`parse_osgym_response`,
  OSGym's action strings (``click(x,y)&type(hi)``), which ``osgym serve`` speaks (with ``screen``:
  coordinates off it are refused).

:mod:`osgym.agents.renderers` writes typed actions back into each of these formats.

Coordinates come out in whatever space the input used, except for UI-TARS,
which is scaled to the screen. :func:`scale_actions` maps pixel coordinates
from the image a model saw onto the screen.

Each format module registers an :class:`ActionFormat` (its name, reply parser and
default prompt) in :mod:`~osgym.agents.parsers.registry`; :func:`get_format` looks one up.
A new format is a new module here ending in ``register_format(...)``, imported below.

>>> parse_pyautogui("import pyautogui\\npyautogui.click(10, 20)")
[Click(action_type='CLICK', x=10, y=20, button='left', num_clicks=1)]
>>> parse_anthropic({"action": "key", "text": "ctrl+s"})
[Hotkey(action_type='HOTKEY', keys=['ctrl', 's'])]
>>> parse_uitars("Action: click(start_box='(500,500)')", screen=(1920, 1080))
[Click(action_type='CLICK', x=960, y=540, button='left', num_clicks=1)]
>>> [name for name in format_names() if name in ("pyautogui", "computer_13", "uitars", "anthropic", "osgym")]
['anthropic', 'computer_13', 'osgym', 'pyautogui', 'uitars']
"""

from osgym.agents.parsers._common import MAX_REPEAT, SPECIAL_CODES, scale_actions, split_fenced
from osgym.agents.parsers.anthropic import parse_anthropic, parse_anthropic_response, xdotool_chords
from osgym.agents.parsers.computer13 import parse_computer13_response
from osgym.agents.parsers.osgym_strings import parse_osgym, parse_osgym_response
from osgym.agents.parsers.pyautogui import parse_pyautogui, parse_pyautogui_response
from osgym.agents.parsers.registry import (
    ActionFormat,
    CoordSpace,
    ReplyContext,
    format_names,
    get_format,
    register_format,
)
from osgym.agents.parsers.uitars import (
    UITARS_SCROLL_CLICKS,
    UITARS_WAIT_SECONDS,
    parse_uitars,
    parse_uitars_response,
)

__all__ = [
    "MAX_REPEAT",
    "SPECIAL_CODES",
    "UITARS_SCROLL_CLICKS",
    "UITARS_WAIT_SECONDS",
    "ActionFormat",
    "CoordSpace",
    "ReplyContext",
    "format_names",
    "get_format",
    "parse_anthropic",
    "parse_anthropic_response",
    "parse_computer13_response",
    "parse_osgym",
    "parse_osgym_response",
    "parse_pyautogui",
    "parse_pyautogui_response",
    "parse_uitars",
    "parse_uitars_response",
    "register_format",
    "scale_actions",
    "split_fenced",
    "xdotool_chords",
]
