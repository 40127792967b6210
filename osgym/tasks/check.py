"""``osgym tasks check DIR``: which task files osgym loads, per domain, and every name it refuses.

A task file is refused for each setup step type, metric (``evaluator.func``) and getter type that
has no registered function, all of them counted (loading stops at the first). A file refused only because
a browser step opens live third-party websites is counted apart ("live sites"): every name in it has a
function, and it loads once its websites are served from a snapshot instead. A file whose names
are all known but still fails to load (bad options, a host path it may not name) is counted under
its error. With an asset cache (``osgym tasks check DIR --cache C``), a file that loads but names a URL
the cache lacks is counted apart ("uncached"), each such URL listed as ``asset not cached: <url>``.
The domain is the name of the task file's directory under DIR (OSWorld's layout,
``examples/<domain>/<id>.json``), or its ``domain`` field for files directly in DIR.

>>> report = CheckReport()
>>> report.add("chrome", loaded=False, refused=[("getter", "googledrive_file")])
>>> report.add("chrome", loaded=False, live=True, refused=[("live site", "chrome_open_tabs")])
>>> report.add("chrome", loaded=True)
>>> print(report.render())
domain  loaded  live sites  refused  total
chrome       1           1        1      3
total        1           1        1      3
<BLANKLINE>
loaded: 1 of 3 (33.3 %); every name has a function: 2 of 3 (66.7 %), with the files refused only for live sites
<BLANKLINE>
refused names (task files):
     1  getter googledrive_file  (it reads a file from a Google Drive account)
     1  live site chrome_open_tabs  (it names live third-party websites; replicas are offline)
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from osgym.errors import TaskLoadError
from osgym.tasks import getters, metrics
from osgym.tasks.asset_urls import missing_assets
from osgym.tasks.assets import AssetCache
from osgym.tasks.offline import BROWSER_STEPS, live_urls, marketplace_extensions
from osgym.tasks.spec import SETUP_REFUSED, SETUP_TYPES, load_task
from osgym.tasks.taskdir import task_files

__all__ = ["CheckReport", "check_dir", "live_sites", "refused_names"]


def _reason(kind: str, name: str) -> str:
    if kind == "getter" and name in getters.REFUSED:
        return getters.REFUSED[name]
    if kind == "metric" and name in metrics.REFUSED:
        return metrics.REFUSED[name]
    if kind == "setup" and name in SETUP_REFUSED:
        return SETUP_REFUSED[name]
    if kind == "live site" and name == "extension marketplace":
        return "it installs a VS Code extension from the marketplace; replicas are offline"
    if kind == "live site":
        return "it names live third-party websites; replicas are offline"
    if kind == "metric" and name == "''":
        return "an empty evaluator.func: OSWorld cannot run it either"
    return "not implemented"


@dataclass
class CheckReport:
    """Counts per domain, and refused names with the number of task files that use each."""

    loaded: Counter[str] = field(default_factory=Counter)
    live: Counter[str] = field(default_factory=Counter)
    refused: Counter[str] = field(default_factory=Counter)
    names: Counter[tuple[str, str]] = field(default_factory=Counter)
    uncached: Counter[str] = field(default_factory=Counter)
    live_files: list[tuple[str, str]] = field(default_factory=list)
    """The files refused only for live sites: (path relative to the folder, what they reach)."""
    with_cache: bool = False
    """Checked against an asset cache: the table gets an ``uncached`` column (files that load but name a URL
    the cache lacks)."""

    def add(self, domain: str, *, loaded: bool, live: bool = False, uncached: bool = False,
            refused: list[tuple[str, str]] | None = None) -> None:
        """Count one task file of ``domain``: loaded, refused only for live sites (``live``) or for assets the
        cache lacks (``uncached``), or refused; ``refused``: its (kind, name) pairs, each counted once."""
        (self.loaded if loaded else self.live if live else self.uncached if uncached else self.refused)[domain] += 1
        self.names.update(set(refused or []))

    @property
    def total(self) -> int:
        return sum(sum(c.values()) for c in (self.loaded, self.uncached, self.live, self.refused))

    def render(self, *, live_files: bool = False) -> str:
        """A plain-text table per domain, the two coverage figures, then the refused names, most used first;
        with ``live_files``, then each file refused only for live sites and the sites it opens."""
        domains = sorted(set(self.loaded) | set(self.uncached) | set(self.live) | set(self.refused))
        width = max([len("domain"), len("total"), *map(len, domains)])
        cached = "  uncached" if self.with_cache else ""
        lines = [f"{'domain':<{width}}  loaded{cached}  live sites  refused  total"]
        for d in [*domains, "total"]:
            counts = (self.loaded, self.uncached, self.live, self.refused)
            ok, unc, live, bad = ((sum(c.values()) if d == "total" else c[d]) for c in counts)
            column = f"  {unc:>8}" if self.with_cache else ""
            lines.append(f"{d:<{width}}  {ok:>6}{column}  {live:>10}  {bad:>7}  {ok + unc + live + bad:>5}")
        ok, unc, live = (sum(c.values()) for c in (self.loaded, self.uncached, self.live))
        total = self.total

        def share(n: int) -> str:
            return f"{n} of {total} ({100 * n / total:.1f} %)" if total else f"{n} of 0"

        also = " or for uncached assets" if self.with_cache else ""
        lines += ["", f"loaded: {share(ok)}; every name has a function: {share(ok + unc + live)}, "
                  f"with the files refused only for live sites{also}", "", "refused names (task files):"]
        for (kind, name), n in sorted(self.names.items(), key=lambda kv: (-kv[1], kv[0])):
            if kind == "asset":
                lines.append(f"{n:>6}  asset not cached: {name}")
                continue
            lines.append(f"{n:>6}  {kind} {name}  ({_reason(kind, name) if kind != 'invalid' else 'load error'})")
        if live_files:
            lines += ["", "task files refused only for live sites (replicas are offline; no snapshot of these sites "
                      "is served):"]
            lines += [f"  {path}  {sites}" for path, sites in sorted(self.live_files)]
        return "\n".join(lines)


def _getters(ev: dict[str, Any]) -> list[Any]:
    out: list[Any] = []
    for key in ("result", "expected"):
        value = ev.get(key)
        out += value if isinstance(value, list) else [value]
    return [g for g in out if isinstance(g, dict) and g]


def refused_names(data: Any) -> list[tuple[str, str]]:
    """The (kind, name) pairs of a task's JSON that osgym has no function for: ``setup``, ``metric``, ``getter``;
    and ``live site`` for a browser step that opens a live third-party website or a VS Code extension installed
    from the marketplace (``extension marketplace``).

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
    params = [(str(s.get("type")), s.get("parameters")) for s in steps if isinstance(s, dict)]
    result = ev.get("result")
    results = result if isinstance(result, list) else [result]
    if marketplace_extensions([(t, p) for t, p in params if isinstance(p, dict)],
                              [(str(g.get("type")), g) for g in results if isinstance(g, dict)]):
        out.append(("live site", "extension marketplace"))
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


