"""``osgym tasks check DIR``: which task files osgym loads, per domain, and every name it refuses.

A task file is refused for each setup step type, metric (``evaluator.func``) and getter type that
has no registered function, all of them counted (loading stops at the first). A file whose names
are all known but still fails to load (bad options, a host path it may not name) is counted under
its error. The domain is the name of the task file's directory under DIR (OSWorld's layout,
``examples/<domain>/<id>.json``), or its ``domain`` field for files directly in DIR.

>>> report = CheckReport()
>>> report.add("chrome", loaded=False, refused=[("getter", "googledrive_file")])
>>> report.add("chrome", loaded=True)
>>> print(report.render())
domain  loaded  refused  total
chrome       1        1      2
total        1        1      2
<BLANKLINE>
refused names (task files):
     1  getter googledrive_file  (it reads a file from a Google Drive account)
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from osgym.errors import TaskLoadError
from osgym.tasks import getters, metrics
from osgym.tasks.devtools import live_urls
from osgym.tasks.spec import BROWSER_STEPS, SETUP_REFUSED, SETUP_TYPES, load_task

__all__ = ["CheckReport", "check_dir", "refused_names"]


def _reason(kind: str, name: str) -> str:
    if kind == "getter" and name in getters.REFUSED:
        return getters.REFUSED[name]
    if kind == "metric" and name in metrics.REFUSED:
        return metrics.REFUSED[name]
    if kind == "setup" and name in SETUP_REFUSED:
        return SETUP_REFUSED[name]
    if kind == "live site":
        return "it names live third-party websites; replicas are offline"
    if kind == "metric" and name == "''":
        return "an empty evaluator.func: OSWorld cannot run it either"
    return "not implemented"


@dataclass
class CheckReport:
    """Counts per domain, and refused names with the number of task files that use each."""

    loaded: Counter[str] = field(default_factory=Counter)
    refused: Counter[str] = field(default_factory=Counter)
    names: Counter[tuple[str, str]] = field(default_factory=Counter)

    def add(self, domain: str, *, loaded: bool, refused: list[tuple[str, str]] | None = None) -> None:
        """Count one task file of ``domain``; ``refused``: its (kind, name) pairs, each counted once."""
        (self.loaded if loaded else self.refused)[domain] += 1
        self.names.update(set(refused or []))

    @property
    def total(self) -> int:
        return sum(self.loaded.values()) + sum(self.refused.values())

    def render(self) -> str:
        """A plain-text table per domain, then the refused names, most used first."""
        domains = sorted(set(self.loaded) | set(self.refused))
        width = max([len("domain"), len("total"), *map(len, domains)])
        lines = [f"{'domain':<{width}}  loaded  refused  total"]
        for d in [*domains, "total"]:
            ok = sum(self.loaded.values()) if d == "total" else self.loaded[d]
            bad = sum(self.refused.values()) if d == "total" else self.refused[d]
            lines.append(f"{d:<{width}}  {ok:>6}  {bad:>7}  {ok + bad:>5}")
        lines += ["", "refused names (task files):"]
        for (kind, name), n in sorted(self.names.items(), key=lambda kv: (-kv[1], kv[0])):
            lines.append(f"{n:>6}  {kind} {name}  ({_reason(kind, name) if kind != 'invalid' else 'load error'})")
        return "\n".join(lines)


def _getters(ev: dict[str, Any]) -> list[Any]:
    out: list[Any] = []
    for key in ("result", "expected"):
        value = ev.get(key)
        out += value if isinstance(value, list) else [value]
    return [g for g in out if isinstance(g, dict) and g]


def refused_names(data: Any) -> list[tuple[str, str]]:
    """The (kind, name) pairs of a task's JSON that osgym has no function for: ``setup``, ``metric``, ``getter``;
    and ``live site`` for a browser step that opens a live third-party website.

    >>> refused_names({"config": [{"type": "googledrive"}], "evaluator": {"func": "exact_match",
    ...                "result": {"type": "vm_file", "path": "/a"}, "expected": {"type": "info_from_website"}}})
    [('setup', 'googledrive'), ('getter', 'info_from_website')]
    """
    if not isinstance(data, dict):
        return []
    ev = data.get("evaluator")
    ev = ev if isinstance(ev, dict) else {}
    steps = [*(data.get("config") or []), *(ev.get("postconfig") or [])]
    out: list[tuple[str, str]] = []
    for s in steps:
        t = s.get("type") if isinstance(s, dict) else None
        if isinstance(t, str) and t not in SETUP_TYPES:
            out.append(("setup", t))
        elif t in BROWSER_STEPS and isinstance(s, dict):
            if live_urls((s.get("parameters") or {}).get(BROWSER_STEPS[t])):
                out.append(("live site", t))
    funcs = ev.get("func")
    for f in funcs if isinstance(funcs, list) else [funcs]:
        if isinstance(f, str) and f != "infeasible" and f not in metrics.METRICS.names():
            out.append(("metric", f or "''"))
    for g in _getters(ev):
        t = g.get("type")
        if not isinstance(t, str):
            out.append(("getter", "<no type>"))
        elif t not in getters.GETTERS.names():
            out.append(("getter", t))
    return list(dict.fromkeys(out))


def _short(err: TaskLoadError) -> str:
    # "task <id> (<file>): <loc>: <message>": keep the field and message, bounded, for counting.
    text = str(err).split("): ", 1)[-1]
    return text.replace("Value error, ", "")[:240]


def check_dir(root: Path) -> CheckReport:
    """Load every ``*.json`` under ``root`` (recursively) and count what loads and what is refused.

    Raises:
        TaskLoadError: if ``root`` is not a directory.
    """
    if not root.is_dir():
        raise TaskLoadError(f"tasks check: {str(root)!r} is not a directory")
    report = CheckReport()
    for path in sorted(root.rglob("*.json")):
        rel = path.relative_to(root)
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            report.add(rel.parent.name if len(rel.parts) > 1 else "?", loaded=False,
                       refused=[("invalid", f"unreadable JSON ({type(exc).__name__})")])
            continue
        fallback = data.get("domain", "os") if isinstance(data, dict) else "?"
        domain = rel.parent.name if len(rel.parts) > 1 else str(fallback)
        names = refused_names(data)
        try:
            load_task(path)
        except TaskLoadError as exc:
            report.add(domain, loaded=False, refused=names or [("invalid", _short(exc))])
            continue
        report.add(domain, loaded=True)
    return report
