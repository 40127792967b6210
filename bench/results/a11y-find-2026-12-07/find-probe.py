"""One restored apps clone with Calc idle: each read three times, the clone's CPU around it (issue 41).

The window's on-screen tree against a find read of the element a wait checks, and the policy's check on each.
Usage: python3 bench/results/a11y-find-2026-12-07/find-probe.py [IMAGE]
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from bench.bench_pool import _container_cpu_seconds  # noqa: E402
from osgym.agents.policies.scripted import _control_enabled, _element_center, _focus_in  # noqa: E402
from osgym.replicas import images  # noqa: E402
from osgym.replicas.actions import Hotkey  # noqa: E402
from osgym.replicas.hollow.protocol import A11yFind  # noqa: E402
from osgym.replicas.pool import ReplicaPool, limits_for  # noqa: E402

CALC = "LibreOffice Calc"


def main() -> None:
    image = sys.argv[1] if len(sys.argv) > 1 else images.ensure_image("apps")
    with ReplicaPool(image, 1, standby=0, screen=(1920, 1080), limits=limits_for("apps"), reset="restore",
                     warm="libreoffice", name=f"probe-find-{int(time.time())}") as pool, pool.lease() as r:
        assert r.container is not None
        ids = [r.container.id]

        def measure(label: str, read: Callable[[], str], check: Callable[[str], Any]) -> None:
            out = []
            for _ in range(3):
                c0, t0 = _container_cpu_seconds(ids), time.perf_counter()
                tree = read()
                out.append((round(_container_cpu_seconds(ids) - c0, 3), round(time.perf_counter() - t0, 3),
                            len(tree), check(tree)))
            print(label, out, flush=True)  # (clone CPU-s, wall s, bytes, the check's answer)

        def tree(window: str, find: A11yFind | None = None) -> Callable[[], str]:
            return lambda: r.accessibility(showing_only=True, window=window, find=find)

        r.launch("libreoffice --calc")
        time.sleep(8)
        measure("full calc focus", tree(CALC), lambda x: _focus_in(x, CALC, ""))
        measure("find calc focus", tree(CALC, A11yFind(focused=True)), lambda x: _focus_in(x, CALC, ""))
        measure("find calc focus table-cell", tree(CALC, A11yFind(role="table-cell", focused=True)),
                lambda x: _focus_in(x, CALC, "table-cell"))
        measure("full calc element Name Box", tree(CALC), lambda x: _element_center(x, CALC, "Name Box", ""))
        measure("find calc element Name Box", tree(CALC, A11yFind(name="Name Box", sized=True)),
                lambda x: _element_center(x, CALC, "Name Box", ""))
        r.act([Hotkey(keys=["ctrl", "shift", "s"])], settle=2.0)
        time.sleep(3)
        measure("full save", tree("Save"), lambda x: _control_enabled(x, "Save", "Save", "push-button"))
        measure("find save", tree("Save", A11yFind(name="Save", role="push-button")),
                lambda x: _control_enabled(x, "Save", "Save", "push-button"))
        measure("find nothing", tree("Save", A11yFind(name="NoSuch", role="push-button")),
                lambda x: _control_enabled(x, "Save", "NoSuch", "push-button"))


if __name__ == "__main__":
    main()
