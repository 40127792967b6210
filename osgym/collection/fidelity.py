"""Fidelity: does each task file set up and score here as it does in OSWorld's own VM? (``osgym tasks check --run``)

A task file is *faithful* when, over every episode of it that a do-nothing policy (``noop``) ran:

1. no episode errs (its setup, its evaluator or its replica: the episode's ``error_class``, or its deadline);
2. no setup step fails, not even one that setup goes on after, as OSWorld does for a command that exits non-zero
   (the episode's ``setup_failures``, from ``config[]`` and ``evaluator.postconfig``; a postconfig probe whose
   output the evaluator reads and that exits 1 has answered "no", and is not a failure:
   :func:`~osgym.tasks.setup.run_step`);
3. noop scores 0, unless OSWorld marks the task infeasible (``evaluator.func`` ``infeasible``): a task that pays
   for doing nothing teaches an agent that doing nothing pays.

The run is an ordinary collection (:class:`~osgym.collection.run.Collection`) of a recipe with the folder as its
``task_dir``, ``policy: noop`` and ``on_refused: skip``: each file that loads runs ``repeat`` times, interleaved
over the replicas, into a dataset in a temporary store, and the verdicts are read back from that dataset's
``episodes`` rows. The files that cannot run here are counted by :func:`osgym.tasks.check.check_dir` and not run:
refused, opening live websites, or naming assets the cache lacks (every asset, without a cache).

>>> v = judge("t1", "os", [Outcome(0.0), Outcome(0.5)])
>>> v.faithful, v.cause
(False, 'noop scored 0.5 in 1 of 2 episodes')
>>> judge("t2", "os", [Outcome(1.0)], infeasible=True).faithful
True
"""

from __future__ import annotations

import os
import re
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from osgym.collection.collector import EpisodeSummary, plan_task_files
from osgym.collection.recipe import Recipe, load_recipe
from osgym.collection.run import Collection
from osgym.dataset import open_dataset
from osgym.errors import ConfigError
from osgym.tasks.assets import CACHE_VAR, AssetCache, cache_from_settings
from osgym.tasks.check import CheckReport, check_dir

__all__ = ["FidelityReport", "Outcome", "Verdict", "judge", "run_fidelity"]

POLICIES = ("noop",)
"""The policies a fidelity run takes: its third condition (a score of 0) holds for doing nothing only."""
MAX_REPEAT = 1000
DATASET = "fidelity"
CAUSE_CHARS = 300
"""A cause in the table is cut at this many characters (the episode's record keeps the whole message)."""

Kind = Literal["error", "setup", "reward"]


@dataclass(frozen=True)
class Outcome:
    """One episode of a task, as its dataset row records it."""

    score: float
    error: str | None = None
    """``<error_class>: <message>`` if the episode ended on an error or its deadline, else None."""
    setup_failures: tuple[str, ...] = ()


@dataclass(frozen=True)
class Verdict:
    """One task file's verdict: faithful, or the first cause (in the order of the three conditions)."""

    task_id: str
    domain: str
    runs: int
    kind: Kind | None = None
    cause: str | None = None
    infeasible: bool = False

    @property
    def faithful(self) -> bool:
        return self.kind is None


def _where(message: str) -> str:
    """A message without the ``task <id>: `` that every setup message starts with (the table names the task).

    >>> _where("SetupError: task 3f2a: config[1]: activate_window step rejected")
    'SetupError: config[1]: activate_window step rejected'
    """
    return re.sub(r"(^|: )task [^\s:]+: ", r"\1", message, count=1)


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= CAUSE_CHARS else text[:CAUSE_CHARS - 1] + "…"


def judge(task_id: str, domain: str, outcomes: Sequence[Outcome], *, infeasible: bool = False) -> Verdict:
    """The verdict on a task from its episodes: the first condition that fails names the cause, with how many of
    the episodes it failed in and the first message (an error, a failed setup step, and how many more steps
    failed in that episode) or the highest score.

    >>> judge("t", "os", [Outcome(0.0, setup_failures=("task t: config[0]: execute 'x' exited 1: no x",))]).cause
    "setup step failed in 1 of 1 episodes: config[0]: execute 'x' exited 1: no x"
    >>> judge("t", "os", []).cause
    'no episode ran'
    """
    n = len(outcomes)
    if not outcomes:
        return Verdict(task_id, domain, 0, "error", "no episode ran", infeasible)
    errs = [o.error for o in outcomes if o.error is not None]
    if errs:
        return Verdict(task_id, domain, n, "error", _cut(f"error in {len(errs)} of {n} episodes: {_where(errs[0])}"),
                       infeasible)
    failed = [o.setup_failures for o in outcomes if o.setup_failures]
    if failed:
        more = f" (and {len(failed[0]) - 1} more steps)" if len(failed[0]) > 1 else ""
        cause = f"setup step failed in {len(failed)} of {n} episodes{more}: {_where(failed[0][0])}"
        return Verdict(task_id, domain, n, "setup", _cut(cause), infeasible)
    paid = [o.score for o in outcomes if o.score > 0]
    if paid and not infeasible:
        return Verdict(task_id, domain, n, "reward", f"noop scored {max(paid):g} in {len(paid)} of {n} episodes",
                       infeasible)
    return Verdict(task_id, domain, n, infeasible=infeasible)


