"""One episode as an HTML page: its screenshots byte for byte, each beside a copy with its action drawn on it.

Optionally an animated GIF of the overlays. Dataset text (instructions, thoughts, actions, errors) is
HTML-escaped: a policy's output is untrusted.
"""

from __future__ import annotations

import html
import io
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
from PIL import Image, UnidentifiedImageError

from osgym.analysis import analytics
from osgym.analysis.duck import arrow_batches
from osgym.analysis.report.overlay import describe_action, draw_action, parse_action
from osgym.analysis.report.page import CSS
from osgym.analysis.report.tables import format_value
from osgym.errors import ConfigError

_MAGIC = ((b"\x89PNG\r\n\x1a\n", "png"), (b"\xff\xd8\xff", "jpg"), (b"GIF8", "gif"))


def _extension(data: bytes, path: str | None) -> str:
    suffix = (path or "").rsplit(".", 1)[-1].lower() if path and "." in path else ""
    if suffix in ("png", "jpg", "jpeg", "webp", "gif"):
        return "jpg" if suffix == "jpeg" else suffix
    for magic, ext in _MAGIC:
        if data.startswith(magic):
            return ext
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    return "bin"


def _safe_name(text: str) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._")
    return name[:120] or "episode"


def _as_connection(source: Any) -> tuple[duckdb.DuckDBPyConnection, bool]:
    if isinstance(source, duckdb.DuckDBPyConnection):
        return source, False
    return analytics.connect_view(source), True


def write_trajectory_page(
    view_or_con: Any,
    episode_id: str,
    out_dir: str | Path,
    *,
    gif: bool = False,
    gif_max_side: int = 640,
    gif_ms_per_step: int = 800,
) -> Path:
    """Write one episode as ``<out_dir>/<episode_id>/index.html`` with its screenshots.

    Each step's screenshot is written as stored (``0000.png``, byte for byte,
    never re-encoded) and as an annotated copy (``0000.overlay.png``) with the
    action drawn on it; the page shows the overlays, links the originals and
    lists each action, thought, timing and error.

    Args:
        view_or_con: a connection from :func:`osgym.analysis.analytics.connect`, or a
            ``DatasetView`` (a connection is opened and closed for it).
        episode_id: the episode to show.
        out_dir: the parent directory of the episode's directory.
        gif: also write ``trajectory.gif`` of the overlays and show it on top.
        gif_max_side: the GIF's longest side in pixels.
        gif_ms_per_step: how long the GIF shows each step.

    Returns:
        The path of the page.

    Raises:
        ConfigError: if the dataset has no episode ``episode_id``.
    """
    con, owned = _as_connection(view_or_con)
    try:
        return _write_trajectory(con, episode_id, Path(out_dir), gif, gif_max_side, gif_ms_per_step)
    finally:
        if owned:
            con.close()


_EPISODE_FIELDS = (
    "task_id",
    "variant",
    "domain",
    "policy",
    "instruction",
    "success",
    "score",
    "termination",
    "error_class",
    "error_message",
    "attempts",
    "host",
    "replica_id",
    "run_id",
    "image",
)


