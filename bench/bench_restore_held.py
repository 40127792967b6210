"""Memory of held apps replicas, cold against restored (issue 41), side by side in one run.

    python3 bench/bench_restore_held.py --held 50 [--tier apps] [--screen 1920x1080] [--warm libreoffice]

For each arm (``cold``, then ``restore``) one pool holds ``--held`` replicas (all leased, idle), then this
reads each replica's cgroup memory (v1 ``memory.usage_in_bytes``, the figure of "memory per replica" in
BENCHMARKS.md) and the machine's MemAvailable before the pool and with all held. Needs root and, for the
restore arm, `make criu` (the main daemon in experimental mode). One JSON line per arm.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from osgym.replicas import images  # noqa: E402
from osgym.replicas.pool import ReplicaPool, limits_for  # noqa: E402


def mem_available_mib() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no MemAvailable in /proc/meminfo")


def cgroup_mib(container_id: str) -> float:
    return int(Path(f"/sys/fs/cgroup/memory/docker/{container_id}/memory.usage_in_bytes").read_text()) / 2**20


def arm(reset: str, args: argparse.Namespace, image: str) -> dict[str, object]:
    width, height = (int(v) for v in args.screen.split("x"))
    before = mem_available_mib()
    t0 = time.monotonic()
    with ReplicaPool(image, args.held, standby=0, screen=(width, height), limits=limits_for(args.tier), reset=reset,
                     warm=args.warm if reset == "restore" else "desktop", start_timeout=600, force=True) as pool:
        held = [pool.acquire(timeout=900) for _ in range(args.held)]
        ready_s = time.monotonic() - t0
        time.sleep(args.settle_s)  # let the desktops go idle (and ksmd merge, where it runs)
        per = [cgroup_mib(r.container.id) for r in held if r.container is not None]
        out = {"arm": reset, "held": len(held), "ready_all_s": round(ready_s, 1),
               "cgroup_mib_median": round(statistics.median(per), 1), "cgroup_mib_max": round(max(per), 1),
               "mem_available_drop_mib_per_replica": round((before - mem_available_mib()) / len(held), 1),
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
    args = ap.parse_args()
    image = images.ensure_image(args.tier)
    for reset in ("cold", "restore"):
        arm(reset, args, image)


if __name__ == "__main__":
    main()
