"""`make suite-check`: every template of the apps-tier suites on several seeds, once on the machine as it is
("quiet": run it on a quiet machine) and once under `stress-ng --cpu 4` ("stress"), each variant with its
scripted oracle (must score 1.0) and with noop (must score 0.0), each episode on a fresh apps replica with
the task's setup, as a collection run does. Writes a markdown report and exits 1 if anything failed.

Usage:
    python3 scripts/suite_check.py [--out docs/suite-check.md] [--seeds 3] [--first-seed 0] [--passes quiet,stress]
        [--suites apps-smoke,...] [--templates ID,...] [--replicas 2] [--stress-cpu 4] [--evidence DIR]
        [--reset cold|restore] [--warm desktop|libreoffice]

The report (docs/suite-check.md):
    # Suite check
    date (UTC), git commit (``-dirty`` if the tree had changes), the command, the machine (cores, memory)
    ## Loads            one row per pass: stressor, how the replicas started (cold, or restored: how many,
                        and how many restores fell back to a cold start), 1-minute load average before,
                        mean and max while it ran (sampled every 5 s), episodes, wall time
    ## Results          one row per suite x template x seed x pass: difficulty, the oracle's score, steps and
                        seconds, the noop's score and seconds, ok (oracle 1.0 and noop 0.0, no error,
                        every oracle key and click into the task's app: osgym.episodes.focus, as in make test)
    ## Failures         one line per failed row: what was expected and what happened (error class and
                        message), or "none"

Defaults: every suite whose TIER is apps, seeds 0..2, both passes. The stress pass needs stress-ng
(scripts/ensure-stress-ng.sh installs Debian's). The stressor is this script's own child, stopped by its
process id on every way out.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from osgym import suites
from osgym.agents.policies.base import Policy
from osgym.agents.policies.noop import NoopPolicy
from osgym.agents.policies.scripted import ScriptedPolicy
from osgym.episodes import EpisodeLimits, run_episode
from osgym.episodes.focus import focus_violations
from osgym.episodes.trajectory import Trajectory
from osgym.errors import OsgymError, ReplicaError
from osgym.replicas import images
from osgym.replicas.client import SETTLE_MODES
from osgym.replicas.pool import ReplicaPool, limits_for
from osgym.replicas.restore import COLD, RESTORE
from osgym.sigterm import exit_on_sigterm
from osgym.tasks.spec import TaskSpec

ROOT = Path(__file__).resolve().parents[1]
LIMITS = EpisodeLimits(max_steps=40, deadline_s=240, settle_s=0.5)  # as tests/apps/test_apps_suites.py
SCREEN = (1920, 1080)
LOAD_SAMPLE_S = 5.0


@dataclass
class Episode:
    score: float | None
    steps: int
    seconds: float
    error: str | None
    off_app: list[str] = field(default_factory=list)
    """GUI input that did not go to the task's app (osgym.episodes.focus), as the apps test checks on seed 0."""

    @classmethod
    def of(cls, task: TaskSpec, t: Trajectory) -> Episode:
        took = (t.ended_at - t.started_at).total_seconds() if t.ended_at else 0.0
        error = f"{t.error_class}: {t.error_message}" if t.error_class else None
        if error is None and t.termination != "done":
            error = f"ended {t.termination}"
        return cls(t.score, len(t.steps), took, error, focus_violations(task, t) if t.steps else [])

    def problems(self, role: str) -> list[str]:
        """What is wrong with this episode as ``role``: the oracle must score 1.0 and send every key and click
        to the task's app, noop must score 0.0."""
        expect = 1.0 if role == "oracle" else 0.0
        out = []
        if self.error or self.score != expect:
            out.append(f"{role} scored {self.score}" + (f" ({self.error})" if self.error else ""))
        if role == "oracle":
            out += [f"oracle input off the app: {v}" for v in self.off_app]
        return out


@dataclass
class Row:
    suite: str
    template: str
    difficulty: int
    seed: int
    load: str
    oracle: Episode
    noop: Episode

    @property
    def problems(self) -> list[str]:
        return self.oracle.problems("oracle") + self.noop.problems("noop")


@dataclass
class Pass:
    load: str
    stressor: str
    before: float
    samples: list[float] = field(default_factory=list)
    seconds: float = 0.0
    rows: list[Row] = field(default_factory=list)
    replicas: str = ""  # how they started: cold, or restored (and how many restores fell back to a cold start)


def _episode(pool: ReplicaPool, task: TaskSpec, policy: Policy, limits: EpisodeLimits = LIMITS,
             attempts: int = 2) -> tuple[Episode, Trajectory | None]:
    """One episode on a fresh replica, setup included; a replica fault retries on a fresh one, as production does.
    The trajectory is None when every attempt ended in a replica fault."""
    for attempt in range(1, attempts + 1):
        start = time.monotonic()
        try:
            with pool.lease(timeout=600) as r:
                t = run_episode(r, task, policy, seed=7, limits=limits)
            return Episode.of(task, t), t
        except ReplicaError as exc:
            if attempt == attempts:
                return Episode(None, 0, time.monotonic() - start,
                               f"{type(exc).__name__} (attempt {attempt}): {exc}"), None
    raise AssertionError("unreachable")


