"""Action formats: how models write actions, one module per format, each holding its parser, its renderer
and its prompt.

A format reads a model's reply into the typed computer_13 actions of :mod:`osgym.replicas.actions`
(raising :class:`~osgym.errors.PolicyError`), and writes typed actions back as such a reply (raising
:class:`~osgym.errors.Unrenderable`):

* :mod:`~osgym.agents.formats.pyautogui` (``pyautogui``): pyautogui code as OSWorld agents emit it, read
  with :mod:`ast` and never executed (:func:`parse_pyautogui`, :func:`parse_pyautogui_response`, which
  first takes the code out of a reply: fenced blocks, OSWorld's ``WAIT``/``DONE``/``FAIL``).
* :mod:`~osgym.agents.formats.computer13` (``computer_13``): :func:`parse_computer13_response`, a reply
  holding computer_13 JSON, flat or OSWorld's nested ``{"action_type": ..., "parameters": {...}}`` form.
* :mod:`~osgym.agents.formats.anthropic` (``anthropic``): :func:`parse_anthropic`, the ``input`` of an
  Anthropic computer-use tool call; :func:`parse_anthropic_response`, such inputs as JSON in a reply.
* :mod:`~osgym.agents.formats.uitars` (``uitars``): :func:`parse_uitars` and :func:`parse_uitars_response`,
  UI-TARS action text.
* :mod:`~osgym.agents.formats.osgym_strings` (``osgym``): :func:`parse_osgym` and
  :func:`parse_osgym_response`, OSGym's action strings (``click(x,y)&type(hi)``), which ``osgym serve``
  speaks (with ``screen``: coordinates off it are refused).

Each module's ``FORMAT`` is an :class:`ActionFormat` (name, ``parse``, ``render``, ``prompt``), held by name
in :mod:`~osgym.agents.formats.registry`: :func:`get_format` looks one up, :func:`register_format` adds one
defined elsewhere. :func:`render_reply` returns only replies that the format's parser reads back as the
same actions (in :func:`canonical` form); training exports (:mod:`osgym.dataset.sft`) write the
assistant's turns with it.

Coordinates come out in whatever space the input used, except for UI-TARS,
which is scaled to the screen. :func:`scale_actions` maps pixel coordinates
from the image a model saw onto the screen.

>>> parse_pyautogui("import pyautogui\\npyautogui.click(10, 20)")
[Click(action_type='CLICK', x=10, y=20, button='left', num_clicks=1)]
>>> parse_anthropic({"action": "key", "text": "ctrl+s"})
[Hotkey(action_type='HOTKEY', keys=['ctrl', 's'])]
>>> parse_uitars("Action: click(start_box='(500,500)')", screen=(1920, 1080))
[Click(action_type='CLICK', x=960, y=540, button='left', num_clicks=1)]
>>> from osgym.replicas.actions import Click
>>> render_reply("uitars", "Open it", [Click(x=500, y=250)], RenderContext((1000, 1000)))
"Thought: Open it\\nAction: click(start_box='<|box_start|>(500,250)<|box_end|>')"
"""

from __future__ import annotations

from osgym.agents.formats._common import MAX_REPEAT, SPECIAL_CODES, scale_actions, split_fenced
from osgym.agents.formats.anthropic import parse_anthropic, parse_anthropic_response, xdotool_chords
from osgym.agents.formats.base import ActionFormat, CoordSpace, RenderContext, ReplyContext
from osgym.agents.formats.canonical import canonical, same_actions
from osgym.agents.formats.computer13 import parse_computer13_response
from osgym.agents.formats.osgym_strings import parse_osgym, parse_osgym_response
from osgym.agents.formats.pyautogui import parse_pyautogui, parse_pyautogui_response
from osgym.agents.formats.registry import format_names, get_format, register_format, render_reply
from osgym.agents.formats.uitars import (
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
    "RenderContext",
    "ReplyContext",
    "canonical",
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
    "render_reply",
    "same_actions",
    "scale_actions",
    "split_fenced",
    "xdotool_chords",
]