def live_sites(data: Any) -> str:
    """What a task file reaches outside the replica: the hosts its browser steps open, and the VS Code
    marketplace if it installs an extension from there.

    >>> live_sites({"config": [{"type": "chrome_open_tabs", "parameters": {"urls_to_open": [
    ...     "https://www.example.org/a", "https://shop.example/", "https://www.example.org/b"]}}]})
    'www.example.org, shop.example'
    """
    if not isinstance(data, dict):
        return ""
    ev = data.get("evaluator")
    steps = [*(data.get("config") or []), *((ev.get("postconfig") or []) if isinstance(ev, dict) else [])]
    hosts: list[str] = []
    for s in steps:
        if isinstance(s, dict) and s.get("type") in BROWSER_STEPS:
            urls = live_urls((s.get("parameters") or {}).get(BROWSER_STEPS[s["type"]]))
            hosts += [urlparse(u).hostname or u for u in urls]
    if ("live site", "extension marketplace") in refused_names(data):
        hosts.append("the VS Code marketplace")
    return ", ".join(dict.fromkeys(hosts))


def _short(err: TaskLoadError) -> str:
    # "task <id> (<file>): <loc>: <message>": keep the field and message, bounded, for counting.
    # List positions become "*" so that one cause counts once (rules.0 and rules.2 of a metric's options).
    text = re.sub(r"\.\d+(?=[.:\[ ])", ".*", str(err).split("): ", 1)[-1])
    return text.replace("Value error, ", "")[:240]


def _loads_with_live_sites(path: Path) -> bool:
    try:
        load_task(path, live_sites=True)
    except TaskLoadError:
        return False
    return True


def check_dir(root: Path, *, exclude: frozenset[str] = frozenset(), cache: AssetCache | None = None) -> CheckReport:
    """Load every ``*.json`` under ``root`` (recursively), less those with a directory or file name in ``exclude``,
    and count what loads and what is refused.

    With ``cache``, a task that loads but names a URL the asset cache lacks is refused too
    (``asset not cached: <url>``), as the run planner would refuse it.

    Raises:
        TaskLoadError: if ``root`` is not a directory.
        StoreError: if the cache's manifest cannot be read.
    """
    if not root.is_dir():
        raise TaskLoadError(f"tasks check: {str(root)!r} is not a directory")
    report = CheckReport(with_cache=cache is not None)
    for path, rel in task_files(root, exclude):
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
            task = load_task(path)
        except TaskLoadError as exc:
            live = {k for k, _ in names} == {"live site"} and _loads_with_live_sites(path)
            report.add(domain, loaded=False, live=live, refused=names or [("invalid", _short(exc))])
            if live:
                report.live_files.append((str(rel), live_sites(data)))
            continue
        missing = missing_assets(task, cache) if cache is not None else []
        report.add(domain, loaded=not missing, uncached=bool(missing), refused=[("asset", url) for url in missing])
    return report
