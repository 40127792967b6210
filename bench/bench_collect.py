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
    ap.add_argument("--image", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.arm:
        print(json.dumps(run_arm(args)), flush=True)
        return
    from osgym.replicas import images

    args.image = images.ensure_image(args.tier)
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
    rec = load_recipe({"name": "bench", "episodes": args.episodes, "replicas": args.replicas, "standby": 2,
                       "suite": args.suite, "tasks": [args.task], "tier": args.tier, "screen": [width, height],
                       "settle_s": args.settle_s, "max_steps": 30, "episode_timeout_s": 120,
                       "image": args.image, "batch_size": 250, "store": args.store})
    if args.arm == "flow":
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


def run_arms(args: argparse.Namespace, tmp: Path) -> None:
    runs: list[dict] = []
    for i, arm in enumerate(arm_sequence(args.order.split(","), args.repeat)):
        store = tmp / f"{arm}-{i}"
        cmd = [sys.executable, __file__, "--arm", arm, "--store", str(store), "--image", args.image,
               "--episodes", str(args.episodes), "--replicas", str(args.replicas), "--task", args.task,
               "--suite", args.suite, "--tier", args.tier, "--screen", args.screen, "--settle-s", str(args.settle_s)]
        load_before = round(os.getloadavg()[0], 2)
        cpu0 = _children_cpu_s()
        t0 = time.monotonic()
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True)
        elapsed = time.monotonic() - t0
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        r = {"arm": arm, "episodes": out["episodes"], "success": out["success"], "steps": out["steps"],
             "manifest_episodes": out["manifest_episodes"], "retried": out.get("retried"),
             "load_avg_1min_before": load_before, "load_avg_15min_after": round(os.getloadavg()[2], 2),
             "cpu_s": round(_children_cpu_s() - cpu0, 1), "elapsed_s": round(elapsed, 1),
             "episodes_per_min": round(60 * out["episodes"] / elapsed, 1)}
        runs.append(r)
        print(r, flush=True)
        if not args.keep:
            shutil.rmtree(store, ignore_errors=True)
    medians = {arm: statistics.median(r["elapsed_s"] for r in runs if r["arm"] == arm)
               for arm in dict.fromkeys(r["arm"] for r in runs)}
    result: dict = {"args": vars(args), "runs": runs, "median_elapsed_s": medians}
    if {"flow", "plain"} <= medians.keys():
        result["overhead_pct"] = round(100 * (medians["flow"] / medians["plain"] - 1), 1)
    out_path = Path(__file__).parent / "results" / args.out
    out_path.parent.mkdir(exist_ok=True)
    out_path.write_text(json.dumps(result, indent=2))
    print("| # | arm | episodes | ok | retried | wall s | episodes/min | CPU s |\n|---|---|---|---|---|---|---|---|")
    for i, r in enumerate(runs):
        print(f"| {i + 1} | {r['arm']} | {r['episodes']} | {r['success']} | {r['retried']} | {r['elapsed_s']} | "
              f"{r['episodes_per_min']} | {r['cpu_s']} |")
    print("\nmedian wall s: " + ", ".join(f"{a} {m}" for a, m in medians.items()))
    if "overhead_pct" in result:
        print(f"Prefect overhead: {result['overhead_pct']}% of the plain loop's median wall time")


def _children_cpu_s() -> float:
    """CPU seconds of reaped children: each arm's process and, once it has stopped it, the
    ephemeral Prefect server that the flow arm starts."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


if __name__ == "__main__":
    main()