def _share(n: int, total: int) -> str:
    return f"{n} of {total} ({100 * n / total:.1f} %)" if total else f"{n} of 0"


@dataclass
class FidelityReport:
    """The verdicts of a run and the static check's counts of the folder (what could not run)."""

    directory: str
    check: CheckReport
    verdicts: list[Verdict] = field(default_factory=list)
    repeat: int = 3
    tier: str = "apps"
    policy: str = "noop"
    image: str | None = None

    @property
    def faithful(self) -> int:
        return sum(v.faithful for v in self.verdicts)

    def skipped(self) -> str:
        """The files not run, by why: ``284 uncached, 48 live sites, 30 refused (of 437 task files)``."""
        c = self.check
        parts = [(sum(c.uncached.values()), "need uncached assets"), (sum(c.live.values()), "open live websites"),
                 (sum(c.refused.values()), "are refused")]
        said = ", ".join(f"{n} {what}" for n, what in parts if n) or "none"
        return f"{said} (of {c.total} task files; `osgym tasks check` without --run says why)"

    def summary(self) -> str:
        """What the command prints: the faithful share, the causes by kind, the files not run."""
        kinds: Counter[str] = Counter(v.kind for v in self.verdicts if v.kind)
        lines = [f"faithful: {_share(self.faithful, len(self.verdicts))} of the task files that can run "
                 f"({self.repeat} {self.policy} episode{'s' if self.repeat != 1 else ''} each, {self.tier} tier)"]
        if kinds:
            lines.append("not faithful: " + ", ".join(
                f"{kinds[k]} {what}" for k, what in (("error", "err"), ("setup", "fail a setup step"),
                                                     ("reward", "score above 0 for doing nothing")) if kinds[k]))
        lines.append(f"not run: {self.skipped()}")
        return "\n".join(lines)

    def markdown(self) -> str:
        """The per-task table as Markdown, under a heading that says how it was made and what it means."""
        def cell(text: str) -> str:
            return text.replace("|", "\\|")

        out = [f"# Fidelity of `{self.directory}`", "",
               f"`osgym tasks check {self.directory} --run --policy {self.policy} --repeat {self.repeat} "
               f"--tier {self.tier}`" + (f", image `{self.image}`" if self.image else "") + ".", "",
               "A task file is faithful when no episode of it errs, no setup step fails (not even one that setup "
               "goes on after, as OSWorld does; a postconfig probe whose output the evaluator reads may answer "
               "\"no\" with exit 1), and noop scores 0 (unless OSWorld marks the task infeasible).", "",
               *[f"- {line}" for line in self.summary().splitlines()], "",
               "| domain | faithful | task files run |", "|---|---|---|"]
        domains = sorted({v.domain for v in self.verdicts})
        for d in domains:
            mine = [v for v in self.verdicts if v.domain == d]
            out.append(f"| {cell(d)} | {sum(v.faithful for v in mine)} | {len(mine)} |")
        out += ["", "| task id | domain | runs | faithful | cause |", "|---|---|---|---|---|"]
        for v in sorted(self.verdicts, key=lambda v: (v.domain, v.task_id)):
            cause = cell(v.cause or ("infeasible (its score is not judged)" if v.infeasible else ""))
            out.append(f"| {cell(v.task_id)} | {cell(v.domain)} | {v.runs} | {'no' if v.kind else 'yes'} | {cause} |")
        return "\n".join(out) + "\n"


@contextmanager
def _operator_cache(cache: str | None) -> Iterator[None]:
    """``OSGYM_ASSET_CACHE`` set to ``cache`` while the run plans and runs (setup steps read assets from the
    operator's cache, :func:`osgym.tasks.assets.read_asset`), then as it was; unchanged when ``cache`` is None."""
    if cache is None:
        yield
        return
    old = os.environ.get(CACHE_VAR)
    os.environ[CACHE_VAR] = cache
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(CACHE_VAR, None)
        else:
            os.environ[CACHE_VAR] = old


