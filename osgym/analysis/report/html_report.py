"""``report.html``: headline cards, the charts as PNG files, and every section's table."""

from __future__ import annotations

import html
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from osgym.analysis import analytics
from osgym.analysis.report.charts import report_charts
from osgym.analysis.report.page import CSS, html_table
from osgym.analysis.report.tables import SECTIONS, blank_note, format_value, report_tables
from osgym.analysis.report.trajectory import write_trajectory_page
from osgym.replicas import cost


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

    charts = report_charts(tables, chart_rows)
    for chart in charts:
        chart.image.save(out / "charts" / f"{chart.stem}.png", "PNG", optimize=True)

    links: dict[str, str] = {}
    examples = [r["example_episode"] for r in tables["failure_causes"].to_pylist() if r["example_episode"]]
    for eid in examples[:example_pages]:
        page = write_trajectory_page(con, eid, out / "episodes")
        links[eid] = page.relative_to(out).as_posix()

    parts = [
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{CSS}</style></head><body><h1>{html.escape(title)}</h1>",
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
        parts.append(html_table(tables[section.query], links))
    parts.append(f"<p class='muted'>{html.escape(blank_note(con))}</p>")
    parts.append("<h2>Cost assumptions</h2><ul>")
    parts.extend(f"<li>{html.escape(line)}</li>" for line in cost.assumptions(price, rph))
    parts.append("</ul></body></html>")
    path = out / "report.html"
    path.write_text("\n".join(parts), encoding="utf-8")
    return path
