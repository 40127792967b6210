"""Renderers: typed actions written back as a model's reply in an action format.

The inverse of :mod:`osgym.agents.parsers`, one module per format under the same registered
name (``pyautogui``, ``computer_13``, ``anthropic``, ``uitars``, ``osgym``).
:func:`render_reply` returns only replies that the format's parser reads back as the same
actions (in :func:`canonical` form); anything else raises :class:`~osgym.errors.Unrenderable`.
Training exports (:mod:`osgym.dataset.sft`) write the assistant's turns with it.

>>> from osgym.replicas.actions import Click
>>> render_reply("uitars", "Open it", [Click(x=500, y=250)], RenderContext((1000, 1000)))
"Thought: Open it\\nAction: click(start_box='<|box_start|>(500,250)<|box_end|>')"
"""

from osgym.agents.renderers import anthropic, computer13, osgym_strings, pyautogui, uitars  # noqa: F401
from osgym.agents.renderers.base import (
    RenderContext,
    Renderer,
    canonical,
    get_renderer,
    register_renderer,
    render_reply,
    renderer_names,
    same_actions,
)

__all__ = ["RenderContext", "Renderer", "canonical", "get_renderer", "register_renderer", "render_reply",
           "renderer_names", "same_actions"]
