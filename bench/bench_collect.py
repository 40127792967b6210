"""Throughput of `collect` and Prefect's overhead against a plain loop, measured in one run.

The plain arm is `run_collection` with its default executor (a thread pool); the flow arm is the
same run with the flow's executor (a subflow per batch, a Prefect task per episode).

Both arms run the same scripted episodes of one short task on a pool of the same
size with the same image, one after the other, each into its own store and in its own
fresh process, so each run pays its own imports (and the flow its ephemeral server). With
``--repeat N`` each arm runs N times in ABBA order and the overhead compares the
arms' median wall times; each run also records the CPU seconds of its process and
its children (the ephemeral Prefect server is one).

    python3 bench/bench_collect.py --episodes 500 --replicas 6 --repeat 2 --out collect-500-abba.json

An arm named ``ARM+restore`` runs ARM with ``reset: restore`` (issue 41: replicas restored from a checkpoint of a
warmed one, which is made before the first arm and timed apart, so that every arm finds it). Each run also
records the whole machine's CPU seconds over it (``/proc/stat``), since the replicas' CPU is not the arm's, and
the same over its steady state (:func:`steady`: once as many episodes have ended as there are replicas, until as
many are left), which leaves out what a run pays once (its imports, the ephemeral Prefect server's start, the
pool's first starts and its close) and its tail, when fewer episodes than replicas are left:

    python3 bench/bench_collect.py --order flow,flow+restore --repeat 2 --suite apps-spreadsheet --tier apps \
        --screen 1920x1080 --settle-s 1.0 --task sheet-save-csv --episodes 30 --replicas 6

Prints a markdown table and writes bench/results/<--out>.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=2000)
    ap.add_argument("--replicas", type=int, default=6)
    ap.add_argument("--task", default="terminal-create-file")
    ap.add_argument("--suite", default="desktop-basics", help="the built-in suite that holds --task")
    ap.add_argument("--tier", default="desktop", choices=["desktop", "apps"])
    ap.add_argument("--screen", default="1024x768", help="WxH; the apps tier's suites are checked at 1920x1080")
    ap.add_argument("--settle-s", type=float, default=0.3, help="the recipe's settle_s (a step's settle cap)")
    ap.add_argument("--order", default="flow,plain")
    ap.add_argument("--repeat", type=int, default=1, help="run each arm this many times, in ABBA order")
    ap.add_argument("--out", default="collect.json", help="file name under bench/results/")
    ap.add_argument("--keep", action="store_true", help="keep the datasets (printed path) instead of deleting them")
    ap.add_argument("--arm", help=argparse.SUPPRESS)  # internal: run one arm in this process
    ap.add_argument("--store", help=argparse.SUPPRESS)
    ap.add_argument("--image", help="an image of the tier to compare (default: the current one, built if missing)")
    args = ap.parse_args()
    if args.arm:
        print(json.dumps(run_arm(args)), flush=True)
        return
    from osgym.replicas import images

    args.image = args.image or images.ensure_image(args.tier)
    tmp = Path(tempfile.mkdtemp(prefix="osgym-bench-"))
    try:
        run_arms(args, tmp)
    finally:
        if args.keep:
            print(f"datasets kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def run_arm(args: argparse.Namespace) -> dict:
    """One arm, in a fresh process (the parent times it, imports included)."""
    from osgym.collection import run_collection
    from osgym.collection.recipe import load_recipe

    width, height = (int(v) for v in args.screen.split("x"))
    arm, _, reset = args.arm.partition("+")
    rec = load_recipe({"name": "bench", "episodes": args.episodes, "replicas": args.replicas, "standby": 2,
                       "suite": args.suite, "tasks": [args.task], "tier": args.tier, "screen": [width, height],
                       "settle_s": args.settle_s, "max_steps": 30, "episode_timeout_s": 120,
                       "image": args.image, "batch_size": 250, "store": args.store, "reset": reset or "cold"})
    if arm == "flow":
        from flows.collect import collect

        return collect(rec.model_dump(mode="json"))
    return run_collection(rec)  # the default executor: a plain thread pool


def arm_sequence(order: list[str], repeat: int) -> list[str]:
    """Arms in ABBA order, so drift over the run (a warming page cache, a filling disk) hits both.

    >>> arm_sequence(["flow", "plain"], 2)
    ['flow', 'plain', 'plain', 'flow']
    """
    seq: list[str] = []
    for i in range(repeat):
        seq += order if i % 2 == 0 else order[::-1]
    return seq


def make_checkpoint(args: argparse.Namespace) -> float:
    """Seconds to make (or find) the checkpoint the restore arms use: a pool of the runs' configuration."""
    from osgym.replicas.pool import ReplicaPool, limits_for
    from osgym.replicas.warm import warm_state_for
    from osgym.suites import expand

    width, height = (int(v) for v in args.screen.split("x"))
    warm = warm_state_for([t.related_apps for t in expand(args.suite, [args.task], 1, 0)], args.tier)
    t0 = time.monotonic()
    with ReplicaPool(args.image, 1, standby=0, screen=(width, height), limits=limits_for(args.tier), reset="restore",
                     warm=warm) as pool:
        made = [e.cause for e in pool.events if e.event in ("checkpointed", "restore_failed")]
    print(f"checkpoint ({warm}): {made} in {time.monotonic() - t0:.1f} s", flush=True)
    return round(time.monotonic() - t0, 1)


