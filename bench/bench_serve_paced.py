"""Served sessions held by one host, each stepped at a model's pace: how many the host holds at a p95 step bound.

``--sessions N`` sessions of OSGym's protocol (``POST /reset``, then ``POST /step``) are opened on an
``osgym serve`` of this process with N replicas of ``--tier``; each then steps (one pointer move; the
answer is the tier's full-screen JPEG) once every ``--every`` seconds for ``--duration`` seconds, staggered
across the period as agents waiting on a model would be. Reported: each step's round trip as the client
saw it (p50, p95, max), the steps that were late to start (the client's own thread fell behind: the
machine was saturated), errors, the machine's CPU over the stepping, and the load. Levels run one after the
other, each on fresh replicas:

    python3 bench/bench_serve_paced.py --tier desktop --levels 100,200,300 --every 5 --duration 120
    python3 bench/bench_serve_paced.py --tier apps --levels 50,100 --every 5 --duration 120

Issue 43's targets: at a step every 5 s, at least 300 desktop and 100 apps sessions with a p95 step of at
most 250 ms. The pool's admission plans a host from a default profile (0.01 cores per replica: 150 here); the
bench starts its pool with ``force`` (the operator's overcommit), since how many a host holds is what it measures.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import docker  # noqa: E402
import httpx  # noqa: E402

from bench.bench_pool import _cpu_seconds, paced  # noqa: E402
from osgym.analysis.percentile import percentile  # noqa: E402
from osgym.replicas import images  # noqa: E402
from osgym.replicas.pool import ReplicaPool  # noqa: E402
from osgym.serving import server as serve_module  # noqa: E402
from osgym.serving.server import ServeConfig, ServerThread, serving  # noqa: E402

TOKEN = "bench-token-" + "p" * 24
TASK = {"id": "bench-paced", "instruction": "Look at the desktop.", "config": [], "evaluator": {"func": "infeasible"}}


def level(image: str, client: docker.DockerClient, *, tier: str, sessions: int, every_s: float,
          duration_s: float, screen: tuple[int, int]) -> dict[str, Any]:
    config = ServeConfig(tier=tier, image=image, replicas=sessions, standby=0, screen=screen, settle_s=0.0,
                         first_settle_s=0.0, record=False, max_steps=100_000, idle_timeout_s=3600,
                         max_sessions_per_token=sessions, lease_timeout_s=1800)
    t_start = time.monotonic()
    with serving(config, docker_client=client, pool_name=f"bench-paced-{uuid.uuid4().hex[:6]}",
                 tokens=[TOKEN]) as s, ServerThread(s.app) as server, \
            httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=1800,
                         limits=httpx.Limits(max_connections=sessions + 8,
                                             max_keepalive_connections=sessions + 8)) as http:
        def open_one(_: int) -> int:
            r = http.post("/reset", json={"task_config": TASK, "timeout": 3600})
            r.raise_for_status()
            return int(r.json()["vm_id"])

        with ThreadPoolExecutor(16) as ex:  # the pool starts replicas as fast as it can; resets wait in its queue
            vms = list(ex.map(open_one, range(sessions)))
        ready_s = time.monotonic() - t_start
        load0 = os.getloadavg()
        cpu0, w0 = _cpu_seconds(), time.monotonic()
        rngs = [random.Random(i) for i in range(sessions)]

        def step(i: int, _k: int) -> None:
            x, y = rngs[i].randrange(screen[0]), rngs[i].randrange(screen[1])
            r = http.post("/step", json={"vm_id": vms[i], "action": f"move({x},{y})"})
            if r.status_code != 200:
                raise RuntimeError(f"step {r.status_code}: {r.text[:200]}")

        stepped = paced(sessions, every_s, duration_s, step)
        wall = time.monotonic() - w0
        cpu = _cpu_seconds() - cpu0
        load1 = os.getloadavg()
    lat, late, errors = stepped.lat, stepped.late, stepped.errors
    expected = sessions * duration_s / every_s
    return {"tier": tier, "sessions": sessions, "every_s": every_s, "duration_s": duration_s, "screen": list(screen),
            "ready_s": round(ready_s, 1), "steps": len(lat), "steps_expected": round(expected),
            "errors": len(errors), "first_errors": errors[:3],
            "step_p50_ms": round(1000 * percentile(lat, 50), 1), "step_p95_ms": round(1000 * percentile(lat, 95), 1),
            "step_max_ms": round(1000 * max(lat, default=float("nan")), 1),
            "started_late_p95_ms": round(1000 * percentile(late, 95), 1),
            "machine_cores_busy": round(cpu / wall, 2),
            "machine_cpu_ms_per_step": round(1000 * cpu / max(len(lat), 1), 1),
            "load_start": [round(x, 2) for x in load0], "load_end": [round(x, 2) for x in load1],
            "cores": os.cpu_count()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tier", choices=["desktop", "apps"], default="desktop")
    ap.add_argument("--levels", default="100,200,300", help="sessions per level, comma-separated")
    ap.add_argument("--every", type=float, default=5.0, help="seconds between one session's steps")
    ap.add_argument("--duration", type=float, default=120.0, help="seconds of stepping per level")
    ap.add_argument("--screen", help="WxH (default: 1280x800 desktop, 1920x1080 apps)")
    args = ap.parse_args()
    screen_text = args.screen or ("1280x800" if args.tier == "desktop" else "1920x1080")
    w, h = (int(n) for n in screen_text.split("x"))
    client = docker.from_env(max_pool_size=64, timeout=300)
    serve_module.ReplicaPool = functools.partial(ReplicaPool, force=True)  # type: ignore[misc]
    image = images.ensure_image(args.tier, client=client)
    for n in (int(x) for x in args.levels.split(",")):
        print(json.dumps(level(image, client, tier=args.tier, sessions=n, every_s=args.every,
                               duration_s=args.duration, screen=(w, h))), flush=True)


if __name__ == "__main__":
    main()
