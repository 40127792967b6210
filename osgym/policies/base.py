"""The Policy protocol: ``act(observation, history) -> Decision``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from osgym.actions import Action
from osgym.observation import Observation

if TYPE_CHECKING:
    from osgym.specs.task import TaskSpec
    from osgym.trajectory import Step


@dataclass
class Decision:
    """What a policy decided at one step.

    ``actions`` run in order on the replica; a ``Done`` or ``Fail`` among them
    ends the episode. ``raw`` and ``usage`` keep a model's reply and token counts
    so analytics can audit and cost them.
    """

    actions: list[Action]
    thought: str | None = None
    raw: str | None = None
    usage: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Policy(Protocol):
    """Anything that maps observations to actions.

    ``reset`` is called once per episode before the first ``act``.
    Implementations raise :class:`osgym.errors.PolicyError` when they cannot act.
    """

    name: str

    def reset(self, task: TaskSpec, *, seed: int) -> None: ...

    def act(self, observation: Observation, history: list[Step]) -> Decision: ...

    def config(self) -> dict[str, Any]: ...
