"""The environment server under load, and its overhead per step against the pool directly.

``load``: ``--clients`` concurrent clients of OSGym's protocol cycle reset, ``--steps`` steps and
shutdown (every other episode ends with ``finish()`` instead) on ``--replicas`` desktop replicas for
``--duration`` seconds. Then the server stops and the check: every session a reset opened is a row of
the dataset, and no container of the pool is left.

``overhead``: one replica (and a standby), ``--steps`` steps of one pointer move and a full-screen JPEG,
and ``--resets`` resets (lease a ready replica and observe it), first on the pool directly
(``Replica.act`` + ``Replica.observe``, as the session manager does them), then through ``POST /step``
and ``POST /reset`` of a server on this machine; reports p50/p95 of each and the difference.

``routes``: the step overhead of each route side by side, in one run on one server: a replica leased
from the server's own pool and called directly (``Replica.act`` + ``Replica.observe``), OSGym's
``POST /step``, the native ``POST /v1/sessions/{id}/step`` and OpenEnv's WebSocket session
(``/openenv/ws``, one socket held open), each on its own replica. Every round steps each of the four once,
in a shuffled order, so that the machine's other load falls on all of them alike; reports p50/p95 of each,
its p50 less the direct call's, the median of its differences from the same round's direct step, and the
route's own part of each step: its round trip less its time inside ``SessionManager.step`` (timed in the
server; what the replica and the episode's bookkeeping take is left out, and with it their noise).

Usage:
    python bench/bench_serve.py load [--clients 32] [--replicas 8] [--duration 300] [--steps 3]
    python bench/bench_serve.py overhead [--steps 200]
    python bench/bench_serve.py routes [--steps 200]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's osgym and bench

import docker
import httpx
from websockets.sync.client import connect as ws_connect

from osgym.analysis.percentile import percentile
from osgym.dataset.reader import open_dataset
from osgym.replicas import images
from osgym.replicas.actions import MoveTo
from osgym.replicas.pool import POOL_LABEL, ReplicaPool
from osgym.serving.server import ServeConfig, ServerThread, serving

TOKEN = "bench-token-" + "x" * 24
TASK = {"id": "bench-plain", "instruction": "Look at the desktop.", "config": [], "evaluator": {"func": "infeasible"}}


@dataclass
class LoadStats:
    """What the clients saw."""

    opened: int = 0
    finished: int = 0
    shut_down: int = 0
    steps: int = 0
    errors: list[str] = field(default_factory=list)
    reset_s: list[float] = field(default_factory=list)
    resets: list[tuple[float, float]] = field(default_factory=list)
    """Each answered reset's (sent, answered) times, monotonic seconds: who waited behind whom."""
    step_s: list[float] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def summary(self) -> dict[str, Any]:
        return {"opened": self.opened, "finished": self.finished, "shut_down": self.shut_down, "steps": self.steps,
                "errors": len(self.errors), "first_errors": self.errors[:5],
                "reset_p50_s": round(percentile(self.reset_s, 50), 3),
                "reset_p95_s": round(percentile(self.reset_s, 95), 3),
                "reset_max_s": round(max(self.reset_s, default=float("nan")), 3),
                "overtaken": overtaken(self.resets),
                "step_p50_ms": round(1000 * percentile(self.step_s, 50), 1),
                "step_p95_ms": round(1000 * percentile(self.step_s, 95), 1)}


def overtaken(resets: list[tuple[float, float]], slack_s: float = 5.0) -> int:
    """Resets answered more than ``slack_s`` after one sent more than ``slack_s`` later: a fair lease queue
    serves waiters in arrival order, and the slack covers what differs between two resets after the lease
    (a task's setup, the first screen's settle)."""
    late = 0
    for sent, answered in resets:
        if any(s2 > sent + slack_s and a2 + slack_s < answered for s2, a2 in resets):
            late += 1
    return late


