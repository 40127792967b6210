"""Pool benchmarks: cold start, start rate, reset latency, peak density, idle CPU, active density.

Usage::

    python3 bench/bench_pool.py cold    [--n 20] [--reset restore [--warm desktop]]  # start to ready, per phase
    python3 bench/bench_pool.py rate    [--n 40] [--concurrency 8]
    python3 bench/bench_pool.py reset   [--n 60] [--size 4] [--standby 4] [--hold 2]
    python3 bench/bench_pool.py peak    [--steps 100,200,300] [--screen 1920x1080]
    python3 bench/bench_pool.py idle    [--n 20] [--duration 30]     # CPU of replicas held idle
    python3 bench/bench_pool.py active  [--levels 20,40,80] [--period 5] [--duration 30] [--tier apps]
                                        [--profile-out DIR]       # --period 0: back to back

Every benchmark closes its pool in a ``finally`` (and reaps by pool name), so
nothing is left behind. ``peak`` goes up in steps and stops early when
MemAvailable would drop below ``--floor-gib``. Results are printed as one JSON
line per measurement; bench/results/pool.md holds the figures and the method.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's osgym and bench

import docker

from osgym.analysis.percentile import percentile
from osgym.replicas import capacity, images
from osgym.replicas.limits import limits_for
from osgym.replicas.pool import POOL_LABEL, ReplicaLimits, ReplicaPool, reap
from osgym.sigterm import exit_on_sigterm


def emit(**kw: Any) -> None:
    print(json.dumps(kw, default=lambda v: round(v, 4) if isinstance(v, float) else str(v)), flush=True)


def mem_available_mib() -> float:
    return capacity.local_resources().mem_available_mib


def mem_used_mib() -> float:
    """MemTotal - MemAvailable: what `free` reports as used, page cache excluded."""
    r = capacity.local_resources()
    return r.mem_total_mib - r.mem_available_mib


@contextmanager
def bench_pool(image: str, size: int, **kw: Any) -> Iterator[ReplicaPool]:
    name = f"bench-{uuid.uuid4().hex[:6]}"
    pool = ReplicaPool(image, size, name=name, force=True, **kw)
    try:
        yield pool
    finally:
        pool.close()
        reap(docker.from_env(), pool=name)


def cold(image: str, args: argparse.Namespace) -> None:
    """Sequential starts: one replica at a time, discard and replace, n times. With ``--reset restore`` each is
    a clone of the pool's checkpoint (warm state ``--warm``), and the first start, which made or found the
    checkpoint, is reported apart (``first_s``) and left out of the figures."""
    restoring = args.reset == "restore"
    with bench_pool(image, 1, standby=0, screen=args.screen, health_interval=0, reset=args.reset,
                    warm=args.warm) as pool:
        pool.start()
        for _ in range(args.n - 1 + restoring):
            with pool.lease():
                pass
            while pool.stats.ready < pool.stats.leased + 1:
                time.sleep(0.005)
        first, starts = pool.stats.start_s[0], pool.stats.start_s[restoring:]
        kept = pool.stats.phases[restoring:]
        phases = {k: statistics.median(p[k] for p in kept) for k in kept[0]}
        restored = pool.stats.restored
    emit(bench="cold_start" if not restoring else "restore_start", n=len(starts), p50_s=percentile(starts, 50),
         p95_s=percentile(starts, 95), min_s=min(starts), phases_p50_s=phases, screen=args.screen,
         **({"warm": args.warm, "first_s": first, "restored": restored} if restoring else {}))


def rate(image: str, args: argparse.Namespace) -> None:
    """Start n replicas at once; replicas per second from start() to all ready."""
    with bench_pool(image, args.n, standby=0, screen=args.screen, health_interval=0,
                    start_concurrency=args.concurrency) as pool:
        t0 = time.monotonic()
        pool.start()
        elapsed = time.monotonic() - t0
        starts = pool.stats.start_s
    emit(bench="start_rate", n=args.n, concurrency=args.concurrency, seconds=elapsed, replicas_per_s=args.n / elapsed,
         start_p50_s=percentile(starts, 50), start_p95_s=percentile(starts, 95), screen=args.screen)


def reset(image: str, args: argparse.Namespace) -> None:
    """Episodes that hold a replica ``hold`` s; the latency an episode sees to get a clean one (and to give it back)."""
    with bench_pool(image, args.size, standby=args.standby, screen=args.screen) as pool:
        pool.start()
        waits: list[float] = []
        releases: list[float] = []
        lock = threading.Lock()

        def worker(k: int) -> None:
            for _ in range(k):
                t0 = time.perf_counter()
                r = pool.acquire(timeout=60)
                t1 = time.perf_counter()
                r.health()
                time.sleep(args.hold)
                t2 = time.perf_counter()
                pool.release(r)
                t3 = time.perf_counter()
                with lock:
                    waits.append(t1 - t0)
                    releases.append(t3 - t2)

        threads = [threading.Thread(target=worker, args=(args.n // args.size,)) for _ in range(args.size)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    emit(bench="reset_latency", n=len(waits), size=args.size, standby=args.standby, hold_s=args.hold,
         acquire_p50_ms=percentile(waits, 50) * 1e3, acquire_p95_ms=percentile(waits, 95) * 1e3,
         acquire_max_ms=max(waits) * 1e3, release_p50_ms=percentile(releases, 50) * 1e3,
         release_p95_ms=percentile(releases, 95) * 1e3)


def peak(image: str, args: argparse.Namespace) -> None:
    """Hold ever more idle ready replicas; memory per replica from MemTotal - MemAvailable, Docker's shim included."""
    steps = [int(s) for s in args.steps.split(",")]
    base = mem_used_mib()
    limits = ReplicaLimits(mem_mib=args.mem_limit, cpus=1.0, pids=128, shm_mib=16)
    client = docker.from_env(max_pool_size=64)
    pools: list[ReplicaPool] = []
    held = 0
    try:
        for target in steps:
            need = target - held
            if mem_available_mib() - need * 40 < args.floor_gib * 1024:
                emit(bench="peak_density", stopped_at=held, reason="memory floor would be crossed")
                break
            t0 = time.monotonic()
            pool = ReplicaPool(image, need, standby=0, name=f"bench-peak-{uuid.uuid4().hex[:6]}", force=True,
                               screen=args.screen, limits=limits, health_interval=0, docker_client=client,
                               start_timeout=120)
            pools.append(pool)
            pool.start()
            held = target
            time.sleep(5)  # let the desktops settle before reading memory
            used = mem_used_mib() - base
            shims = _shim_rss_mib()
            all_ready = sum(p.idle for p in pools)
            emit(bench="peak_density", replicas=held, ready=all_ready, start_s=time.monotonic() - t0,
                 mem_used_mib=used, mib_per_replica=used / held, shim_rss_mib=shims,
                 mem_available_mib=mem_available_mib(), load1=_load1())
    finally:
        for p in pools:
            p.close()
        for p in pools:
            reap(client, pool=p.name)
        left = client.api.containers(all=True, filters={"label": POOL_LABEL})
        emit(bench="peak_density_teardown", osgym_containers_left=len(left))