def check_options(directory: Path, *, repeat: int, replicas: int, tier: str, policy: str) -> None:
    """Refuse a fidelity run's bad input before anything runs.

    Raises:
        ConfigError: naming the option and what it expected.
    """
    if not directory.is_dir():
        raise ConfigError(f"tasks check: {str(directory)!r} is not a directory")
    if not 1 <= repeat <= MAX_REPEAT:
        raise ConfigError(f"tasks check --repeat: expected 1..{MAX_REPEAT} episodes per task, actual {repeat}")
    if replicas < 1:
        raise ConfigError(f"tasks check --replicas: expected at least 1, actual {replicas}")
    if tier not in ("desktop", "apps"):
        raise ConfigError(f"tasks check --tier: expected 'desktop' or 'apps', actual {tier!r}")
    if policy not in POLICIES:
        raise ConfigError(f"tasks check --policy: expected one of {', '.join(POLICIES)} (a task is faithful when "
                          f"doing nothing scores 0), actual {policy!r}")


def run_fidelity(directory: str | Path, *, repeat: int = 3, replicas: int = 2, tier: str = "apps",
                 policy: str = "noop", exclude: Sequence[str] = (), cache: str | None = None,
                 image: str | None = None, standby: int = 1, episode_timeout_s: float = 300,
                 on_start: Callable[[int], None] | None = None,
                 on_episode: Callable[[EpisodeSummary], None] | None = None) -> FidelityReport:
    """Run every task file under ``directory`` that can run ``repeat`` times with ``policy`` on ``replicas`` replicas
    of ``tier``, and judge each (:func:`judge`).

    Args:
        exclude: leave out files under a directory, or files, of these names (as ``osgym tasks check`` does).
        cache: the asset cache (a directory or ``s3://``) the tasks' URLs are read from; default the operator's
            (``OSGYM_ASSET_CACHE``); without one, a task that names a URL is not run.
        image: the replica image (default: the tier's, built if needed).
        on_start: called with the number of episodes once the run is planned.
        on_episode: called with each finished episode's summary.

    Raises:
        ConfigError: bad input (see :func:`check_options`); a recipe the operator's settings refuse.
        StoreError: the asset cache's manifest cannot be read.
        ReplicaError: the replicas cannot start (image missing, Docker unreachable).
    """
    root = Path(directory)
    check_options(root, repeat=repeat, replicas=replicas, tier=tier, policy=policy)
    with tempfile.TemporaryDirectory(prefix="osgym-fidelity-") as tmp, _operator_cache(cache):
        assets = cache_from_settings() or AssetCache(Path(tmp) / "no-cache")  # no cache: every URL is missing
        static = check_dir(root, exclude=frozenset(exclude), cache=assets)
        report = FidelityReport(str(directory), static, repeat=repeat, tier=tier, policy=policy, image=image)
        if not sum(static.loaded.values()):
            if on_start is not None:
                on_start(0)
            return report
        spec = {"name": DATASET, "task_dir": str(root), "exclude": list(exclude) or None, "on_refused": "skip",
                "episodes": 1, "policy": {"name": policy}, "tier": tier, "image": image, "replicas": replicas,
                "standby": standby, "episode_timeout_s": episode_timeout_s, "store": str(Path(tmp) / "store")}
        tasks = plan_task_files(load_recipe(spec)).tasks
        recipe: Recipe = load_recipe({**spec, "episodes": len(tasks) * repeat})
        run = Collection(recipe, on_episode=on_episode)
        if on_start is not None:
            on_start(len(run.jobs))
        summary = run.run()
        report.image = summary["image"]
        report.verdicts = _verdicts(str(Path(tmp) / "store"), {(t.domain, t.id): t.infeasible for t in tasks})
    return report


def _verdicts(store: str, infeasible: dict[tuple[str, str], bool]) -> list[Verdict]:
    """Each planned task's verdict from the run's ``episodes`` rows."""
    columns = ["task_id", "domain", "score", "termination", "error_class", "error_message", "setup_failures"]
    rows = open_dataset(store, DATASET).episodes.to_table(columns=columns).to_pylist()
    outcomes: dict[tuple[str, str], list[Outcome]] = {key: [] for key in infeasible}
    for r in rows:
        erred = r["termination"] in ("error", "timeout") or r["error_class"] is not None
        error = f"{r['error_class'] or r['termination']}: {r['error_message'] or '(no message)'}" if erred else None
        outcomes.setdefault((r["domain"], r["task_id"]), []).append(
            Outcome(float(r["score"] or 0.0), error, tuple(r["setup_failures"] or ())))
    return [judge(tid, domain, found, infeasible=infeasible.get((domain, tid), False))
            for (domain, tid), found in outcomes.items()]
