"""Episodes: one task, one policy, one replica.

- :mod:`~osgym.episodes.runner`: :func:`run_episode` (setup, the policy loop, evaluation) and
  :class:`EpisodeLimits`.
- :mod:`~osgym.episodes.trajectory`: :class:`Trajectory` and :class:`Step`, what an episode produced,
  and :class:`EpisodeResult`, its record in the dataset.
"""

from osgym.episodes.runner import EpisodeLimits, run_episode
from osgym.episodes.trajectory import EpisodeResult, Step, Trajectory

__all__ = ["EpisodeLimits", "EpisodeResult", "Step", "Trajectory", "run_episode"]
