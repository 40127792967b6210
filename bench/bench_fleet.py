"""The control plane over hollow replicas: the real collect flow, a real Prefect server, the pool and the writer.

One level per run: ``--replicas N`` hollow replicas (:mod:`osgym.replicas.hollow`: the real control protocol
over Unix sockets, one host process serving them all) held by one pool and one flow, ``--episodes M`` ten-step
episodes of the random policy (over ``--variants`` desktop-basics variants exported as task files, taken in
turn), against a ``prefect server`` started here on SQLite (``--server embedded``) or
on a private PostgreSQL cluster (``--server postgres``, Debian's ``postgresql``: scripts/ensure-postgres.sh).
The flow runs in this process, which is the "flow process" measured; the hollow server stands in for the
replicas and is not counted as control plane.

    python3 bench/bench_fleet.py --replicas 250 --episodes 2000 --server postgres

Measured: the flow's wall time from its call to its return; the CPU of this process, of the Prefect server's
process tree and of the database's (PostgreSQL's postmaster and its backends, those that exited included)
over the run; this process's resident memory once the first episode finished and at the last; the database's
size. The last line printed is JSON with ``replicas``, ``episodes``, ``episodes_per_min``,
``control_cpu_ms_per_episode`` (flow process plus Prefect server plus database), ``flow_rss_mib_start`` and
``flow_rss_mib_end``, and the parts they are made of.

Where the CPU goes: ``py-spy`` (a dev dependency) on the two processes while a level runs, the flow's
threads that hold the GIL (the flow process is one interpreter, so that is where its CPU goes) and the
server's whole process tree:

    py-spy record --pid FLOW_PID --gil --nonblocking --rate 10 --duration 60 --format raw -o flow.txt
    py-spy record --pid SERVER_PID --subprocesses --nonblocking --rate 40 --duration 60 --format raw -o server.txt

Without ``--gil`` the flow's profile counts the threads blocked in a socket read as busy (``--nonblocking``
cannot tell them apart), and sampling 1,000 threads blocking takes seconds a sample.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")

TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds of the process and of its reaped children)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return int(fields[1]), sum(int(f) for f in fields[11:15]) / TICK  # utime stime cutime cstime


def tree_cpu_s(root: int) -> float:
    """CPU seconds of process ``root`` and all its descendants (exited ones through their parents' cutime)."""
    stats = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (s := _stat(int(entry))) is not None:
            stats[int(entry)] = s
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        if pid in stats:
            total += stats[pid][1]
            todo += children.get(pid, [])
    return total


def self_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--replicas", type=int, required=True)
    ap.add_argument("--episodes", type=int, required=True)
    ap.add_argument("--server", choices=["embedded", "postgres"], default="embedded")
    ap.add_argument("--steps", type=int, default=10, help="steps per episode (random actions, then DONE)")
    ap.add_argument("--batch-size", type=int, help="episodes per collect-batch subflow (default: 10 x replicas, "
                                                   "1,000..10,000)")
    ap.add_argument("--episodes-per-task", type=int,
                    help="the recipe's episodes_per_task (default: the flow's choice; 1: a Prefect task run per "
                         "episode, as before issue 42's cuts)")
    ap.add_argument("--screen", default="640x480", help="the synthetic screen's WxH")
    ap.add_argument("--variants", type=int, default=1000,
                    help="distinct desktop-basics variants, exported as task files that episodes take in turn "
                         "(the suite gives at most about 2,850 distinct ones; 20,000 episodes repeat them)")
    ap.add_argument("--keep", action="store_true", help="keep the dataset and the Prefect home (paths printed)")
    args = ap.parse_args()
    if min(args.replicas, args.episodes, args.steps, args.variants) < 1:
        raise SystemExit("--replicas, --episodes, --steps and --variants: expected >= 1")
    width, _, height = args.screen.partition("x")
    tmp = Path(tempfile.mkdtemp(prefix="osgym-fleet-"))
    try:
        print(json.dumps(run(args, tmp, (int(width), int(height)))), flush=True)
    finally:
        if args.keep:
            print(f"kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def run(args: argparse.Namespace, tmp: Path, screen: tuple[int, int]) -> dict[str, Any]:
    from tests.deploy.conftest import PrefectServer
    from tests.deploy.postgres import PrivatePostgres

    # its own directory: the cluster runs as the user postgres, who cannot pass through the private `tmp`
    pg = PrivatePostgres(Path(tempfile.mkdtemp(prefix="osgym-fleet-pg-"))) if args.server == "postgres" else None
    home = tmp / "prefect-home"
    home.mkdir()
    server = PrefectServer(home)
    try:
        if pg is not None:
            pg.start()
            server.env["PREFECT_API_DATABASE_CONNECTION_URL"] = pg.url
        server.start()
        with server.settings():
            return measure(args, tmp, screen, server, pg)
    finally:
        server.stop()
        if pg is not None:
            pg.stop()


def measure(args: argparse.Namespace, tmp: Path, screen: tuple[int, int], server: Any, pg: Any) -> dict[str, Any]:
    from flows.collect import collect, episodes_per_task
    from osgym.collection.recipe import load_recipe
    from osgym.suites.export import export_variants, write_export

    batch = args.batch_size or min(10_000, max(1_000, 10 * args.replicas))
    write_export(tmp / "tasks", export_variants("desktop-basics", min(args.variants, args.episodes)))
    recipe = {"name": "fleet", "episodes": args.episodes, "task_dir": str(tmp / "tasks" / "examples"),
              "task_index": str(tmp / "tasks" / "test_all.json"), "replicas": args.replicas, "replica_kind": "hollow",
              "standby": max(1, args.replicas // 50), "screen": list(screen), "store": str(tmp / "data"),
              "max_steps": args.steps, "settle_s": 0, "batch_size": batch, "episode_timeout_s": 300,
              "policy": {"name": "random", "options": {"max_actions": args.steps - 1}}}
    if args.episodes_per_task is not None:
        recipe["episodes_per_task"] = args.episodes_per_task
    pg_root = int((pg.data / "postmaster.pid").read_text().split()[0]) if pg is not None else None
    server_pid = server.procs[0].pid
    rss: dict[str, float] = {}
    done = [0]
    by_1000: list[float] = []  # the flow process's RSS after every 1,000th episode
    lock = threading.Lock()

    def on_episode(_: Any) -> None:
        with lock:
            done[0] += 1
            if done[0] == 1:
                rss["first"] = rss_mib()
            if done[0] % 1000 == 0:
                by_1000.append(round(rss_mib(), 1))
            if done[0] == args.episodes:
                rss["last"] = rss_mib()

    peak = [0.0]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(1.0):
            peak[0] = max(peak[0], rss_mib())

    threading.Thread(target=sample, daemon=True).start()
    load0 = os.getloadavg()
    rss["call"] = rss_mib()
    cpu0 = (self_cpu_s(), tree_cpu_s(server_pid), tree_cpu_s(pg_root) if pg_root else 0.0)
    t0 = time.monotonic()
    summary = collect(recipe, on_episode=on_episode)
    elapsed = time.monotonic() - t0
    cpu1 = (self_cpu_s(), tree_cpu_s(server_pid), tree_cpu_s(pg_root) if pg_root else 0.0)
    stop.set()
    n = summary["episodes"]
    flow_s, server_s, db_s = (b - a for a, b in zip(cpu0, cpu1, strict=True))
    if pg is not None:
        db_bytes = int(pg.sql(f"select pg_database_size('{pg.database}')").strip())
    else:
        db_bytes = sum(p.stat().st_size for p in server.home.glob("prefect.db*"))

    import duckdb  # episodes stored as a replica fault: lost to the replicas (or to a lease wait), not run

    faults = duckdb.sql(f"select count(*) from read_parquet('{tmp}/data/fleet/episodes/*/*.parquet') "
                        "where error_class = 'replica_fault'").fetchall()[0]

    def per_episode(seconds: float) -> float:
        return round(1000 * seconds / max(n, 1), 2)

    return {"replicas": args.replicas, "episodes": n, "steps_per_episode": args.steps, "server": args.server,
            "batch_size": batch, "episodes_per_task": episodes_per_task(load_recipe(recipe), min(batch, n)),
            "variants": min(args.variants, args.episodes), "elapsed_s": round(elapsed, 1),
            "episodes_per_min": round(60 * n / elapsed, 1),
            "control_cpu_ms_per_episode": per_episode(flow_s + server_s + db_s),
            "flow_cpu_ms_per_episode": per_episode(flow_s), "server_cpu_ms_per_episode": per_episode(server_s),
            "db_cpu_ms_per_episode": per_episode(db_s) if pg is not None else None,
            "flow_rss_mib_call": round(rss["call"], 1), "flow_rss_mib_start": round(rss.get("first", 0.0), 1),
            "flow_rss_mib_end": round(rss.get("last", rss_mib()), 1), "flow_rss_mib_peak": round(peak[0], 1),
            "flow_rss_mib_every_1000": by_1000,
            "db_mib": round(db_bytes / 2**20, 1), "db_mib_per_1000_episodes": round(db_bytes / 2**20 / n * 1000, 2),
            "success": summary["success"], "errors": summary["errors"], "retried": summary["retried"],
            "replica_faults": faults[0] if faults else None,
            "load_start": [round(x, 2) for x in load0], "load_end": [round(x, 2) for x in os.getloadavg()],
            "cores": os.cpu_count()}


if __name__ == "__main__":
    main()
