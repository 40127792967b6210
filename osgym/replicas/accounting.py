"""Per-replica resource accounting from the container's cgroup: CPU seconds, memory, network bytes.

The cost model (:mod:`osgym.replicas.cost`) needs what a replica really uses, not a constant. The
kernel already counts it per container, in the cgroup Docker puts each container in:

============  ===========================================  =======================================
figure        cgroup v1 (``memory/``, ``cpuacct/``)          cgroup v2 (one unified directory)
============  ===========================================  =======================================
CPU           ``cpuacct.usage`` (ns)                        ``cpu.stat`` ``usage_usec``
memory now    ``memory.usage_in_bytes`` - inactive file     ``memory.current`` - ``inactive_file``
memory peak   ``memory.max_usage_in_bytes``                 ``memory.peak`` (kernel >= 5.19)
OOM kills     ``memory.oom_control`` ``oom_kill``            ``memory.events`` ``oom_kill``
============  ===========================================  =======================================

"Memory now" is the working set (what ``docker stats`` shows): the page cache the kernel can drop
at no cost is left out. Where this process may read ``/proc/<pid>/smaps_rollup`` of the
container's processes, the sampled memory is their PSS instead, which splits shared pages
(the image's libraries) between the replicas that map them, so replicas on one host add up to
the host's memory. Network bytes are read from ``/proc/<pid>/net/dev`` in the container's network
namespace (loopback excluded); a replica without a network reports none.

A :class:`Meter` turns readings into a :class:`Usage`: CPU seconds between its first and last
reading, the time-weighted mean and the peak of memory, the network bytes. The pool keeps one
meter per replica lifetime and one per lease (:class:`Accountant`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

MIB = 1024 * 1024


@dataclass(frozen=True)
class Reading:
    """One sample of a container's cgroup.

    Attributes:
        t: monotonic time of the sample, seconds.
        cpu_s: CPU seconds used since the container started.
        mem_bytes: memory in use now: the processes' PSS where readable, else the working set.
        peak_bytes: the cgroup's own peak, if the kernel keeps one (charged memory, page cache included: not
            comparable with PSS, so :class:`Meter` keeps the peak of its samples instead).
        net_bytes: bytes received plus sent on the container's non-loopback interfaces, if it has any.
        pss: whether ``mem_bytes`` is PSS.
    """

    t: float
    cpu_s: float
    mem_bytes: int
    peak_bytes: int | None = None
    net_bytes: int | None = None
    pss: bool = False


@dataclass(frozen=True)
class Usage:
    """What a replica used over a window (a lease, or its lifetime).

    >>> u = Usage(seconds=10.0, cpu_s=2.5, mem_avg_mib=60.0, mem_peak_mib=80.0, net_bytes=None)
    >>> u.cores
    0.25
    """

    seconds: float
    cpu_s: float
    mem_avg_mib: float
    mem_peak_mib: float
    net_bytes: int | None = None
    pss: bool = False

    @property
    def cores(self) -> float:
        """Mean cores used over the window."""
        return self.cpu_s / self.seconds if self.seconds > 0 else 0.0


def _int_file(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return None if text in ("", "max") else int(text)


def _keyed(path: Path) -> dict[str, int]:
    """A flat-keyed cgroup file (``memory.stat``, ``cpu.stat``): ``key value`` per line."""
    out: dict[str, int] = {}
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        key, _, value = line.partition(" ")
        if value.strip().lstrip("-").isdigit():
            out[key] = int(value)
    return out


def read_v1(memory_dir: Path, cpuacct_dir: Path) -> tuple[float, int, int | None]:
    """CPU seconds, working set and peak bytes from a cgroup v1 container's two directories.

    Raises:
        FileNotFoundError: if the container's cgroup is gone.
    """
    usage_ns = _int_file(cpuacct_dir / "cpuacct.usage")
    current = _int_file(memory_dir / "memory.usage_in_bytes")
    if usage_ns is None or current is None:
        raise FileNotFoundError(f"no cgroup v1 accounting under {memory_dir} and {cpuacct_dir}")
    stat = _keyed(memory_dir / "memory.stat")
    inactive = stat.get("total_inactive_file", stat.get("inactive_file", 0))
    return usage_ns / 1e9, max(0, current - inactive), _int_file(memory_dir / "memory.max_usage_in_bytes")


def read_v2(directory: Path) -> tuple[float, int, int | None]:
    """CPU seconds, working set and peak bytes from a cgroup v2 directory.

    Raises:
        FileNotFoundError: if the cgroup is gone.
    """
    usec = _keyed(directory / "cpu.stat").get("usage_usec")
    current = _int_file(directory / "memory.current")
    if usec is None or current is None:
        raise FileNotFoundError(f"no cgroup v2 accounting under {directory}")
    inactive = _keyed(directory / "memory.stat").get("inactive_file", 0)
    return usec / 1e6, max(0, current - inactive), _int_file(directory / "memory.peak")


def read_pss(pids: Iterable[int], proc: Path = Path("/proc")) -> int | None:
    """The summed PSS of ``pids`` in bytes, or None if none of them is readable (not permitted, gone)."""
    total, seen = 0, False
    for pid in pids:
        try:
            text = (proc / str(pid) / "smaps_rollup").read_text()
        except OSError:
            continue
        for line in text.splitlines():
            if line.startswith("Pss:"):
                total += int(line.split()[1]) * 1024
                seen = True
                break
    return total if seen else None


def read_net_dev(text: str) -> int | None:
    """Bytes received plus sent on every interface but loopback, from ``/proc/<pid>/net/dev``.

    >>> read_net_dev("Inter-| Receive\\n face |bytes\\n    lo: 9 1 0 0 0 0 0 0 9 1 0 0 0 0 0 0\\n"
    ...              "  eth0: 100 2 0 0 0 0 0 0 50 1 0 0 0 0 0 0\\n")
    150
    >>> read_net_dev("Inter-| Receive\\n face |bytes\\n    lo: 9 1 0 0 0 0 0 0 9 1 0 0 0 0 0 0\\n") is None
    True
    """
    total, seen = 0, False
    for line in text.splitlines()[2:]:
        name, _, rest = line.partition(":")
        fields = rest.split()
        if name.strip() == "lo" or len(fields) < 9:
            continue
        total += int(fields[0]) + int(fields[8])
        seen = True
    return total if seen else None


@dataclass(frozen=True)
class CgroupPaths:
    """Where one container's accounting lives: one v2 directory, or v1's memory and cpuacct directories."""

    version: int
    memory: Path
    cpu: Path

    def procs(self) -> list[int]:
        try:
            return [int(p) for p in (self.memory / "cgroup.procs").read_text().split()]
        except OSError:
            return []


def find_cgroup(container_id: str, root: Path = Path("/sys/fs/cgroup")) -> CgroupPaths | None:
    """The cgroup of a Docker container, for both cgroup drivers (cgroupfs, systemd) and both versions."""
    names = [f"docker/{container_id}", f"system.slice/docker-{container_id}.scope"]
    if (root / "cgroup.controllers").exists():  # the unified hierarchy is mounted at root: v2
        for name in names:
            if (root / name / "cpu.stat").exists():
                return CgroupPaths(2, root / name, root / name)
        return None
    for name in names:
        memory = root / "memory" / name
        cpu = next((root / c / name for c in ("cpuacct", "cpu,cpuacct", "cpu") if (root / c / name).is_dir()), None)
        if memory.is_dir() and cpu is not None:
            return CgroupPaths(1, memory, cpu)
    return None


def read_oom_kills(paths: CgroupPaths) -> int | None:
    """Processes the kernel's OOM killer has killed in a container's cgroup since it was made (kernel >= 4.13);
    None if unreadable. Counted at the kill: Docker's ``oom`` event of it comes a moment later."""
    return _keyed(paths.memory / ("memory.events" if paths.version == 2 else "memory.oom_control")).get("oom_kill")