def _keep(folder: Path, t: Trajectory) -> None:
    """Each step's screenshot and, in ``steps.jsonl``, its action, error and the windows the policy saw: what a
    failure in a long run needs to be understood without running it again."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "steps.jsonl").open("w") as f:
        for st in t.steps:
            (folder / f"{st.step:03d}.{st.screenshot_format}").write_bytes(st.screenshot)
            windows = [{"title": w.title, "focused": w.focused} for w in st.windows]
            f.write(json.dumps({"step": st.step, "action": st.action, "error": st.error, "windows": windows}) + "\n")
        f.write(json.dumps({"termination": t.termination, "score": t.score, "error_class": t.error_class,
                            "error_message": t.error_message}) + "\n")


@contextmanager
def _sampling(p: Pass) -> Iterator[None]:
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(LOAD_SAMPLE_S):
            p.samples.append(os.getloadavg()[0])

    thread = threading.Thread(target=sample, name="load-sampler", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


@contextmanager
def _stressor(cpus: int) -> Iterator[str]:
    """``stress-ng --cpu N`` as this script's child, in its own process group, ended by its id on every way out."""
    if shutil.which("stress-ng") is None:
        raise SystemExit("the stress pass needs stress-ng: run scripts/ensure-stress-ng.sh (make suite-check does)")
    argv = ["stress-ng", "--cpu", str(cpus), "--quiet"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        if proc.poll() is not None:
            raise SystemExit(f"stress-ng exited at once (code {proc.returncode})")
        yield " ".join(argv)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def run_pass(load: str, jobs: list[tuple[str, int, TaskSpec]], image: str, replicas: int, stress_cpu: int,
             evidence: Path | None = None, limits: EpisodeLimits = LIMITS, reset: str | None = None,
             warm: str = "desktop") -> Pass:
    @contextmanager
    def stress() -> Iterator[str]:
        if load == "stress":
            with _stressor(stress_cpu) as argv:
                yield argv
        else:
            yield "none"

    with stress() as stressor:
        p = Pass(load, stressor, os.getloadavg()[0])
        start = time.monotonic()
        with _sampling(p), ReplicaPool(image, replicas, standby=min(1, replicas), name=f"suite-check-{os.getpid()}",
                                       screen=SCREEN, limits=limits_for("apps"), reset=reset, warm=warm) as pool:
            ex = ThreadPoolExecutor(replicas, thread_name_prefix="episode")
            def one(job: tuple[str, int, TaskSpec]) -> Row:
                suite, difficulty, task = job

                def run(role: str, policy: Policy) -> Episode:
                    ep, t = _episode(pool, task, policy, limits)
                    if evidence is not None and t is not None and ep.problems(role):
                        _keep(evidence / f"{task.id}-seed{task.variant}-{load}-{role}", t)
                    return ep

                oracle, noop = run("oracle", ScriptedPolicy()), run("noop", NoopPolicy())
                row = Row(suite, task.id, difficulty, int(task.variant), load, oracle, noop)
                print(f"[{load}] {suite} {task.id} seed {task.variant}: oracle {oracle.score} in {oracle.steps} steps "
                      f"{oracle.seconds:.1f} s, noop {noop.score}" + (f"  FAIL {row.problems}" if row.problems else ""),
                      flush=True)
                return row

            try:
                p.rows = [f.result() for f in [ex.submit(one, job) for job in jobs]]
            finally:
                # On Ctrl-C the queued variants are dropped and the pool closes at once: its replicas go, and
                # the episodes still running end with a replica error instead of holding the exit for minutes.
                ex.shutdown(wait=False, cancel_futures=True)
            # the mode as the pool resolved it (OSGYM_REPLICA_RESET included): a report says what it checked
            p.replicas = (f"restored (warm {pool.warm}): {pool.stats.restored}, "
                          f"{pool.stats.restore_failures} fell back to a cold start"
                          if pool.reset == RESTORE else COLD)
        p.seconds = time.monotonic() - start
    return p


def _git_commit() -> str:
    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False)
        return done.stdout.strip()

    commit = git("rev-parse", "--short=12", "HEAD") or "unknown"
    return commit + ("-dirty" if git("status", "--porcelain", "--untracked-files=no") else "")


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:g}"


