"""What a Calc window costs an apps replica's CPU, the first time and again, in a restored clone and a cold replica.

One replica restored from the ``libreoffice`` warm state (LibreOffice resident, no document opened), then one
started cold: in each, ``libreoffice --calc`` is launched, its window waited for, 3 s more allowed, and the
replica's cgroup CPU (v1 ``cpuacct.usage``) read across; the window is closed and the same is done again.
Tells whether a clone pays for Calc's code running for the first time (issue 41). Needs root and `make criu`.

Usage:
    python bench/bench_calc_window_cpu.py > out.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_pool import _container_cpu_seconds  # noqa: E402
from bench.bench_restore_held import open_calc  # noqa: E402
from osgym.replicas import images  # noqa: E402
from osgym.replicas.pool import ReplicaPool, limits_for  # noqa: E402


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    out = []
    for reset in ("restore", "cold"):
        with ReplicaPool(images.ensure_image("apps"), 1, standby=0, screen=(1920, 1080), limits=limits_for("apps"),
                         reset=reset, warm="libreoffice" if reset == "restore" else "desktop",
                         name=f"bench-calc-{int(time.time())}") as pool, pool.lease() as replica:
            assert replica.container is not None
            ids = [replica.container.id]
            time.sleep(5)
            for n in (1, 2):
                before = _container_cpu_seconds(ids)
                took = open_calc(replica)
                time.sleep(3)
                out.append({"reset": reset, "calc_window": n, "window_s": round(took, 2),
                            "cpu_s_to_window_plus_3s": round(_container_cpu_seconds(ids) - before, 2)})
                title = next(w.title for w in replica.windows() if "libreoffice-calc" in w.wm_class.lower())
                replica.close_window(title, timeout=10)
                time.sleep(3)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
