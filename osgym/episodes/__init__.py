"""Episodes: one task, one policy, one replica; and a run's worth of them.

- :mod:`~osgym.episodes.runner`: :func:`run_episode` (setup, the policy loop, evaluation).
- :mod:`~osgym.episodes.trajectory`: :class:`Trajectory` and :class:`Step`, what an episode produced.
- :mod:`~osgym.episodes.recipe`: :class:`Recipe`, what a run collects and how.
- :mod:`~osgym.episodes.collect`: planning a run's episodes and collecting each onto a fresh replica.
"""

from osgym.episodes.recipe import Recipe, load_recipe
from osgym.episodes.runner import EpisodeLimits, run_episode
from osgym.episodes.trajectory import Step, Trajectory

__all__ = ["EpisodeLimits", "Recipe", "Step", "Trajectory", "load_recipe", "run_episode"]