def _shim_rss_mib() -> float:
    total = 0.0
    from pathlib import Path
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if b"containerd-shim" in (d / "cmdline").read_bytes()[:200]:
                    for line in (d / "status").read_text().splitlines():
                        if line.startswith("VmRSS:"):
                            total += float(line.split()[1]) / 1024
            except OSError:
                continue
    return total


def _load1() -> float:
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


@contextmanager
def held(image: str, args: argparse.Namespace, n: int) -> Iterator[list[Any]]:
    """``n`` ready replicas of one pool, leased for the block and given back after it."""
    limits = limits_for(args.tier) if args.tier != "desktop" else ReplicaLimits(mem_mib=args.mem_limit)
    with bench_pool(image, n, standby=0, screen=args.screen, health_interval=0, limits=limits) as pool:
        pool.start()
        replicas = [pool.acquire() for _ in range(n)]
        try:
            yield replicas
        finally:
            for r in replicas:
                pool.release(r)


def idle(image: str, args: argparse.Namespace) -> None:
    """``--n`` replicas held idle: after 20 s, their cgroups' CPU over ``--duration`` s (what a held replica
    costs the host's cores while no one steps it)."""
    with held(image, args, args.n) as replicas:
        time.sleep(20)
        ids = [r.container.id for r in replicas]
        rcpu0, cpu0, t0 = _container_cpu_seconds(ids), _cpu_seconds(), time.monotonic()
        time.sleep(args.duration)
        wall = time.monotonic() - t0
        each = (_container_cpu_seconds(ids) - rcpu0) / wall / args.n
        busy = (_cpu_seconds() - cpu0) / wall
        emit(bench="idle_cpu", replicas=args.n, replica_cores_each=each, machine_cores_busy=busy, load1=_load1())


def active(image: str, args: argparse.Namespace) -> None:
    """N replicas, each stepped once every ``period`` s (small action + screenshot); step latency p50/p95."""
    for level in [int(x) for x in args.levels.split(",")]:
        _active_level(image, args, level)


