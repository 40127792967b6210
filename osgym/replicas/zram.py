"""Compressed swap in memory (zram) on the host: what idle replicas' cold pages can move to.

A replica with Chromium and Calc open keeps about 300 MiB resident, most of it heap pages that an
idle replica does not touch between an agent's steps (Chromium's other renderer caches, Calc's
undo and import structures, the session's start-up data). ``kswapd`` moves such pages out only
when the machine runs short, and without a swap device it cannot move anonymous pages at all.
zram is a swap device that keeps its pages compressed in RAM: a page the replica touches again
comes back in microseconds, not from a disk.

Both halves are the operator's:

- the device, machine-wide (``osgym host tune --zram 16G``): :func:`tune` sizes ``/dev/zram0``,
  picks the compressor, formats it as swap and turns it on; :func:`undo` turns it off and resets it;
- the replicas' share of it (``OSGYM_REPLICA_SWAP_MIB``, or ``ReplicaLimits.swap_mib``): Docker's
  default for osgym's replicas is no swap at all (``memswap_limit`` equal to the memory limit).

A marker under ``/run`` (a tmpfs, like KSM's record in :mod:`osgym.replicas.ksm`) says the device is
osgym's: :func:`undo` touches only a device :func:`tune` set up. A reset device needs nothing else put
back (its size and compressor return to the kernel's defaults).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from osgym.errors import ConfigError
from osgym.replicas.capacity import local_resources

__all__ = ["DEVICE", "STATE_FILE", "ZramStatus", "parse_size", "status", "tune", "undo"]

DEVICE = "zram0"
SYS_BLOCK = Path("/sys/block")
STATE_FILE = Path("/run/osgym/zram-before.json")
SWAP_PRIORITY = 100
"""Above any disk swap the machine has (the kernel numbers those from -2 down): zram is used first."""
_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


@dataclass(frozen=True)
class ZramStatus:
    active: bool
    disksize_bytes: int
    algorithm: str
    stored_bytes: int
    """Pages swapped out, uncompressed."""
    memory_bytes: int
    """What holding them costs the host: the compressed pages and the allocator's overhead."""

    @property
    def saved_mib(self) -> float:
        return (self.stored_bytes - self.memory_bytes) / 2**20

    @property
    def ratio(self) -> float | None:
        return self.stored_bytes / self.memory_bytes if self.memory_bytes else None


def parse_size(text: str) -> int:
    """``16G``, ``512M``, ``1073741824``: bytes."""
    m = re.fullmatch(r"\s*(\d+)\s*([KMGT]?)(?:i?B)?\s*", text, re.IGNORECASE)
    if not m:
        raise ConfigError(f"zram size: expected a size such as 16G or 512M, actual {text!r}")
    return int(m.group(1)) * _UNITS[m.group(2).upper()]


def _dev(root: Path) -> Path:
    d = root / DEVICE
    if not (d / "disksize").exists():
        raise ConfigError(f"this kernel has no zram device ({d} is missing; CONFIG_ZRAM, or `modprobe zram`)")
    return d


def _algorithms(d: Path) -> tuple[list[str], str]:
    """The compressors offered and the selected one: ``lzo [lz4] zstd`` lists them, the selected one bracketed."""
    words = (d / "comp_algorithm").read_text().split()
    return [w.strip("[]") for w in words], next((w.strip("[]") for w in words if w.startswith("[")), "")


def _in_use(device: str) -> bool:
    try:
        lines = Path("/proc/swaps").read_text().splitlines()[1:]
    except OSError:
        return False
    return any(line.split()[0] == device for line in lines if line.split())


def _run(*argv: str) -> None:
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    except FileNotFoundError:
        raise ConfigError(f"{argv[0]} is not installed (util-linux)") from None
    if res.returncode:
        raise ConfigError(f"{' '.join(argv)} failed: {(res.stderr or res.stdout).strip()}")


