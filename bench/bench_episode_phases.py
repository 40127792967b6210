"""Where an apps episode's CPU goes inside its replica, phase by phase and call by call (issue 41).

Episodes of one apps template (``sheet-save-csv`` by default) run one after another with the scripted oracle, each
on a fresh replica of a pool (``--reset restore`` or ``cold``), as the flow runs them (the recipe's defaults: a
damage settle of ``--settle-s``, PNG observations). The replica's cgroup CPU (``cpuacct.usage``) is read around
every call the episode makes to it and at the boundaries of its phases: ``setup`` (the task's config and the first
observation), ``steps`` (the policy's actions, their settles and observations) and ``evaluate`` (the last settle,
the postconfig and the evaluator). What the replica burns between calls (its applications drawing, a save still
running) is each phase's ``between calls``.

Around each episode the whole machine is read too (``/proc/stat``'s busy time), so that what an episode costs
outside its replica shows: ``machine`` splits each episode's share of the loop into ``lease`` (the previous
replica's removal and this one's start or restore, the pool's work with nothing else running; null for the first
episode, whose replica started with the pool), ``episode`` and ``release``, and says how much of each was the
replica's cgroup, this process (the runner, the policy and the client: the tree's XML is parsed here), and dockerd
with containerd; the rest is the shims, runc, CRIU, the kernel and anything else the machine ran.

Usage:
    python bench/bench_episode_phases.py --episodes 6 --reset restore > out.json
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_pool import _container_cpu_seconds, _cpu_seconds, _daemon_pids, _proc_cpu_seconds  # noqa: E402
from osgym.agents.policies.scripted import ScriptedPolicy  # noqa: E402
from osgym.episodes.episode import Episode  # noqa: E402
from osgym.episodes.limits import EpisodeLimits  # noqa: E402
from osgym.replicas import images  # noqa: E402
from osgym.replicas.pool import ReplicaPool, limits_for  # noqa: E402
from osgym.suites import generate  # noqa: E402


class Metered:
    """A replica whose every call is charged, in the replica's CPU and in wall time, to the phase it was made in."""

    def __init__(self, replica: Any) -> None:
        assert replica.container is not None
        self._replica = replica
        self._ids = [replica.container.id]
        self.phase = "setup"
        self.calls: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
        self.a11y_reads: list[dict[str, Any]] = []

    def cpu(self) -> float:
        return _container_cpu_seconds(self._ids)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._replica, name)
        if not callable(attr):
            return attr

        def metered(*args: Any, **kwargs: Any) -> Any:
            c0, t0 = self.cpu(), time.perf_counter()
            try:
                return attr(*args, **kwargs)
            finally:
                cpu, wall = self.cpu() - c0, time.perf_counter() - t0
                key = f"{name}[a11y={kwargs['a11y']}]" if "a11y" in kwargs else name
                entry = self.calls[(self.phase, key)]
                entry[0] += 1
                entry[1] += cpu
                entry[2] += wall
                if kwargs.get("a11y"):
                    self.a11y_reads.append({"phase": self.phase, "a11y": kwargs["a11y"],
                                            "window": kwargs.get("a11y_window"),
                                            "cpu_s": round(cpu, 3), "wall_s": round(wall, 3)})
        return metered


class PhasedEpisode(Episode):
    """The episode, telling its metered replica when the evaluation starts."""

    def _finish(self, *args: Any, **kwargs: Any) -> Any:
        self.replica.phase = "evaluate"  # type: ignore[attr-defined]
        return super()._finish(*args, **kwargs)


def one_episode(replica: Any, task: Any, limits: EpisodeLimits) -> dict[str, Any]:
    metered = Metered(replica)
    phase_cpu: dict[str, float] = {}
    phase_wall: dict[str, float] = {}
    episode = PhasedEpisode(metered, task, seed=0, limits=limits)  # type: ignore[arg-type]
    policy = ScriptedPolicy()
    start_cpu, t0 = metered.cpu(), time.perf_counter()
    observation = episode.reset()
    phase_cpu["setup"], phase_wall["setup"] = metered.cpu() - start_cpu, time.perf_counter() - t0
    metered.phase = "steps"
    mark_cpu, mark_t = metered.cpu(), time.perf_counter()
    policy.reset(task, seed=0)
    while True:
        decision = policy.act(observation, episode.steps)
        outcome = episode.step(decision)
        if outcome.done or outcome.refused is not None:
            break
        observation = outcome.observation
    end_cpu, end_t = metered.cpu(), time.perf_counter()
    trajectory = episode.close()
    # the evaluate phase's own share comes from its calls (the step that ends the episode runs both)
    evaluate_calls = sum(v[1] for (p, _), v in metered.calls.items() if p == "evaluate")
    evaluate_wall = sum(v[2] for (p, _), v in metered.calls.items() if p == "evaluate")
    phase_cpu["evaluate"], phase_wall["evaluate"] = evaluate_calls, evaluate_wall
    phase_cpu["steps"] = end_cpu - mark_cpu - evaluate_calls
    phase_wall["steps"] = end_t - mark_t - evaluate_wall
    calls: dict[str, dict[str, float]] = {}
    for (phase, name), (n, cpu, wall) in sorted(metered.calls.items()):
        calls[f"{phase}.{name}"] = {"n": n, "cpu_s": round(cpu, 3), "wall_s": round(wall, 3)}
    between = {p: round(phase_cpu[p] - sum(v[1] for (q, _), v in metered.calls.items() if q == p), 3)
               for p in phase_cpu}
    return {"score": trajectory.score, "termination": trajectory.termination, "steps": len(trajectory.steps),
            "total_cpu_s": round(end_cpu - start_cpu, 3), "total_wall_s": round(end_t - t0, 3),
            "phase_cpu_s": {k: round(v, 3) for k, v in phase_cpu.items()},
            "phase_wall_s": {k: round(v, 3) for k, v in phase_wall.items()},
            "between_calls_cpu_s": between, "calls": calls, "a11y_reads": metered.a11y_reads}


