"""What the operator bounds in served episodes (:class:`ServeLimits`) and how a session's screenshots are
encoded (:class:`ObservationOptions`); together, a served episode's :class:`~osgym.episodes.limits.EpisodeLimits`."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from osgym.episodes.limits import EpisodeLimits
from osgym.replicas.client import SettleMode

__all__ = ["OSGYM_OBSERVATION", "ObservationOptions", "ServeLimits"]


class ObservationOptions(BaseModel):
    """How a session's screenshots are encoded (once, inside the replica) and what comes with them."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    format: str = Field("jpeg", pattern="^(jpeg|png)$")
    quality: int = Field(80, ge=1, le=100)
    max_side: int | None = Field(None, ge=64, le=16384)
    a11y: bool = False


OSGYM_OBSERVATION = ObservationOptions()
"""What OSGym's protocol sends: a JPEG at quality 80, full size, no accessibility tree."""


@dataclass(frozen=True)
class ServeLimits:
    """The operator's bounds on served episodes."""

    max_steps: int = 100
    """Steps per episode; the step that reaches it ends the episode (evaluated), as OSGym's ``max_step`` does."""
    idle_timeout_s: float = 600.0
    """Longest a session may go without a request; a client may ask for less, never more."""
    max_sessions_per_owner: int = 8
    lease_timeout_s: float = 60.0
    """How long an open waits for a free replica before it answers 503."""
    settle_s: float = 0.5
    """After a step's actions, wait up to this long for the screen to stop changing."""
    settle_mode: SettleMode = "damage"
    first_settle_s: float = 5.0
    first_quiet_s: float = 0.5
    """After setup, wait up to ``first_settle_s`` until the screen has not changed for ``first_quiet_s``: a
    terminal's shell prints its prompt a while after its window maps, and replicas set up from one task
    and seed (a group reset) must show the same first screen, on a loaded host too."""
    reap_interval_s: float = 1.0
    park_after_s: float | None = None
    """Park the replica of a session idle this long (:mod:`osgym.serving.idle_parking`); None: never."""
    park_mib: int = 224

    def episode(self, observation: ObservationOptions) -> EpisodeLimits:
        """The limits of one served episode, its screenshots encoded as ``observation`` asks.

        It has no deadline (its idle timeout reclaims a session a client left), and its last actions get a settle
        window at least a second long before the evaluator looks, whatever ``settle_s`` is.
        """
        return EpisodeLimits(max_steps=self.max_steps, deadline_s=None, screenshot_format=observation.format,
                             screenshot_quality=observation.quality, screenshot_max_side=observation.max_side,
                             settle_s=self.settle_s, settle_mode=self.settle_mode,
                             final_settle_s=max(self.settle_s, 1.0), first_settle_s=self.first_settle_s,
                             first_quiet_s=self.first_quiet_s, a11y=observation.a11y)