def read(paths: CgroupPaths, proc: Path = Path("/proc"), clock: Callable[[], float] = time.monotonic) -> Reading:
    """One :class:`Reading` of a container's cgroup (and, for PSS and network, its processes).

    Raises:
        FileNotFoundError: if the cgroup is gone (the container was removed).
    """
    t = clock()
    cpu_s, working, peak = read_v2(paths.memory) if paths.version == 2 else read_v1(paths.memory, paths.cpu)
    pids = paths.procs()
    pss = read_pss(pids, proc)
    net = None
    for pid in pids[:1]:
        try:
            net = read_net_dev((proc / str(pid) / "net" / "dev").read_text())
        except OSError:
            pass
    return Reading(t, cpu_s, pss if pss is not None else working, peak, net, pss is not None)


class Meter:
    """Readings over a window, folded as they come (constant memory): first, last, peak and mean of the
    sampled memory (so a spike between two samples is not seen; the pool samples at every lease and release)."""

    def __init__(self, first: Reading) -> None:
        self.first = self.last = first
        self.peak = max(first.mem_bytes, 0)
        self._area = 0.0  # memory x seconds, trapezoids between readings

    def add(self, r: Reading) -> None:
        dt = r.t - self.last.t
        if dt > 0:
            self._area += (self.last.mem_bytes + r.mem_bytes) / 2 * dt
        self.peak = max(self.peak, r.mem_bytes)
        self.last = r

    def usage(self) -> Usage:
        seconds = self.last.t - self.first.t
        mean = self._area / seconds if seconds > 0 else float(self.last.mem_bytes)
        net = None
        if self.first.net_bytes is not None and self.last.net_bytes is not None:
            net = max(0, self.last.net_bytes - self.first.net_bytes)
        return Usage(seconds=seconds, cpu_s=max(0.0, self.last.cpu_s - self.first.cpu_s),
                     mem_avg_mib=mean / MIB, mem_peak_mib=self.peak / MIB, net_bytes=net, pss=self.last.pss)


