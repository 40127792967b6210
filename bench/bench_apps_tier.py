"""Apps tier figures: cold ready time, idle memory, memory with Chromium + Calc open, threads.

Usage::

    python3 bench/bench_apps_tier.py [--tier apps|desktop] [--image TAG] [--n 3] [--mem-mib 4096]

``--tier desktop`` measures the desktop tier the same way (idle only: it has no Chromium or
Calc), for a side-by-side table from one session.

For each of ``--n`` fresh replicas (one at a time): seconds from ``pool.start()`` to
``/health`` answering (the pool's "ready") and on to the XFCE panel's window being mapped
(the session drawn); the container cgroup's memory (``memory.current``, or v1's
``memory.usage_in_bytes``: what the memory limit is checked against, page cache included)
after 20 s idle; then Chromium and ``libreoffice --calc`` launched, both windows mapped,
20 s settle, memory again, the peak (``memory.peak``, v1 ``memory.max_usage_in_bytes``)
and the cgroup task count (``pids.current``,
what ``pids_limit`` counts: threads, not processes). The replica runs with a high memory limit
(``--mem-mib``) so the figures are what the apps use, not what a limit squeezed them to.
``*_ws_mib``: the working set (usage minus inactive file cache). ``*_pss_mib``: the proportional
set size of every process in the container plus its ``containerd-shim`` (from the host's
``/proc/<pid>/smaps_rollup``: shared libraries split between the processes that map them), the
figure that adds up across replicas on one host; it needs root on the Docker host. One replica
alone carries the whole of every shared page (before Xvfb ran without GLX, its libLLVM alone was ~43 MiB), so
``--shared K`` also holds K idle replicas at once and reports their PSS divided by K: what one
more replica costs on a host that already runs some.
``--home layer`` keeps the home on the container's writable layer (``home_mib=None``, as before
issue 38) instead of the tier's capped tmpfs; ``--home both`` alternates the two, one replica each per
round, for a side-by-side table from one session (what the tmpfs home costs in memory).
Prints one JSON line per replica and a summary line with medians (per home, with ``both``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's osgym and bench

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


def _pss_mib(replica: Replica) -> float | None:
    """PSS of the container's processes and its shim, read on the host (None if /proc is not readable)."""
    container = replica.container
    if container is None:
        return None
    pids = {int(row[1]) for row in container.top(ps_args="-eo user,pid")["Processes"]}
    for d in Path("/proc").iterdir():
        try:
            if d.name.isdigit() and b"containerd-shim" in (d / "cmdline").read_bytes()[:200] \
                    and container.id.encode() in (d / "cmdline").read_bytes():
                pids.add(int(d.name))
        except OSError:
            continue
    total_kib = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total_kib += int(line.split()[1])
        except (OSError, ValueError):
            continue  # a process that exited meanwhile
    return round(total_kib / 1024, 1) if total_kib else None


def shared_idle(image: str, tier_name: str, k: int) -> dict[str, Any]:
    """K idle replicas at once, 20 s after all are ready: PSS (with shims) per replica."""
    name = f"bench-apps-shared-{uuid.uuid4().hex[:6]}"
    pool = ReplicaPool(image, k, name=name, screen=(1920, 1080), standby=0, limits=limits_for(tier_name))
    try:
        pool.start()
        held = [pool.acquire(timeout=180) for _ in range(k)]
        time.sleep(20)
        pss = [_pss_mib(r) for r in held]
        for r in held:
            pool.release(r)
    finally:
        pool.close()
        reap(pool=name)
    known = [p for p in pss if p is not None]
    return {"shared": k, "idle_pss_mib_per_replica": round(sum(known) / len(known), 1) if known else None}


def _panel_mapped(replica: Replica) -> bool:
    res = replica.execute("xwininfo -root -tree | grep -c '\"xfce4-panel\".*1920x'", shell=True, timeout=10)
    return res.output.strip() not in ("", "0")