def render(passes: list[Pass], argv: list[str], started: dt.datetime, commit: str) -> str:
    mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    lines = ["# Suite check", "",
             f"- date: {started:%Y-%m-%d %H:%M} UTC",
             f"- git commit: {commit}",
             f"- command: `{' '.join(['python3', 'scripts/suite_check.py', *argv])}`",
             f"- machine: {os.cpu_count()} cores, {mem_gib:.0f} GiB, {platform.platform()}",
             "- each row: a fresh apps replica per episode (setup included), the scripted oracle must score 1.0 "
             "and noop 0.0, and every key and click it sends must go to the task's app (osgym.episodes.focus)", "",
             "## Loads", "",
             "| pass | stressor | replicas | load before | load mean | load max | episodes | wall s |",
             "|---|---|---|---|---|---|---|---|"]
    for p in passes:
        mean = sum(p.samples) / len(p.samples) if p.samples else p.before
        peak = max(p.samples, default=p.before)
        lines.append(f"| {p.load} | `{p.stressor}` | {p.replicas} | {p.before:.2f} | {mean:.2f} | {peak:.2f} "
                     f"| {2 * len(p.rows)} | {p.seconds:.0f} |")
    lines += ["", "## Results", "",
              "| suite | template | difficulty | seed | load | oracle score | oracle steps | oracle s | noop score "
              "| noop s | ok |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    rows = [r for p in passes for r in p.rows]
    for r in rows:
        lines.append(f"| {r.suite} | {r.template} | {r.difficulty} | {r.seed} | {r.load} | {_fmt(r.oracle.score)} | "
                     f"{r.oracle.steps} | {r.oracle.seconds:.1f} | {_fmt(r.noop.score)} | {r.noop.seconds:.1f} | "
                     f"{'yes' if not r.problems else 'NO'} |")
    failed = [r for r in rows if r.problems]
    lines += ["", "## Failures", ""]
    lines += [f"- {r.suite} {r.template} seed {r.seed} ({r.load}): {'; '.join(r.problems)}" for r in failed] or ["none"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args_in = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "suite-check.md")
    ap.add_argument("--seeds", type=int, default=3, help="seeds 0..N-1 of every template")
    ap.add_argument("--first-seed", type=int, default=0, help="start there instead of 0 (seeds S..S+N-1)")
    ap.add_argument("--passes", default="quiet,stress", help="quiet, stress or both (comma-separated)")
    ap.add_argument("--suites", default=None, help="comma-separated suite names (default: every apps-tier suite)")
    ap.add_argument("--templates", default=None, help="only these template ids (comma-separated)")
    ap.add_argument("--replicas", type=int, default=2, help="episodes at a time")
    ap.add_argument("--stress-cpu", type=int, default=4, help="stress-ng --cpu N for the stress pass")
    ap.add_argument("--settle-mode", choices=SETTLE_MODES, default=LIMITS.settle_mode,
                    help="how replicas tell that a step's screen settled (Replica.act's mode)")
    ap.add_argument("--reset", choices=["cold", "restore"], default=None,
                    help="how each replica starts (default: OSGYM_REPLICA_RESET, else cold): docs/operations.md")
    ap.add_argument("--warm", choices=["desktop", "libreoffice"], default="desktop",
                    help="with --reset restore, the state checkpointed (libreoffice: only LibreOffice's suites)")
    ap.add_argument("--image", help="an apps image to check (default: the current one, built if missing)")
    ap.add_argument("--evidence", type=Path, default=None,
                    help="keep each failed episode's screenshots and steps in DIR/TEMPLATE-seedN-PASS-POLICY/")
    a = ap.parse_args(args_in)
    passes = [x.strip() for x in a.passes.split(",") if x.strip()]
    if not passes or set(passes) - {"quiet", "stress"} or a.seeds < 1 or a.first_seed < 0 or a.replicas < 1:
        ap.error("--passes takes quiet and/or stress; --seeds and --replicas at least 1, --first-seed at least 0")
    names = a.suites.split(",") if a.suites else [n for n in suites.list_suites() if suites.required_tier(n) == "apps"]
    wanted = set(a.templates.split(",")) if a.templates else None
    try:
        chosen = [(n, t) for n in names for t in suites.templates(n) if wanted is None or t.id in wanted]
        not_apps = [n for n in names if suites.required_tier(n) != "apps"]
    except OsgymError as exc:
        ap.error(str(exc))
    if not_apps:
        ap.error(f"not apps-tier suites: {not_apps}")
    if wanted and wanted - {t.id for _, t in chosen}:
        ap.error(f"--templates: no such template in {names}: {sorted(wanted - {t.id for _, t in chosen})}")
    jobs = [(n, t.difficulty, t.variant(seed)) for seed in range(a.first_seed, a.first_seed + a.seeds)
            for n, t in chosen]
    started = dt.datetime.now(dt.UTC)
    commit = _git_commit()  # the code that runs: read now, not when the report is written an hour later
    image = a.image or images.ensure_image("apps")
    print(f"{len(jobs)} variants x {len(passes)} passes x (oracle + noop) on {image}", flush=True)
    limits = dataclasses.replace(LIMITS, settle_mode=a.settle_mode)
    done = [run_pass(load, jobs, image, a.replicas, a.stress_cpu, a.evidence, limits, a.reset, a.warm)
            for load in passes]
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(render(done, args_in, started, commit))
    failed = sum(bool(r.problems) for p in done for r in p.rows)
    print(f"wrote {a.out}: {sum(len(p.rows) for p in done)} rows, {failed} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    exit_on_sigterm()  # `timeout` or `kill` still removes its replicas
    sys.exit(main())
