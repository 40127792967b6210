"""Quality and cost reports: rich tables, an HTML report with PNG charts, and trajectory pages.

* :func:`print_report` prints the named queries of :mod:`osgym.analysis.analytics` and
  the cost model's assumptions as rich tables.
* :func:`write_html_report` writes ``report.html`` with bar charts drawn with
  Pillow (``charts/*.png``; no plotting library needed) and the same tables.
* :func:`write_trajectory_page` writes one episode as an HTML page: every
  screenshot is written byte for byte as stored, and beside it a copy with the
  step's action drawn on it (a marker at the pointer target, the action as
  text). Optionally an animated GIF of the overlays.

Everything that comes from the dataset (instructions, thoughts, actions, error
messages) is HTML-escaped: a policy's output is untrusted text.
"""

from __future__ import annotations

import html
import io
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
from PIL import Image, ImageDraw, ImageFont, UnidentifiedImageError
from rich.console import Console
from rich.table import Table

from osgym.analysis import analytics
from osgym.errors import ConfigError
from osgym.replicas import cost

# --------------------------------------------------------------------------- sections


@dataclass(frozen=True)
class Section:
    """One block of the report: a title and the named query behind it."""

    title: str
    query: str


SECTIONS: tuple[Section, ...] = (
    Section("Success by task", "success_by_task"),
    Section("Success by domain", "success_by_domain"),
    Section("Success by policy", "success_by_policy"),
    Section("Failure causes", "failure_causes"),
    Section("Replica faults and retries by host", "host_faults"),
    Section("Latency percentiles", "latency_percentiles"),
    Section("Quality flags", "quality_flags"),
    Section("Cost", "cost"),
)


def report_tables(
    con: duckdb.DuckDBPyConnection,
    *,
    price: cost.PriceTable = cost.DEFAULT_PRICE,
    replicas_per_host: float | None = None,
) -> dict[str, pa.Table]:
    """Run every section's named query once.

    Args:
        con: a connection from :func:`osgym.analysis.analytics.connect`.
        price: the host price for the cost section.
        replicas_per_host: packing density; :func:`osgym.replicas.cost.default_replicas_per_host` if None.

    Returns:
        ``{query name: result}`` in :data:`SECTIONS` order.
    """
    rph = replicas_per_host if replicas_per_host is not None else cost.default_replicas_per_host(price)
    params = {"cost": {"usd_per_replica_s": cost.usd_per_replica_second(price, rph)}}
    return {s.query: analytics.query(con, s.query, **params.get(s.query, {})) for s in SECTIONS}


def format_value(column: str, value: Any) -> str:
    """Render one cell: rates as percentages, dollars with a $ sign, floats to 3 significant digits.

    >>> format_value("success_rate", 0.25)
    '25.0%'
    >>> format_value("usd_per_episode", 0.0040625)
    '$0.00406'
    >>> format_value("p50", 1234.6)
    '1,235'
    """
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if math.isnan(value):
            return "–"
        if "rate" in column or "share" in column:
            return f"{value:.1%}"
        if "usd" in column:
            return f"${value:,.4f}" if abs(value) >= 0.01 else f"${value:.3g}"
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        return f"{value:.4g}" if abs(value) >= 100 else f"{value:.3g}"
    return str(value)


def _is_numeric(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)


def to_markdown(table: pa.Table) -> str:
    """A result table as GitHub markdown (for Prefect markdown artifacts and READMEs).

    Args:
        table: a named query's result.

    Returns:
        The markdown text, cells formatted with :func:`format_value`.
    """
    names = table.column_names
    lines = [
        "| " + " | ".join(names) + " |",
        "| " + " | ".join("---:" if _is_numeric(f.type) else "---" for f in table.schema) + " |",
    ]
    for row in table.to_pylist():
        cells = (format_value(n, row[n]).replace("|", "\\|").replace("\n", " ") for n in names)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _rich_table(title: str, table: pa.Table) -> Table:
    out = Table(title=title, title_justify="left", header_style="bold")
    for f in table.schema:
        out.add_column(f.name, justify="right" if _is_numeric(f.type) else "left", overflow="fold")
    for row in table.to_pylist():
        out.add_row(*(format_value(n, row[n]) for n in table.column_names))
    return out


