"""A policy that acts at random: a baseline, a load generator and a source of noise.

>>> from types import SimpleNamespace
>>> policy = RandomPolicy(seed=7, screen=(800, 600), max_actions=2)
>>> policy.reset(SimpleNamespace(id="t", instruction="anything"), seed=1)
>>> obs = Observation(b"png", "png", 800, 600, "anything", 0)
>>> [len(policy.act(obs, []).actions) for _ in range(3)]
[1, 1, 1]
>>> policy.act(obs, []).actions
[Done(action_type='DONE')]
"""

from __future__ import annotations

import random
import string
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from osgym.agents.policies.base import Decision, PastStep
from osgym.agents.policies.registry import describe_validation_error, register_policy
from osgym.errors import PolicyError
from osgym.replicas.actions import (
    Action,
    Click,
    Done,
    DoubleClick,
    Hotkey,
    MoveTo,
    Press,
    RightClick,
    Scroll,
    Typing,
)
from osgym.replicas.observation import Observation

__all__ = ["DEFAULT_WEIGHTS", "RandomOptions", "RandomPolicy"]

DEFAULT_WEIGHTS: Mapping[str, float] = {
    "click": 4.0,
    "double_click": 1.0,
    "right_click": 0.5,
    "move": 2.0,
    "typing": 2.0,
    "press": 2.0,
    "hotkey": 0.5,
    "scroll": 1.0,
}
"""Relative odds of each kind of random action."""

_KEYS = (
    "enter", "tab", "escape", "backspace", "delete", "up", "down", "left", "right", "home", "end", "space",
)
# Harmless chords only: none that closes windows, logs out or switches workspaces.
_HOTKEYS = (("ctrl", "a"), ("ctrl", "c"), ("ctrl", "v"), ("ctrl", "z"), ("ctrl", "f"), ("shift", "tab"))
_ALPHABET = string.ascii_letters + string.digits + " .,-_"


class RandomOptions(BaseModel):
    """The ``random`` policy's options (a recipe's ``policy.options``); checked when the recipe loads.

    The fields are :class:`RandomPolicy`'s arguments; ``weights`` left out means :data:`DEFAULT_WEIGHTS`.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    seed: int = 0
    screen: tuple[int, int] | None = None
    max_actions: int = 20
    weights: dict[str, float] | None = None

    @field_validator("screen")
    @classmethod
    def _screen(cls, v: tuple[int, int] | None) -> tuple[int, int] | None:
        if v is not None and min(v) <= 0:
            raise ValueError(f"expected (width, height) > 0, actual {v!r}")
        return v

    @field_validator("max_actions")
    @classmethod
    def _max_actions(cls, v: int) -> int:
        if v < 0:
            raise ValueError(f"expected >= 0, actual {v}")
        return v

    @field_validator("weights")
    @classmethod
    def _weights(cls, v: dict[str, float] | None) -> dict[str, float] | None:
        if v is None:
            return v
        unknown = sorted(set(v) - set(DEFAULT_WEIGHTS))
        if unknown:
            raise ValueError(f"expected keys among {', '.join(DEFAULT_WEIGHTS)}, actual {unknown}")
        if any(w < 0 for w in v.values()) or sum(v.values()) <= 0:
            raise ValueError(f"expected non-negative odds with a positive sum, actual {v}")
        return v


@register_policy("random")
class RandomPolicy:
    """Acts at random over clicks, moves, typing, keys and scrolls; never FAIL.

    Each call of :meth:`act` returns one random action, and after
    ``max_actions`` of them a ``Done``. The sequence depends only on ``seed``
    and the episode seed given to :meth:`reset`, so it replays exactly.

    Args:
        seed: the policy's own seed, combined with each episode's seed.
        screen: ``(width, height)`` to draw coordinates in; ``None`` uses each
            observation's size.
        max_actions: random actions per episode before ``Done``.
        weights: relative odds per action kind (keys of :data:`DEFAULT_WEIGHTS`).

    Raises:
        PolicyError: on a non-positive screen, a negative ``max_actions`` or an
            unknown or all-zero weight.
    """

    name = "random"
    options_model: ClassVar[type[BaseModel]] = RandomOptions

    def __init__(
        self,
        seed: int = 0,
        screen: tuple[int, int] | None = None,
        max_actions: int = 20,
        weights: Mapping[str, float] | None = None,
    ) -> None:
        try:
            options = RandomOptions(seed=seed, screen=screen, max_actions=max_actions,
                                    weights=None if weights is None else dict(weights))
        except ValidationError as exc:
            raise PolicyError(describe_validation_error(exc)) from exc
        chosen = dict(options.weights or DEFAULT_WEIGHTS)
        self.seed = options.seed
        self.screen = options.screen
        self.max_actions = options.max_actions
        self.weights = chosen
        self._kinds = [k for k, w in chosen.items() if w > 0]
        self._odds = [chosen[k] for k in self._kinds]
        self._rng = random.Random(f"{seed}:none")
        self._steps = 0

    def __repr__(self) -> str:
        return f"RandomPolicy(seed={self.seed}, screen={self.screen}, max_actions={self.max_actions})"

    def reset(self, task: Any, *, seed: int) -> None:
        """Start an episode; the random sequence is a function of both seeds."""
        self._rng = random.Random(f"{self.seed}:{seed}")
        self._steps = 0

    def act(self, observation: Observation, history: Sequence[PastStep]) -> Decision:
        """One random action, or ``Done`` once ``max_actions`` have been taken."""
        if self._steps >= self.max_actions:
            return Decision(actions=[Done()], thought="random policy: action budget spent")
        self._steps += 1
        width, height = self.screen or (observation.width, observation.height)
        if width <= 0 or height <= 0:
            raise PolicyError(f"expected a positive screen size, actual {width}x{height}")
        kind = self._rng.choices(self._kinds, weights=self._odds)[0]
        return Decision(actions=[self._action(kind, width, height)], extra={"kind": kind})

    def _action(self, kind: str, width: int, height: int) -> Action:
        rng = self._rng
        x, y = rng.randrange(width), rng.randrange(height)
        if kind == "click":
            return Click(x=x, y=y)
        if kind == "double_click":
            return DoubleClick(x=x, y=y)
        if kind == "right_click":
            return RightClick(x=x, y=y)
        if kind == "move":
            return MoveTo(x=x, y=y)
        if kind == "typing":
            return Typing(text="".join(rng.choices(_ALPHABET, k=rng.randint(1, 12))))
        if kind == "press":
            return Press(key=rng.choice(_KEYS))
        if kind == "hotkey":
            return Hotkey(keys=list(rng.choice(_HOTKEYS)))
        if kind == "scroll":
            return Scroll(dy=rng.choice((-5, -3, -1, 1, 3, 5)), x=x, y=y)
        raise AssertionError(kind)  # pragma: no cover - kinds are checked in __init__

    def config(self) -> dict[str, Any]:
        """The settings that reproduce this policy's behaviour."""
        return {
            "seed": self.seed,
            "screen": list(self.screen) if self.screen else None,
            "max_actions": self.max_actions,
            "weights": dict(self.weights),
        }
