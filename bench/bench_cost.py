"""Cost per replica-day from a measured run: collect a recipe, fold its accounting into a profile, price it.

Usage::

    python3 bench/bench_cost.py datasets/smoke.yaml [--episodes N] [--replicas N] [--prices FILE]

The recipe runs into a temporary store (the scripted oracle, so no model tokens). Each episode's
replica is accounted from its cgroup while leased (CPU seconds, mean PSS, peak), and the run's
profile (:func:`osgym.analysis.profile.measured_profile`) gives the density on the price table's
default host, the cost per replica-day, per episode and per success, and a 1,000-replica fleet.
For comparison: OSGym's published claim ($0.23 per replica-day) and E2B's list prices ($0.0504
per vCPU-hour, $0.0162 per GiB-hour), at the measured cores and memory and at 2 vCPU / 4 GiB.
Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from osgym.analysis import analytics  # noqa: E402
from osgym.analysis.profile import measured_profile  # noqa: E402
from osgym.collection import run_collection  # noqa: E402
from osgym.replicas import cost  # noqa: E402

OSGYM_CLAIM_USD_PER_DAY = 0.23
E2B_USD_PER_VCPU_HOUR = 0.0504
E2B_USD_PER_GIB_HOUR = 0.0162


def e2b_day(vcpus: float, gib: float) -> float:
    """E2B's list price for a sandbox of this size kept 24 hours."""
    return 24 * (vcpus * E2B_USD_PER_VCPU_HOUR + gib * E2B_USD_PER_GIB_HOUR)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("recipe", type=Path)
    ap.add_argument("--episodes", type=int)
    ap.add_argument("--replicas", type=int)
    ap.add_argument("--prices", type=Path)
    args = ap.parse_args()
    recipe = yaml.safe_load(args.recipe.read_text())
    with tempfile.TemporaryDirectory() as tmp:
        recipe["store"] = tmp
        if args.episodes:
            recipe["episodes"] = args.episodes
        if args.replicas:
            recipe["replicas"] = args.replicas
        summary = run_collection(recipe, run_id="bench-cost")
        con = analytics.connect(tmp, summary["dataset"])
        profile = measured_profile(con, "bench-cost", name=summary["dataset"])
    prices = cost.load_prices(args.prices)
    host = prices.host()
    d = cost.density(host.vcpus, host.memory_gib, profile)
    episode = cost.cost_of(prices, profile)
    fleet = cost.fleet(1000, host, profile)
    out = {
        "recipe": str(args.recipe), "tier": recipe.get("tier", "desktop"), "episodes": summary["episodes"],
        "success": summary["success"], "replicas": recipe.get("replicas"), "elapsed_s": summary["elapsed_s"],
        "cores": round(profile.cores, 4), "mem_mib": round(profile.mem_mib, 1),
        "mem_peak_mib": round(profile.mem_peak_mib or 0, 1), "replica_s": round(profile.replica_s, 2),
        "bytes_per_episode": round(profile.bytes), "host": host.instance, "replicas_per_host": d.replicas,
        "binding": d.binding, "usd_per_replica_day": round(cost.replica_day_usd(host, d.replicas), 5),
        "usd_per_episode": episode.total_usd, "usd_per_success": episode.total_usd / (profile.success_rate or 1),
        "fleet_1000_hosts": fleet.hosts, "fleet_1000_usd_per_day": round(fleet.usd_per_day, 2),
        "osgym_claim_usd_per_day": OSGYM_CLAIM_USD_PER_DAY,
        "e2b_usd_per_day_at_measured": round(e2b_day(profile.cores, profile.mem_mib / 1024), 4),
        "e2b_usd_per_day_2vcpu_4gib": round(e2b_day(2, 4), 4),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
