"""A folder of task files as a run's source: OSWorld's layout, with or without its ``test_all.json`` index.

OSWorld keeps its tasks at ``<task_dir>/<domain>/<id>.json`` and lists the ones a run takes in an index
``{domain: [id, ...]}`` (``evaluation_examples/test_all.json``). :func:`index_entries` reads such an
index; :func:`discover_entries` takes every ``*.json`` under the folder instead (the domain is the name
of the file's directory, as ``osgym tasks check`` counts it). :func:`load_entries` then loads each file,
sets its domain, and runs the caller's checks (the asset cache's ``missing_assets``, say) on it.

Both the index and the files are untrusted input. An index entry must be a plain name (no ``/``, no
``..``, not absolute, not hidden), and every file, after symlinks are resolved, must lie inside the
folder: anything else is a :class:`~osgym.errors.ConfigError` naming the entry. A file that is there but
does not load, or that a check refuses, is a :class:`Refusal` with its reason: the caller decides
whether one refusal stops the run (see ``Recipe.on_refused``).

>>> plain_name("libreoffice_calc"), plain_name("../x"), plain_name("/etc"), plain_name(".hidden")
(True, False, False, False)
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from osgym.errors import ConfigError, TaskLoadError
from osgym.tasks.spec import TaskSpec, load_task

MAX_INDEX_BYTES = 16 * 1024 * 1024
MAX_TASK_BYTES = 4 * 1024 * 1024
"""A task file larger than this is refused unread (OSWorld's largest is under 30 KB)."""

_PLAIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,199}$")

TaskCheck = Callable[[TaskSpec], list[str]]
"""A plan-time check: the reasons a loaded task cannot run here (empty: it can). The asset cache's
``missing_assets(task, cache)``, bound to its cache, is one: it names the URLs the cache lacks."""


def plain_name(name: object) -> bool:
    """Whether ``name`` is a domain or task id that is safe as one path component."""
    return isinstance(name, str) and bool(_PLAIN.match(name)) and ".." not in name


@dataclass(frozen=True)
class TaskEntry:
    """One task file to load: its domain, the id it is listed under (or its file stem) and its path."""

    domain: str
    id: str
    path: Path
    indexed: bool = False
    """Listed in an index, whose id the file's own ``id`` must then match."""


@dataclass(frozen=True)
class Refusal:
    """A task file that exists but will not run, and why."""

    path: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


@dataclass
class LoadedTasks:
    """What :func:`load_entries` made of a folder: tasks in plan order, and the files it refused."""

    tasks: list[TaskSpec] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)


def _root(task_dir: str | Path) -> Path:
    root = Path(task_dir)
    if not root.is_dir():
        raise ConfigError(f"task_dir {str(task_dir)!r}: not a directory")
    return Path(os.path.realpath(root))


def _confined(root: Path, path: Path, what: str) -> Path:
    """``path`` with symlinks resolved, refused unless it stays inside ``root`` (itself resolved)."""
    real = Path(os.path.realpath(path))
    if real != root and root not in real.parents:
        raise ConfigError(f"{what}: {str(path)!r} resolves to {str(real)!r}, outside task_dir {str(root)!r} "
                          "(a task file may not be a symlink out of its folder)")
    return real


