"""A policy that does nothing: it declares DONE at once. Used to show evaluators can fail."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from osgym.agents.policies.base import Decision, PastStep
from osgym.agents.policies.registry import register_policy
from osgym.replicas.actions import Done
from osgym.replicas.observation import Observation


class NoopOptions(BaseModel):
    """The ``noop`` policy takes no options: any key is a mistake, refused when the recipe loads."""

    model_config = ConfigDict(extra="forbid", frozen=True)


@register_policy("noop")
class NoopPolicy:
    """Ends every episode immediately with DONE."""

    name = "noop"
    options_model: ClassVar[type[BaseModel]] = NoopOptions

    def config(self) -> dict[str, Any]:
        return {}

    def reset(self, task: Any, *, seed: int) -> None:
        pass

    def act(self, observation: Observation, history: Sequence[PastStep]) -> Decision:
        return Decision([Done()], thought="do nothing")
