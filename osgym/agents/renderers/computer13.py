"""Typed actions as computer_13 JSON in a fenced block, the inverse of :mod:`osgym.agents.parsers.computer13`."""

from __future__ import annotations

import json

from osgym.agents.renderers.base import RenderContext, Renderer, register_renderer
from osgym.replicas.actions import Action

__all__: list[str] = []


def _render(thought: str | None, actions: list[Action], ctx: RenderContext) -> str:
    items = [a.to_json() for a in actions]
    body = json.dumps(items[0] if len(items) == 1 else items, ensure_ascii=False)
    block = f"```json\n{body}\n```"
    return f"{thought}\n{block}" if thought else block


register_renderer(Renderer("computer_13", _render, "computer_13 JSON in a fenced block"))
