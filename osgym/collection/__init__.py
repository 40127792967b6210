"""Collection: a run of episodes, from a recipe to a committed dataset.

- :mod:`~osgym.collection.recipe`: :class:`Recipe`, what a run collects and how; :func:`load_recipe`.
- :mod:`~osgym.collection.collector`: planning a run's jobs (:func:`plan_jobs`, stable episode ids)
  and :class:`Collector`, which runs one job on a fresh replica and hands the result to the writer.
- :mod:`~osgym.collection.run`: :func:`run_collection` and :class:`Collection`, the one entry point
  the CLI, the Prefect flow and the benchmark share; how a batch executes is pluggable.
"""

from osgym.collection.collector import Collector, EpisodeJob, EpisodeSummary, plan_jobs
from osgym.collection.recipe import Recipe, load_recipe
from osgym.collection.run import Collection, EpisodeCallback, EventCallback, Executor, run_collection

__all__ = ["Collection", "Collector", "EpisodeCallback", "EpisodeJob", "EpisodeSummary", "EventCallback", "Executor",
           "Recipe", "load_recipe", "plan_jobs", "run_collection"]
