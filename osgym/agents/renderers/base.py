"""The renderer registry, the canonical form of an action list, and the checked :func:`render_reply`.

A renderer writes typed actions as the reply a model would give in one action format: the
inverse of that format's parser in :mod:`osgym.agents.parsers`, registered under the same name.
:func:`render_reply` checks every reply it returns by parsing it back with the format's own
parser, so a reply that would not read back as the same actions is never handed out: it raises
:class:`~osgym.errors.Unrenderable` instead. A renderer therefore only writes what its format has
a call for and raises ``Unrenderable`` for the rest (UI-TARS has no mouse-down, OSGym's strings no
click without a point); edge cases the parser reads differently (a key name UI-TARS lower-cases)
are caught by the check.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from osgym.agents.parsers import CoordSpace, ReplyContext, get_format
from osgym.errors import PolicyError, Unrenderable
from osgym.registry import Registry
from osgym.replicas.actions import Action, Click, DoubleClick, DragTo, Hotkey, KeyDown, KeyUp, MoveTo, Press, RightClick

__all__ = ["RenderContext", "Renderer", "canonical", "get_renderer", "is_drag", "paired", "register_renderer",
           "render_reply", "renderer_names", "same_actions"]


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


@dataclass(frozen=True)
class Renderer:
    """One format's writer: ``render(thought, actions, ctx) -> reply``; raises ``Unrenderable``."""

    name: str
    render: Callable[[str | None, list[Action], RenderContext], str]
    summary: str = ""


def _load_builtins() -> None:
    import osgym.agents.renderers  # noqa: F401  (its __init__ imports every built-in renderer)


_RENDERERS = Registry[Renderer]("action renderer", _load_builtins)


def register_renderer(renderer: Renderer) -> Renderer:
    """Add ``renderer`` to the registry (its name must be a registered action format's) and return it."""
    return _RENDERERS.add(renderer.name, renderer)


def renderer_names() -> tuple[str, ...]:
    """The formats actions can be written in, sorted.

    >>> renderer_names()
    ('anthropic', 'computer_13', 'osgym', 'pyautogui', 'uitars')
    """
    return _RENDERERS.names()


def get_renderer(name: str) -> Renderer:
    """The renderer of format ``name``.

    Raises:
        ConfigError: naming the known formats, if there is none.
    """
    return _RENDERERS.get(name)


def is_drag(a: Action, nxt: Action) -> bool:
    return isinstance(a, MoveTo) and isinstance(nxt, DragTo)


def paired(actions: Sequence[Action], joins: Callable[[Action, Action], bool] = is_drag
           ) -> Iterator[tuple[Action, Action | None]]:
    """Each action, with the next one when the two are one call in a format (``joins``; by default a
    ``MoveTo`` then a ``DragTo``: one drag), else with None.

    >>> from osgym.replicas.actions import Click
    >>> [(type(a).__name__, type(b).__name__) for a, b in paired([MoveTo(x=1, y=2), DragTo(x=3, y=4), Click(x=5, y=6)])]
    [('MoveTo', 'DragTo'), ('Click', 'NoneType')]
    """
    i = 0
    while i < len(actions):
        a, nxt = actions[i], actions[i + 1] if i + 1 < len(actions) else None
        if nxt is not None and joins(a, nxt):
            yield a, nxt
            i += 2
        else:
            yield a, None
            i += 1


def _key(name: str) -> str:
    # pyautogui and UI-TARS lower-case named keys (pyautogui itself does): 'Return' and 'return' are one key.
    return name.lower() if len(name) > 1 else name


def canonical(actions: Sequence[Action]) -> list[Action]:
    """The one spelling of actions that have two: a right ``Click`` is a ``RightClick``, a left double
    ``Click`` a ``DoubleClick``, a one-key ``Hotkey`` a ``Press``, and named keys are lower case.

    >>> canonical([Click(x=1, y=2, button="right"), Hotkey(keys=["Return"])])
    [RightClick(action_type='RIGHT_CLICK', x=1, y=2), Press(action_type='PRESS', key='return')]
    """
    out: list[Action] = []
    for a in actions:
        if isinstance(a, Click) and a.button == "right" and a.num_clicks == 1:
            a = RightClick(x=a.x, y=a.y)
        elif isinstance(a, Click) and a.button == "left" and a.num_clicks == 2:
            a = DoubleClick(x=a.x, y=a.y)
        elif isinstance(a, Hotkey):
            a = Press(key=_key(a.keys[0])) if len(a.keys) == 1 else Hotkey(keys=[_key(k) for k in a.keys])
        elif isinstance(a, Press | KeyDown | KeyUp):
            a = a.model_copy(update={"key": _key(a.key)})
        out.append(a)
    return out


def same_actions(got: Sequence[Action], want: Sequence[Action], tolerance: float = 0.0) -> bool:
    """Whether two action lists are equal in canonical form, coordinates within ``tolerance`` pixels."""
    got, want = canonical(got), canonical(want)
    if len(got) != len(want):
        return False
    for g, w in zip(got, want, strict=True):
        gd, wd = g.model_dump(), w.model_dump()
        for axis in ("x", "y"):
            gv, wv = gd.pop(axis, None), wd.pop(axis, None)
            if (gv is None) != (wv is None) or (gv is not None and abs(gv - wv) > tolerance):
                return False
        if gd != wd:
            return False
    return True


def render_reply(name: str, thought: str | None, actions: Sequence[Action], ctx: RenderContext) -> str:
    """Write ``actions`` (with ``thought``) as a reply in format ``name``, checked by parsing it back.

    >>> from osgym.replicas.actions import Done
    >>> print(render_reply("pyautogui", "Save.", [Hotkey(keys=["ctrl", "s"]), Done()], RenderContext((800, 600))))
    Save.
    ```python
    pyautogui.hotkey('ctrl', 's')
    DONE
    ```

    Raises:
        ConfigError: if no renderer is registered as ``name``.
        Unrenderable: if the format has no form for an action, or the reply would read back as
            other actions.
    """
    renderer = get_renderer(name)
    if not actions:
        raise Unrenderable(f"{name}: expected at least one action, actual none")
    todo = canonical(actions)
    reply = renderer.render(thought.strip() if thought else None, todo, ctx)
    try:
        _, back = get_format(name).parse(reply, ctx.reply_context())
    except PolicyError as exc:
        raise Unrenderable(f"{name}: the reply does not parse back ({exc}): {reply[:200]!r}") from exc
    if not same_actions(back, todo, ctx.tolerance(name)):
        raise Unrenderable(f"{name}: expected the reply to read back as {todo}, actual {back}")
    return reply
