"""Export committed episodes as AgentNet-style JSONL, screenshots as files beside it."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from osgym.dataset.hollow import check_hollow
from osgym.dataset.reader import DatasetView, open_dataset
from osgym.errors import StoreError
from osgym.storage import S3Options

__all__ = ["export_jsonl"]

_IMAGE_MAGIC = ((b"\x89PNG\r\n\x1a\n", "png"), (b"\xff\xd8\xff", "jpg"), (b"GIF8", "gif"))


def _image_ext(data: bytes, path: str | None) -> str:
    for magic, ext in _IMAGE_MAGIC:
        if data.startswith(magic):
            return ext
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    suffix = Path(path or "").suffix.lstrip(".").lower()
    return suffix if re.fullmatch(r"[a-z0-9]{1,5}", suffix) else "bin"


def _safe_name(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", s)


def _steps_by_episode(view: DatasetView) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """Steps grouped by episode, one row group at a time (the writer keeps an episode's steps together)."""
    cols = [
        "episode_id",
        "step",
        "screenshot",
        "width",
        "height",
        "action",
        "action_type",
        "thought",
        "reward",
        "done",
        "error",
    ]
    current: str | None = None
    rows: list[dict[str, Any]] = []
    for fragment in view.steps.get_fragments():
        for batch in fragment.to_batches(columns=cols, use_threads=False):
            for row in batch.to_pylist():
                if row["episode_id"] != current:
                    if current is not None:
                        yield current, rows
                    current, rows = row["episode_id"], []
                rows.append(row)
    if current is not None:
        yield current, rows


def export_jsonl(
    uri: str | os.PathLike[str], dataset: str, out_dir: str | os.PathLike[str], *, s3: S3Options | None = None,
    allow_hollow: bool = False,
) -> Path:
    """Export committed episodes as AgentNet-style JSONL, with the screenshots as files beside it.

    Writes ``out_dir/episodes.jsonl`` (one line per episode) and
    ``out_dir/images/<episode_id>_<step>.<png|jpg>``; each line is::

        {"task_id": <episode_id>, "instruction": ..., "task_completed": <success>,
         "traj": [{"index": 0, "image": "<file in images/>", "width": ..., "height": ...,
                   "value": {"thought": ..., "action": <action JSON>, "action_type": ...,
                             "reward": ..., "done": ..., "error": ...}}, ...],
         "osgym": {"run_id", "task_id", "variant", "domain", "policy", "score", "termination", ...}}

    Episodes of hollow replicas (load tests, not agent data) are refused unless ``allow_hollow``.

    Returns:
        The path of the JSONL file.

    Raises:
        HollowDataRefused: if the dataset holds episodes of hollow replicas and not ``allow_hollow``.
        StoreError: when the dataset cannot be read or the files cannot be written.
    """
    view = open_dataset(uri, dataset, s3=s3)
    check_hollow(view, dataset, allow_hollow)
    out = Path(out_dir)
    images = out / "images"
    meta_cols = [
        "episode_id",
        "run_id",
        "task_id",
        "variant",
        "domain",
        "instruction",
        "policy",
        "success",
        "score",
        "termination",
        "error_class",
        "num_steps",
    ]
    episodes = {r["episode_id"]: r for r in view.episodes.to_table(columns=meta_cols).to_pylist()}
    target = out / "episodes.jsonl"
    staged = out / ".episodes.jsonl.incomplete"

    def line(meta: dict[str, Any], traj: list[dict[str, Any]]) -> str:
        extra = {k: meta[k] for k in meta_cols if k not in ("episode_id", "instruction", "success")}
        return json.dumps(
            {
                "task_id": meta["episode_id"],
                "instruction": meta["instruction"],
                "task_completed": bool(meta["success"]),
                "traj": traj,
                "osgym": extra,
            },
            ensure_ascii=False,
        )

    try:
        images.mkdir(parents=True, exist_ok=True)
        with open(staged, "w", encoding="utf-8") as f:
            done: set[str] = set()
            for episode_id, steps in _steps_by_episode(view):
                meta = episodes.get(episode_id)
                if meta is None or episode_id in done:
                    continue
                traj = []
                for s in sorted(steps, key=lambda r: r["step"]):
                    shot = s["screenshot"] or {}
                    data = shot.get("bytes") or b""
                    name = f"{_safe_name(episode_id)}_{s['step']:04d}.{_image_ext(data, shot.get('path'))}"
                    (images / name).write_bytes(data)
                    value = {k: s[k] for k in ("thought", "action", "action_type", "reward", "done", "error")}
                    traj.append(
                        {
                            "index": s["step"],
                            "image": name,
                            "width": s["width"],
                            "height": s["height"],
                            "value": value,
                        }
                    )
                f.write(line(meta, traj) + "\n")
                done.add(episode_id)
            for episode_id, meta in episodes.items():  # episodes that ended before their first step
                if episode_id not in done:
                    f.write(line(meta, []) + "\n")
        os.replace(staged, target)
    except (OSError, pa.ArrowException) as exc:
        raise StoreError(
            f"export of {dataset} to {out} failed: {exc}; check the store, the directory and free space"
        ) from exc
    finally:
        staged.unlink(missing_ok=True)
    return target