def print_report(
    con: duckdb.DuckDBPyConnection,
    console: Console,
    price: cost.PriceTable = cost.DEFAULT_PRICE,
    replicas_per_host: float | None = None,
) -> None:
    """Print the summary, every section's table and the cost assumptions.

    Args:
        con: a connection from :func:`osgym.analysis.analytics.connect`.
        console: where to print.
        price: the host price for the cost section.
        replicas_per_host: packing density; :func:`osgym.replicas.cost.default_replicas_per_host` if None.

    Raises:
        ValueError: if ``replicas_per_host`` is not positive.
    """
    rph = replicas_per_host if replicas_per_host is not None else cost.default_replicas_per_host(price)
    tables = report_tables(con, price=price, replicas_per_host=rph)
    summary = analytics.summary(con)
    head = Table(title="Dataset", title_justify="left", show_header=False)
    head.add_column("what")
    head.add_column("value", justify="right")
    for key, value in summary.items():
        head.add_row(key, format_value(key, value))
    console.print(head)
    for section in SECTIONS:
        console.print(_rich_table(section.title, tables[section.query]))
    console.print(_blank_note(con))
    console.print("[bold]Cost assumptions[/bold]")
    for line in cost.assumptions(price, rph):
        console.print(f"  • {line}", markup=False, highlight=False)


def _blank_note(con: duckdb.DuckDBPyConnection) -> str:
    stats = analytics.frame_stats(con)
    return (
        f"Blank-frame check: decoded {stats['checked']} small candidate frame(s), "
        f"{stats['blank']} single-colour, {stats['undecodable']} undecodable; "
        "larger frames cannot be one colour and were not decoded."
    )


# --------------------------------------------------------------------------- charts

_PALETTE = ((52, 101, 164), (204, 102, 51), (78, 154, 6), (117, 80, 123))


def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow < 10.1 has only the fixed bitmap font
        return ImageFont.load_default()


def _fit(draw: ImageDraw.ImageDraw, text: str, font: Any, width: float) -> str:
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
    font, bold = _font(13), _font(15)
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
        draw.text((10, y + row_h / 2 - 8), _fit(draw, label, font, label_w - 12), fill="black", font=font)
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
class _Chart:
    section: str  # the query whose section shows it
    stem: str  # file name without .png
    title: str
    image: Image.Image


