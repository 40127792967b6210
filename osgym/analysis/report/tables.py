"""The report's sections (one named query each) and how they print: rich tables, markdown, cell formats."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import duckdb
import pyarrow as pa
from rich.console import Console
from rich.table import Table

from osgym.analysis import analytics, frames
from osgym.replicas import cost


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


def is_numeric(t: pa.DataType) -> bool:
    """Whether a column holds numbers (right-aligned in every table)."""
    return bool(pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t))


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
        "| " + " | ".join("---:" if is_numeric(f.type) else "---" for f in table.schema) + " |",
    ]
    for row in table.to_pylist():
        cells = (format_value(n, row[n]).replace("|", "\\|").replace("\n", " ") for n in names)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _rich_table(title: str, table: pa.Table) -> Table:
    out = Table(title=title, title_justify="left", header_style="bold")
    for f in table.schema:
        out.add_column(f.name, justify="right" if is_numeric(f.type) else "left", overflow="fold")
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
    console.print(blank_note(con))
    console.print("[bold]Cost assumptions[/bold]")
    for line in cost.assumptions(price, rph):
        console.print(f"  • {line}", markup=False, highlight=False)


def blank_note(con: duckdb.DuckDBPyConnection) -> str:
    """A sentence on how blank frames were found (frames decoded, blank, undecodable)."""
    stats = frames.frame_stats(con)
    return (
        f"Blank-frame check: decoded {stats['checked']} small candidate frame(s), "
        f"{stats['blank']} single-colour, {stats['undecodable']} undecodable; "
        "larger frames cannot be one colour and were not decoded."
    )
