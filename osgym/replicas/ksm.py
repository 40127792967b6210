"""Kernel samepage merging (KSM) on the host: replicas run the same desktop, so most of their pages match.

Replicas opt their processes in themselves (``PR_SET_MEMORY_MERGE`` in the replica's entrypoint,
inherited by every child: Xvfb, the session, the apps and the agent's commands), but the kernel's
``ksmd`` only merges while it runs, and that is a machine-wide switch in ``/sys/kernel/mm/ksm``,
off by default. It is the operator's (``osgym host tune --ksm``): :func:`tune` turns it on with the
scan-time advisor, which sizes each scan to cover the candidate pages in ``target_scan_time`` seconds
while keeping ``ksmd`` under ``max_cpu`` percent of one core; :func:`undo` puts back what was there.

The values found before the first change are kept in a state file under ``/run`` (a tmpfs, like
sysfs reset at boot: the record lives exactly as long as the change it can undo).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from osgym.errors import ConfigError

__all__ = ["KNOBS", "KSM_DIR", "STATE_FILE", "Change", "KsmStatus", "ksmd_cpu_seconds", "read_knobs", "status", "tune",
           "undo"]

KSM_DIR = Path("/sys/kernel/mm/ksm")
STATE_FILE = Path("/run/osgym/ksm-before.json")
KNOBS = ("advisor_mode", "advisor_max_cpu", "advisor_target_scan_time", "run")
"""What :func:`tune` changes, in the order it writes them (the advisor first, then ``run``)."""
DEFAULT_MAX_CPU = 20
DEFAULT_SCAN_TIME_S = 60


@dataclass(frozen=True)
class Change:
    knob: str
    before: str
    after: str


@dataclass(frozen=True)
class KsmStatus:
    run: bool
    advisor: str
    pages_shared: int
    pages_sharing: int
    full_scans: int
    general_profit_bytes: int

    @property
    def saved_mib(self) -> float:
        """Memory that merging saves now: pages that point at a shared page, beyond the shared page itself."""
        return self.pages_sharing * os.sysconf("SC_PAGE_SIZE") / 2**20


def _read(knob: str, root: Path) -> str:
    value = (root / knob).read_text().strip()
    if knob == "advisor_mode":  # "[none] scan-time": the selected one is bracketed
        return next(w.strip("[]") for w in value.split() if w.startswith("["))
    return value


def _check(root: Path) -> None:
    if not (root / "run").exists():
        raise ConfigError(f"this kernel has no KSM ({root} is missing; CONFIG_KSM)")
    if not (root / "advisor_mode").exists():
        raise ConfigError(f"this kernel's KSM has no scan-time advisor ({root}/advisor_mode; Linux 6.7+)")


def read_knobs(root: Path = KSM_DIR) -> dict[str, str]:
    """The current value of each of :data:`KNOBS`."""
    _check(root)
    return {k: _read(k, root) for k in KNOBS}


def _write(root: Path, knob: str, value: str) -> None:
    try:
        (root / knob).write_text(value)
    except PermissionError:
        raise ConfigError(f"cannot write {root / knob}: changing KSM needs root") from None
    except OSError as exc:
        raise ConfigError(f"the kernel refused {value!r} for {root / knob}: {exc.strerror}") from None


def tune(max_cpu: int = DEFAULT_MAX_CPU, target_scan_time: int = DEFAULT_SCAN_TIME_S, *, root: Path = KSM_DIR,
         state_file: Path | None = None) -> list[Change]:
    """Run ``ksmd`` with the scan-time advisor, bounded to ``max_cpu`` percent of a core; returns what changed.

    The values before the first :func:`tune` are saved in ``state_file`` (a second call keeps them, so
    :func:`undo` always returns to the machine's own settings).

    Raises:
        ConfigError: out-of-range values, a kernel without KSM or its advisor, or not root.
    """
    if not 1 <= max_cpu <= 100:
        raise ConfigError(f"max_cpu: expected a percentage of one core, 1..100, actual {max_cpu}")
    if not 1 <= target_scan_time <= 3600:
        raise ConfigError(f"target_scan_time: expected 1..3600 seconds, actual {target_scan_time}")
    state_file = state_file or STATE_FILE
    before = read_knobs(root)
    wanted = {"advisor_mode": "scan-time", "advisor_max_cpu": str(max_cpu),
              "advisor_target_scan_time": str(target_scan_time), "run": "1"}
    if not state_file.exists():
        try:
            state_file.parent.mkdir(parents=True, exist_ok=True)
            state_file.write_text(json.dumps(before))
        except OSError as exc:
            raise ConfigError(f"cannot record KSM's settings in {state_file}: {exc.strerror}") from None
    changes = [Change(k, before[k], v) for k, v in wanted.items() if before[k] != v]
    for c in changes:
        _write(root, c.knob, c.after)
    return changes


def undo(*, root: Path = KSM_DIR, state_file: Path | None = None) -> list[Change]:
    """Put back the values :func:`tune` found; returns what changed (nothing if there is nothing to undo)."""
    state_file = state_file or STATE_FILE
    try:
        saved = json.loads(state_file.read_text())
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read KSM's earlier settings from {state_file}: {exc}") from None
    now = read_knobs(root)
    # run first: ksmd stops before the advisor it ran with goes away
    changes = [Change(k, now[k], str(saved[k])) for k in reversed(KNOBS) if k in saved and now[k] != str(saved[k])]
    for c in changes:
        _write(root, c.knob, c.after)
    state_file.unlink()
    return changes


def status(root: Path = KSM_DIR) -> KsmStatus:
    """What ``ksmd`` is doing and what it saves."""
    _check(root)

    def num(name: str) -> int:
        return int(_read(name, root))
    return KsmStatus(run=_read("run", root) == "1", advisor=_read("advisor_mode", root),
                     pages_shared=num("pages_shared"), pages_sharing=num("pages_sharing"),
                     full_scans=num("full_scans"), general_profit_bytes=num("general_profit"))


def ksmd_cpu_seconds() -> float | None:
    """CPU time ``ksmd`` has used since boot (user + system), or None if it is not found."""
    tick = os.sysconf("SC_CLK_TCK")
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        if text[text.index("(") + 1:text.rindex(")")] == "ksmd":
            fields = text[text.rindex(")") + 2:].split()
            return (int(fields[11]) + int(fields[12])) / tick  # utime, stime (fields 14 and 15 of stat)
    return None
