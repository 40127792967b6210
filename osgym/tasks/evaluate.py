"""Evaluate a task: OSWorld getters fetch values, metrics score them in [0, 1]."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from osgym.errors import EvaluatorError, RequestRejected
from osgym.replicas.client import Replica
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
    if g.type in ("vm_command_line", "vm_terminal_output"):
        res = run_command(r, o["command"], o.get("shell"), float(o.get("timeout", 30)))
        return res.output
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


def exact_match(result: Any, rules: dict[str, Any]) -> float:
    """1.0 if the result equals ``rules["expected"]``.

    >>> exact_match("hi\\n", {"expected": "hi\\n"})
    1.0
    """
    return 1.0 if result == rules["expected"] else 0.0


def check_include_exclude(result: Any, rules: dict[str, Any]) -> float:
    """1.0 if every ``include`` string is in the result and no ``exclude`` string is.

    >>> check_include_exclude("a b", {"include": ["a"], "exclude": ["c"]})
    1.0
    """
    if result is None:
        return 0.0
    text = result if isinstance(result, str) else "\n".join(map(str, result))
    ok = all(s in text for s in rules.get("include", [])) and not any(s in text for s in rules.get("exclude", []))
    return 1.0 if ok else 0.0


def compare_text_file(actual: str | None, expected: str | None, **options: Any) -> float:
    """1.0 if two text files have the same content (optionally ignoring blanks/case)."""
    if actual is None or expected is None:
        return 0.0
    a, b = Path(actual).read_text(errors="replace"), Path(expected).read_text(errors="replace")
    if options.get("ignore_blanks"):
        a, b = "".join(a.split()), "".join(b.split())
    if options.get("ignore_case"):
        a, b = a.lower(), b.lower()
    return 1.0 if a == b else 0.0


def file_exists(result: Any, expected: Any = None) -> float:
    return 1.0 if result is not None else 0.0


def check_directory_tree(result: Any, rules: dict[str, Any]) -> float:
    """1.0 if the listing holds every name in ``rules["present"]`` and none in ``rules["absent"]``."""
    names = set(result or [])
    return 1.0 if set(rules.get("present", [])) <= names and not (set(rules.get("absent", [])) & names) else 0.0


def check_window_state(result: Any, rules: dict[str, Any]) -> float:
    """1.0 if the window list (from the ``vm_windows`` getter) matches every rule given.

    Rules name windows by exact title: ``present`` and ``absent`` (lists), ``focused``
    (one title), ``maximized`` and ``minimized`` (lists that must be in that state),
    ``count`` (the number of windows).

    >>> wins = [{"title": "a", "focused": True, "maximized": False, "minimized": False}]
    >>> check_window_state(wins, {"present": ["a"], "absent": ["b"], "focused": "a"})
    1.0
    >>> check_window_state(wins, {"maximized": ["a"]})
    0.0
    """
    if result is None:
        return 0.0
    by_title = {w["title"]: w for w in result}
    ok = all(t in by_title for t in rules.get("present", []))
    ok = ok and not any(t in by_title for t in rules.get("absent", []))
    if "focused" in rules:
        ok = ok and bool(by_title.get(rules["focused"], {}).get("focused"))
    for state in ("maximized", "minimized"):
        ok = ok and all(by_title.get(t, {}).get(state) for t in rules.get(state, []))
    if "count" in rules:
        ok = ok and len(result) == int(rules["count"])
    return 1.0 if ok else 0.0


FILE_METRICS = frozenset({"compare_text_file"})
"""Metrics that open their arguments as host files: they get only files a getter fetched into the scratch directory."""

METRIC_FUNCS: dict[str, Callable[..., float]] = {
    "exact_match": exact_match,
    "check_include_exclude": check_include_exclude,
    "compare_text_file": compare_text_file,
    "file_exists": file_exists,
    "check_directory_tree": check_directory_tree,
    "check_window_state": check_window_state,
}


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
            if func in FILE_METRICS:
                for field, value in (("result", result), ("expected", expected)):
                    if value is not None and not ctx.scratch.holds(value):
                        raise EvaluatorError(f"task {task.id}: evaluator.{field}{at}: {func} compares files a vm_file "
                                             f"or cloud_file getter fetched, actual {value!r:.200}")
            try:
                score = float(METRIC_FUNCS[func](result, expected, **opts))
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
