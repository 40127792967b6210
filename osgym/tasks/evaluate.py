"""Evaluate a task: OSWorld getters fetch values, metrics score them in [0, 1]."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from osgym.errors import EvaluatorError, RequestRejected
from osgym.replicas.client import Replica
from osgym.tasks import metrics
from osgym.tasks.files import Scratch, read_task_file
from osgym.tasks.setup import run_command, run_setup
from osgym.tasks.spec import Getter, TaskSpec


class _Context:
    """One evaluation: the replica, and the scratch directory getters' ``dest`` names are confined to."""

    def __init__(self, replica: Replica):
        self.replica = replica
        self.scratch = Scratch("osgym-eval-")

    def close(self) -> None:
        self.scratch.close()


def _get(ctx: _Context, g: Getter, where: str) -> Any:
    """The value of getter ``g``; ``where`` is ``"task <id>: evaluator.result[0]"`` for error messages."""
    o = g.options
    r = ctx.replica
    if g.type == "vm_command_line":
        res = run_command(r, o["command"], o.get("shell"), float(o.get("timeout", 30)))
        return res.output
    if g.type == "vm_terminal_output":  # the focused terminal's text, as OSWorld's /terminal reads it
        return r.terminal()
    if g.type == "vm_file":
        try:
            data = r.read_file(o["path"])
        except RequestRejected:
            return None  # OSWorld returns None for a missing file; metrics score it 0
        dest = o.get("dest", Path(o["path"]).name)
        return str(ctx.scratch.write(dest, data, where=f"{where}.dest", error=EvaluatorError))
    if g.type == "list_directory":
        res = r.execute(["ls", "-1A", o["path"]], timeout=30)
        return res.output.split() if res.returncode == 0 else None
    if g.type == "rule":
        return o.get("rules")
    if g.type == "vm_windows":
        return _windows(r)
    if g.type == "cloud_file":
        data = read_task_file(o["path"], where=f"{where}.path", error=EvaluatorError)
        return str(ctx.scratch.write(o.get("dest", "expected"), data, where=f"{where}.dest", error=EvaluatorError))
    raise EvaluatorError(f"unsupported getter {g.type!r}")


_WM_STATE_SCRIPT = (
    'for w in $(wmctrl -l | cut -d" " -f1); do printf "%d %s\\n" "$w" "$(xprop -id "$w" _NET_WM_STATE)"; done'
)


def _windows(r: Replica) -> list[dict[str, Any]]:
    """The replica's top-level windows (``GET /windows``) plus openbox's maximized/minimized state."""
    listed = r.api.request("GET", "/windows").json()["windows"]
    res = r.execute(_WM_STATE_SCRIPT, shell=True, timeout=15)
    states: dict[int, str] = {}
    for line in res.output.splitlines():
        wid, _, state = line.partition(" ")
        if wid.isdigit():
            states[int(wid)] = state
    out = []
    for w in listed:
        state = states.get(int(w["id"]), "")
        out.append({**w, "maximized": "MAXIMIZED_VERT" in state and "MAXIMIZED_HORZ" in state,
                    "minimized": bool(w.get("minimized")) or "HIDDEN" in state})
    return out


def _fetched_or_rules(ctx: _Context, value: Any) -> bool:
    """What a file metric may receive: nothing, files a getter fetched into the scratch directory
    (alone or listed), or rules (a mapping). A path a task file wrote in a ``rule`` getter is none of these."""
    if value is None or isinstance(value, dict):
        return True
    if isinstance(value, list):
        return all(_fetched_or_rules(ctx, v) and not isinstance(v, dict) for v in value)
    return isinstance(value, str | Path) and ctx.scratch.holds(value)


def evaluate(replica: Replica, task: TaskSpec, last_action: str | None) -> float:
    """Score the replica's final state for ``task`` (OSWorld's rules for FAIL and infeasible tasks).

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
    if ev.postconfig:
        run_setup(replica, ev.postconfig, task_id=task.id, field="evaluator.postconfig")
    ctx = _Context(replica)
    listed = isinstance(ev.func, list)
    try:
        scores = []
        for i, (func, rg, eg, opts) in enumerate(zip(ev.funcs, ev.results, ev.expecteds, ev.option_list,
                                                     strict=True)):
            at = f"[{i}]" if listed else ""
            result = _get(ctx, rg, f"task {task.id}: evaluator.result{at}") if rg is not None else None
            expected = _get(ctx, eg, f"task {task.id}: evaluator.expected{at}") if eg is not None else None
            if metrics.get(func).files:
                for field, value in (("result", result), ("expected", expected)):
                    if not _fetched_or_rules(ctx, value):
                        raise EvaluatorError(f"task {task.id}: evaluator.{field}{at}: {func} compares files a vm_file "
                                             f"or cloud_file getter fetched, actual {value!r:.200}")
            try:
                score = metrics.score(func, result, expected, opts)
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
