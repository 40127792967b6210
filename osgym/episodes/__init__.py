"""Episodes: one task on one replica, driven by a policy or by a client.

- :mod:`~osgym.episodes.episode`: :class:`Episode`, the one episode core (``reset``, ``step``, ``close``): setup,
  observing, acting within the deadline, the step records, evaluation.
- :mod:`~osgym.episodes.limits`: :class:`EpisodeLimits`, how an episode observes, settles and when it stops.
- :mod:`~osgym.episodes.runner`: :func:`run_episode`, a policy's loop over an episode.
- :mod:`~osgym.episodes.trajectory`: :class:`Trajectory` and :class:`Step`, what an episode produced,
  and :class:`EpisodeResult`, its record in the dataset.
- :mod:`~osgym.episodes.record`: :func:`episode_result`, that record built and priced (:func:`episode_cost`).
- :mod:`~osgym.episodes.focus`: whether an episode's input went to its task's app.
"""

from osgym.episodes.episode import Episode, EpisodeState, EpisodeStateError, StepOutcome
from osgym.episodes.limits import EpisodeLimits
from osgym.episodes.record import episode_cost, episode_result
from osgym.episodes.runner import run_episode
from osgym.episodes.trajectory import EpisodeResult, Step, Trajectory

__all__ = ["Episode", "EpisodeLimits", "EpisodeResult", "EpisodeState", "EpisodeStateError", "Step", "StepOutcome",
           "Trajectory", "episode_cost", "episode_result", "run_episode"]
