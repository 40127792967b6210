"""``report.html``: headline cards, the charts as PNG files, and every section's table."""

from __future__ import annotations

import html
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from osgym.analysis import analytics
from osgym.analysis.report.charts import report_charts
from osgym.analysis.report.page import CSS, html_table
from osgym.analysis.report.tables import SECTIONS, CostInputs, blank_note, format_value, report_tables
from osgym.analysis.report.trajectory import write_trajectory_page
from osgym.replicas import cost


def write_html_report(
    con: duckdb.DuckDBPyConnection,
    out_dir: str | Path,
    *,
    inputs: CostInputs | None = None,
    fleet_replicas: int = 1000,
    title: str = "osgym dataset report",
    example_pages: int = 0,
    chart_rows: int = 40,
) -> Path:
    """Write ``report.html`` with PNG charts under ``charts/``.

    Args:
        con: a connection from :func:`osgym.analysis.analytics.connect`.
        out_dir: the directory to write into (created if missing).
        inputs: the cost model's inputs (default: :meth:`CostInputs.of` the dataset).
        fleet_replicas: the cost section plans a fleet of this many replicas.
        title: the page title.
        example_pages: write trajectory pages (under ``episodes/``) for up to
            this many of the failure causes' example episodes, and link them.
        chart_rows: at most this many rows per chart (the tables show all).

    Returns:
        The path of ``report.html``.

    Raises:
        ConfigError: if the price table cannot be read.
    """
    out = Path(out_dir)
    (out / "charts").mkdir(parents=True, exist_ok=True)
    inputs = inputs or CostInputs.of(con)
    tables = report_tables(con, inputs)
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
    parts.append(fleet_html(inputs, fleet_replicas))
    parts.append("<h2>Cost assumptions</h2><ul>")
    parts.extend(f"<li>{html.escape(line)}</li>" for line in inputs.assumptions())
    parts.append("</ul></body></html>")
    path = out / "report.html"
    path.write_text("\n".join(parts), encoding="utf-8")
    return path


def fleet_html(inputs: CostInputs, replicas: int) -> str:
    """The cost section's fleet plan: hosts, density and cost for ``replicas`` replicas of the dataset's profile."""
    head = f"<h2>Fleet plan: {replicas:,} replicas</h2>"
    try:
        f = inputs.fleet(replicas)
    except ValueError as exc:
        return head + f"<p>{html.escape(str(exc))}</p>"
    p = inputs.profile
    per_episode = cost.cost_of(inputs.prices, p, host=inputs.host).total_usd
    rows = [
        ("host", f.host),
        ("replicas per host", f"{f.replicas_per_host:,} ({f.binding} binds)"),
        ("hosts", f"{f.hosts:,}"),
        ("per replica-day", cost.usd(f.usd_per_replica_day)),
        ("fleet per day", cost.usd(f.usd_per_day)),
        ("per episode", cost.usd(per_episode)),
        ("episodes per day", f"{86400 * replicas / p.replica_s:,.0f}" if p.replica_s else "–"),
        ("profile", p.source),
    ]
    body = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in rows)
    return head + f"<table class='fleet'>{body}</table>"