def _write(path: Path, value: str) -> None:
    try:
        path.write_text(value)
    except PermissionError:
        raise ConfigError(f"cannot write {path}: changing zram needs root") from None
    except OSError as exc:
        raise ConfigError(f"the kernel refused {value!r} for {path}: {exc.strerror}") from None


def tune(size_bytes: int, algorithm: str = "lz4", *, root: Path = SYS_BLOCK,
         state_file: Path | None = None) -> list[str]:
    """Turn ``/dev/zram0`` on as swap of ``size_bytes`` (uncompressed), compressed with ``algorithm``;
    returns what was done, one line each.

    A device that is already swap (someone else's) is left alone.

    Raises:
        ConfigError: a size under 64 MiB or over twice the machine's memory, an unknown compressor,
            a kernel without zram, a device in use, or not root.
    """
    d = _dev(root)
    device = f"/dev/{DEVICE}"
    mem = int(local_resources().mem_total_mib * 2**20)
    if not 64 * 2**20 <= size_bytes <= 2 * mem:
        raise ConfigError(f"zram size: expected 64 MiB .. twice the memory ({2 * mem // 2**20} MiB), "
                          f"actual {size_bytes // 2**20} MiB")
    offered, selected = _algorithms(d)
    if algorithm not in offered:
        raise ConfigError(f"zram compressor: expected one of {', '.join(offered)}, actual {algorithm!r}")
    state_file = state_file or STATE_FILE
    if _in_use(device) or int((d / "disksize").read_text()) != 0:
        if state_file.exists():
            return []  # ours from an earlier tune: the size stays what it was (undo first to change it)
        raise ConfigError(f"{device} is already set up (in /proc/swaps or sized); osgym leaves it alone")
    try:
        state_file.parent.mkdir(parents=True, exist_ok=True)
        state_file.write_text(f"{device}\n")
    except OSError as exc:
        raise ConfigError(f"cannot record zram's settings in {state_file}: {exc.strerror}") from None
    done = []
    if selected != algorithm:  # only while the device is unsized
        _write(d / "comp_algorithm", algorithm)
        done.append(f"{d / 'comp_algorithm'}: {algorithm}")
    _write(d / "disksize", str(size_bytes))
    done.append(f"{d / 'disksize'}: {size_bytes // 2**20} MiB")
    try:
        _run("mkswap", device)
        _run("swapon", "-p", str(SWAP_PRIORITY), device)
    except ConfigError:
        _write(d / "reset", "1")
        state_file.unlink(missing_ok=True)
        raise
    done.append(f"swapon {device} (priority {SWAP_PRIORITY})")
    return done


def undo(*, root: Path = SYS_BLOCK, state_file: Path | None = None) -> list[str]:
    """Turn the device :func:`tune` set up off and reset it; returns what was done (nothing if nothing
    was set up). ``swapoff`` first brings every swapped page back: it fails if memory cannot hold them."""
    state_file = state_file or STATE_FILE
    if not state_file.exists():
        return []
    d = _dev(root)
    device = f"/dev/{DEVICE}"
    done = []
    if _in_use(device):
        _run("swapoff", device)
        done.append(f"swapoff {device}")
    _write(d / "reset", "1")  # frees the device's memory and unsizes it; the compressor returns to the default
    done.append(f"{d / 'reset'}: the device is unsized")
    state_file.unlink()
    return done


def status(root: Path = SYS_BLOCK) -> ZramStatus:
    """What the device holds and what that costs (``mm_stat``: orig_data_size, compr_data_size,
    mem_used_total, ...)."""
    d = _dev(root)
    mm = [int(x) for x in (d / "mm_stat").read_text().split()[:3]]
    return ZramStatus(active=_in_use(f"/dev/{DEVICE}"), disksize_bytes=int((d / "disksize").read_text()),
                      algorithm=_algorithms(d)[1], stored_bytes=mm[0], memory_bytes=mm[2])
