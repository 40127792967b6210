"""``EpisodeLimits``: how an episode observes, how it settles, and when it must stop."""

from __future__ import annotations

from dataclasses import dataclass

from osgym.replicas.client import SettleMode

__all__ = ["EpisodeLimits"]


@dataclass(frozen=True)
class EpisodeLimits:
    """How an episode observes and when it must stop.

    >>> EpisodeLimits(settle_s=0.5).evaluation_settle_s, EpisodeLimits(settle_s=0).evaluation_settle_s
    (1.0, 0.0)
    """

    max_steps: int = 15
    deadline_s: float | None = 300.0
    """Wall-clock seconds from :meth:`~osgym.episodes.episode.Episode.reset` to the end; None: no deadline (a served
    session is bounded by its idle timeout instead)."""
    screenshot_format: str = "png"
    screenshot_quality: int = 80
    screenshot_max_side: int | None = None
    settle_s: float = 1.0
    settle_mode: SettleMode = "damage"
    final_settle_s: float | None = None
    """The settle before the evaluator looks; None: :attr:`evaluation_settle_s`'s default."""
    first_settle_s: float = 0.0
    first_quiet_s: float = 0.5
    """After setup, wait up to ``first_settle_s`` until the screen has not changed for ``first_quiet_s`` (0: no
    wait), so that the first observation shows setup's windows drawn, not midway."""
    a11y: bool = False  # capture the accessibility tree at every step

    @property
    def evaluation_settle_s(self) -> float:
        """How long to let the last actions land (a shell still running a typed command, an app still saving)
        before the evaluator inspects the replica: ``final_settle_s`` if set, else a second settle window at
        least a second long, when the episode settles at all (``settle_s`` > 0)."""
        if self.final_settle_s is not None:
            return self.final_settle_s
        return max(self.settle_s, 1.0) if self.settle_s else 0.0
