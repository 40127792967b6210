"""Peak memory and speed of ``osgym dataset export --format sft`` for 10,000 vs 100,000 episodes (issue 21).

1. The parent writes two synthetic datasets with osgym's own :class:`osgym.dataset.DatasetWriter`
   (``--small`` and ``--large`` episodes, 2 steps each, real PNG frames of ``FRAME_SIZE`` drawn with
   Pillow, a pool of 64 different frames, a click then DONE; every other episode successful), unless
   ``--data`` already holds them.
2. Each export runs in a fresh child process, which records its resident memory after imports
   (``VmRSS``), selects the episodes with a DuckDB filter (``--where success``, the same code as the
   CLI), exports them per step in pyautogui with every screenshot resized (``--max-side``), and
   reports its peak resident memory (``VmHWM``), the wall time and the samples written.
3. The parent prints every run as JSON and a Markdown table, and exits non-zero if the large export's
   peak RSS is more than 1.3x the small one's.

    python3 bench/bench_sft_export.py --data /tmp/sft-bench            # 10,000 and 100,000 episodes
    python3 bench/bench_sft_export.py --data /tmp/x --small 500 --large 5000   # a quick check
"""

from __future__ import annotations

import argparse
import io
import json
import random
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

LIMIT_RATIO = 1.3
FRAME_SIZE = (320, 200)
POOL = 64


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def _frames() -> list[bytes]:
    from PIL import Image, ImageDraw

    out = []
    for n in range(POOL):
        rng = random.Random(n)
        img = Image.new("RGB", FRAME_SIZE, (rng.randrange(40, 90),) * 3)
        draw = ImageDraw.Draw(img)
        for _ in range(6):
            x, y = rng.randrange(0, 250), rng.randrange(10, 150)
            draw.rectangle([x, y, x + rng.randrange(30, 90), y + rng.randrange(20, 60)],
                           fill=tuple(rng.randrange(120, 255) for _ in range(3)), outline=0)
            draw.text((x + 4, y + 4), f"win {n}", fill=(10, 10, 10))
        buf = io.BytesIO()
        img.save(buf, "PNG")
        out.append(buf.getvalue())
    return out


def write_dataset(root: Path, name: str, episodes: int) -> float:
    """Write ``episodes`` synthetic episodes; returns the seconds it took."""
    from osgym.dataset import DatasetWriter
    from osgym.episodes.trajectory import EpisodeResult, Step, Trajectory

    frames = _frames()
    t0 = datetime(2026, 12, 1, tzinfo=UTC)
    start = time.perf_counter()
    with DatasetWriter(root, name, "bench", run_config={"recipe": {"screen": list(FRAME_SIZE)}},
                       shard_max_age_s=None) as writer:
        for i in range(episodes):
            ts = t0 + timedelta(seconds=i)
            steps = [
                Step(step=0, ts=ts, screenshot=frames[i % POOL], screenshot_format="png", width=FRAME_SIZE[0],
                     height=FRAME_SIZE[1], action={"action_type": "CLICK", "x": 10 + i % 300, "y": 20 + i % 180},
                     action_type="CLICK", thought=f"click the window of episode {i}"),
                Step(step=1, ts=ts, screenshot=frames[(i + 1) % POOL], screenshot_format="png", width=FRAME_SIZE[0],
                     height=FRAME_SIZE[1], action={"action_type": "DONE"}, action_type="DONE", done=True),
            ]
            success = i % 2 == 0
            writer.add(EpisodeResult(
                episode_id=f"ep-{i:07d}", run_id="bench", task_id=f"task-{i % 50}", variant="0", domain="os",
                instruction=f"Open the window number {i} and close it", policy="scripted", policy_config={},
                image="osgym/desktop:bench", replica_id="r", host="h",
                trajectory=Trajectory(steps=steps, score=float(success), termination="done" if success else "fail",
                                      started_at=ts, ended_at=ts + timedelta(seconds=30)),
            ))
    return time.perf_counter() - start


def child(args: argparse.Namespace) -> None:
    from osgym.analysis.selection import select_from_store
    from osgym.dataset.sft import export_sft

    baseline_kb = _status_kb("VmRSS")
    start = time.perf_counter()
    selection = select_from_store(args.data, args.dataset, where="success")
    selected_s = time.perf_counter() - start
    result = export_sft(args.data, args.dataset, args.out, {"max_side": args.max_side}, selection=selection)
    wall = time.perf_counter() - start
    out_bytes = sum(p.stat().st_size for p in Path(args.out).rglob("*") if p.is_file())
    print(json.dumps({
        "dataset": args.dataset, "episodes": selection.total, "kept": selection.kept, "samples": result.samples,
        "shards": result.shards, "baseline_rss_mib": round(baseline_kb / 1024, 1),
        "peak_rss_mib": round(_status_kb("VmHWM") / 1024, 1), "select_s": round(selected_s, 1),
        "wall_s": round(wall, 1), "samples_per_s": round(result.samples / wall, 1),
        "out_mib": round(out_bytes / 2**20, 1),
    }))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="store root for the synthetic datasets (kept between runs)")
    ap.add_argument("--small", type=int, default=10_000)
    ap.add_argument("--large", type=int, default=100_000)
    ap.add_argument("--max-side", type=int, default=160)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--dataset", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    root = Path(args.data)
    runs = []
    for n in (args.small, args.large):
        name = f"bench-{n}"
        if not (root / name / "_manifests" / "bench.json").exists():
            print(f"writing {n} episodes ...", file=sys.stderr, flush=True)
            print(f"wrote {n} episodes in {write_dataset(root, name, n):.0f} s", file=sys.stderr, flush=True)
        out = root / f"export-{n}"
        shutil.rmtree(out, ignore_errors=True)
        r = subprocess.run([sys.executable, __file__, "--child", "--data", str(root), "--dataset", name,
                            "--out", str(out), "--max-side", str(args.max_side)],
                           capture_output=True, text=True, check=False)
        if r.returncode:
            sys.exit(f"export of {name} failed:\n{r.stderr}")
        run = json.loads(r.stdout.strip().splitlines()[-1])
        print(json.dumps(run), flush=True)
        runs.append(run)
        shutil.rmtree(out, ignore_errors=True)
    print("\n| episodes | kept | samples | shards | RSS after imports MiB | peak RSS MiB | select s | wall s "
          "| samples/s | export MiB |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in runs:
        print(f"| {r['episodes']} | {r['kept']} | {r['samples']} | {r['shards']} | {r['baseline_rss_mib']} | "
              f"{r['peak_rss_mib']} | {r['select_s']} | {r['wall_s']} | {r['samples_per_s']} | {r['out_mib']} |")
    ratio = runs[1]["peak_rss_mib"] / runs[0]["peak_rss_mib"]
    print(f"\npeak RSS ratio large/small: {ratio:.2f} (limit {LIMIT_RATIO})")
    if ratio > LIMIT_RATIO:
        sys.exit(1)


if __name__ == "__main__":
    main()
