"""Apps-tier oracle episodes with the policy's accessibility tree as committed (only what is on screen) and with
the whole tree, side by side in one run: wall time per episode and the CPU the replica spent.

Each template's seed-0 variant runs once per arm, on a fresh apps replica (1920x1080, the tier's limits), the
whole-tree arm first. Run on a quiet machine:

    python3 bench/bench_oracle_a11y.py doc-find-replace,sheet-standard-filter
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's osgym and bench

import osgym.episodes.episode as episode
from osgym.agents.policies.scripted import ScriptedPolicy
from osgym.episodes import EpisodeLimits, run_episode
from osgym.replicas import images
from osgym.replicas.pool import ReplicaPool, limits_for
from osgym.suites import list_suites, required_tier, templates

LIMITS = EpisodeLimits(max_steps=40, deadline_s=240, settle_s=0.5)  # as tests/apps/test_apps_suites.py


def _whole(limits: EpisodeLimits, policy_needs: bool) -> bool:
    return limits.a11y or policy_needs


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("templates", help="comma-separated apps-tier template ids")
    args = p.parse_args()
    found = {t.id: t for n in list_suites() if required_tier(n) == "apps" for t in templates(n)}
    arms: list[tuple[str, Callable[[EpisodeLimits, bool], object]]] = [("whole", _whole), ("on-screen", episode._a11y)]
    with ReplicaPool(images.ensure_image("apps"), 1, standby=1, name="bench-oracle-a11y", screen=(1920, 1080),
                     limits=limits_for("apps")) as pool:
        for tid in args.templates.split(","):
            task = found[tid].variant(0)
            for arm, choose in arms:
                episode._a11y = choose  # type: ignore[assignment]
                with pool.lease(timeout=300) as r:
                    start = time.monotonic()
                    traj = run_episode(r, task, ScriptedPolicy(), seed=7, limits=LIMITS)
                    took = time.monotonic() - start
                cpu = r.usage.cpu_s if r.usage else float("nan")
                load = open("/proc/loadavg").read().split()[0]
                print(f"{tid:24s} {arm:10s} episode {took:5.1f} s  steps {len(traj.steps):2d}  replica cpu {cpu:5.1f} s"
                      f"  score {traj.score}  load {load}", flush=True)


if __name__ == "__main__":
    main()
