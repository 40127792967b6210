"""Step latency and idle memory of a replica, end to end from the host.

One step = one typed action (``POST /actions``) + one JPEG screenshot at 1280x800 (``--screen`` to change)
(``GET /screenshot?format=jpeg``), each a separate request through the
``Replica`` client over the pool's default transport (a Unix socket), as an
episode runner does it. Reports p50/p95/p99 of the step and of each half, after
a warm-up, plus the replica's idle memory from the container's cgroup.

With ``--a11y`` each step also reads the accessibility tree (``GET /accessibility``, the
AT-SPI reader runs as `user`, a child process per read), and with ``--exec`` it also runs
``true`` (``POST /execute``): the two observations that start a process as the agent's user.

Usage:
    python bench/bench_step_latency.py [--steps 200] [--tier desktop] [--format jpeg] [--a11y] [--exec]
        [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's osgym and bench

import docker

from osgym.analysis.percentile import percentile
from osgym.replicas import images
from osgym.replicas.actions import Click, MoveTo, Press, Scroll, Typing
from osgym.replicas.client import Replica
from osgym.replicas.pool import ReplicaPool, limits_for

SCREEN = (1280, 800)


def idle_memory(container: Any, settle_s: float = 5.0) -> dict[str, float]:
    """Idle replica memory in MiB: cgroup usage, and usage less inactive file cache (as `docker stats` shows)."""
    time.sleep(settle_s)  # idle means idle: let start-up work finish before sampling
    samples = []
    for _ in range(3):
        stats = container.stats(stream=False)["memory_stats"]
        usage = stats.get("usage", 0)
        inactive = stats.get("stats", {}).get("inactive_file", stats.get("stats", {}).get("total_inactive_file", 0))
        samples.append((usage / 2**20, (usage - inactive) / 2**20))
        time.sleep(0.5)
    return {"usage_mib": round(statistics.median(s[0] for s in samples), 1),
            "working_set_mib": round(statistics.median(s[1] for s in samples), 1)}


def open_text(replica: Replica) -> None:
    """Mousepad, focused, on 300 lines of text: what the steps type into and the screenshots show."""
    replica.write_file("/home/user/Documents/bench.txt", "".join(f"line {i}: lorem ipsum dolor sit amet\n"
                                                                 for i in range(300)).encode())
    replica.launch(["mousepad", "/home/user/Documents/bench.txt"])
    replica.wait_window("bench.txt", focused=True)
    replica.act([], settle=2.0)


def step_actions(rng: random.Random) -> list[Any]:
    """A cheap, realistic mix: pointer moves, clicks on the editor, scrolls, key presses and short typing."""
    kind = rng.random()
    x, y = rng.randrange(360, 920), rng.randrange(220, 600)
    if kind < 0.4:
        return [MoveTo(x=x, y=y)]
    if kind < 0.6:
        return [Click(x=x, y=y)]
    if kind < 0.75:
        return [Scroll(x=x, y=y, dy=rng.choice([-2, 2]))]
    if kind < 0.9:
        return [Press(key=rng.choice(["left", "right", "up", "down"]))]
    return [Typing(text="abc ")]


def run_steps(replica: Replica, steps: int, warmup: int, fmt: str, quality: int, seed: int,
              a11y: bool = False, exec_: bool = False, screen: tuple[int, int] = SCREEN) -> dict[str, Any]:
    rng = random.Random(seed)
    act_ms, shot_ms, step_ms, sizes, server_ms = [], [], [], [], []
    a11y_ms: list[float] = []
    exec_ms: list[float] = []
    for i in range(warmup + steps):
        actions = step_actions(rng)
        t0 = time.perf_counter()
        replica.act(actions)
        t1 = time.perf_counter()
        r = replica.api.request("GET", "/screenshot", params={"format": fmt, "quality": quality,
                                                              "max_side": max(screen)})
        t2 = time.perf_counter()
        shot_size = (int(r.headers["X-Width"]), int(r.headers["X-Height"]))
        t3 = t4 = time.perf_counter()
        if a11y:
            assert "desktop-frame" in replica.accessibility()
            t4 = time.perf_counter()
        t5 = t4
        if exec_:
            assert replica.execute(["true"], timeout=10).returncode == 0
            t5 = time.perf_counter()
        if i >= warmup:
            if a11y:
                a11y_ms.append((t4 - t3) * 1000)
            if exec_:
                exec_ms.append((t5 - t4) * 1000)
            act_ms.append((t1 - t0) * 1000)
            shot_ms.append((t2 - t1) * 1000)
            step_ms.append((t2 - t0) * 1000)
            sizes.append(len(r.content))
            server_ms.append(float(r.headers.get("Server-Timing", "app;dur=nan").split("dur=")[1]))
        assert shot_size == screen, f"a {shot_size} screenshot from a {screen} screen"

    def summary(xs: list[float]) -> dict[str, float]:
        return {"p50": round(percentile(xs, 50), 2), "p95": round(percentile(xs, 95), 2),
                "p99": round(percentile(xs, 99), 2), "mean": round(statistics.fmean(xs), 2)}

    out = {"steps": steps, "warmup": warmup, "format": fmt, "quality": quality,
           "step_ms": summary(step_ms), "action_ms": summary(act_ms), "screenshot_ms": summary(shot_ms),
           "screenshot_in_replica_ms": summary(server_ms),
           "frame_kib_mean": round(statistics.fmean(sizes) / 1024, 1),
           "steps_per_s": round(1000 / statistics.fmean(step_ms), 1)}
    if a11y:
        out["a11y_ms"] = summary(a11y_ms)
    if exec_:
        out["exec_ms"] = summary(exec_ms)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--tier", default="desktop", choices=images.TIERS)
    p.add_argument("--format", default="jpeg", choices=("jpeg", "png"))
    p.add_argument("--quality", type=int, default=80)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--screen", default=f"{SCREEN[0]}x{SCREEN[1]}", help="WIDTHxHEIGHT of the replica's screen")
    p.add_argument("--json", help="also write the results to this file")
    p.add_argument("--image", help="an existing image tag to measure instead of building --tier (A/B comparisons)")
    p.add_argument("--a11y", action="store_true", help="also read the accessibility tree each step")
    p.add_argument("--exec", dest="exec_", action="store_true", help="also run `true` through /execute each step")
    args = p.parse_args()
    width, _, height = args.screen.partition("x")
    screen = (int(width), int(height))

    load_before = round(os.getloadavg()[0], 2)  # the host is shared: record how busy it was
    client = docker.from_env(max_pool_size=8)
    tag = args.image or images.build(args.tier, client=client, log=lambda m: print(m, flush=True)).tag
    with ReplicaPool(tag, 1, standby=0, screen=screen, docker_client=client, limits=limits_for(args.tier),
                     name=f"bench-steps-{int(time.time())}") as pool, pool.lease() as replica:
        memory = idle_memory(replica.container)
        open_text(replica)
        result = run_steps(replica, args.steps, args.warmup, args.format, args.quality, args.seed,
                           a11y=args.a11y, exec_=args.exec_, screen=screen)
    result.update(tier=args.tier, image=tag, screen=list(screen), idle_memory=memory, transport="unix",
                  cpus=os.cpu_count(), loadavg_1m_before=load_before, loadavg_1m_after=round(os.getloadavg()[0], 2))
    print(json.dumps(result, indent=2))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
