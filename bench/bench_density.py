"""Apps-tier density: how many replicas with Chromium and Calc open this machine holds, with and without
KSM, and the step latency of some of them stepping at a model's pace while all are held.

Usage (root, on a quiet machine; it fills memory down to ``--floor-gib``)::

    python3 bench/bench_density.py [--plain 20,50] [--ksm 20,50,100] [--max] \\
        [--active 60 --period 5 --duration 60] [--ksm-max-cpu 50] [--runtime crun] [--zram 20G --swap-mib 1024]

One run, replicas added in steps, each new one opening Chromium (its new-tab page) and
``libreoffice --calc`` and waiting for both windows. At each level, after ``--settle`` s:

- ``used_mib_each``: the machine's used memory (MemTotal - MemAvailable, page cache excluded) above what
  it was before the first replica, divided by the replicas held: what one replica costs the host;
- ``pss_mib_each``: the proportional set size of every process of every replica (and its containerd shim)
  summed and divided by the replicas: shared libraries counted once across the host;
- with KSM: ``ksm_saved_mib`` (``pages_sharing``) and ``ksmd_cpu_share`` (ksmd's CPU seconds over the
  settle window's wall seconds, 1.0 = one core), after merging converged (two full scans in a row whose
  saving changed by under 2 %, or ``--converge-s``).

Order: the ``--plain`` levels up without ksmd; then ksmd on (``osgym.replicas.ksm.tune``, the
scan-time advisor capped at ``--ksm-max-cpu`` percent of a core) and the same levels down, removing
the replicas added since (ksmd's ``run`` = 2 would unmerge between levels instead, but it also drops
every process from ksmd's list, and processes opted in by ``PR_SET_MEMORY_MERGE`` are not added back:
a run that did so merged nothing at its second level); then the ``--ksm`` levels above the plain
ones, ksmd on. With ``--active N``, N of the held replicas then step every ``--period`` s (a pointer move and
a PNG screenshot, staggered) for ``--duration`` s, the others idle: p50 and p95 latency. Then, with
``--max``, 10 more at a time while the machine keeps ``--floor-gib`` available (for at most
``--max-minutes``). With ``--zram SIZE``, compressed swap (``osgym.replicas.zram``) goes on at the start
and every replica gets a swap share of ``--swap-mib``; ``--mem-mib`` lowers the replicas' memory limit (the
tier's 1536 MiB) so that each replica's own cold pages go there without the machine running short. The
rows then also give what zram holds and what that costs (``zram_stored_mib``, ``zram_mem_mib``), and the
memory left to grow into counts what zram would still free. With ``--park-mib``, each replica is parked
(:mod:`osgym.replicas.parking`: its cgroup's ``memory.high``, or on cgroup v1 its memory limit) once its
apps are open, and ``--active`` unparks the replicas it steps, steps them for one period (the warm-up,
reported apart), measures, then parks them again.
Replicas are added 10 at a time, each step checked against ``--floor-gib``. KSM's knobs and zram are put
back at the end (``ksm.undo``, ``zram.undo``), and every replica is removed, also on Ctrl-C.
Prints one JSON line per measurement.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's osgym and bench

from bench.bench_apps_tier import _pss_mib, _wait_window
from bench.bench_pool import _cpu_seconds, mem_available_mib, mem_used_mib, step_at_pace
from osgym.analysis.percentile import percentile
from osgym.errors import ConfigError, PoolError
from osgym.replicas import images, ksm, parking, zram
from osgym.replicas.client import Replica
from osgym.replicas.pool import ReplicaPool, limits_for, reap
from osgym.sigterm import exit_on_sigterm

SCREEN = (1920, 1080)
APP_TIMEOUT_S = 180.0


def emit(**kw: Any) -> None:
    print(json.dumps(kw, default=lambda v: round(v, 3) if isinstance(v, float) else str(v)), flush=True)


class Fleet:
    """Replicas held across pools (one pool per step up), each with Chromium and Calc open."""

    def __init__(self, image: str, runtime: str | None, prefix: str, mem_mib: int | None = None,
                 park_mib: int | None = None):
        self.image, self.runtime, self.prefix = image, runtime, prefix
        self.swap_mib, self.mem_mib = 0, mem_mib or limits_for("apps").mem_mib
        self.park_mib = park_mib
        self.park_s: list[float] = []
        self.park_refused: list[str] = []
        self.pools: list[ReplicaPool] = []
        self.replicas: list[Replica] = []

    def grow(self, n: int, workers: int = 3) -> float:
        """Add ``n`` replicas with both apps open; returns the wall seconds it took."""
        t0 = time.monotonic()
        pool = ReplicaPool(self.image, n, standby=0, name=f"{self.prefix}-{len(self.pools)}", screen=SCREEN,
                           limits=dataclasses.replace(limits_for("apps"), mem_mib=self.mem_mib, swap_mib=self.swap_mib),
                           runtime=self.runtime, force=True, health_interval=0, start_concurrency=4,
                           start_timeout=120)
        self.pools.append(pool)
        pool.start()
        fresh = [pool.acquire(timeout=120) for _ in range(n)]
        with ThreadPoolExecutor(workers) as ex:
            list(ex.map(_open_apps, fresh))
            if self.park_mib is not None:
                self.park_s += [s for s in ex.map(self._park, fresh) if s is not None]
        self.replicas += fresh
        return time.monotonic() - t0

    def _park(self, r: Replica) -> float | None:
        """Seconds the park took; None, counted, where the kernel refused the bound (a full swap)."""
        assert self.park_mib is not None
        try:
            return parking.park(r, self.park_mib).seconds
        except PoolError as exc:
            self.park_refused.append(str(exc))
            return None

    def shrink_to(self, level: int) -> None:
        """Remove the newest pools until ``level`` replicas are held (a level the fleet grew through)."""
        while len(self.replicas) > level and self.pools:
            pool = self.pools.pop()
            self.replicas = self.replicas[:len(self.replicas) - pool.size]
            try:
                pool.close()
            finally:
                reap(pool=pool.name)

    def close(self) -> None:
        for pool in self.pools:
            try:
                pool.close()
            finally:
                reap(pool=pool.name)


def _open_apps(r: Replica) -> None:
    r.launch("chromium")
    r.launch("libreoffice --calc", shell=False)
    _wait_window(r, "chromium", APP_TIMEOUT_S)
    _wait_window(r, "libreoffice-calc", APP_TIMEOUT_S)


def _ksm_converged(converge_s: float) -> dict[str, Any]:
    """Wait until two consecutive full scans changed the saving by under 2 % (or ``converge_s``)."""
    t0 = time.monotonic()
    last_scan, last_saved, stable = ksm.status().full_scans, None, 0
    while time.monotonic() - t0 < converge_s and stable < 2:
        time.sleep(2)
        st = ksm.status()
        if st.full_scans != last_scan:
            last_scan = st.full_scans
            if last_saved is not None and abs(st.saved_mib - last_saved) <= 0.02 * max(last_saved, 1.0):
                stable += 1
            else:
                stable = 0
            last_saved = st.saved_mib
    return {"converge_s": time.monotonic() - t0, "converged": stable >= 2}


def _zram() -> zram.ZramStatus | None:
    try:
        z = zram.status()
    except ConfigError:
        return None
    return z if z.active else None


def _zram_fields() -> dict[str, float]:
    """What zram holds and what that costs now, for a row (nothing without zram)."""
    z = _zram()
    return {} if z is None else {"zram_stored_mib": z.stored_bytes / 2**20, "zram_mem_mib": z.memory_bytes / 2**20}


def headroom_mib() -> float:
    """Memory still to be had: MemAvailable, plus what zram would free by taking in its free space at the
    ratio it reaches (2.0 until it holds anything)."""
    z = _zram()
    if z is None:
        return mem_available_mib()
    ratio = max(z.ratio or 2.0, 1.0)
    return mem_available_mib() + (z.disksize_bytes - z.stored_bytes) / 2**20 * (1 - 1 / ratio)


def measure(fleet: Fleet, baseline_used: float, settle_s: float, label: str, **extra: Any) -> dict[str, Any]:
    ksmd0, cpu0, t0 = ksm.ksmd_cpu_seconds() or 0.0, _cpu_seconds(), time.monotonic()
    time.sleep(settle_s)
    wall = time.monotonic() - t0
    ksmd_share = ((ksm.ksmd_cpu_seconds() or 0.0) - ksmd0) / wall
    cores_busy = (_cpu_seconds() - cpu0) / wall
    n = len(fleet.replicas)
    used = mem_used_mib() - baseline_used
    pss = [p for p in (_pss_mib(r) for r in fleet.replicas) if p is not None]
    st = ksm.status()
    extra = {**_zram_fields(), **extra}
    if fleet.park_s:
        extra = {"parked_mib": fleet.park_mib, "park_s_p50": percentile(fleet.park_s, 50),
                 "park_s_max": max(fleet.park_s), "park_refused": len(fleet.park_refused), **extra}
    row = {"bench": "density", "phase": label, "replicas": n, "used_mib_each": used / n,
           "pss_mib_each": sum(pss) / len(pss) if pss else None, "mem_available_mib": mem_available_mib(),
           "ksm_run": st.run, "ksm_saved_mib": st.saved_mib, "ksmd_cpu_share": ksmd_share,
           "machine_cores_busy": cores_busy, "load1": os.getloadavg()[0], **extra}
    emit(**row)
    return row


def active(fleet: Fleet, n: int, period: float, duration: float) -> None:
    """``n`` held replicas step at a model's pace. Parked fleets unpark them first and step them for one
    ``period`` (their pages coming back from zram: reported as the warm-up) before the measured window."""
    stepping, extra = fleet.replicas[:n], dict[str, Any]()
    if fleet.park_mib is not None:
        unpark_s = [parking.unpark(r, fleet.mem_mib).seconds for r in stepping]
        warm, warm_errors = step_at_pace(stepping, period, period)
        extra = {"unpark_s_max": max(unpark_s), "warmup_steps": len(warm),
                 "warmup_p50_ms": percentile(warm, 50) * 1e3, "warmup_p95_ms": percentile(warm, 95) * 1e3,
                 "warmup_errors": len(warm_errors)}
    cpu0 = _cpu_seconds()
    lat, errors = step_at_pace(stepping, period, duration)
    extra.update(_zram_fields())
    emit(bench="density_active", held=len(fleet.replicas), active=n, period_s=period, steps=len(lat),
         errors=len(errors), p50_ms=percentile(lat, 50) * 1e3, p95_ms=percentile(lat, 95) * 1e3,
         mem_available_mib=mem_available_mib(), **extra,
         machine_cores_busy=(_cpu_seconds() - cpu0) / duration, load1=os.getloadavg()[0],
         ksm_run=ksm.status().run, first_error=errors[0] if errors else None)
    if fleet.park_mib is not None:  # done stepping: parked again, as the rest of the fleet is
        with ThreadPoolExecutor(3) as ex:
            list(ex.map(fleet._park, stepping))


def _grow_to(fleet: Fleet, level: int, log: Callable[..., None], baseline: float, floor_gib: float,
             margin: float = 1.1) -> bool:
    """Grow to ``level`` 10 at a time, unless what the replicas held so far cost (times ``margin``) says the
    next 10 would cross ``floor_gib`` of headroom (then log it and return False: a host out of memory kills
    what it likes, dockerd included)."""
    t0 = time.monotonic()
    while (need := min(10, level - len(fleet.replicas))) > 0:
        # before the first replica: the figure measured here (345-350 MiB at machine level, BENCHMARKS.md)
        each = (mem_used_mib() - baseline) / len(fleet.replicas) if fleet.replicas else 360.0
        headroom = headroom_mib()
        if headroom - need * each * margin < floor_gib * 1024:
            log(bench="density_stop", replicas=len(fleet.replicas), wanted=level, mib_each=each,
                mem_available_mib=mem_available_mib(), headroom_mib=headroom,
                reason=f"would leave under {floor_gib} GiB of headroom")
            return False
        fleet.grow(need)
    log(bench="density_grow", replicas=len(fleet.replicas), grow_s=time.monotonic() - t0,
        mem_available_mib=mem_available_mib(), load1=os.getloadavg()[0])
    return True


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--image", default=None, help="default: the apps tier's current tag")
    ap.add_argument("--plain", default="20,50", help="levels measured without, then with ksmd")
    ap.add_argument("--ksm", default="100", help="further levels, ksmd on")
    ap.add_argument("--max", action="store_true", help="then 10 more at a time down to --floor-gib available")
    ap.add_argument("--floor-gib", type=float, default=2.0)
    ap.add_argument("--max-minutes", type=float, default=15.0, help="stop growing for --max after this long")
    ap.add_argument("--settle", type=float, default=30.0)
    ap.add_argument("--converge-s", type=float, default=300.0)
    ap.add_argument("--ksm-max-cpu", type=int, default=50)
    ap.add_argument("--ksm-scan-time", type=int, default=ksm.DEFAULT_SCAN_TIME_S)
    ap.add_argument("--active", type=int, default=0)
    ap.add_argument("--period", type=float, default=5.0)
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--runtime", default=None, help="OCI runtime of the replicas (runc, crun); default: the daemon's")
    ap.add_argument("--zram", default=None, metavar="SIZE", help="compressed swap of SIZE, on from the start")
    ap.add_argument("--swap-mib", type=int, default=1024, help="each replica's swap share with --zram")
    ap.add_argument("--mem-mib", type=int, default=None, help="each replica's memory limit (default: the tier's)")
    ap.add_argument("--park-mib", type=int, default=None,
                    help="park each replica at this resident bound once its apps are open (osgym.replicas.parking); "
                         "--active unparks the replicas it steps")
    args = ap.parse_args()
    image = args.image or images.ensure_image("apps")
    plain = [int(x) for x in args.plain.split(",") if x]
    more = [int(x) for x in args.ksm.split(",") if x]
    prefix = f"bench-density-{uuid.uuid4().hex[:6]}"
    ksm.undo()  # a leftover state from an interrupted run would make tune() keep the wrong "before"
    zram.undo()
    baseline = mem_used_mib()
    emit(bench="density_start", image=image, runtime=args.runtime or "daemon default", baseline_used_mib=baseline,
         mem_available_mib=mem_available_mib(), load1=os.getloadavg()[0])
    fleet = Fleet(image, args.runtime, prefix, args.mem_mib, args.park_mib)
    try:
        if args.zram:
            emit(bench="density_zram", done=zram.tune(zram.parse_size(args.zram)), mem_mib=fleet.mem_mib,
                 swap_mib=args.swap_mib)
            fleet.swap_mib = args.swap_mib
        for level in plain:
            if not _grow_to(fleet, level, emit, baseline, args.floor_gib):
                break
            measure(fleet, baseline, args.settle, "plain")
        ksm.tune(args.ksm_max_cpu, args.ksm_scan_time)
        for level in sorted(plain, reverse=True):
            fleet.shrink_to(level)
            conv = _ksm_converged(args.converge_s)
            measure(fleet, baseline, args.settle, "ksm", **conv)
        for level in more:
            ksm.tune(args.ksm_max_cpu, args.ksm_scan_time)
            if not _grow_to(fleet, level, emit, baseline, args.floor_gib):
                break
            conv = _ksm_converged(args.converge_s)
            measure(fleet, baseline, args.settle, "ksm", **conv)
        if args.active and fleet.replicas:
            active(fleet, min(args.active, len(fleet.replicas)), args.period, args.duration)
        if args.max:
            until = time.monotonic() + args.max_minutes * 60
            # a wider margin than the planned levels': past them, what a replica costs is less known
            while _grow_to(fleet, len(fleet.replicas) + 10, emit, baseline, args.floor_gib, margin=1.5):
                conv = _ksm_converged(args.converge_s)
                measure(fleet, baseline, args.settle, "ksm_max", **conv)
                if time.monotonic() >= until:
                    emit(bench="density_stop", replicas=len(fleet.replicas), reason="--max-minutes")
                    break
    finally:
        fleet.close()
        ksm.undo()
        zram.undo()
        emit(bench="density_end", mem_available_mib=mem_available_mib(), ksm_knobs=ksm.read_knobs())


if __name__ == "__main__":
    exit_on_sigterm()  # `timeout` or `kill` still removes its replicas, and turns ksmd, zram and swap back
    main()
