"""What a Calc window costs an apps replica's CPU, the first time and again, in a restored clone and a cold replica.

One replica restored from the ``libreoffice`` warm state (LibreOffice resident, no document opened), then one
started cold: in each, ``libreoffice --calc`` is launched, its window waited for, 3 s more allowed, and the
replica's cgroup CPU (v1 ``cpuacct.usage``) read across; the window is closed and the same is done again.
Tells whether a clone pays for Calc's code running for the first time (issue 41). Needs root and `make criu`.

Usage:
    python bench/bench_calc_window_cpu.py > out.json
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from osgym.replicas import images
from osgym.replicas.client import Replica
from osgym.replicas.observation import Window
from osgym.replicas.pool import ReplicaPool, limits_for


def cgroup_cpu_s(container_id: str) -> float:
    return int(Path(f"/sys/fs/cgroup/cpuacct/docker/{container_id}/cpuacct.usage").read_text()) / 1e9


def open_calc(replica: Replica) -> tuple[Window, float]:
    replica.launch(["libreoffice", "--calc"])
    t0 = time.monotonic()
    while time.monotonic() - t0 < 120:
        found = [w for w in replica.windows() if "libreoffice-calc" in w.wm_class.lower()]
        if found:
            return found[0], time.monotonic() - t0
        time.sleep(0.1)
    raise TimeoutError("no Calc window within 120 s")


def main() -> None:
    out = []
    for reset in ("restore", "cold"):
        with ReplicaPool(images.ensure_image("apps"), 1, standby=0, screen=(1920, 1080), limits=limits_for("apps"),
                         reset=reset, warm="libreoffice" if reset == "restore" else "desktop",
                         name=f"bench-calc-{int(time.time())}") as pool, pool.lease() as replica:
            assert replica.container is not None
            time.sleep(5)
            for n in (1, 2):
                before = cgroup_cpu_s(replica.container.id)
                window, took = open_calc(replica)
                time.sleep(3)
                out.append({"reset": reset, "calc_window": n, "window_s": round(took, 2),
                            "cpu_s_to_window_plus_3s": round(cgroup_cpu_s(replica.container.id) - before, 2)})
                replica.close_window(window.title, timeout=10)
                time.sleep(3)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