def run_clients(url: str, clients: int, duration_s: float, steps: int, screen: tuple[int, int],
                token: str = TOKEN) -> LoadStats:
    """``clients`` threads cycling reset, ``steps`` moves, then finish() or shutdown, until ``duration_s``."""
    stats = LoadStats()
    deadline = time.monotonic() + duration_s

    def client(n: int) -> None:
        rng = random.Random(n)
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=180) as http:
            episode = 0
            while time.monotonic() < deadline:
                t0 = time.monotonic()
                r = http.post("/reset", json={"task_config": TASK, "timeout": 120})
                if r.status_code != 200:
                    with stats.lock:
                        stats.errors.append(f"reset {r.status_code}: {r.text[:200]}")
                    continue
                vm = r.json()["vm_id"]
                with stats.lock:
                    stats.opened += 1
                    stats.reset_s.append(time.monotonic() - t0)
                    stats.resets.append((t0, time.monotonic()))
                for _ in range(steps):
                    t0 = time.monotonic()
                    s = http.post("/step", json={"vm_id": vm, "action": f"move({rng.randrange(screen[0])},"
                                                                         f"{rng.randrange(screen[1])})"})
                    with stats.lock:
                        if s.status_code == 200:
                            stats.steps += 1
                            stats.step_s.append(time.monotonic() - t0)
                        else:
                            stats.errors.append(f"step {s.status_code}: {s.text[:200]}")
                episode += 1
                if episode % 2:
                    f = http.post("/step", json={"vm_id": vm, "action": "finish()"})
                    ok = f.status_code == 200 and f.json()["is_finish"]
                    key = "finished"
                else:
                    f = http.post("/shutdown", json={"vm_id": vm})
                    ok, key = f.status_code == 200, "shut_down"
                with stats.lock:
                    if ok:
                        setattr(stats, key, getattr(stats, key) + 1)
                    else:
                        stats.errors.append(f"{key} {f.status_code}: {f.text[:200]}")

    threads = [threading.Thread(target=client, args=(n,), daemon=True) for n in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return stats


def run_load(image: str, client: docker.DockerClient, store: Path, *, clients: int, replicas: int,
             duration_s: float, steps: int, pool_name: str, screen: tuple[int, int] = (1280, 800),
             log: Callable[[str], None] = print) -> dict[str, Any]:
    """Serve, drive the clients, stop, then count the dataset's episodes and the pool's leftovers."""
    config = ServeConfig(tier="desktop", image=image, replicas=replicas, standby=max(1, replicas // 4),
                         screen=screen, settle_s=0.2, max_sessions_per_token=clients, lease_timeout_s=120,
                         store=str(store), dataset="load")
    t0 = time.monotonic()
    with serving(config, docker_client=client, pool_name=pool_name, tokens=[TOKEN]) as s, \
            ServerThread(s.app) as server:
        log(f"pool ready in {time.monotonic() - t0:.1f} s; {clients} clients for {duration_s:g} s")
        t1 = time.monotonic()
        stats = run_clients(server.url, clients, duration_s, steps, screen)
        wall_s = time.monotonic() - t1  # past duration_s by the episodes in flight at the deadline
        ended_by_server = s.manager.episodes_ended
        sink_errors = list(s.manager.sink_errors)
        lease_waits = list(s.pool.stats.acquire_s)
    episodes = open_dataset(store, "load").episodes.to_table().to_pylist()
    left = client.containers.list(all=True, filters={"label": f"{POOL_LABEL}={pool_name}"})
    out = stats.summary()
    out.update({"episodes_in_dataset": len(episodes), "episodes_ended": ended_by_server,
                "distinct_episode_ids": len({e["episode_id"] for e in episodes}), "sink_errors": sink_errors,
                "lease_wait_p50_s": round(percentile(lease_waits, 50), 3),
                "lease_wait_p95_s": round(percentile(lease_waits, 95), 3),
                "lease_wait_max_s": round(max(lease_waits, default=float("nan")), 3),
                "containers_left": len(left), "clients": clients, "replicas": replicas, "duration_s": duration_s,
                "wall_s": round(wall_s, 1), "episodes_per_min": round(60 * stats.opened / wall_s, 1),
                # each answered reset, (sent, answered) in seconds since the clients started
                "reset_times": sorted((round(a - t1, 2), round(b - t1, 2)) for a, b in stats.resets)})
    return out


def _wait_idle(pool: ReplicaPool, timeout: float = 120) -> None:
    """Until a ready replica waits in the lease queue, so that a timed reset measures the fast path."""
    deadline = time.monotonic() + timeout
    while pool.idle < 1:
        if time.monotonic() > deadline:
            raise TimeoutError("no replica became ready")
        time.sleep(0.05)


def overhead(image: str, client: docker.DockerClient, steps: int, screen: tuple[int, int],
             resets: int = 10) -> dict[str, Any]:
    """Step and reset latency on the pool directly and through the server, same replica kind.

    A step is one move and an observation (window list + JPEG); a reset leases a ready replica (each
    timed reset waits first until the standby is ready) and observes it, for a task without setup.
    """
    rng = random.Random(0)
    name = f"bench-serve-{uuid.uuid4().hex[:6]}"
    direct: list[float] = []
    direct_reset: list[float] = []
    with ReplicaPool(image, 1, standby=1, name=name, docker_client=client, screen=screen) as pool:
        for _ in range(resets):
            _wait_idle(pool)
            t0 = time.perf_counter()
            replica = pool.acquire()
            replica.observe("", 0, format="jpeg", quality=80)
            direct_reset.append(time.perf_counter() - t0)
            pool.release(replica)
        _wait_idle(pool)
        with pool.lease() as replica:
            for i in range(steps + 10):
                t0 = time.perf_counter()
                replica.act([MoveTo(x=rng.randrange(screen[0]), y=rng.randrange(screen[1]))], settle=0.0)
                replica.observe("", i, format="jpeg", quality=80)
                if i >= 10:
                    direct.append(time.perf_counter() - t0)
    served: list[float] = []
    served_reset: list[float] = []
    # no settle anywhere: the comparison is of the server's own cost (a reset's first-screen wait, 0.5 s of
    # quiet by default, is a choice of the episode's, not overhead)
    config = ServeConfig(tier="desktop", image=image, replicas=1, standby=1, screen=screen, settle_s=0.0,
                         first_settle_s=0.0, record=False, max_steps=steps + 100)
    with serving(config, docker_client=client, pool_name=name + "-s", tokens=[TOKEN]) as s, \
            ServerThread(s.app) as server, \
            httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as http:
        for _ in range(resets):
            _wait_idle(s.pool)
            t0 = time.perf_counter()
            r = http.post("/reset", json={"task_config": TASK, "timeout": 600})
            served_reset.append(time.perf_counter() - t0)
            assert r.status_code == 200, r.text
            http.post("/shutdown", json={"vm_id": r.json()["vm_id"]})
        _wait_idle(s.pool)
        vm = http.post("/reset", json={"task_config": TASK, "timeout": 600}).json()["vm_id"]
        for i in range(steps + 10):
            action = f"move({rng.randrange(screen[0])},{rng.randrange(screen[1])})"
            t0 = time.perf_counter()
            r = http.post("/step", json={"vm_id": vm, "action": action})
            elapsed = time.perf_counter() - t0
            assert r.status_code == 200, r.text
            if i >= 10:
                served.append(elapsed)
    d50, s50 = statistics.median(direct), statistics.median(served)
    r50, q50 = statistics.median(direct_reset), statistics.median(served_reset)
    return {"steps": steps, "resets": resets, "screen": list(screen), "direct_p50_ms": round(1000 * d50, 2),
            "direct_p95_ms": round(1000 * percentile(direct, 95), 2), "served_p50_ms": round(1000 * s50, 2),
            "served_p95_ms": round(1000 * percentile(served, 95), 2),
            "overhead_p50_ms": round(1000 * (s50 - d50), 2),
            "reset_direct_p50_ms": round(1000 * r50, 1), "reset_served_p50_ms": round(1000 * q50, 1),
            "reset_overhead_p50_ms": round(1000 * (q50 - r50), 1)}


def routes(image: str, client: docker.DockerClient, steps: int, screen: tuple[int, int]) -> dict[str, Any]:
    """One move and a full-screen JPEG per step on each route, round by round, in a shuffled order each round."""
    rng = random.Random(0)
    config = ServeConfig(tier="desktop", image=image, replicas=4, standby=0, screen=screen, settle_s=0.0,
                         first_settle_s=0.0, record=False, max_steps=steps + 100)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    times: dict[str, list[float]] = {"direct": [], "osgym_http": [], "v1_http": [], "openenv_ws": []}
    load = [round(n, 2) for n in os.getloadavg()]
    with serving(config, docker_client=client, pool_name=f"bench-routes-{uuid.uuid4().hex[:6]}",
                 tokens=[TOKEN]) as s, ServerThread(s.app) as server, \
            httpx.Client(base_url=server.url, headers=auth, timeout=60) as http, \
            ws_connect(f"ws{server.url.removeprefix('http')}/openenv/ws", additional_headers=auth,
                       max_size=2**26) as ws, s.pool.lease() as replica:
        inside: list[float] = []  # each served step's time in SessionManager.step: the episode's own work
        manager_step = s.manager.step

        def timed_step(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return manager_step(*args, **kwargs)
            finally:
                inside.append(time.perf_counter() - t0)

        s.manager.step = timed_step  # type: ignore[method-assign]  # the routes look it up at each call
        vm = http.post("/reset", json={"task_config": TASK, "timeout": 600}).json()["vm_id"]
        sid = http.post("/v1/sessions", json={"task": TASK}).json()["session_id"]
        ws.send(json.dumps({"type": "reset", "data": {"task": TASK}}))
        assert json.loads(ws.recv())["type"] == "observation"

        def step(route: str, i: int) -> None:
            x, y = rng.randrange(screen[0]), rng.randrange(screen[1])
            move = [{"action_type": "MOVE_TO", "x": x, "y": y}]
            if route == "direct":
                replica.act([MoveTo(x=x, y=y)], settle=0.0)
                replica.observe("", i, format="jpeg", quality=80)
            elif route == "osgym_http":
                r = http.post("/step", json={"vm_id": vm, "action": f"move({x},{y})"})
                assert r.status_code == 200, r.text
            elif route == "v1_http":
                r = http.post(f"/v1/sessions/{sid}/step", json={"actions": move})
                assert r.status_code == 200, r.text
            else:
                ws.send(json.dumps({"type": "step", "data": {"actions": move}}))
                reply = json.loads(ws.recv())
                assert reply["type"] == "observation", reply

        order = list(times)
        transport: dict[str, list[float]] = {r: [] for r in order if r != "direct"}
        for i in range(steps + 10):
            rng.shuffle(order)
            for route in order:
                t0 = time.perf_counter()
                step(route, i)
                if i >= 10:  # the first rounds warm the connections and caches
                    times[route].append(time.perf_counter() - t0)
                    if route != "direct":
                        transport[route].append(times[route][-1] - inside[-1])
    d50 = statistics.median(times["direct"])
    out: dict[str, Any] = {"steps": steps, "screen": list(screen), "load_before": load,
                           "load_after": [round(n, 2) for n in os.getloadavg()]}
    for route, ts in times.items():
        out[route] = {"p50_ms": round(1000 * statistics.median(ts), 2), "p95_ms": round(1000 * percentile(ts, 95), 2)}
        if route != "direct":
            out[route]["overhead_p50_ms"] = round(1000 * (statistics.median(ts) - d50), 2)
            # the same round's direct step as its pair: the median of the differences
            paired = statistics.median(t - d for t, d in zip(ts, times["direct"], strict=True))
            out[route]["paired_overhead_p50_ms"] = round(1000 * paired, 2)
            # the route's own part: the round trip less the step's time inside SessionManager.step
            out[route]["route_p50_ms"] = round(1000 * statistics.median(transport[route]), 2)
            out[route]["route_p95_ms"] = round(1000 * percentile(transport[route], 95), 2)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    load = sub.add_parser("load")
    load.add_argument("--clients", type=int, default=32)
    load.add_argument("--replicas", type=int, default=8)
    load.add_argument("--duration", type=float, default=300)
    load.add_argument("--steps", type=int, default=3)
    ov = sub.add_parser("overhead")
    ov.add_argument("--steps", type=int, default=200)
    ov.add_argument("--resets", type=int, default=10)
    rt = sub.add_parser("routes")
    rt.add_argument("--steps", type=int, default=200)
    for p in (load, ov, rt):
        p.add_argument("--screen", default="1280x800")
        p.add_argument("--json", type=Path)
    args = ap.parse_args()
    screen = tuple(int(n) for n in args.screen.split("x"))
    assert len(screen) == 2
    client = docker.from_env(max_pool_size=64)
    image = images.ensure_image("desktop", client=client)
    if args.cmd == "load":
        with tempfile.TemporaryDirectory() as store:
            out = run_load(image, client, Path(store), clients=args.clients, replicas=args.replicas,
                           duration_s=args.duration, steps=args.steps, pool_name=f"bench-load-{uuid.uuid4().hex[:6]}",
                           screen=(screen[0], screen[1]))
    elif args.cmd == "routes":
        out = routes(image, client, args.steps, (screen[0], screen[1]))
    else:
        out = overhead(image, client, args.steps, (screen[0], screen[1]), args.resets)
    times = out.pop("reset_times", None)
    print(json.dumps(out, indent=2))
    if args.json:  # with each reset's times, which the terminal is spared
        args.json.write_text(json.dumps(out if times is None else {**out, "reset_times": times}, indent=2) + "\n")


if __name__ == "__main__":
    main()
