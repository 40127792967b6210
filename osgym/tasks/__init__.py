"""Tasks: what an episode asks of an agent, how it is set up, and how it is scored.

- :mod:`~osgym.tasks.spec`: :class:`TaskSpec`, OSWorld's task JSON as a model; :func:`load_task`.
- :mod:`~osgym.tasks.setup`: :func:`run_setup`, a task's ``config`` steps on a replica.
- :mod:`~osgym.tasks.evaluate`: :func:`evaluate`, its getters and metrics.
- :mod:`~osgym.tasks.files`: the host paths a task file names, confined (task files are untrusted).
- :mod:`~osgym.tasks.generators` and :mod:`~osgym.tasks.suites`: seeded templates, built-in suites.
"""

from osgym.tasks.evaluate import evaluate
from osgym.tasks.setup import run_setup
from osgym.tasks.spec import TaskSpec, load_task

__all__ = ["TaskSpec", "evaluate", "load_task", "run_setup"]
