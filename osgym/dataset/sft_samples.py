"""One episode's steps as chat samples for supervised fine-tuning: messages and their images.

The conversation is the one :class:`~osgym.agents.policies.openai.OpenAIPolicy` sends a model at
inference, so a model trained on it is asked in the same shape it learned from:

* a ``system`` message: the action format's prompt (its paragraph naming the task left out, since
  the task goes to the user) or the export's own template;
* per step a ``user`` turn with the screenshot (the first also with the instruction) and an
  ``assistant`` turn with the model's reply: the step's thought and its actions written in the
  chosen action format (:func:`osgym.agents.formats.render_reply`, checked by parsing it back).

``per="step"`` makes one sample per step, preceded by up to ``history`` earlier turns;
``per="episode"`` one sample per episode with every turn, keeping the screenshots of only the last
``history + 1`` turns when ``history`` is set (earlier user turns say ``(screenshot omitted)``).

Two content styles: ``trl`` (TRL's documented conversational vision format: every ``content`` a list
of ``{"type": "text", "text": ...}`` and ``{"type": "image"}``) and ``llamafactory`` (LLaMA-Factory's
ShareGPT format: ``content`` a string with an ``<image>`` token per picture). Both put the pictures,
in order, in ``images``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from osgym.agents.formats import RenderContext, get_format, render_reply, scale_actions
from osgym.agents.policies.openai import fill_prompt
from osgym.errors import OsgymError, PolicyError, Unrenderable
from osgym.replicas.actions import Action, parse_action

__all__ = ["IMAGE_TOKEN", "OMITTED", "Frame", "Sample", "default_system_prompt", "episode_samples", "step_actions"]

Style = Literal["trl", "llamafactory"]
IMAGE_TOKEN = "<image>"
"""LLaMA-Factory's placeholder for one picture."""
OMITTED = "(screenshot omitted)"
GENERIC_PROMPT = """\
You operate a Linux desktop computer with its mouse and keyboard to carry out a task for a user.
Each turn you see a screenshot of the screen, {width}x{height} pixels; coordinates are pixels of \
that screenshot, counted from its top-left corner. Reply with the next action."""
"""The system prompt for a format that registers none (``anthropic``)."""


def default_system_prompt(action_format: str) -> str:
    """The format's registered prompt without the paragraph holding ``{instruction}`` (the user turn has it).

    >>> default_system_prompt("uitars").endswith("name the target of the next action.")
    True
    """
    prompt = get_format(action_format).prompt
    if prompt is None:
        return GENERIC_PROMPT
    return "\n\n".join(p for p in prompt.split("\n\n") if "{instruction}" not in p)


@dataclass(frozen=True)
class Frame:
    """One step ready for the conversation: its picture (resized) and the assistant's reply to it."""

    image: dict[str, Any]  # {"bytes", "path"}: the Hugging Face Image layout
    size: tuple[int, int]
    reply: str


@dataclass
class Sample:
    """One training row: ``messages`` and ``images``, plus the step it ends on (``None`` per episode)."""

    messages: list[dict[str, Any]]
    images: list[dict[str, Any]]
    step: int | None


def step_actions(action_json: str | None) -> list[Action]:
    """The typed actions a ``steps.action`` cell holds (one action, or ``{"actions": [...]}``).

    >>> step_actions('{"action_type": "PRESS", "key": "a"}')
    [Press(action_type='PRESS', key='a')]

    Raises:
        PolicyError: if the cell is not actions.
    """
    try:
        value = json.loads(action_json or "null")
    except ValueError as exc:
        raise PolicyError(f"expected action JSON, actual {str(action_json)[:80]!r}") from exc
    items = value["actions"] if isinstance(value, dict) and "actions" in value else [value]
    if not isinstance(items, list) or not items:
        raise PolicyError(f"expected one or more actions, actual {str(action_json)[:80]!r}")
    return [parse_action(item) for item in items]


