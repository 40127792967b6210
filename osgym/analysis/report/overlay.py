"""An action described in words and drawn on its screenshot (a marker at the pointer target, the action as text)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from PIL import Image, ImageDraw

from osgym.analysis.report.charts import fit_text, load_font


def _flatten(action: Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(action.get("parameters"), Mapping):
        return {"action_type": action.get("action_type"), **action["parameters"]}
    return dict(action)


def describe_action(action: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None) -> str:
    """A short human-readable line for an action (flat or OSWorld-nested JSON), or a list of them.

    >>> describe_action({"action_type": "CLICK", "x": 10, "y": 20, "button": "left", "num_clicks": 2})
    'CLICK (10, 20) x2'
    >>> describe_action({"action_type": "HOTKEY", "keys": ["ctrl", "s"]})
    'HOTKEY ctrl+s'
    >>> describe_action([{"action_type": "TYPING", "text": "hi"}, {"action_type": "PRESS", "key": "enter"}])
    "TYPING 'hi'; PRESS enter"
    """
    if action is None:
        return "(no action)"
    if not isinstance(action, Mapping):
        return "; ".join(describe_action(a) for a in action)
    a = _flatten(action)
    kind = str(a.get("action_type", "?"))
    where = f" ({a['x']}, {a['y']})" if a.get("x") is not None and a.get("y") is not None else ""
    if kind in ("CLICK", "RIGHT_CLICK", "DOUBLE_CLICK", "MOVE_TO", "DRAG_TO", "MOUSE_DOWN", "MOUSE_UP"):
        extra = ""
        if a.get("button") not in (None, "left"):
            extra += f" {a['button']}"
        if (a.get("num_clicks") or 1) > 1:
            extra += f" x{a['num_clicks']}"
        return f"{kind}{where}{extra}"
    if kind == "TYPING":
        text = str(a.get("text", ""))
        return f"TYPING {text[:60] + '…' if len(text) > 60 else text!r}"
    if kind in ("PRESS", "KEY_DOWN", "KEY_UP"):
        return f"{kind} {a.get('key', '?')}"
    if kind == "HOTKEY":
        return "HOTKEY " + "+".join(str(k) for k in a.get("keys", []))
    if kind == "SCROLL":
        return f"SCROLL dx={a.get('dx', 0)} dy={a.get('dy', 0)}{where}"
    if kind == "WAIT":
        return f"WAIT {a.get('seconds', 1.0):g}s"
    if kind in ("DONE", "FAIL"):
        return kind
    rest = {k: v for k, v in a.items() if k != "action_type"}
    return f"{kind} {json.dumps(rest, sort_keys=True)}" if rest else kind


def parse_action(text: str | None) -> Any:
    """A step's stored ``action`` column (JSON) as Python objects; ``UNPARSED`` with the text if it is not JSON."""
    if not text:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return {"action_type": "UNPARSED", "text": text}


def _actions(parsed: Any) -> list[dict[str, Any]]:
    if isinstance(parsed, Mapping):
        return [_flatten(parsed)]
    if isinstance(parsed, list):
        return [_flatten(a) for a in parsed if isinstance(a, Mapping)]
    return []


def draw_action(
    image: Image.Image,
    action: Any,
    pointer: tuple[int, int] | None = None,
    label: str | None = None,
) -> tuple[Image.Image, tuple[int, int] | None]:
    """Draw an action on a copy of a screenshot.

    Pointer actions (click, move, drag, scroll with a position) get a ring and
    crosshair at their target; a drag also gets a line from the previous
    pointer position. The action's description is written in a box at the top.

    Args:
        image: the screenshot (not modified).
        action: the step's parsed action JSON (an object or a list of them).
        pointer: where the pointer was before this step, if known.
        label: the text for the box; :func:`describe_action` of ``action`` by default.

    Returns:
        The annotated RGB copy, and the pointer position after the action.
    """
    img = image.convert("RGB")
    draw = ImageDraw.Draw(img)
    w, h = img.size
    radius = max(5, round(min(w, h) / 45))
    for a in _actions(action):
        if a.get("x") is None or a.get("y") is None:
            continue
        try:
            x = min(max(int(a["x"]), 0), w - 1)
            y = min(max(int(a["y"]), 0), h - 1)
        except (TypeError, ValueError):
            continue
        if a.get("action_type") == "DRAG_TO" and pointer is not None:
            draw.line((pointer, (x, y)), fill=(255, 255, 255), width=max(3, radius // 2) + 2)
            draw.line((pointer, (x, y)), fill=(220, 30, 30), width=max(2, radius // 2))
        for r, colour, width in ((radius + 2, (255, 255, 255), 2), (radius, (220, 30, 30), max(2, radius // 3))):
            draw.ellipse((x - r, y - r, x + r, y + r), outline=colour, width=width)
        draw.line((x - 2 * radius, y, x + 2 * radius, y), fill=(220, 30, 30), width=1)
        draw.line((x, y - 2 * radius, x, y + 2 * radius), fill=(220, 30, 30), width=1)
        pointer = (x, y)
    text = label if label is not None else describe_action(action)
    font = load_font(max(10, min(28, h // 40)))
    text = fit_text(draw, text, font, w - 12)
    box = draw.textbbox((6, 4), text, font=font)
    draw.rectangle((box[0] - 4, box[1] - 3, box[2] + 4, box[3] + 3), fill=(0, 0, 0))
    draw.text((6, 4), text, fill=(255, 255, 255), font=font)
    return img, pointer
