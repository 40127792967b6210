"""An action format: how a model writes actions, read (``parse``), written (``render``) and asked for (``prompt``).

Each format module of this package builds one :class:`ActionFormat`; :mod:`~osgym.agents.formats.registry`
holds them by name. :meth:`ActionFormat.render_reply` hands out only replies that the format's own parser
reads back as the same actions (in :func:`~osgym.agents.formats.canonical.canonical` form); anything else
raises :class:`~osgym.errors.Unrenderable`. A renderer therefore writes only what its format has a call
for and raises ``Unrenderable`` for the rest (UI-TARS has no mouse-down, OSGym's strings no click without
a point); edge cases the parser reads differently (a key name UI-TARS lower-cases) are caught by the check.

>>> fmt = ActionFormat("shout", parse=lambda text, ctx: (None, []), summary="nothing")
>>> fmt.name, fmt.prompt is None, fmt.render is None
('shout', True, True)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from osgym.agents.formats.canonical import canonical, same_actions
from osgym.errors import ConfigError, PolicyError, Unrenderable
from osgym.replicas.actions import Action

__all__ = ["ActionFormat", "CoordSpace", "RenderContext", "ReplyContext", "ReplyParser", "ReplyRenderer"]

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


@dataclass(frozen=True)
class RenderContext:
    """What a renderer needs besides the actions: the image the model sees.

    Action coordinates are pixels of that image (an export scales them from the screen first).
    """

    image_size: tuple[int, int]
    coord_space: CoordSpace = "relative1000"
    """For UI-TARS: ``relative1000`` (0..1000 per axis, UI-TARS 1.x) or ``absolute`` (image pixels)."""

    def reply_context(self) -> ReplyContext:
        """The parser's context that reads a rendered reply back into the same pixel space."""
        return ReplyContext(image_size=self.image_size, screen=self.image_size, coord_space=self.coord_space)

    def tolerance(self, name: str) -> float:
        """How many pixels a coordinate may move in a round trip: UI-TARS's 0..1000 grid rounds."""
        if name == "uitars" and self.coord_space == "relative1000":
            return 0.5 + max(self.image_size) / 2000
        return 0.0


ReplyParser = Callable[[str, ReplyContext], tuple[str | None, list[Action]]]
"""``parse(reply, context) -> (thought, actions)``; raises :class:`~osgym.errors.PolicyError`."""

ReplyRenderer = Callable[[str | None, list[Action], RenderContext], str]
"""``render(thought, actions, context) -> reply``, unchecked; raises :class:`~osgym.errors.Unrenderable`."""


@dataclass(frozen=True)
class ActionFormat:
    """One action format: its name, its reply parser, its renderer and the system prompt that asks for it.

    ``prompt`` may use ``{instruction}``, ``{width}`` and ``{height}``; a format
    without one needs a ``system_prompt`` from whoever uses it. A format without
    ``render`` is read only: replies cannot be written in it.
    """

    name: str
    parse: ReplyParser
    render: ReplyRenderer | None = None
    prompt: str | None = None
    summary: str = ""

    def render_reply(self, thought: str | None, actions: Sequence[Action], ctx: RenderContext) -> str:
        """Write ``actions`` (with ``thought``) as a reply in this format, checked by parsing it back.

        Raises:
            ConfigError: if the format has no renderer.
            Unrenderable: if the format has no form for an action, or the reply would read back as
                other actions.
        """
        if self.render is None:
            raise ConfigError(f"action format {self.name!r} has no renderer: expected one that writes replies")
        if not actions:
            raise Unrenderable(f"{self.name}: expected at least one action, actual none")
        todo = canonical(actions)
        reply = self.render(thought.strip() if thought else None, todo, ctx)
        try:
            _, back = self.parse(reply, ctx.reply_context())
        except PolicyError as exc:
            raise Unrenderable(f"{self.name}: the reply does not parse back ({exc}): {reply[:200]!r}") from exc
        if not same_actions(back, todo, ctx.tolerance(self.name)):
            raise Unrenderable(f"{self.name}: expected the reply to read back as {todo}, actual {back}")
        return reply
