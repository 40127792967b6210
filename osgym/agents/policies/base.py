"""The Policy protocol: ``act(observation, history) -> Decision``, and the :class:`PastStep` its history holds."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from osgym.replicas.actions import Action
from osgym.replicas.hollow.protocol import A11yFind
from osgym.replicas.observation import Observation

if TYPE_CHECKING:
    from osgym.tasks.spec import TaskSpec


@dataclass
class Decision:
    """What a policy decided at one step.

    ``actions`` run in order on the replica; a ``Done`` or ``Fail`` among them
    ends the episode. ``raw`` and ``usage`` keep a model's reply and token counts
    so analytics can audit and cost them.

    ``waiting`` says the policy is waiting for the screen to reach a state it
    needs, and ``actions`` only let time pass: the episode runner then observes
    again and asks again *without spending a step*, until the policy decides
    something else (or raises), and records the whole wait as one ``WAIT`` step.
    A wait is bounded by the policy's own timeout and the episode's deadline,
    not by ``max_steps``.

    ``needs_a11y`` asks for the accessibility tree in the next observation. It holds what is on
    screen only, unless the episode records the whole tree anyway (``EpisodeLimits.a11y``): a
    LibreOffice window's whole tree takes seconds to walk, so it is read only when asked for. With
    ``a11y_window`` it holds only the top-level windows whose title contains it (any case): a dialog's tree
    without LibreOffice's main window reads in about a third of the time. With ``a11y_find`` as well, the
    tree holds only the first element on screen that it names (a button, a focused caret): the replica's
    walk stops there and reads of the elements it passes only their states (and names or roles where the
    match needs them), so Calc's caret costs about half a read of its window. A tree the episode records at
    every step stays whole.
    """

    actions: list[Action]
    thought: str | None = None
    raw: str | None = None
    usage: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    waiting: bool = False
    needs_a11y: bool = False
    a11y_window: str | None = None
    a11y_find: A11yFind | None = None


class PastStep(Protocol):
    """What a policy may read of an earlier step of its episode: what it saw, and what was done.

    The episode runner passes its own records (:class:`osgym.episodes.trajectory.Step`, which holds these
    and more); the protocol names only what a policy reads, so agents need nothing from a later layer.
    """

    @property
    def step(self) -> int: ...

    @property
    def screenshot(self) -> bytes: ...

    @property
    def screenshot_format(self) -> str: ...

    @property
    def width(self) -> int: ...

    @property
    def height(self) -> int: ...

    @property
    def a11y(self) -> str | None: ...

    @property
    def action(self) -> dict[str, Any]: ...

    @property
    def action_type(self) -> str: ...

    @property
    def thought(self) -> str | None: ...

    @property
    def raw(self) -> str | None: ...

    @property
    def error(self) -> str | None: ...


@runtime_checkable
class Policy(Protocol):
    """Anything that maps observations to actions.

    ``reset`` is called once per episode before the first ``act``.
    Implementations raise :class:`osgym.errors.PolicyError` when they cannot act.
    """

    name: str

    def reset(self, task: TaskSpec, *, seed: int) -> None: ...

    def act(self, observation: Observation, history: Sequence[PastStep]) -> Decision: ...

    def config(self) -> dict[str, Any]: ...
