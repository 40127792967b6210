"""Throughput of `collect` and Prefect's overhead against a plain loop, measured in one run.

The plain arm is `run_collection` with its default executor (a thread pool); the flow arm is the
same run with the flow's executor (a subflow per batch, a Prefect task per episode).

Both arms run the same scripted episodes of one short task on a pool of the same
size with the same image, one after the other, each into its own store.

    python3 bench/bench_collect.py --episodes 2000 --replicas 6

Prints a markdown table and writes bench/results/collect.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")

from osgym.collection import run_collection  # noqa: E402
from osgym.collection.recipe import load_recipe  # noqa: E402
from osgym.replicas import images  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=2000)
    ap.add_argument("--replicas", type=int, default=6)
    ap.add_argument("--task", default="terminal-create-file")
    ap.add_argument("--order", default="flow,plain")
    ap.add_argument("--keep", action="store_true", help="keep the two datasets (printed path) instead of deleting them")
    args = ap.parse_args()
    image = images.ensure_image()
    tmp = Path(tempfile.mkdtemp(prefix="osgym-bench-"))
    try:
        run_arms(args, image, tmp)
    finally:
        if args.keep:
            print(f"datasets kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def run_arms(args: argparse.Namespace, image: str, tmp: Path) -> None:
    base = {"name": "bench", "episodes": args.episodes, "replicas": args.replicas, "standby": 2,
            "tasks": [args.task], "screen": [1024, 768], "settle_s": 0.3, "max_steps": 10,
            "episode_timeout_s": 120, "image": image, "batch_size": 250}
    results: dict[str, dict] = {}
    for arm in args.order.split(","):
        rec = load_recipe({**base, "store": str(tmp / arm)})
        t0 = time.monotonic()
        if arm == "flow":
            from flows.collect import collect

            out = collect(rec.model_dump(mode="json"))
        else:
            out = run_collection(rec)  # the default executor: a plain thread pool
        elapsed = time.monotonic() - t0
        steps = out["steps"]
        results[arm] = {"episodes": out["episodes"], "success": out["success"], "steps": steps,
                        "manifest_episodes": out["manifest_episodes"], "retried": out.get("retried"),
                        "load_avg_15min_after": round(os.getloadavg()[2], 2),
                        "elapsed_s": round(elapsed, 1), "episodes_per_min": round(60 * out["episodes"] / elapsed, 1),
                        "steps_per_s": round(steps / elapsed, 2)}
        print(arm, results[arm], flush=True)
    if "flow" in results and "plain" in results:
        results["overhead_pct"] = round(100 * (results["flow"]["elapsed_s"] / results["plain"]["elapsed_s"] - 1), 1)
    out_path = Path(__file__).parent / "results" / "collect.json"
    out_path.parent.mkdir(exist_ok=True)
    out_path.write_text(json.dumps({"args": vars(args), **results}, indent=2))
    print("| arm | episodes | ok | steps | s | episodes/min | steps/s |\n|---|---|---|---|---|---|---|")
    for arm in ("flow", "plain"):
        if arm in results:
            r = results[arm]
            print(f"| {arm} | {r['episodes']} | {r['success']} | {r['steps']} | {r['elapsed_s']} | "
                  f"{r['episodes_per_min']} | {r['steps_per_s']} |")
    if "overhead_pct" in results:
        print(f"\nPrefect overhead: {results['overhead_pct']}% of the plain loop's wall time")


if __name__ == "__main__":
    main()