class MachineMeter:
    """Busy CPU seconds of the machine, this process and Docker's daemons, read together."""

    def __init__(self) -> None:
        self.daemons = _daemon_pids()

    def read(self) -> dict[str, float]:
        me = resource.getrusage(resource.RUSAGE_SELF)
        return {"machine": _cpu_seconds(), "runner": me.ru_utime + me.ru_stime,
                "daemons": sum(_proc_cpu_seconds(p) for p in self.daemons), "t": time.perf_counter()}

    @staticmethod
    def between(a: dict[str, float], b: dict[str, float], clone_cpu_s: float) -> dict[str, float]:
        d = {k: b[k] - a[k] for k in a}
        rest = d["machine"] - d["runner"] - d["daemons"] - clone_cpu_s
        return {"machine_cpu_s": round(d["machine"], 3), "clone_cpu_s": round(clone_cpu_s, 3),
                "runner_cpu_s": round(d["runner"], 3), "daemons_cpu_s": round(d["daemons"], 3),
                "rest_cpu_s": round(rest, 3), "wall_s": round(d["t"], 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=6)
    ap.add_argument("--reset", choices=("restore", "cold"), default="restore")
    ap.add_argument("--warm", default="libreoffice")
    ap.add_argument("--suite", default="apps-spreadsheet")
    ap.add_argument("--task", default="sheet-save-csv")
    ap.add_argument("--settle-s", type=float, default=1.0)
    ap.add_argument("--screen", default="1920x1080")
    ap.add_argument("--image", help="an apps image to compare (default: the current one, built if missing)")
    args = ap.parse_args()
    w, h = (int(x) for x in args.screen.split("x"))
    tasks = generate(args.suite, args.episodes, seed=1, tasks=[args.task])
    limits = EpisodeLimits(settle_s=args.settle_s)
    runs = []
    with ReplicaPool(args.image or images.ensure_image("apps"), 1, standby=0, screen=(w, h), limits=limits_for("apps"),
                     reset=args.reset, warm=args.warm if args.reset == "restore" else "desktop",
                     name=f"bench-phases-{int(time.time())}") as pool:
        meter = MachineMeter()
        for task in tasks:
            m0 = meter.read()
            with pool.lease() as replica:
                m1 = meter.read()
                clone0 = _container_cpu_seconds([replica.container.id])
                run = one_episode(replica, task, limits)
                clone1 = _container_cpu_seconds([replica.container.id])
                m2 = meter.read()
            m3 = meter.read()
            # lease: clone0 is the clone's CPU from its cgroup's creation (CRIU's restore runs in it) to the lease.
            # The first replica was started with the pool, before m0: its lease holds no start, so none is given.
            lease = meter.between(m0, m1, clone0) if runs else None
            run["machine"] = {"lease": lease, "episode": meter.between(m1, m2, clone1 - clone0),
                              "release": meter.between(m2, m3, 0.0)}
            runs.append(run)
            print(json.dumps({k: runs[-1][k] for k in ("score", "total_cpu_s", "phase_cpu_s", "machine")}),
                  file=sys.stderr)
    medians = {p: round(statistics.median(r["phase_cpu_s"][p] for r in runs), 3) for p in runs[0]["phase_cpu_s"]}
    machine = {}
    for part in ("lease", "episode", "release"):
        measured = [r["machine"][part] for r in runs if r["machine"][part] is not None]
        if measured:
            machine[part] = {k: round(statistics.median(m[k] for m in measured), 3) for k in measured[0]}
    print(json.dumps({"args": vars(args), "median_phase_cpu_s": medians, "median_machine": machine,
                      "median_total_cpu_s": round(statistics.median(r["total_cpu_s"] for r in runs), 3),
                      "episodes": runs}, indent=1))


if __name__ == "__main__":
    main()