def _machine_cpu_s() -> float:
    """Busy CPU seconds of the whole machine since boot (/proc/stat: all but idle and iowait)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def run_arms(args: argparse.Namespace, tmp: Path) -> None:
    runs: list[dict] = []
    checkpoint_s = make_checkpoint(args) if any(a.endswith("+restore") for a in args.order.split(",")) else None
    for i, arm in enumerate(arm_sequence(args.order.split(","), args.repeat)):
        store = tmp / f"{arm}-{i}"
        cmd = [sys.executable, __file__, "--arm", arm, "--store", str(store), "--image", args.image,
               "--episodes", str(args.episodes), "--replicas", str(args.replicas), "--task", args.task,
               "--suite", args.suite, "--tier", args.tier, "--screen", args.screen, "--settle-s", str(args.settle_s)]
        load_before = round(os.getloadavg()[0], 2)
        cpu0, machine0 = _children_cpu_s(), _machine_cpu_s()
        t0 = time.monotonic()
        with MachineClock() as clock:
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True)
        elapsed = time.monotonic() - t0
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        r = {"arm": arm, "episodes": out["episodes"], "success": out["success"], "steps": out["steps"],
             "manifest_episodes": out["manifest_episodes"], "retried": out.get("retried"),
             "load_avg_1min_before": load_before, "load_avg_15min_after": round(os.getloadavg()[2], 2),
             "cpu_s": round(_children_cpu_s() - cpu0, 1), "machine_cpu_s": round(_machine_cpu_s() - machine0, 1),
             "machine_cpu_s_per_episode": round((_machine_cpu_s() - machine0) / max(out["episodes"], 1), 2),
             **_p50s(store), "elapsed_s": round(elapsed, 1),
             "episodes_per_min": round(60 * out["episodes"] / elapsed, 1),
             **steady(_episode_ends(store), clock.samples, args.replicas)}
        runs.append(r)
        print(r, flush=True)
        if not args.keep:
            shutil.rmtree(store, ignore_errors=True)
    medians = {arm: statistics.median(r["elapsed_s"] for r in runs if r["arm"] == arm)
               for arm in dict.fromkeys(r["arm"] for r in runs)}
    result: dict = {"args": vars(args), "runs": runs, "median_elapsed_s": medians, "checkpoint_s": checkpoint_s}
    if {"flow", "plain"} <= medians.keys():
        result["overhead_pct"] = round(100 * (medians["flow"] / medians["plain"] - 1), 1)
    out_path = Path(__file__).parent / "results" / args.out
    out_path.parent.mkdir(exist_ok=True)
    out_path.write_text(json.dumps(result, indent=2))
    print("| # | arm | episodes | ok | retried | wall s | episodes/min | CPU s | machine CPU-s per episode "
          "| of it in the replica during the episode | ready p50 s | setup p50 s "
          "| steady: episodes | episodes/min | machine CPU-s per episode |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for i, r in enumerate(runs):
        print(f"| {i + 1} | {r['arm']} | {r['episodes']} | {r['success']} | {r['retried']} | {r['elapsed_s']} | "
              f"{r['episodes_per_min']} | {r['cpu_s']} | {r['machine_cpu_s_per_episode']} | "
              f"{r['replica_cpu_s_per_episode']} | {r['ready_p50_s']} | {r['setup_p50_s']} | "
              f"{r['steady_episodes']} | {r['steady_episodes_per_min']} | {r['steady_machine_cpu_s_per_episode']} |")
    print("\nmedian wall s: " + ", ".join(f"{a} {m}" for a, m in medians.items()))
    if "overhead_pct" in result:
        print(f"Prefect overhead: {result['overhead_pct']}% of the plain loop's median wall time")


def _p50s(store: Path) -> dict[str, float | None]:
    """Medians over the run's dataset: seconds from a replica's start request to ready (its pool's ``ready``
    events), and an episode's setup (the task's app opened: Calc, for sheet-save-csv); and the mean CPU-s its
    replica used during an episode (its cgroup, lease to release: setup, steps, evaluation), the part of the
    machine's CPU per episode that is inside the replica while it works."""
    out: dict[str, float | None] = {"ready_p50_s": None, "setup_p50_s": None, "replica_cpu_s_per_episode": None}
    for key, table, sql in (("ready_p50_s", "pool_events", "median(elapsed_s) filter (where event = 'ready')"),
                            ("setup_p50_s", "episodes", "median(setup_s)"),
                            ("replica_cpu_s_per_episode", "episodes", "avg(cpu_s)")):
        rows = _select(store, table, sql)
        out[key] = round(rows[0][0], 3) if rows and rows[0][0] is not None else None
    return out


