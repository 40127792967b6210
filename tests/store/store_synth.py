"""Synthetic episodes for the store tests: real PNG/JPEG frames, each image distinct."""

from __future__ import annotations

import hashlib
import io
import random
from datetime import UTC, datetime, timedelta

from PIL import Image, ImageDraw

from osgym.episodes.trajectory import EpisodeResult, Step, Trajectory

POLICIES = ("random", "scripted", "claude")
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def frame(seed: str, width: int, height: int, fmt: str = "png", noise: bool = False) -> bytes:
    """An image unique to ``seed``: a colour, a box at a seed-dependent place, optionally noise."""
    digest = hashlib.sha256(seed.encode()).digest()
    if noise:
        img = Image.frombytes("RGB", (width, height), _noise(digest, width * height * 3))
    else:
        img = Image.new("RGB", (width, height), tuple(digest[:3]))
        x, y = digest[3] % max(1, width // 2), digest[4] % max(1, height // 2)
        ImageDraw.Draw(img).rectangle([x, y, x + width // 3, y + height // 3], fill=tuple(digest[5:8]))
    buf = io.BytesIO()
    img.save(buf, format="JPEG" if fmt == "jpeg" else "PNG", **({"quality": 80} if fmt == "jpeg" else {}))
    return buf.getvalue()


def _noise(seed: bytes, n: int) -> bytes:
    return random.Random(seed).randbytes(n)  # incompressible, so the PNG is as large as the pixels


def episode_id(run_id: str, index: int) -> str:
    return f"{run_id}-{hashlib.sha256(f'{run_id}/{index}'.encode()).hexdigest()[:12]}"


def make_episode(
    run_id: str,
    index: int,
    *,
    steps: int | None = None,
    size: tuple[int, int] | None = None,
    noise: bool = False,
) -> EpisodeResult:
    """Episode ``index`` of a run; every 11th has no steps (a replica fault before the first frame)."""
    n_steps = steps if steps is not None else (0 if index % 11 == 10 else 1 + index % 3)
    eid = episode_id(run_id, index)
    frames = []
    for i in range(n_steps):
        w, h = size or (40 + (index * 7 + i * 3) % 48, 30 + (index * 5 + i * 11) % 40)
        fmt = "jpeg" if (index + i) % 4 == 3 else "png"
        frames.append(
            Step(
                step=i,
                ts=T0 + timedelta(seconds=index * 60 + i),
                screenshot=frame(f"{eid}/{i}", w, h, fmt, noise),
                screenshot_format=fmt,
                width=w,
                height=h,
                action={"type": "click", "x": i, "y": index},
                action_type="click" if i < n_steps - 1 else "done",
                thought=f"step {i} of episode {index}",
                done=i == n_steps - 1,
            )
        )
    success = n_steps > 0 and index % 2 == 0
    trajectory = Trajectory(
        steps=frames,
        score=1.0 if success else 0.0,
        termination=("done" if success else "fail") if n_steps else "error",
        error_class=None if n_steps else "replica_fault",
        error_message=None if n_steps else "replica vanished",
        started_at=T0 + timedelta(seconds=index * 60),
        ended_at=T0 + timedelta(seconds=index * 60 + 30),
    )
    return EpisodeResult(
        episode_id=eid,
        run_id=run_id,
        task_id=f"task-{index % 7}",
        variant="default",
        domain=("os", "chrome", "libreoffice")[index % 3],
        instruction=f"Do thing number {index}",
        policy=POLICIES[index % len(POLICIES)],
        policy_config={"temperature": 0.0},
        image="osgym/desktop:test",
        replica_id=f"replica-{index % 4}",
        host="localhost",
        trajectory=trajectory,
    )