def index_entries(task_dir: str | Path, index: str | Path) -> list[TaskEntry]:
    """The files an OSWorld-shaped index lists, in its order: ``<task_dir>/<domain>/<id>.json``.

    Raises:
        ConfigError: if the folder or index is unreadable, the index is not ``{domain: [id, ...]}``, lists
            an entry twice, or has entries that are not plain names, whose file is missing, or whose file
            resolves outside the folder (all such entries are named).
    """
    root = _root(task_dir)
    try:
        if Path(index).stat().st_size > MAX_INDEX_BYTES:
            raise ConfigError(f"task_index {str(index)!r}: larger than {MAX_INDEX_BYTES} bytes")
        data = json.loads(Path(index).read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"task_index {str(index)!r}: cannot read it: {exc}") from exc
    if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
        raise ConfigError(f"task_index {str(index)!r}: expected OSWorld's test_all.json shape "
                          "{domain: [task id, ...]}")
    entries: list[TaskEntry] = []
    bad: list[str] = []
    seen: set[tuple[str, str]] = set()
    for domain, ids in data.items():
        for tid in ids:
            where = f"{domain!r}: {tid!r:.80}"
            if not plain_name(domain) or not plain_name(tid):
                bad.append(f"{where} is not a plain name (letters, digits, '_', '-', '.'; no '/' or '..')")
                continue
            if (domain, tid) in seen:
                bad.append(f"{where} is listed twice")
                continue
            seen.add((domain, tid))
            path = root / domain / f"{tid}.json"
            try:
                real = _confined(root, path, where)
            except ConfigError as exc:
                bad.append(str(exc))
                continue
            if not real.is_file():
                bad.append(f"{where}: no file {str(path)!r}")
                continue
            entries.append(TaskEntry(domain, tid, path, indexed=True))
    if bad:
        more = f" (and {len(bad) - 10} more)" if len(bad) > 10 else ""
        raise ConfigError(f"task_index {str(index)!r}: {len(bad)} bad entr{'y' if len(bad) == 1 else 'ies'}: "
                          + "; ".join(bad[:10]) + more)
    return entries


def task_files(root: Path, exclude: frozenset[str] = frozenset()) -> Iterator[tuple[Path, Path]]:
    """Every ``*.json`` under ``root`` as (path, path relative to ``root``), sorted, less those with a
    directory or file name in ``exclude``: the files ``osgym tasks check`` and a recipe's ``task_dir`` take."""
    for path in sorted(root.rglob("*.json")):
        rel = path.relative_to(root)
        if not exclude.intersection(rel.parts):
            yield path, rel


def discover_entries(task_dir: str | Path, exclude: frozenset[str] = frozenset()) -> list[TaskEntry]:
    """Every ``*.json`` under the folder, sorted by path; the domain is the name of the file's directory
    (empty for a file directly in the folder: its own ``domain`` field then applies).

    Raises:
        ConfigError: if the folder is not a directory, or a file resolves outside it (a symlink out).
    """
    root = _root(task_dir)
    out = []
    for path, rel in task_files(root, exclude):
        _confined(root, path, f"task file {str(rel)!r}")
        out.append(TaskEntry(rel.parent.name if len(rel.parts) > 1 else "", path.stem, path))
    return out


def _reason(exc: Exception, path: Path) -> str:
    # load_task's "task <id> (<path>): <field>: Value error, <why>": the refusal already names the file
    text = re.sub(rf"^task .*? \({re.escape(str(path))}\): ", "", str(exc), count=1)
    return text.replace("Value error, ", "")


def load_entries(entries: Sequence[TaskEntry], checks: Sequence[TaskCheck] = ()) -> LoadedTasks:
    """Load each entry's file with :func:`~osgym.tasks.spec.load_task`, set its domain, and run ``checks``.

    A file that does not load, is too large, carries an id other than the one its index lists, or that a
    check refuses, becomes a :class:`Refusal` with every reason; the others keep the entries' order.
    """
    out = LoadedTasks()
    for e in entries:
        where = f"{e.domain}/{e.path.name}" if e.domain else e.path.name
        try:
            if e.path.stat().st_size > MAX_TASK_BYTES:
                out.refused.append(Refusal(where, f"larger than {MAX_TASK_BYTES} bytes"))
                continue
            task = load_task(e.path)
        except (OSError, TaskLoadError) as exc:
            out.refused.append(Refusal(where, _reason(exc, e.path)))
            continue
        if e.indexed and task.id != e.id:
            out.refused.append(Refusal(where, f"its id {task.id!r:.80} is not the id the index lists ({e.id!r})"))
            continue
        if e.domain:
            task = task.model_copy(update={"domain": e.domain})
        reasons = [r for check in checks for r in check(task)]
        if reasons:
            out.refused.append(Refusal(where, "; ".join(reasons)))
            continue
        out.tasks.append(task)
    return out


__all__ = ["LoadedTasks", "Refusal", "TaskCheck", "TaskEntry", "discover_entries", "index_entries",
           "load_entries", "plain_name", "task_files"]
