"""Evaluate a task: OSWorld getters fetch values, metrics score them in [0, 1]."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from osgym.errors import EvaluatorError
from osgym.replicas.client import Replica
from osgym.tasks import getters, metrics
from osgym.tasks.getters import Context
from osgym.tasks.setup import run_setup
from osgym.tasks.spec import Getter, TaskSpec


def _get(ctx: Context, g: Getter, where: str) -> Any:
    """The value of getter ``g`` through the registry; ``where`` is ``"task <id>: evaluator.result[0]"``."""
    try:
        return getters.fetch(ctx, g.type, g.options, where)
    except ValueError as exc:  # options checked at load; a task built in code may still get here
        raise EvaluatorError(str(exc)) from exc


def _fetched_or_rules(ctx: Context, value: Any) -> bool:
    """What a file metric may receive: nothing, files a getter fetched into the scratch directory
    (alone or listed), or rules (a mapping). A path a task file wrote in a ``rule`` getter is none of these."""
    if value is None or isinstance(value, dict):
        return True
    if isinstance(value, list):
        return all(_fetched_or_rules(ctx, v) and not isinstance(v, dict) for v in value)
    return isinstance(value, str | Path) and ctx.scratch.holds(value)


def evaluate(replica: Replica, task: TaskSpec, last_action: str | None, *,
             tolerated: list[str] | None = None) -> float:
    """Score the replica's final state for ``task`` (OSWorld's rules for FAIL and infeasible tasks).

    A ``postconfig`` step's failure that setup goes on after is appended to ``tolerated``
    (:func:`osgym.tasks.setup.run_step`).

    Getters write what they fetch into a scratch directory of this evaluation only; a ``dest``
    that would leave it, and a ``cloud_file`` source outside ``OSGYM_TASK_FILES_DIR``, are refused
    (:mod:`osgym.tasks.files`).

    Raises:
        EvaluatorError: naming the task and the field, if a getter or metric cannot be computed or a
            getter names a host path it may not use.
        SetupError: if a ``postconfig`` step fails.
        ReplicaError: if the replica fails while being inspected.
    """
    ev = task.evaluator
    if task.infeasible:
        return 1.0 if last_action == "FAIL" else 0.0
    if last_action == "FAIL":
        return 0.0
    ctx = Context(replica)
    listed = isinstance(ev.func, list)
    try:
        if ev.postconfig:  # a step's ``stdout`` goes into this evaluation's scratch directory (cache_file)
            run_setup(replica, ev.postconfig, task_id=task.id, field="evaluator.postconfig", scratch=ctx.scratch,
                      tolerated=tolerated)
        scores = []
        for i, (func, rg, eg, opts) in enumerate(zip(ev.funcs, ev.results, ev.expecteds, ev.option_list,
                                                     strict=True)):
            at = f"[{i}]" if listed else ""
            result = _get(ctx, rg, f"task {task.id}: evaluator.result{at}") if rg is not None else None
            expected = _get(ctx, eg, f"task {task.id}: evaluator.expected{at}") if eg is not None else None
            opened = metrics.get(func).files
            for field, value in (("result", result), ("expected", expected)):
                if field in opened and not _fetched_or_rules(ctx, value):
                    raise EvaluatorError(f"task {task.id}: evaluator.{field}{at}: {func} compares files a vm_file "
                                         f"or cloud_file getter fetched, actual {value!r:.200}")
            try:
                score = metrics.score(func, result, expected, opts, replica=replica)
            except (KeyError, TypeError, ValueError, OSError) as exc:
                raise EvaluatorError(f"{func} on task {task.id} failed: {type(exc).__name__}: {exc}") from exc
            scores.append(score)
            if ev.conj == "and" and score == 0.0:
                return 0.0
            if ev.conj == "or" and score == 1.0:
                return 1.0
        return sum(scores) / len(scores) if ev.conj == "and" else max(scores)
    except KeyError as exc:
        raise EvaluatorError(f"getter option {exc} missing in task {task.id}") from exc
    finally:
        ctx.close()
