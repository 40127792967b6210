"""Apps tier figures: cold ready time, idle memory, memory with Chromium + Calc open, threads.

Usage::

    python3 bench/bench_apps_tier.py [--image osgym/apps:<hash>] [--n 3] [--mem-mib 4096]

For each of ``--n`` fresh replicas (one at a time): seconds from ``pool.start()`` to
``/health`` answering (the pool's "ready") and on to the XFCE panel's window being mapped
(the session drawn); the container cgroup's memory (``memory.current``, or v1's
``memory.usage_in_bytes``: what the memory limit is checked against, page cache included)
after 20 s idle; then Chromium and ``libreoffice --calc`` launched, both windows mapped,
20 s settle, memory again, the peak (``memory.peak``, v1 ``memory.max_usage_in_bytes``)
and the cgroup task count (``pids.current``,
what ``pids_limit`` counts: threads, not processes). The replica runs with a high memory limit
(``--mem-mib``) so the figures are what the apps use, not what a limit squeezed them to.
``*_ws_mib``: the working set (usage minus inactive file cache).
Prints one JSON line per replica and a summary line with medians.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import uuid
from typing import Any

from osgym.replicas import images
from osgym.replicas.client import Replica
from osgym.replicas.pool import ReplicaLimits, ReplicaPool, limits_for, reap

MIB = 2**20


CGROUP_FILES = {  # cgroup v2 file, then v1's (this machine runs v1)
    "memory": ("memory.current", "memory/memory.usage_in_bytes"),
    "memory_peak": ("memory.peak", "memory/memory.max_usage_in_bytes"),
    "tasks": ("pids.current", "pids/pids.current"),
}


def _cgroup(replica: Replica, what: str) -> int | None:
    for name in CGROUP_FILES[what]:
        res = replica.execute(["cat", f"/sys/fs/cgroup/{name}"], timeout=10)
        text = res.output.strip()
        if res.returncode == 0 and text.isdigit():
            return int(text)
    return None


def _working_set(replica: Replica) -> int | None:
    """Usage minus inactive file cache: the working set ``docker stats`` and BENCHMARKS.md's desktop figures use."""
    usage = _cgroup(replica, "memory")
    for name, key in (("memory.stat", "inactive_file"), ("memory/memory.stat", "total_inactive_file")):
        res = replica.execute(["cat", f"/sys/fs/cgroup/{name}"], timeout=10)
        if res.returncode == 0 and usage is not None:
            stat = dict(line.split() for line in res.output.splitlines() if len(line.split()) == 2)
            if key in stat:
                return usage - int(stat[key])
    return None


def _wait_window(replica: Replica, needle: str, timeout: float) -> float:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if any(needle in w.wm_class.lower() or needle in w.title.lower() for w in replica.windows()):
            return time.monotonic() - t0
        time.sleep(0.2)
    raise TimeoutError(f"no window like {needle!r} within {timeout} s")


def _panel_mapped(replica: Replica) -> bool:
    res = replica.execute("xwininfo -root -tree | grep -c '\"xfce4-panel\".*1920x'", shell=True, timeout=10)
    return res.output.strip() not in ("", "0")


def one(image: str, mem_mib: int) -> dict[str, Any]:
    tier = limits_for("apps")
    limits = ReplicaLimits(mem_mib=mem_mib, cpus=tier.cpus, pids=tier.pids, shm_mib=tier.shm_mib)
    name = f"bench-apps-{uuid.uuid4().hex[:6]}"
    t0 = time.monotonic()
    pool = ReplicaPool(image, 1, name=name, screen=(1920, 1080), standby=0, limits=limits)
    try:
        pool.start()
        ready_s = time.monotonic() - t0
        with pool.lease(timeout=120) as r:
            while not _panel_mapped(r) and time.monotonic() - t0 < 120:
                time.sleep(0.2)
            session_s = time.monotonic() - t0
            time.sleep(20)
            idle, idle_ws = _cgroup(r, "memory"), _working_set(r)
            r.launch("chromium")
            r.launch("libreoffice --calc", shell=False)
            chromium_s = _wait_window(r, "chromium", 60)
            calc_s = _wait_window(r, "libreoffice-calc", 60)
            time.sleep(20)
            both, both_ws = _cgroup(r, "memory"), _working_set(r)
            peak = _cgroup(r, "memory_peak")
            tasks = _cgroup(r, "tasks")
    finally:
        pool.close()
        reap(pool=name)
    return {"ready_s": round(ready_s, 1), "session_drawn_s": round(session_s, 1),
            "idle_mib": round(idle / MIB) if idle else None, "chromium_calc_mib": round(both / MIB) if both else None,
            "idle_ws_mib": round(idle_ws / MIB) if idle_ws else None,
            "chromium_calc_ws_mib": round(both_ws / MIB) if both_ws else None,
            "peak_mib": round(peak / MIB) if peak else None, "tasks": tasks,
            "chromium_window_s": round(chromium_s, 1), "calc_window_s": round(calc_s, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--image", default=None, help="default: the apps tier's current tag (built if missing)")
    ap.add_argument("--n", type=int, default=3)
    ap.add_argument("--mem-mib", type=int, default=4096)
    args = ap.parse_args()
    image = args.image or images.ensure_image("apps")
    rows = []
    for _ in range(args.n):
        row = one(image, args.mem_mib)
        rows.append(row)
        print(json.dumps(row), flush=True)
    summary = {k: statistics.median(r[k] for r in rows if r[k] is not None)
               for k in rows[0] if all(r[k] is not None for r in rows)}
    print(json.dumps({"image": image, "n": len(rows), "median": summary}), flush=True)


if __name__ == "__main__":
    main()