def _charts(tables: Mapping[str, pa.Table], limit: int) -> list[_Chart]:
    charts: list[_Chart] = []

    def add(section: str, stem: str, title: str, labels: list[str], series: dict[str, list[Any]], pct: bool) -> None:
        if labels:
            charts.append(_Chart(section, stem, title, bar_chart(title, labels, series, percent=pct)))

    for name, key, noun in (
        ("success_by_task", "task_id", "task"),
        ("success_by_domain", "domain", "domain"),
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


# --------------------------------------------------------------------------- HTML report

_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px auto;max-width:1100px;color:#222}
h1{margin-bottom:4px}h2{margin-top:32px;border-bottom:1px solid #ddd;padding-bottom:4px}
table{border-collapse:collapse;font-size:13px;margin:8px 0}
th,td{border:1px solid #ddd;padding:3px 8px;vertical-align:top}th{background:#f4f4f4;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.cards{display:flex;flex-wrap:wrap;gap:10px}.card{border:1px solid #ddd;border-radius:6px;padding:8px 14px}
.card b{display:block;font-size:20px}.muted{color:#777;font-size:13px}
img.chart{max-width:100%;border:1px solid #eee}
pre{background:#f6f6f6;padding:6px;white-space:pre-wrap;word-break:break-word;font-size:12px}
.step{border-top:1px solid #ddd;padding:12px 0}.step img{max-width:100%;border:1px solid #ccc}
"""


def _html_table(table: pa.Table, links: Mapping[str, str] | None = None) -> str:
    numeric = {f.name for f in table.schema if _is_numeric(f.type)}
    head = "".join(f"<th>{html.escape(n)}</th>" for n in table.column_names)
    body = []
    for row in table.to_pylist():
        cells = []
        for n in table.column_names:
            text = html.escape(format_value(n, row[n]))
            if links and isinstance(row[n], str) and row[n] in links:
                text = f'<a href="{html.escape(links[row[n]])}">{text}</a>'
            cells.append(f'<td class="num">{text}</td>' if n in numeric else f"<td>{text}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def write_html_report(
    con: duckdb.DuckDBPyConnection,
    out_dir: str | Path,
    *,
    price: cost.PriceTable = cost.DEFAULT_PRICE,
    replicas_per_host: float | None = None,
    title: str = "osgym dataset report",
    example_pages: int = 0,
    chart_rows: int = 40,
) -> Path:
    """Write ``report.html`` with PNG charts under ``charts/``.

    Args:
        con: a connection from :func:`osgym.analysis.analytics.connect`.
        out_dir: the directory to write into (created if missing).
        price: the host price for the cost section.
        replicas_per_host: packing density; :func:`osgym.replicas.cost.default_replicas_per_host` if None.
        title: the page title.
        example_pages: write trajectory pages (under ``episodes/``) for up to
            this many of the failure causes' example episodes, and link them.
        chart_rows: at most this many rows per chart (the tables show all).

    Returns:
        The path of ``report.html``.

    Raises:
        ValueError: if ``replicas_per_host`` is not positive.
    """
    out = Path(out_dir)
    (out / "charts").mkdir(parents=True, exist_ok=True)
    rph = replicas_per_host if replicas_per_host is not None else cost.default_replicas_per_host(price)
    tables = report_tables(con, price=price, replicas_per_host=rph)
    summary = analytics.summary(con)

    charts = _charts(tables, chart_rows)
    for chart in charts:
        chart.image.save(out / "charts" / f"{chart.stem}.png", "PNG", optimize=True)

    links: dict[str, str] = {}
    examples = [r["example_episode"] for r in tables["failure_causes"].to_pylist() if r["example_episode"]]
    for eid in examples[:example_pages]:
        page = write_trajectory_page(con, eid, out / "episodes")
        links[eid] = page.relative_to(out).as_posix()

    parts = [
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{_CSS}</style></head><body><h1>{html.escape(title)}</h1>",
        f"<p class='muted'>Generated {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by osgym.</p><div class='cards'>",
    ]
    for key, value in summary.items():
        parts.append(f"<div class='card'>{html.escape(key)}<b>{html.escape(format_value(key, value))}</b></div>")
    parts.append("</div>")
    for section in SECTIONS:
        parts.append(f"<h2>{html.escape(section.title)}</h2>")
        info = analytics.query_info(section.query)
        parts.append(f"<p class='muted'>{html.escape(info.description)}</p>")
        for chart in charts:
            if chart.section == section.query:
                parts.append(f"<img class='chart' src='charts/{chart.stem}.png' alt='{html.escape(chart.title)}'>")
        parts.append(_html_table(tables[section.query], links))
    parts.append(f"<p class='muted'>{html.escape(_blank_note(con))}</p>")
    parts.append("<h2>Cost assumptions</h2><ul>")
    parts.extend(f"<li>{html.escape(line)}</li>" for line in cost.assumptions(price, rph))
    parts.append("</ul></body></html>")
    path = out / "report.html"
    path.write_text("\n".join(parts), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- trajectories


def _flatten(action: Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(action.get("parameters"), Mapping):
        return {"action_type": action.get("action_type"), **action["parameters"]}
    return dict(action)


def describe_action(action: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None) -> str:
    """A short human-readable line for an action (flat or OSWorld-nested JSON), or a list of them.

    >>> describe_action({"action_type": "CLICK", "x": 10, "y": 20, "button": "left", "num_clicks": 2})
    'CLICK (10, 20) x2'
    >>> describe_action({"action_type": "HOTKEY", "keys": ["ctrl", "s"]})
    'HOTKEY ctrl+s'
    >>> describe_action([{"action_type": "TYPING", "text": "hi"}, {"action_type": "PRESS", "key": "enter"}])
    "TYPING 'hi'; PRESS enter"
    """
    if action is None:
        return "(no action)"
    if not isinstance(action, Mapping):
        return "; ".join(describe_action(a) for a in action)
    a = _flatten(action)
    kind = str(a.get("action_type", "?"))
    where = f" ({a['x']}, {a['y']})" if a.get("x") is not None and a.get("y") is not None else ""
    if kind in ("CLICK", "RIGHT_CLICK", "DOUBLE_CLICK", "MOVE_TO", "DRAG_TO", "MOUSE_DOWN", "MOUSE_UP"):
        extra = ""
        if a.get("button") not in (None, "left"):
            extra += f" {a['button']}"
        if (a.get("num_clicks") or 1) > 1:
            extra += f" x{a['num_clicks']}"
        return f"{kind}{where}{extra}"
    if kind == "TYPING":
        text = str(a.get("text", ""))
        return f"TYPING {text[:60] + '…' if len(text) > 60 else text!r}"
    if kind in ("PRESS", "KEY_DOWN", "KEY_UP"):
        return f"{kind} {a.get('key', '?')}"
    if kind == "HOTKEY":
        return "HOTKEY " + "+".join(str(k) for k in a.get("keys", []))
    if kind == "SCROLL":
        return f"SCROLL dx={a.get('dx', 0)} dy={a.get('dy', 0)}{where}"
    if kind == "WAIT":
        return f"WAIT {a.get('seconds', 1.0):g}s"
    if kind in ("DONE", "FAIL"):
        return kind
    rest = {k: v for k, v in a.items() if k != "action_type"}
    return f"{kind} {json.dumps(rest, sort_keys=True)}" if rest else kind


def _parse_action(text: str | None) -> Any:
    if not text:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return {"action_type": "UNPARSED", "text": text}


def _actions(parsed: Any) -> list[dict[str, Any]]:
    if isinstance(parsed, Mapping):
        return [_flatten(parsed)]
    if isinstance(parsed, list):
        return [_flatten(a) for a in parsed if isinstance(a, Mapping)]
    return []


def draw_action(
    image: Image.Image,
    action: Any,
    pointer: tuple[int, int] | None = None,
    label: str | None = None,
) -> tuple[Image.Image, tuple[int, int] | None]:
    """Draw an action on a copy of a screenshot.

    Pointer actions (click, move, drag, scroll with a position) get a ring and
    crosshair at their target; a drag also gets a line from the previous
    pointer position. The action's description is written in a box at the top.

    Args:
        image: the screenshot (not modified).
        action: the step's parsed action JSON (an object or a list of them).
        pointer: where the pointer was before this step, if known.
        label: the text for the box; :func:`describe_action` of ``action`` by default.

    Returns:
        The annotated RGB copy, and the pointer position after the action.
    """
    img = image.convert("RGB")
    draw = ImageDraw.Draw(img)
    w, h = img.size
    radius = max(5, round(min(w, h) / 45))
    for a in _actions(action):
        if a.get("x") is None or a.get("y") is None:
            continue
        try:
            x = min(max(int(a["x"]), 0), w - 1)
            y = min(max(int(a["y"]), 0), h - 1)
        except (TypeError, ValueError):
            continue
        if a.get("action_type") == "DRAG_TO" and pointer is not None:
            draw.line((pointer, (x, y)), fill=(255, 255, 255), width=max(3, radius // 2) + 2)
            draw.line((pointer, (x, y)), fill=(220, 30, 30), width=max(2, radius // 2))
        for r, colour, width in ((radius + 2, (255, 255, 255), 2), (radius, (220, 30, 30), max(2, radius // 3))):
            draw.ellipse((x - r, y - r, x + r, y + r), outline=colour, width=width)
        draw.line((x - 2 * radius, y, x + 2 * radius, y), fill=(220, 30, 30), width=1)
        draw.line((x, y - 2 * radius, x, y + 2 * radius), fill=(220, 30, 30), width=1)
        pointer = (x, y)
    text = label if label is not None else describe_action(action)
    font = _font(max(10, min(28, h // 40)))
    text = _fit(draw, text, font, w - 12)
    box = draw.textbbox((6, 4), text, font=font)
    draw.rectangle((box[0] - 4, box[1] - 3, box[2] + 4, box[3] + 3), fill=(0, 0, 0))
    draw.text((6, 4), text, fill=(255, 255, 255), font=font)
    return img, pointer


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
    for batch in analytics._arrow_reader(rel, 8):
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
        f"<style>{_CSS}</style></head><body><h1>{html.escape(title)}</h1>"
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
    parsed = _parse_action(row["action"])
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