class Accountant:
    """Samples every live replica's cgroup on a background thread; one meter per lifetime and per lease.

    Replicas are keyed by id and found by their container id. A host whose cgroups this process
    cannot see (another machine's daemon, a rootless daemon) simply yields no usage.
    """

    def __init__(self, interval: float = 10.0, root: Path = Path("/sys/fs/cgroup"),
                 proc: Path = Path("/proc")) -> None:
        self.interval = interval
        self.root, self.proc = root, proc
        self._paths: dict[str, CgroupPaths] = {}
        self._life: dict[str, Meter] = {}
        self._lease: dict[str, Meter] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self.interval > 0 and self._thread is None:
            self._thread = threading.Thread(target=self._run, name="osgym-accounting", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            with self._lock:
                ids = list(self._paths)
            for rid in ids:
                self.sample(rid)

    def track(self, replica_id: str, container_id: str) -> bool:
        """Start the lifetime meter of a new replica; False if its cgroup cannot be found."""
        paths = find_cgroup(container_id, self.root)
        if paths is None:
            return False
        try:
            first = read(paths, self.proc)
        except (FileNotFoundError, ValueError):
            return False
        with self._lock:
            self._paths[replica_id] = paths
            self._life[replica_id] = Meter(first)
        return True

    def sample(self, replica_id: str) -> Reading | None:
        """Read one replica now and feed its meters; None if it is not tracked or its cgroup is gone."""
        paths = self._paths.get(replica_id)
        if paths is None:
            return None
        try:
            r = read(paths, self.proc)
        except (FileNotFoundError, ValueError):
            return None
        with self._lock:
            for meters in (self._life, self._lease):
                if replica_id in meters:
                    meters[replica_id].add(r)
        return r

    def oom_kills(self, replica_id: str) -> int | None:
        """:func:`read_oom_kills` of a tracked replica; None if it is not tracked or its cgroup is unreadable."""
        paths = self._paths.get(replica_id)
        return read_oom_kills(paths) if paths is not None else None

    def lease_started(self, replica_id: str) -> None:
        r = self.sample(replica_id)
        if r is not None:
            with self._lock:
                self._lease[replica_id] = Meter(r)

    def lease_ended(self, replica_id: str) -> Usage | None:
        """The usage of the lease that ends now (a last reading is taken first)."""
        self.sample(replica_id)
        with self._lock:
            meter = self._lease.pop(replica_id, None)
        return meter.usage() if meter is not None else None

    def finish(self, replica_id: str) -> Usage | None:
        """The replica's lifetime usage, read once more before its container goes; stops tracking it."""
        self.sample(replica_id)
        with self._lock:
            self._paths.pop(replica_id, None)
            self._lease.pop(replica_id, None)
            meter = self._life.pop(replica_id, None)
        return meter.usage() if meter is not None else None
