"""The settle after each step, by frames against by damage: wall time per step, and whether oracles still pass.

Usage (root, Docker running; a quiet machine, then again with ``--stress-cpu 4``)::

    python3 bench/bench_settle.py [--tier desktop] [--suites desktop-basics] [--seeds 1] \\
        [--replicas 2] [--stress-cpu 0] [--settle-s 1.0]

Every template of the suites runs its scripted oracle once per seed in each mode, on a fresh replica each
time, the two modes in alternating order (frames first for even-numbered variants, damage first for odd
ones) so that drift in the machine's speed falls on both. Each step's ``env_ms`` (the runner's time for the
step's actions, its settle and the next observation) is the figure compared; an oracle that does not score
1.0 in a mode is a settle that ended too early for it. Prints one JSON line per episode, then one per
mode, then the ratios (damage / frames) of the medians and means.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's osgym and bench

from bench.bench_density import emit
from osgym import suites
from osgym.agents.policies.scripted import ScriptedPolicy
from osgym.analysis.percentile import percentile
from osgym.episodes import EpisodeLimits, run_episode
from osgym.replicas import images
from osgym.replicas.client import SETTLE_MODES, SettleMode
from osgym.replicas.pool import ReplicaPool, limits_for
from osgym.sigterm import exit_on_sigterm
from osgym.tasks.spec import TaskSpec
from scripts.suite_check import _stressor

SCREENS = {"desktop": (1280, 800), "apps": (1920, 1080)}


def episode(pool: ReplicaPool, task: TaskSpec, mode: SettleMode, settle_s: float) -> dict[str, Any]:
    limits = EpisodeLimits(max_steps=40, deadline_s=240, settle_s=settle_s, settle_mode=mode)
    t0 = time.monotonic()
    with pool.lease(timeout=600) as r:
        t = run_episode(r, task, ScriptedPolicy(), seed=7, limits=limits)
    return {"template": task.id, "variant": task.variant, "mode": mode, "score": t.score,
            "error": t.error_class, "steps": len(t.steps), "step_ms": [s.env_ms for s in t.steps],
            "seconds": time.monotonic() - t0}


def summary(rows: list[dict[str, Any]], mode: str) -> dict[str, Any]:
    mine = [r for r in rows if r["mode"] == mode]
    steps = [ms for r in mine for ms in r["step_ms"]]
    return {"mode": mode, "episodes": len(mine), "oracle_passed": sum(r["score"] == 1.0 for r in mine),
            "failed": [f"{r['template']} seed {r['variant']}: {r['score']} {r['error'] or ''}".strip()
                       for r in mine if r["score"] != 1.0],
            "steps": len(steps), "step_ms_p50": percentile(steps, 50), "step_ms_p95": percentile(steps, 95),
            "step_ms_mean": statistics.fmean(steps) if steps else None,
            "episode_s_mean": statistics.fmean(r["seconds"] for r in mine) if mine else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tier", choices=sorted(SCREENS), default="desktop")
    ap.add_argument("--suites", default=None, help="comma-separated (default: every suite of the tier)")
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--replicas", type=int, default=2)
    ap.add_argument("--stress-cpu", type=int, default=0, help="run under stress-ng --cpu N (0: none)")
    ap.add_argument("--settle-s", type=float, default=1.0, help="the settle's timeout (the runner's default)")
    a = ap.parse_args()
    names = a.suites.split(",") if a.suites else [n for n in suites.list_suites()
                                                  if (suites.required_tier(n) or "desktop") == a.tier]
    tasks = [t.variant(seed) for seed in range(a.seeds) for n in names for t in suites.templates(n)]
    if not tasks:
        ap.error(f"no templates in {names}")
    jobs = [(task, mode) for i, task in enumerate(tasks)
            for mode in (SETTLE_MODES if i % 2 == 0 else SETTLE_MODES[::-1])]
    image = images.ensure_image(a.tier)
    emit(image=image, suites=names, variants=len(tasks), episodes=len(jobs), stress_cpu=a.stress_cpu,
         load_before=os.getloadavg()[0])
    rows: list[dict[str, Any]] = []

    def run(job: tuple[TaskSpec, SettleMode]) -> None:
        row = episode(pool, *job, a.settle_s)
        emit(**row)
        rows.append(row)

    loads: list[float] = []
    with (_stressor(a.stress_cpu) if a.stress_cpu else nullcontext("none")), \
            ReplicaPool(image, a.replicas, standby=1, name=f"bench-settle-{os.getpid()}", screen=SCREENS[a.tier],
                        limits=limits_for(a.tier)) as pool, ThreadPoolExecutor(a.replicas) as ex:
        futures = [ex.submit(run, job) for job in jobs]
        while not all(f.done() for f in futures):
            loads.append(os.getloadavg()[0])
            time.sleep(5)
        for future in futures:
            future.result()
    by_mode = {m: summary(rows, m) for m in SETTLE_MODES}
    for s in by_mode.values():
        emit(**s)
    fr, dm = by_mode["frames"], by_mode["damage"]
    emit(ratio="damage / frames", step_ms_p50=dm["step_ms_p50"] / fr["step_ms_p50"],
         step_ms_mean=dm["step_ms_mean"] / fr["step_ms_mean"],
         episode_s_mean=dm["episode_s_mean"] / fr["episode_s_mean"],
         load_mean=statistics.fmean(loads) if loads else None, load_max=max(loads, default=None))


if __name__ == "__main__":
    exit_on_sigterm()  # `timeout` or `kill` still removes its replicas
    main()