def frame_reply(
    action_format: str,
    thought: str | None,
    actions: list[Action],
    screen: tuple[int, int],
    image_size: tuple[int, int],
    coord_space: Literal["relative1000", "absolute"] = "relative1000",
) -> str:
    """The assistant's reply for one step: actions scaled from the screen onto the exported picture.

    Raises:
        Unrenderable: if the format cannot write the actions.
        PolicyError: if the sizes are not positive.
    """
    scaled = scale_actions(actions, screen, image_size)
    return render_reply(action_format, thought, scaled, RenderContext(image_size, coord_space))


def _user(style: Style, text: str | None, picture: bool) -> dict[str, Any]:
    if style == "trl":
        content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text is not None else []
        content += [{"type": "image", "text": None}] if picture else [{"type": "text", "text": OMITTED}]
        return {"role": "user", "content": content}
    parts = [t for t in (text, IMAGE_TOKEN if picture else OMITTED) if t is not None]
    return {"role": "user", "content": "\n".join(parts)}


def _plain(style: Style, role: str, text: str) -> dict[str, Any]:
    if style == "trl":
        return {"role": role, "content": [{"type": "text", "text": text}]}
    return {"role": role, "content": text}


def _conversation(style: Style, system: str, user_text: str, frames: list[Frame], pictures: int) -> Sample:
    """System, then a user and an assistant turn per frame; only the last ``pictures`` user turns show theirs."""
    messages = [_plain(style, "system", system)] if system.strip() else []
    images = []
    first_picture = len(frames) - pictures
    for i, frame in enumerate(frames):
        shown = i >= first_picture
        messages.append(_user(style, user_text if i == 0 else None, shown))
        messages.append(_plain(style, "assistant", frame.reply))
        if shown:
            images.append(frame.image)
    return Sample(messages=messages, images=images, step=None)


def _clean_text(style: Style, *texts: str) -> None:
    if style == "llamafactory" and any(IMAGE_TOKEN in t for t in texts):
        raise Unrenderable(f"the text holds LLaMA-Factory's {IMAGE_TOKEN} placeholder")


def episode_samples(
    frames: list[Frame | OsgymError],
    steps: list[int],
    *,
    instruction: str,
    style: Style,
    per: Literal["step", "episode"],
    history: int | None,
    system_prompt: str,
    user_prompt: str,
) -> Iterator[Sample | OsgymError]:
    """The samples of one episode, in step order; an ``OsgymError`` in place of a sample that cannot be made.

    ``frames[i]`` is step ``steps[i]`` prepared, or the error that kept it from being prepared
    (an action the format cannot write, a picture that does not decode).
    """

    def texts(frame: Frame) -> tuple[str, str]:
        values = {"instruction": instruction, "width": frame.size[0], "height": frame.size[1]}
        return fill_prompt(system_prompt, **values), fill_prompt(user_prompt, **values)

    if per == "episode":
        bad = next((f for f in frames if isinstance(f, OsgymError)), None)
        if bad is not None:
            yield bad
            return
        good = [f for f in frames if isinstance(f, Frame)]
        system, user = texts(good[-1])
        keep = len(good) if history is None else min(len(good), history + 1)
        try:
            _clean_text(style, system, user, *(f.reply for f in good))
        except Unrenderable as exc:
            yield exc
            return
        yield _conversation(style, system, user, good, keep)
        return
    window = history or 0
    for i in range(len(frames)):
        turns = frames[max(0, i - window):i + 1]
        bad = next((f for f in turns if isinstance(f, OsgymError)), None)
        if bad is not None:
            yield bad
            continue
        good = [f for f in turns if isinstance(f, Frame)]
        system, user = texts(good[-1])
        try:
            _clean_text(style, system, user, *(f.reply for f in good))
        except Unrenderable as exc:
            yield exc
            continue
        sample = _conversation(style, system, user, good, len(good))
        sample.step = steps[i]
        yield sample