def _select(store: Path, table: str, sql: str) -> list[tuple]:
    """``select {sql}`` over one table of the run's dataset; no rows if the run wrote none."""
    import duckdb

    files = [str(f) for f in store.glob(f"*/{table}/*/*.parquet")]
    return duckdb.sql(f"select {sql} from read_parquet({files})").fetchall() if files else []


class MachineClock:
    """The machine's busy CPU seconds against wall time (epoch seconds), sampled every ``period`` s on a thread
    while the block runs (the arm's process cannot count the replicas' CPU, nor this process the arm's server's
    until it has stopped)."""

    def __init__(self, period: float = 0.5) -> None:
        self.period = period
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="machine-clock", daemon=True)

    def _run(self) -> None:
        while True:
            self.samples.append((time.time(), _machine_cpu_s()))
            if self._stop.wait(self.period):
                break

    def __enter__(self) -> MachineClock:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.samples.append((time.time(), _machine_cpu_s()))


def _at(samples: list[tuple[float, float]], t: float) -> float:
    """The machine's busy CPU seconds at ``t``, linear between the two samples around it."""
    for (t0, c0), (t1, c1) in zip(samples, samples[1:], strict=False):
        if t0 <= t <= t1:
            return c0 if t1 == t0 else c0 + (c1 - c0) * (t - t0) / (t1 - t0)
    raise ValueError(f"time {t} is outside the samples ({samples[0][0]} to {samples[-1][0]})")


def steady(ends: list[float], samples: list[tuple[float, float]], replicas: int) -> dict[str, float | int | None]:
    """Episodes a minute and machine CPU-s an episode over a run's steady state: from the end of its
    ``replicas``-th episode (every replica has had an episode) to the end of the one with ``replicas`` left after
    it (from there on fewer episodes than replicas run). None when the run is too short to have one.

    >>> samples = [(float(t), 2.0 * t) for t in range(0, 101)]  # two cores busy throughout
    >>> steady([10.0 * i for i in range(1, 10)], samples, 2)  # an episode every 10 s, 9 of them
    {'steady_episodes': 5, 'steady_episodes_per_min': 6.0, 'steady_machine_cpu_s_per_episode': 20.0}
    >>> steady([1.0, 2.0, 3.0], samples, 2)["steady_episodes"] is None
    True
    """
    ends = sorted(ends)
    first, last = replicas - 1, len(ends) - 1 - replicas
    if last <= first:
        return {"steady_episodes": None, "steady_episodes_per_min": None, "steady_machine_cpu_s_per_episode": None}
    n, seconds = last - first, ends[last] - ends[first]
    cpu = _at(samples, ends[last]) - _at(samples, ends[first])
    return {"steady_episodes": n, "steady_episodes_per_min": round(60 * n / seconds, 1) if seconds > 0 else None,
            "steady_machine_cpu_s_per_episode": round(cpu / n, 2)}


def _episode_ends(store: Path) -> list[float]:
    """When each of the run's episodes ended (epoch seconds), from its dataset."""
    return [r[0] / 1e6 for r in _select(store, "episodes", "epoch_us(ended_at)") if r[0] is not None]


def _children_cpu_s() -> float:
    """CPU seconds of reaped children: each arm's process and, once it has stopped it, the
    ephemeral Prefect server that the flow arm starts."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


if __name__ == "__main__":
    main()