def one(image: str, mem_mib: int, tier_name: str, home: str = "tmpfs") -> dict[str, Any]:
    tier = limits_for(tier_name)
    limits = ReplicaLimits(mem_mib=mem_mib, cpus=tier.cpus, pids=tier.pids, shm_mib=tier.shm_mib,
                           home_mib=tier.home_mib if home == "tmpfs" else None)
    name = f"bench-apps-{uuid.uuid4().hex[:6]}"
    t0 = time.monotonic()
    pool = ReplicaPool(image, 1, name=name, screen=(1920, 1080), standby=0, limits=limits)
    try:
        pool.start()
        ready_s = time.monotonic() - t0
        with pool.lease(timeout=120) as r:
            while tier_name == "apps" and not _panel_mapped(r) and time.monotonic() - t0 < 120:
                time.sleep(0.2)
            session_s = time.monotonic() - t0
            time.sleep(20)
            idle, idle_ws, idle_pss = _cgroup(r, "memory"), _working_set(r), _pss_mib(r)
            if tier_name != "apps":
                return {"ready_s": round(ready_s, 2), "idle_mib": round(idle / MIB) if idle else None,
                        "idle_ws_mib": round(idle_ws / MIB) if idle_ws else None, "idle_pss_mib": idle_pss}
            r.launch("chromium")
            r.launch("libreoffice --calc", shell=False)
            chromium_s = _wait_window(r, "chromium", 60)
            calc_s = _wait_window(r, "libreoffice-calc", 60)
            time.sleep(20)
            both, both_ws, both_pss = _cgroup(r, "memory"), _working_set(r), _pss_mib(r)
            peak = _cgroup(r, "memory_peak")
            tasks = _cgroup(r, "tasks")
    finally:
        pool.close()
        reap(pool=name)
    return {"ready_s": round(ready_s, 2), "session_drawn_s": round(session_s, 2),
            "idle_pss_mib": idle_pss, "chromium_calc_pss_mib": both_pss,
            "idle_mib": round(idle / MIB) if idle else None, "chromium_calc_mib": round(both / MIB) if both else None,
            "idle_ws_mib": round(idle_ws / MIB) if idle_ws else None,
            "chromium_calc_ws_mib": round(both_ws / MIB) if both_ws else None,
            "peak_mib": round(peak / MIB) if peak else None, "tasks": tasks,
            "chromium_window_s": round(chromium_s, 1), "calc_window_s": round(calc_s, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tier", default="apps", choices=images.TIERS)
    ap.add_argument("--image", default=None, help="default: the tier's current tag (built if missing)")
    ap.add_argument("--n", type=int, default=3)
    ap.add_argument("--mem-mib", type=int, default=4096)
    ap.add_argument("--shared", type=int, default=0, help="also hold this many idle replicas at once (PSS per replica)")
    ap.add_argument("--home", default="tmpfs", choices=("tmpfs", "layer", "both"),
                    help="the home on the tier's capped tmpfs, on the writable layer, or alternating both")
    args = ap.parse_args()
    image = args.image or images.ensure_image(args.tier)
    load_before = round(os.getloadavg()[0], 2)  # the host is shared: record how busy it was
    homes = ("layer", "tmpfs") if args.home == "both" else (args.home,)
    rows = []
    for _ in range(args.n):
        for home in homes:
            row = {"home": home, **one(image, args.mem_mib, args.tier, home)}
            rows.append(row)
            print(json.dumps(row), flush=True)

    def medians(rows: list[dict[str, Any]]) -> dict[str, Any]:
        return {k: statistics.median(r[k] for r in rows) for k in rows[0]
                if k != "home" and all(r[k] is not None for r in rows)}

    summary: dict[str, Any] = medians(rows) if len(homes) == 1 else {
        home: medians([r for r in rows if r["home"] == home]) for home in homes}
    if args.shared:
        summary.update(shared_idle(image, args.tier, args.shared))
    print(json.dumps({"tier": args.tier, "image": image, "n": len(rows), "median": summary,
                      "loadavg_1m_before": load_before, "loadavg_1m_after": round(os.getloadavg()[0], 2)}), flush=True)


if __name__ == "__main__":
    main()
