"""Writer memory when episodes are small: the Parquet row-group metadata a shard keeps.

A ``DatasetWriter`` writes one ``steps`` row group per episode, and a Parquet writer
keeps every row group's metadata in memory until its file closes. With small
screenshots a 256 MiB shard holds thousands of episodes, so that metadata, not the
data, sets the writer's memory; ``shard_max_episodes`` bounds it. Each measurement
runs in a fresh child process that streams N synthetic episodes (the store tests'
small real PNG frames) and reports its resident memory over its baseline just
before the writer closes.

    python3 bench/bench_writer_metadata.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import json, shutil, sys, tempfile
sys.path[:0] = [{root!r}, {synth!r}]
from store_synth import make_episode
from osgym.dataset import DatasetWriter

def rss_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024

d = tempfile.mkdtemp(prefix="osgym-bench-meta-")
try:
    base = rss_mb()
    with DatasetWriter(d, "ds", "r", shard_max_episodes={cap}) as w:
        for i in range({n}):
            w.add(make_episode("r", i))
        grown = rss_mb() - base
    print(json.dumps({{"shards": len(w.finalize().tables["steps"]), "rss_over_baseline_mb": round(grown, 1)}}))
finally:
    shutil.rmtree(d, ignore_errors=True)
"""


def measure(cap: int, n: int) -> dict[str, float]:
    code = CHILD.format(root=str(ROOT), synth=str(ROOT / "tests" / "store"), cap=cap, n=n)
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                         cwd=tempfile.gettempdir())
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    from osgym.dataset.writer import DEFAULT_SHARD_MAX_EPISODES

    print("| shard_max_episodes | episodes | shards | writer RSS over baseline (MB) |\n|---:|---:|---:|---:|")
    for cap in (DEFAULT_SHARD_MAX_EPISODES, 10**9):
        for n in (1000, 4000, 8000):
            r = measure(cap, n)
            label = cap if cap < 10**9 else "no cap"
            print(f"| {label} | {n} | {r['shards']} | {r['rss_over_baseline_mb']} |", flush=True)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
