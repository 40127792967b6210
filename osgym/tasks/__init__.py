"""Tasks: what an episode asks of an agent, how it is set up, and how it is scored (OSWorld's task files, run).

- :mod:`~osgym.tasks.spec`: :class:`TaskSpec`, OSWorld's task JSON as a model; :func:`load_task`.
- :mod:`~osgym.tasks.setup`: :func:`run_setup`, a task's ``config`` steps on a replica.
- :mod:`~osgym.tasks.evaluate`: :func:`evaluate`, its getters and metrics.
- :mod:`~osgym.tasks.files`: the host paths a task file names, confined (task files are untrusted).
- :mod:`~osgym.tasks.getters` and :mod:`~osgym.tasks.metrics`: the registries a task's evaluator names.
- :mod:`~osgym.tasks.taskdir`: a folder of task files as a run's source; :mod:`~osgym.tasks.check`, what of it loads.

Tasks are authored and generated in :mod:`osgym.suites` (templates, built-in suites, samples, export).
"""

from osgym.tasks.evaluate import evaluate
from osgym.tasks.setup import run_setup
from osgym.tasks.spec import TaskSpec, load_task

__all__ = ["TaskSpec", "evaluate", "load_task", "run_setup"]