@dataclass
class Paced:
    """What :func:`paced` saw: each step's seconds, how late each started (its thread fell behind), errors."""

    lat: list[float] = field(default_factory=list)
    late: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def paced(n: int, period: float, duration: float, step: Callable[[int, int], None]) -> Paced:
    """Call ``step(i, k)`` (agent ``i``'s ``k``-th step) for each of ``n`` agents once every ``period`` s for
    ``duration`` s, staggered across the period, as agents waiting on a model would be. A step that raises
    is counted as an error (the bench must finish to show them)."""
    out = Paced()
    lock = threading.Lock()
    w0 = time.monotonic()
    stop = w0 + duration

    def agent(i: int) -> None:
        nxt = w0 + period * i / n
        k = 0
        while True:
            time.sleep(max(0.0, nxt - time.monotonic()))
            if time.monotonic() > stop:
                return
            behind = time.monotonic() - nxt
            t0 = time.perf_counter()
            try:
                step(i, k)
                with lock:
                    out.lat.append(time.perf_counter() - t0)
                    out.late.append(behind)
            except Exception as exc:
                with lock:
                    out.errors.append(repr(exc))
            k += 1
            nxt += period

    threads = [threading.Thread(target=agent, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def step_at_pace(replicas: list[Any], period: float, duration: float,
                 fmt: str = "png") -> tuple[list[float], list[str]]:
    """Each replica stepped (a small pointer move, then a screenshot) every ``period`` s for ``duration`` s
    (:func:`paced`); returns the step latencies and errors."""
    from osgym.replicas.actions import MoveTo

    def step(i: int, k: int) -> None:
        replicas[i].act([MoveTo(x=100 + k % 50, y=100)])
        replicas[i].screenshot(format=fmt)

    out = paced(len(replicas), period, duration, step)
    return out.lat, out.errors


def _active_level(image: str, args: argparse.Namespace, level: int) -> None:
    """One level of ``active``: the replicas held idle for ``--idle`` s (the floor), then stepped for ``--duration`` s.

    Machine CPU is the replicas' cgroups plus the host-side share: this process (the stepping client and
    the pool) and the replicas' containerd shims. Docker's daemons and the whole machine are read too, for
    context only (other work shares them). The step profile (CPU per step above the idle floor, mean step
    time, idle floor, memory) is what ``osgym pool plan --think-time --step-profile`` prices."""
    with held(image, args, level) as replicas:
        ids = [r.container.id for r in replicas]
        shims = _shim_pids(ids)
        time.sleep(args.settle)
        a = _cpu_snapshot(ids, shims)
        time.sleep(args.idle)
        b = _cpu_snapshot(ids, shims)
        mem0 = _mem_mib_each(ids)
        lat, errors = step_at_pace(replicas, args.period, args.duration, args.format)
        c = _cpu_snapshot(ids, shims)
        mem = (mem0 + _mem_mib_each(ids)) / 2
    idle_wall, wall = b["t"] - a["t"], c["t"] - b["t"]
    idle_each = {k: (b[k] - a[k]) / idle_wall / level for k in ("replicas", "host_side")}
    active_each = {k: (c[k] - b[k]) / wall / level for k in ("replicas", "host_side")}
    floor = sum(idle_each.values())
    cpu_per_step = max(0.0, ((c["replicas"] + c["host_side"]) - (b["replicas"] + b["host_side"])
                             - floor * level * wall) / max(len(lat), 1))
    step_s = statistics.fmean(lat) if lat else 0.0
    think = max(0.0, args.period - step_s)
    profile = {"tier": args.tier, "screen": "x".join(map(str, args.screen)), "replicas": level,
               "period_s": args.period, "think_s": think, "cpu_per_step_s": cpu_per_step, "step_s": step_s,
               "idle_cores": floor, "mem_mib": mem, "steps": len(lat),
               "source": f"measured: bench_pool.py active, {level} {args.tier} replicas at "
                         f"{'x'.join(map(str, args.screen))}, a step every {args.period:g} s "
                         f"({'back to back' if args.period == 0 else 'paced'}), {time.strftime('%Y-%m-%d %H:%M')} "
                         f"UTC, load1 {_load1():.1f}"}
    emit(bench="active_density", replicas=level, period_s=args.period, steps=len(lat), errors=len(errors),
         p50_ms=percentile(lat, 50) * 1e3, p95_ms=percentile(lat, 95) * 1e3, format=args.format, screen=args.screen,
         tier=args.tier, machine_cores_busy=(c["machine"] - b["machine"]) / wall,
         machine_cores_busy_idle=(b["machine"] - a["machine"]) / idle_wall,
         dockerd_containerd_cores=(c["daemons"] - b["daemons"]) / wall,
         replica_cores_each=active_each["replicas"], host_side_cores_each=active_each["host_side"],
         machine_cores_each=sum(active_each.values()), idle_replica_cores_each=idle_each["replicas"],
         idle_host_side_cores_each=idle_each["host_side"], mem_mib_each=mem, load1=_load1(),
         first_error=errors[0] if errors else None, step_profile=profile)
    if args.profile_out:
        os.makedirs(args.profile_out, exist_ok=True)
        name = f"{args.tier}-{'nonstop' if args.period == 0 else f'{args.period:g}s'}-{level}.json"
        with open(os.path.join(args.profile_out, name), "w") as f:
            json.dump(profile, f, indent=1)


def _shim_pids(ids: list[str]) -> list[int]:
    """The containerd shims of these containers (each names its container's id on its command line)."""
    want = set(ids)
    pids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if argv and b"containerd-shim" in argv[0] and any(a.decode(errors="replace") in want for a in argv):
                pids.append(int(d))
    return pids


def _proc_cpu_seconds(pid: int) -> float:
    """A process's user + system CPU seconds (its threads included), 0 if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _daemon_pids() -> list[int]:
    pids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/comm") as f:
                    if f.read().strip() in ("dockerd", "containerd"):
                        pids.append(int(d))
            except OSError:
                continue
    return pids


def _cpu_snapshot(ids: list[str], shims: list[int]) -> dict[str, float]:
    return {"t": time.monotonic(), "replicas": _container_cpu_seconds(ids),
            "host_side": _proc_cpu_seconds(os.getpid()) + sum(_proc_cpu_seconds(p) for p in shims),
            "daemons": sum(_proc_cpu_seconds(p) for p in _daemon_pids()), "machine": _cpu_seconds()}


def _mem_mib_each(ids: list[str]) -> float:
    """Mean memory per replica now: its processes' PSS (root), else the cgroup's working set."""
    from osgym.replicas import accounting

    found = [accounting.find_cgroup(cid) for cid in ids]
    readings = [accounting.read(p) for p in found if p is not None]
    return statistics.fmean(r.mem_bytes for r in readings) / 2**20 if readings else 0.0


def _container_cpu_seconds(ids: list[str]) -> float:
    """CPU seconds the containers used (cgroup v1 cpuacct; the control client's own CPU is not included)."""
    total = 0
    for cid in ids:
        try:
            with open(f"/sys/fs/cgroup/cpuacct/docker/{cid}/cpuacct.usage") as f:
                total += int(f.read())
        except OSError:
            continue
    return total / 1e9


def _cpu_seconds() -> float:
    """Busy CPU seconds of the whole machine (user+nice+system+irq+softirq) from /proc/stat."""
    with open("/proc/stat") as f:
        parts = [float(x) for x in f.readline().split()[1:8]]
    return (parts[0] + parts[1] + parts[2] + parts[5] + parts[6]) / 100.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bench", choices=["cold", "rate", "reset", "peak", "idle", "active"])
    ap.add_argument("--image")
    ap.add_argument("--screen", default="1280x800")
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--size", type=int, default=4)
    ap.add_argument("--standby", type=int, default=4)
    ap.add_argument("--hold", type=float, default=2.0)
    ap.add_argument("--steps", default="50,100,200,300")
    ap.add_argument("--mem-limit", type=int, default=256)
    ap.add_argument("--floor-gib", type=float, default=3.0)
    ap.add_argument("--levels", default="10,20,40")
    ap.add_argument("--period", type=float, default=5.0)
    ap.add_argument("--duration", type=float, default=30.0)
    ap.add_argument("--format", default="png")
    ap.add_argument("--tier", default="desktop", choices=images.TIERS, help="the image tier (and its limits)")
    ap.add_argument("--settle", type=float, default=15.0, help="active: seconds held before the idle floor")
    ap.add_argument("--idle", type=float, default=20.0, help="active: seconds of the idle floor")
    ap.add_argument("--profile-out", help="active: a directory for each level's step profile (JSON)")
    ap.add_argument("--runtime", help="OCI runtime of the replicas (runc, crun); default: the daemon's")
    ap.add_argument("--reset", default="cold", choices=["cold", "restore"],
                    help="cold: how each replica starts (restore: a clone of a checkpoint, `make criu`)")
    ap.add_argument("--warm", default="desktop", help="cold --reset restore: the checkpoint's warm state")
    args = ap.parse_args()
    if args.runtime:
        os.environ["OSGYM_REPLICA_RUNTIME"] = args.runtime  # every pool of the run reads it
    print(f"runtime: {args.runtime or 'the daemon default'}", flush=True)
    w, _, h = args.screen.partition("x")
    args.screen = (int(w), int(h))
    image = args.image or images.ensure_image(args.tier)
    {"cold": cold, "rate": rate, "reset": reset, "peak": peak, "idle": idle, "active": active}[args.bench](image, args)


if __name__ == "__main__":
    exit_on_sigterm()  # `timeout` or `kill` still removes its replicas
    main()
