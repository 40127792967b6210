"""Memory of held apps replicas, cold against restored (issue 41), side by side in one run.

    python3 bench/bench_restore_held.py --held 50 [--tier apps] [--screen 1920x1080] [--warm libreoffice]
        [--open-calc] [--order cold,restore]

For each arm (``cold``, then ``restore``) one pool holds ``--held`` replicas (all leased, idle; with
``--open-calc`` each with ``libreoffice --calc``'s window open, as a spreadsheet task has it), then this
reads each replica's cgroup memory (v1 ``memory.usage_in_bytes``, the figure of "memory per replica" in
BENCHMARKS.md) and the machine's MemAvailable before the pool and with all held, after ``--settle-s``. Where
the operator runs KSM (``osgym host tune --ksm``), the pages it merged meanwhile are reported too
(``pages_sharing``): clones of one checkpoint start with the same pages. Needs root and, for the restore arm,
`make criu` (the main daemon in experimental mode). One JSON line per arm.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.bench_apps_tier import _wait_window  # noqa: E402
from bench.bench_pool import mem_available_mib  # noqa: E402
from osgym.replicas import images, ksm  # noqa: E402
from osgym.replicas.client import Replica  # noqa: E402
from osgym.replicas.pool import ReplicaPool, limits_for  # noqa: E402


def cgroup_mib(container_id: str) -> float:
    return int(Path(f"/sys/fs/cgroup/memory/docker/{container_id}/memory.usage_in_bytes").read_text()) / 2**20


def open_calc(replica: Replica) -> float:
    """Launch ``libreoffice --calc`` and wait for its window (at most 120 s); the seconds it took."""
    replica.launch(["libreoffice", "--calc"])
    return _wait_window(replica, "libreoffice-calc", 120)


def arm(reset: str, args: argparse.Namespace, image: str) -> dict[str, object]:
    width, height = (int(v) for v in args.screen.split("x"))
    before, ksm_before = mem_available_mib(), ksm.status().saved_mib
    t0 = time.monotonic()
    with ReplicaPool(image, args.held, standby=0, screen=(width, height), limits=limits_for(args.tier), reset=reset,
                     warm=args.warm if reset == "restore" else "desktop", start_timeout=600, force=True) as pool:
        held = [pool.acquire(timeout=900) for _ in range(args.held)]
        if args.open_calc:
            with ThreadPoolExecutor(4) as ex:  # four at a time: fifty Calcs starting at once is not a task's load
                list(ex.map(open_calc, held))
        ready_s = time.monotonic() - t0
        ksmd0 = ksm.ksmd_cpu_seconds() or 0.0
        time.sleep(args.settle_s)  # let the desktops go idle (and ksmd merge, where it runs)
        ksmd_cores = ((ksm.ksmd_cpu_seconds() or 0.0) - ksmd0) / args.settle_s
        per = [cgroup_mib(r.container.id) for r in held if r.container is not None]
        out = {"arm": reset, "held": len(held), "calc_open": args.open_calc, "ready_all_s": round(ready_s, 1),
               "cgroup_mib_median": round(statistics.median(per), 1), "cgroup_mib_max": round(max(per), 1),
               "mem_available_drop_mib_per_replica": round((before - mem_available_mib()) / len(held), 1),
               "ksm_merged_mib_per_replica": round((ksm.status().saved_mib - ksm_before) / len(held), 1),
               "ksmd_cores_while_settling": round(ksmd_cores, 3),
               "restored": pool.stats.restored, "restore_failures": pool.stats.restore_failures,
               "load": [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]}
    print(json.dumps(out), flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--held", type=int, default=50)
    ap.add_argument("--tier", default="apps", choices=["apps", "desktop"])
    ap.add_argument("--screen", default="1920x1080")
    ap.add_argument("--warm", default="libreoffice", choices=["desktop", "libreoffice"])
    ap.add_argument("--settle-s", type=float, default=30.0)
    ap.add_argument("--open-calc", action="store_true", help="open a Calc window in every held replica")
    ap.add_argument("--order", default="cold,restore", help="the arms, in order (ABBA: cold,restore,restore,cold)")
    args = ap.parse_args()
    image = images.ensure_image(args.tier)
    for reset in args.order.split(","):
        arm(reset, args, image)


if __name__ == "__main__":
    main()