def _write_trajectory(
    con: duckdb.DuckDBPyConnection, episode_id: str, out_dir: Path, gif: bool, gif_max_side: int, gif_ms: int
) -> Path:
    found = con.sql(
        f"SELECT {', '.join(_EPISODE_FIELDS)}, num_steps, replica_s, epoch(started_at) AS started, "
        "epoch(ended_at) - epoch(started_at) AS wall_s FROM episodes WHERE episode_id = $id",
        params={"id": episode_id},
    ).fetchall()
    if not found:
        raise ConfigError(f"episode_id: no episode {episode_id!r} in the dataset")
    cols = (*_EPISODE_FIELDS, "num_steps", "replica_s", "started", "wall_s")
    ep = dict(zip(cols, found[0], strict=True))
    folder = out_dir / _safe_name(episode_id)
    folder.mkdir(parents=True, exist_ok=True)

    rel = con.sql(
        "SELECT step, action, action_type, thought, reward, done, policy_ms, env_ms, error, "
        "screenshot_sha256, width, height, image, image_path FROM frames WHERE episode_id = $id ORDER BY step",
        params={"id": episode_id},
    )
    steps_html: list[str] = []
    gif_frames: list[Image.Image] = []
    pointer: tuple[int, int] | None = None
    for batch in arrow_batches(rel, 8):
        for row in batch.to_pylist():
            html_part, pointer, frame = _write_step(folder, row, pointer, gif, gif_max_side)
            steps_html.append(html_part)
            if frame is not None:
                gif_frames.append(frame)

    gif_html = ""
    if gif and gif_frames:
        gif_frames[0].save(
            folder / "trajectory.gif",
            save_all=True,
            append_images=gif_frames[1:],
            duration=gif_ms,
            loop=0,
            optimize=True,
        )
        gif_html = "<h2>Animation</h2><img src='trajectory.gif' alt='trajectory animation'>"

    meta = dict(ep)
    started = meta.pop("started")
    meta["started_at"] = None if started is None else f"{datetime.fromtimestamp(started, UTC):%Y-%m-%d %H:%M:%S} UTC"
    meta_rows = "".join(
        f"<tr><th>{html.escape(k)}</th><td>{html.escape(format_value(k, v))}</td></tr>" for k, v in meta.items()
    )
    title = f"Episode {episode_id}"
    page = (
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{CSS}</style></head><body><h1>{html.escape(title)}</h1>"
        f"<p>{html.escape(str(ep['instruction'] or ''))}</p><table>{meta_rows}</table>{gif_html}"
        f"<h2>Steps</h2>{''.join(steps_html) or '<p>No steps recorded.</p>'}</body></html>"
    )
    path = folder / "index.html"
    path.write_text(page, encoding="utf-8")
    return path


def _write_step(
    folder: Path, row: dict[str, Any], pointer: tuple[int, int] | None, gif: bool, gif_max_side: int
) -> tuple[str, tuple[int, int] | None, Image.Image | None]:
    step = int(row["step"])
    data: bytes | None = row["image"]
    parsed = parse_action(row["action"])
    label = f"{step}: {describe_action(parsed)}"
    image_html = "<p class='muted'>No screenshot stored.</p>"
    frame = None
    if data:
        ext = _extension(data, row["image_path"])
        original = f"{step:04d}.{ext}"
        (folder / original).write_bytes(data)
        try:
            with Image.open(io.BytesIO(data)) as im:
                overlay, pointer = draw_action(im, parsed, pointer, label)
        except (UnidentifiedImageError, OSError, ValueError) as exc:
            image_html = (
                f"<p class='muted'>Overlay unavailable ({html.escape(type(exc).__name__)}); "
                f"<a href='{original}'>original</a>.</p>"
            )
        else:
            name = f"{step:04d}.overlay.{'jpg' if ext == 'jpg' else 'png'}"
            if ext == "jpg":
                overlay.save(folder / name, quality=90)
            else:
                overlay.save(folder / name, compress_level=1)
            image_html = (
                f"<a href='{original}' title='original, as stored'>"
                f"<img src='{name}' alt='step {step} with its action drawn'></a>"
            )
            if gif:
                small = overlay.copy()
                small.thumbnail((gif_max_side, gif_max_side))
                frame = small.convert("P", palette=Image.Palette.ADAPTIVE)
    facts = {k: row[k] for k in ("reward", "done", "policy_ms", "env_ms", "width", "height")}
    fact_text = ", ".join(f"{k} {format_value(k, v)}" for k, v in facts.items())
    parts = [
        f"<div class='step' id='step-{step}'><h3>Step {step} · {html.escape(describe_action(parsed))}</h3>",
        image_html,
        f"<pre>{html.escape(json.dumps(parsed, indent=1, sort_keys=True) if parsed is not None else '')}</pre>",
    ]
    if row["thought"]:
        parts.append(f"<p><b>Thought:</b> {html.escape(row['thought'])}</p>")
    if row["error"]:
        parts.append(f"<p><b>Error:</b> {html.escape(row['error'])}</p>")
    parts.append(
        f"<p class='muted'>{html.escape(fact_text)}; sha256 {html.escape(str(row['screenshot_sha256']))}</p></div>"
    )
    return "".join(parts), pointer, frame
