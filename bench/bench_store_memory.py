"""Peak memory of the dataset writer for 200 vs 2,000 episodes (issue 6: at most 1.3x apart).

Each measurement runs in a fresh child process, which:

1. imports osgym and loads a pool of real PNG frames (desktop-like, 1280x800)
   written by the parent, and records its resident memory (``VmRSS``) as the
   baseline;
2. streams N episodes of S steps into a :class:`osgym.dataset.DatasetWriter`,
   building each ``EpisodeResult`` just before ``add()`` and dropping it after,
   as the collector does;
3. finalizes, then reports its peak resident memory (``VmHWM`` from
   ``/proc/self/status``, which covers Python, pyarrow's allocator and boto3
   alike), the pyarrow pool's peak, the bytes written and the wall time.

The parent repeats each size ``--repeats`` times, prints every run as JSON and
a Markdown table of medians, and exits non-zero if the ratio of the medians of
peak RSS exceeds 1.3.

    python3 bench/bench_store_memory.py                        # local directory in a temp dir
    python3 bench/bench_store_memory.py --uri s3://bucket/bench --endpoint http://127.0.0.1:8333 \\
        --access-key KEY --secret-key SECRET                    # an S3 endpoint
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

LIMIT_RATIO = 1.3
FRAME_SIZE = (1280, 800)


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def make_frames(out: Path, count: int) -> list[Path]:
    """Desktop-like PNGs: windows, bars and text, ~100-200 KB each, all different."""
    from PIL import Image, ImageDraw

    paths = []
    for n in range(count):
        rng = random.Random(n)
        img = Image.new("RGB", FRAME_SIZE, (rng.randrange(40, 90),) * 3)
        draw = ImageDraw.Draw(img)
        for _ in range(12):  # windows
            x, y = rng.randrange(0, 1000), rng.randrange(30, 600)
            w, h = rng.randrange(200, 700), rng.randrange(150, 450)
            draw.rectangle([x, y, x + w, y + h], fill=tuple(rng.randrange(180, 255) for _ in range(3)), outline=0)
            draw.rectangle([x, y, x + w, y + 22], fill=tuple(rng.randrange(0, 120) for _ in range(3)))
            for line in range(y + 30, y + h - 12, 14):  # text
                words = " ".join("".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randrange(2, 9)))
                                 for _ in range(rng.randrange(3, 12)))  # fmt: skip
                draw.text((x + 8, line), words, fill=(20, 20, 20))
        draw.rectangle([0, 0, FRAME_SIZE[0], 28], fill=(30, 30, 30))
        path = out / f"frame-{n:02d}.png"
        img.save(path, format="PNG", compress_level=6)
        paths.append(path)
    return paths


def child(args: argparse.Namespace) -> None:
    import pyarrow as pa

    from osgym.dataset import DatasetWriter
    from osgym.episodes.trajectory import EpisodeResult, Step, Trajectory
    from osgym.storage import S3Options

    frames = [p.read_bytes() for p in sorted(Path(args.frames).glob("*.png"))]
    s3 = None
    if args.endpoint:
        s3 = S3Options(endpoint_url=args.endpoint, access_key=args.access_key, secret_key=args.secret_key)
    t0 = datetime(2026, 1, 1, tzinfo=UTC)

    def episode(i: int) -> EpisodeResult:
        eid = hashlib.sha256(f"{args.run_id}/{i}".encode()).hexdigest()[:16]
        steps = [
            Step(
                step=k,
                ts=t0 + timedelta(seconds=i * 60 + k),
                screenshot=frames[(i + k) % len(frames)],
                screenshot_format="png",
                width=FRAME_SIZE[0],
                height=FRAME_SIZE[1],
                action={"type": "click", "x": k * 10, "y": i % 800},
                action_type="click",
                thought="I will click the button that says OK. " * 4,
                a11y="<node role='window'>" * 50,
            )
            for k in range(args.steps)
        ]
        return EpisodeResult(
            episode_id=eid, run_id=args.run_id, task_id=f"task-{i % 50}", variant="default", domain="os",
            instruction="Open the settings and turn on dark mode", policy="bench", policy_config={}, image="bench",
            replica_id="r", host="h", trajectory=Trajectory(steps=steps, score=float(i % 2), termination="done"),
        )  # fmt: skip

    baseline_kb = _status_kb("VmRSS")
    start = time.perf_counter()
    with DatasetWriter(args.uri, "bench", args.run_id, s3=s3) as writer:
        for i in range(args.episodes):
            writer.add(episode(i))
    manifest = writer.finalize()
    elapsed = time.perf_counter() - start
    print(
        json.dumps(
            {
                "episodes": args.episodes,
                "steps": manifest.steps,
                "shards": len(manifest.tables["steps"]),
                "bytes_written": sum(e.bytes for t in manifest.tables.values() for e in t),
                "baseline_rss_mb": baseline_kb / 1024,
                "peak_rss_mb": _status_kb("VmHWM") / 1024,
                "arrow_pool_peak_mb": pa.default_memory_pool().max_memory() / 2**20,
                "seconds": elapsed,
            }
        )
    )


def run_one(args: argparse.Namespace, episodes: int, frames_dir: Path, n: int) -> dict[str, float]:
    run_id = f"mem-{episodes}-{n}-{os.getpid()}"
    tmp_root = None
    uri = args.uri
    if uri is None:
        tmp_root = Path(tempfile.mkdtemp(prefix="osgym-bench-store-"))
        uri = str(tmp_root)
    cmd = [sys.executable, __file__, "--child", "--uri", uri, "--run-id", run_id, "--frames", str(frames_dir),
           "--episodes", str(episodes), "--steps", str(args.steps)]  # fmt: skip
    if args.endpoint:
        cmd += ["--endpoint", args.endpoint, "--access-key", args.access_key, "--secret-key", args.secret_key]
    try:
        out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    finally:
        if tmp_root is not None:
            shutil.rmtree(tmp_root, ignore_errors=True)
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--uri", help="store URI (default: a temporary local directory per run)")
    p.add_argument("--endpoint")
    p.add_argument("--access-key")
    p.add_argument("--secret-key")
    p.add_argument("--sizes", type=int, nargs="+", default=[200, 2000])
    p.add_argument("--steps", type=int, default=8, help="steps per episode")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--episodes", type=int, help=argparse.SUPPRESS)
    p.add_argument("--run-id", help=argparse.SUPPRESS)
    p.add_argument("--frames", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args)
        return 0

    with tempfile.TemporaryDirectory(prefix="osgym-bench-frames-") as frames_dir:
        frames = make_frames(Path(frames_dir), 16)
        frame_kb = statistics.median(f.stat().st_size for f in frames) / 1024
        print(f"frames: {len(frames)} PNG {FRAME_SIZE[0]}x{FRAME_SIZE[1]}, median {frame_kb:.0f} KB", flush=True)
        results: dict[int, list[dict[str, float]]] = {n: [] for n in args.sizes}
        for rep in range(args.repeats):
            for size in args.sizes:  # interleaved, so drift on the machine hits both sizes alike
                r = run_one(args, size, Path(frames_dir), rep)
                results[size].append(r)
                print(json.dumps(r), flush=True)

    def med(size: int, key: str) -> float:
        return statistics.median(r[key] for r in results[size])

    print()
    print("| episodes | steps | shards | written (MB) | baseline RSS (MB) | peak RSS (MB) | writer peak over "
          "baseline (MB) | pyarrow pool peak (MB) | time (s) |")  # fmt: skip
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size in args.sizes:
        print(
            f"| {size} | {med(size, 'steps'):.0f} | {med(size, 'shards'):.0f} | "
            f"{med(size, 'bytes_written') / 2**20:.0f} | {med(size, 'baseline_rss_mb'):.0f} | "
            f"{med(size, 'peak_rss_mb'):.0f} | {med(size, 'peak_rss_mb') - med(size, 'baseline_rss_mb'):.0f} | "
            f"{med(size, 'arrow_pool_peak_mb'):.1f} | {med(size, 'seconds'):.1f} |"
        )
    small, large = min(args.sizes), max(args.sizes)
    ratio = med(large, "peak_rss_mb") / med(small, "peak_rss_mb")
    print(f"\npeak RSS ratio {large} / {small} episodes: {ratio:.3f} (limit {LIMIT_RATIO})")
    return 0 if ratio <= LIMIT_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
