"""Find reads and typing in a restored Calc clone, without and with null-client.py connected, two rounds.

Usage: python3 bench/results/a11y-find-2026-12-07/null-client-probe.py
"""

from __future__ import annotations

import base64
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from bench.bench_pool import _container_cpu_seconds  # noqa: E402
from osgym.replicas import images  # noqa: E402
from osgym.replicas.actions import Typing  # noqa: E402
from osgym.replicas.hollow.protocol import A11yFind  # noqa: E402
from osgym.replicas.pool import ReplicaPool, limits_for  # noqa: E402


def main() -> None:
    client = base64.b64encode((HERE / "null-client.py").read_bytes()).decode()
    with ReplicaPool(images.ensure_image("apps"), 1, standby=0, screen=(1920, 1080), limits=limits_for("apps"),
                     reset="restore", warm="libreoffice", name=f"probe-null-{int(time.time())}") as pool, \
            pool.lease() as r:
        assert r.container is not None
        ids = [r.container.id]

        def cpu() -> float:
            return _container_cpu_seconds(ids)

        def run(label: str) -> None:
            c0 = cpu()
            time.sleep(5)
            print(label, "idle 5 s", round(cpu() - c0, 3), flush=True)
            reads = []
            for _ in range(4):
                c0 = cpu()
                r.accessibility(showing_only=True, window="LibreOffice Calc", find=A11yFind(focused=True))
                reads.append(round(cpu() - c0, 3))
            print(label, "find reads", reads, flush=True)
            typed = []
            for _ in range(3):
                time.sleep(2)
                c0 = cpu()
                r.act([Typing(text="abcdefghijklmnopqrstuvwxyz0123456789\n")], settle=1.0)
                time.sleep(2)
                typed.append(round(cpu() - c0, 3))
            print(label, "typing", typed, flush=True)

        r.execute(f"echo {client} | base64 -d > /tmp/null_client.py", shell=True)
        r.launch("libreoffice --calc")
        time.sleep(8)
        for _ in range(2):
            run("none")
            r.launch("python3 /tmp/null_client.py > /tmp/null.log 2>&1", shell=True)
            time.sleep(2)
            print(r.execute("cat /tmp/null.log", shell=True).output)
            run("null")
            r.execute("pkill -f null_client.py", shell=True)
            time.sleep(1)


if __name__ == "__main__":
    main()
