"""Memory of each process of an idle replica: what trimming the replica's processes saves.

Usage::

    python3 bench/bench_replica_processes.py [--tier desktop|apps] [--image TAG] [--n 3] [--shots 30]

Holds ``--n`` replicas of the tier at once (1280x800), takes ``--shots`` screenshots of each (the
control server's buffers grow with use, so an idle-after-work figure is the honest one), waits
5 s, then reads every container process's ``/proc/<pid>/smaps_rollup`` from the host (root). Per
process name, the median over the replicas of:

- ``private_dirty``: pages only this process has written, the part no other replica shares and KSM
  could only merge by content;
- ``pss``: its proportional share of everything it maps (shared libraries split among the replicas);
- ``rss``.

The summary line sums the medians per replica. Memory does not depend on the host's CPU load,
but the figures are meant to be compared within one run (``--image`` for a before/after pair).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's osgym and bench

import docker

from osgym.replicas import images
from osgym.replicas.pool import ReplicaPool, limits_for, reap

FIELDS = {"Rss:": "rss", "Pss:": "pss", "Private_Dirty:": "private_dirty"}


def process_memory(client: docker.DockerClient, container_id: str) -> dict[str, dict[str, float]]:
    """``{name: {rss, pss, private_dirty}}`` in MiB for a container's processes (same names summed)."""
    out: dict[str, dict[str, float]] = defaultdict(lambda: dict.fromkeys(FIELDS.values(), 0.0))
    for pid, comm in client.api.top(container_id, ps_args="-eo pid,comm")["Processes"]:
        try:
            rollup = open(f"/proc/{pid}/smaps_rollup").read()
        except OSError:  # exited meanwhile
            continue
        for line in rollup.splitlines():
            key = line.split(maxsplit=1)[0]
            if key in FIELDS:
                out[comm][FIELDS[key]] += int(line.split()[1]) / 1024
    return dict(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tier", default="desktop", choices=["desktop", "apps"])
    ap.add_argument("--image")
    ap.add_argument("--n", type=int, default=3)
    ap.add_argument("--shots", type=int, default=30)
    args = ap.parse_args()
    image = args.image or images.ensure_image(args.tier)
    client = docker.from_env()
    name = f"bench-procs-{uuid.uuid4().hex[:6]}"
    per: dict[str, list[dict[str, float]]] = defaultdict(list)
    try:
        with ReplicaPool(image, args.n, standby=0, name=name, screen=(1280, 800), limits=limits_for(args.tier),
                         docker_client=client, force=True) as pool:
            leases = [pool.lease() for _ in range(args.n)]
            replicas = [lease.__enter__() for lease in leases]
            for r in replicas:
                for _ in range(args.shots):
                    r.screenshot()
            time.sleep(5)
            for r in replicas:
                for comm, mem in process_memory(client, r.container.id).items():  # type: ignore[attr-defined]
                    per[comm].append(mem)
            for lease in leases:
                lease.__exit__(None, None, None)
    finally:
        reap(client, pool=name)
    total = dict.fromkeys(FIELDS.values(), 0.0)
    for comm, rows in sorted(per.items(), key=lambda kv: -statistics.median(r["private_dirty"] for r in kv[1])):
        med = {k: round(statistics.median(r[k] for r in rows), 1) for k in FIELDS.values()}
        for k, v in med.items():
            total[k] += v
        print(json.dumps({"process": comm, "replicas": len(rows), **med}))
    print(json.dumps({"summary": "per replica", "image": image, "n": args.n, "shots": args.shots,
                      **{k: round(v, 1) for k, v in total.items()}}))


if __name__ == "__main__":
    main()
