"""Bar charts drawn with Pillow (no plotting library), and the charts the HTML report shows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from PIL import Image, ImageDraw, ImageFont

from osgym.analysis.report.tables import format_value

_PALETTE = ((52, 101, 164), (204, 102, 51), (78, 154, 6), (117, 80, 123))


def load_font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    """Pillow's default font at ``size`` pixels (the fixed bitmap font on Pillow < 10.1)."""
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow < 10.1 has only the fixed bitmap font
        return ImageFont.load_default()


def fit_text(draw: ImageDraw.ImageDraw, text: str, font: Any, width: float) -> str:
    """``text``, cut with an ellipsis to fit ``width`` pixels."""
    if draw.textlength(text, font=font) <= width:
        return text
    while text and draw.textlength(text + "…", font=font) > width:
        text = text[:-1]
    return text + "…"


def bar_chart(
    title: str,
    labels: Sequence[str],
    series: Mapping[str, Sequence[float | None]],
    *,
    percent: bool = False,
    width: int = 760,
) -> Image.Image:
    """A horizontal bar chart drawn with Pillow: one row per label, one bar per series.

    Args:
        title: drawn above the bars.
        labels: one per row.
        series: ``{legend name: one value per label}``; None draws no bar.
        percent: values are fractions, drawn on a 0-100% scale.
        width: image width in pixels; the height follows the rows.

    Returns:
        An RGB image.

    >>> bar_chart("t", ["a", "b"], {"rate": [0.5, 1.0]}, percent=True).size[0]
    760
    """
    font, bold = load_font(13), load_font(15)
    row_h = 18 * len(series) + 10
    legend_h = 22 if len(series) > 1 else 0
    top = 34 + legend_h
    height = top + row_h * max(1, len(labels)) + 28
    img = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(img)
    draw.text((10, 8), title, fill="black", font=bold)
    label_w = min(240, max([draw.textlength(s, font=font) for s in labels] + [40]) + 12)
    left, right = 10 + label_w, width - 90
    values = [v for vs in series.values() for v in vs if v is not None]
    vmax = 1.0 if percent else (max(values) if values and max(values) > 0 else 1.0)
    x = 10
    for i, name in enumerate(series if legend_h else ()):
        draw.rectangle((x, 34, x + 12, 46), fill=_PALETTE[i % len(_PALETTE)])
        draw.text((x + 16, 33), name, fill="black", font=font)
        x += 16 + int(draw.textlength(name, font=font)) + 18
    for k in range(5):
        gx = left + (right - left) * k / 4
        draw.line((gx, top - 4, gx, height - 24), fill=(225, 225, 225))
        tick = f"{k * 25}%" if percent else format_value("", vmax * k / 4)
        draw.text((gx - draw.textlength(tick, font=font) / 2, height - 20), tick, fill="gray", font=font)
    for r, label in enumerate(labels):
        y = top + r * row_h
        draw.text((10, y + row_h / 2 - 8), fit_text(draw, label, font, label_w - 12), fill="black", font=font)
        for i, vs in enumerate(series.values()):
            v = vs[r]
            if v is None:
                continue
            by = y + 5 + i * 18
            bx = left + (right - left) * max(0.0, min(1.0, v / vmax))
            draw.rectangle((left, by, max(left + 1, bx), by + 14), fill=_PALETTE[i % len(_PALETTE)])
            text = f"{v:.0%}" if percent else format_value("", float(v))
            draw.text((bx + 4, by), text, fill="black", font=font)
    draw.line((left, top - 4, left, height - 24), fill="black")
    return img


@dataclass(frozen=True)
class Chart:
    """One chart of the HTML report, before it is saved as ``charts/<stem>.png``."""

    section: str  # the query whose section shows it
    stem: str  # file name without .png
    title: str
    image: Image.Image


def report_charts(tables: Mapping[str, pa.Table], limit: int) -> list[Chart]:
    """The HTML report's charts from its section tables, at most ``limit`` bars per series."""
    charts: list[Chart] = []

    def add(section: str, stem: str, title: str, labels: list[str], series: dict[str, list[Any]], pct: bool) -> None:
        if labels:
            charts.append(Chart(section, stem, title, bar_chart(title, labels, series, percent=pct)))

    for name, key, noun in (
        ("success_by_task", "task_id", "task"),
        ("success_by_domain", "domain", "domain"),
        ("success_by_app", "app", "application"),
        ("success_by_policy", "policy", "policy"),
    ):
        rs = tables[name].to_pylist()[:limit]
        series = {
            "success rate": [r["success_rate"] for r in rs],
            "excluding infrastructure errors": [r["success_rate_excl_infra"] for r in rs],
        }
        add(name, name, f"Success rate by {noun}", [str(r[key]) for r in rs], series, True)
    rs = tables["failure_causes"].to_pylist()[:limit]
    labels = [f"{r['termination']} / {r['error_class']}" for r in rs]
    add("failure_causes", "failure_causes", "Failure causes (episodes)", labels,
        {"episodes": [r["episodes"] for r in rs]}, False)  # fmt: skip
    rs = tables["host_faults"].to_pylist()[:limit]
    series = {
        "fault rate (per attempt)": [r["fault_rate"] for r in rs],
        "retry rate (per episode)": [r["retry_rate"] for r in rs],
    }
    add("host_faults", "host_faults", "Replica faults and retries by host", [str(r["host"]) for r in rs], series, True)
    wall = [r for r in tables["latency_percentiles"].to_pylist() if r["metric"] == "episode_wall_s" and r["n"]]
    for r in wall:
        series = {"seconds": [r["p50"], r["p90"], r["p99"]]}
        add("latency_percentiles", "episode_wall_s", "Episode wall time (s)", ["p50", "p90", "p99"], series, False)
    rs = tables["quality_flags"].to_pylist()[:limit]
    add("quality_flags", "quality_flags", "Share of episodes with each quality flag", [str(r["flag"]) for r in rs],
        {"share of episodes": [r["episode_share"] for r in rs]}, True)  # fmt: skip
    return charts
