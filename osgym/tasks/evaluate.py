"""Evaluate a task: OSWorld getters fetch values, metrics score them in [0, 1]."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from osgym.errors import EvaluatorError, RequestRejected
from osgym.replicas.client import Replica
from osgym.tasks import metrics
from osgym.tasks.setup import _local_bytes, run_setup
from osgym.tasks.spec import Getter, TaskSpec


class _Context:
    def __init__(self, replica: Replica):
        self.replica = replica
        self.tmp = tempfile.TemporaryDirectory(prefix="osgym-eval-")

    def close(self) -> None:
        self.tmp.cleanup()


def _get(ctx: _Context, g: Getter) -> Any:
    o = g.options
    r = ctx.replica
    if g.type in ("vm_command_line", "vm_terminal_output"):
        res = r.execute(o["command"], shell=o.get("shell"), timeout=float(o.get("timeout", 30)))
        return res.output
    if g.type == "vm_file":
        try:
            data = r.read_file(o["path"])
        except RequestRejected:
            return None  # OSWorld returns None for a missing file; metrics score it 0
        dest = Path(ctx.tmp.name) / o.get("dest", Path(o["path"]).name)
        dest.write_bytes(data)
        return str(dest)
    if g.type == "list_directory":
        res = r.execute(["ls", "-1A", o["path"]], timeout=30)
        return res.output.split() if res.returncode == 0 else None
    if g.type == "rule":
        return o.get("rules")
    if g.type == "vm_windows":
        return _windows(r)
    if g.type == "cloud_file":
        dest = Path(ctx.tmp.name) / o.get("dest", "expected")
        dest.write_bytes(_local_bytes(o["path"]))
        return str(dest)
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


def evaluate(replica: Replica, task: TaskSpec, last_action: str | None) -> float:
    """Score the replica's final state for ``task`` (OSWorld's rules for FAIL and infeasible tasks).

    Raises:
        EvaluatorError: if a getter or metric cannot be computed.
        ReplicaError: if the replica fails while being inspected.
    """
    ev = task.evaluator
    if task.infeasible:
        return 1.0 if last_action == "FAIL" else 0.0
    if last_action == "FAIL":
        return 0.0
    if ev.postconfig:
        run_setup(replica, ev.postconfig)
    ctx = _Context(replica)
    try:
        scores = []
        for func, rg, eg, opts in zip(ev.funcs, ev.results, ev.expecteds, ev.option_list, strict=True):
            result = _get(ctx, rg) if rg is not None else None
            expected = _get(ctx, eg) if eg is not None else None
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
