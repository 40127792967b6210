"""The apps tier's VS Code (code-server in a Chromium app window): window time and memory.

Usage::

    python3 bench/bench_vscode.py [--image osgym/apps:<hash>] [--n 3] [--mem-mib 4096]

For each of ``--n`` fresh apps replicas (one at a time, a high memory limit so the figures are
what VS Code uses): the cgroup's memory after 20 s idle; then ``code ~/Desktop/test.py`` as a
task's launch step, the seconds until the window titled ``test.py - Visual Studio Code`` shows
(the workbench loaded and the file open), 20 s settle, memory again (usage, page cache included,
as the limit counts it; ``*_ws_mib``: the working set), the peak and the cgroup's task count.
Prints one JSON line per replica and a summary line with medians. Measure with ``uptime``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's osgym and bench

from bench.bench_apps_tier import MIB, _cgroup, _panel_mapped, _working_set
from osgym.replicas import images
from osgym.replicas.pool import ReplicaLimits, ReplicaPool, limits_for, reap


def one(image: str, mem_mib: int) -> dict[str, Any]:
    tier = limits_for("apps")
    limits = ReplicaLimits(mem_mib=mem_mib, cpus=tier.cpus, pids=tier.pids, shm_mib=tier.shm_mib)
    name = f"bench-vscode-{uuid.uuid4().hex[:6]}"
    pool = ReplicaPool(image, 1, name=name, screen=(1920, 1080), standby=0, limits=limits)
    try:
        pool.start()
        with pool.lease(timeout=120) as r:
            deadline = time.monotonic() + 120
            while not _panel_mapped(r) and time.monotonic() < deadline:
                time.sleep(0.2)
            time.sleep(20)
            idle, idle_ws = _cgroup(r, "memory"), _working_set(r)
            r.execute(["sh", "-c", "printf 'import os\\nprint(1)\\n' > /home/user/Desktop/test.py"])
            t0 = time.monotonic()
            r.launch(["code", "/home/user/Desktop/test.py"], shell=False)
            window_s = None
            while time.monotonic() - t0 < 60 and window_s is None:
                if any(w.title == "test.py - Visual Studio Code" for w in r.windows()):
                    window_s = time.monotonic() - t0
                time.sleep(0.2)
            if window_s is None:
                raise TimeoutError("no 'test.py - Visual Studio Code' window within 60 s")
            time.sleep(20)
            used, used_ws = _cgroup(r, "memory"), _working_set(r)
            peak, tasks = _cgroup(r, "memory_peak"), _cgroup(r, "tasks")
    finally:
        pool.close()
        reap(pool=name)

    def mib(v: int | None) -> int | None:
        return round(v / MIB) if v else None
    return {"code_window_s": round(window_s, 1), "idle_mib": mib(idle), "idle_ws_mib": mib(idle_ws),
            "code_mib": mib(used), "code_ws_mib": mib(used_ws), "peak_mib": mib(peak), "tasks": tasks}


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
