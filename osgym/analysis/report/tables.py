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
from osgym.analysis.profile import profile_or_default
from osgym.replicas import cost


@dataclass(frozen=True)
class Section:
    """One block of the report: a title and the named query behind it."""

    title: str
    query: str


SECTIONS: tuple[Section, ...] = (
    Section("Success by task", "success_by_task"),
    Section("Success by domain", "success_by_domain"),
    Section("Success by application", "success_by_app"),
    Section("Success by policy", "success_by_policy"),
    Section("Failure causes", "failure_causes"),
    Section("Replica faults and retries by host", "host_faults"),
    Section("Latency percentiles", "latency_percentiles"),
    Section("Quality flags", "quality_flags"),
    Section("Cost", "cost"),
)


@dataclass(frozen=True)
class CostInputs:
    """The cost model's inputs for a report: the price table, the host and the dataset's profile."""

    prices: cost.PriceTable
    profile: cost.Profile
    host: str | None = None

    @classmethod
    def of(cls, con: duckdb.DuckDBPyConnection, prices: cost.PriceTable | None = None,
           host: str | None = None) -> CostInputs:
        """The dataset's measured profile (:func:`osgym.analysis.profile.profile_or_default`) and the price
        table (:func:`osgym.replicas.cost.load_prices` if None).

        Raises:
            ConfigError: if the price table cannot be read or has no host ``host``.
        """
        inputs = cls(prices or cost.load_prices(), profile_or_default(con), host)
        inputs.prices.host(host)
        return inputs

    def params(self) -> dict[str, float]:
        """The ``cost`` query's parameters."""
        h = self.prices.host(self.host)
        d = cost.density(h.vcpus, h.memory_gib, self.profile)
        model = self.prices.model(self.profile.model)
        storage = self.prices.storage
        return {
            "usd_per_replica_s": cost.usd_per_replica_second(h, max(d.replicas, 1)),
            "usd_per_input_token": model.usd_per_million_input / 1e6 if model else 0.0,
            "usd_per_output_token": model.usd_per_million_output / 1e6 if model else 0.0,
            "usd_per_byte": storage.usd_per_byte if storage else 0.0,
        }

    def fleet(self, replicas: int = 1000) -> cost.FleetPlan:
        """The fleet plan for ``replicas`` replicas of this profile on the report's host.

        Raises:
            ValueError: if the host holds no replica of the profile.
        """
        return cost.fleet(replicas, self.prices.host(self.host), self.profile)

    def assumptions(self) -> list[str]:
        return cost.assumptions(self.prices, self.profile, self.host)


def report_tables(con: duckdb.DuckDBPyConnection, inputs: CostInputs | None = None) -> dict[str, pa.Table]:
    """Run every section's named query once.

    Args:
        con: a connection from :func:`osgym.analysis.analytics.connect`.
        inputs: the cost model's inputs (default: :meth:`CostInputs.of` the dataset).

    Returns:
        ``{query name: result}`` in :data:`SECTIONS` order.
    """
    inputs = inputs or CostInputs.of(con)
    params = {"cost": inputs.params()}
    return {s.query: analytics.query(con, s.query, **params.get(s.query, {})) for s in SECTIONS}


def format_value(column: str, value: Any) -> str:
    """Render one cell for people: rates as percentages, dollars as :func:`osgym.replicas.cost.usd` (never in
    exponent notation), seconds as a duration, other floats to 3 significant digits.

    >>> format_value("success_rate", 0.25)
    '25.0%'
    >>> format_value("usd_per_episode", 0.0000667), format_value("total_usd", 1234.5)
    ('$0.0000667', '$1,234.50')
    >>> format_value("setup_s", 0.42), format_value("replica_s", 245.0), format_value("wall_s", 7560.0)
    ('0.42 s', '4 min 5 s', '2 h 6 min')
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
            return cost.usd(value)
        if column.endswith("_s"):
            return duration(value)
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        return f"{value:.4g}" if abs(value) >= 100 else f"{value:.3g}"
    return str(value)


def duration(seconds: float) -> str:
    """Seconds as people read them.

    >>> duration(0.0123), duration(12.34), duration(3599.0), duration(90000.0)
    ('0.0123 s', '12.3 s', '59 min 59 s', '25 h 0 min')
    """
    if abs(seconds) < 60:
        return f"{seconds:.3g} s"
    whole = round(seconds)
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    return f"{whole // 3600} h {whole % 3600 // 60} min"


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


def _column_width(name: str, cells: list[str]) -> int:
    return max([len(name), *(len(c) for c in cells)])


def fit_tables(title: str, table: pa.Table, width: int = 80) -> list[Table]:
    """A result as rich tables no wider than ``width``: whole if it fits; else a one-row result is
    transposed (one line per column), and a longer one is split into parts that each repeat the first
    column. Headers never wrap; a long text cell folds. No rows print as "(no rows)".

    >>> import pyarrow as pa
    >>> wide = pa.table({f"column_{i}": [1.5] for i in range(12)})
    >>> [len(t.columns) for t in fit_tables("t", wide)]
    [2]
    """
    names = table.column_names
    rows = [[format_value(n, row[n]) for n in names] for row in table.to_pylist()]
    widths = [_column_width(n, [r[i] for r in rows]) for i, n in enumerate(names)]
    numeric = [is_numeric(f.type) for f in table.schema]

    def build(part_title: str, cols: list[int]) -> Table:
        out = Table(title=part_title, title_justify="left", header_style="bold", min_width=min(len(part_title), width))
        for i in cols:
            out.add_column(names[i], justify="right" if numeric[i] else "left", min_width=len(names[i]),
                           no_wrap=numeric[i], overflow="fold")
        for r in rows:
            out.add_row(*(r[i] for i in cols))
        return out

    if not rows:
        empty = Table(title=title, title_justify="left", show_header=False, min_width=min(len(title), width))
        empty.add_column("none")
        empty.add_row("(no rows)")
        return [empty]
    if sum(w + 3 for w in widths) + 1 <= width:
        return [build(title, list(range(len(names))))]
    if len(rows) == 1:
        out = Table(title=title, title_justify="left", header_style="bold", min_width=min(len(title), width))
        out.add_column("what", no_wrap=True)
        out.add_column("value", justify="right", overflow="fold")
        for i, n in enumerate(names):
            out.add_row(n, rows[0][i])
        return [out]
    groups: list[list[int]] = []
    key = min(widths[0], width // 2) + 4  # the repeated first column, with the table's borders
    used = width  # start a new group at the first column after the key
    for i in range(1, len(names)):
        if used + widths[i] + 3 > width:
            groups.append([0])
            used = key
        groups[-1].append(i)
        used += widths[i] + 3
    return [build(f"{title} ({k}/{len(groups)})" if len(groups) > 1 else title, g) for k, g in enumerate(groups, 1)]


def print_report(con: duckdb.DuckDBPyConnection, console: Console, inputs: CostInputs | None = None) -> None:
    """Print the summary, every section's table (fitted to the console's width) and the cost assumptions.

    Args:
        con: a connection from :func:`osgym.analysis.analytics.connect`.
        console: where to print.
        inputs: the cost model's inputs (default: :meth:`CostInputs.of` the dataset).

    Raises:
        ConfigError: if the price table cannot be read.
    """
    inputs = inputs or CostInputs.of(con)
    tables = report_tables(con, inputs)
    summary = analytics.summary(con)
    head = Table(title="Dataset", title_justify="left", show_header=False)
    head.add_column("what")
    head.add_column("value", justify="right")
    for key, value in summary.items():
        head.add_row(key, format_value(key, value))
    console.print(head)
    for section in SECTIONS:
        for part in fit_tables(section.title, tables[section.query], console.width):
            console.print(part)
    console.print(blank_note(con))
    console.print("[bold]Cost assumptions[/bold]")
    for line in inputs.assumptions():
        console.print(f"  • {line}", markup=False, highlight=False)


def blank_note(con: duckdb.DuckDBPyConnection) -> str:
    """A sentence on how blank frames were found (frames decoded, blank, undecodable)."""
    stats = frames.frame_stats(con)
    return (
        f"Blank-frame check: decoded {stats['checked']} small candidate frame(s), "
        f"{stats['blank']} single-colour, {stats['undecodable']} undecodable; "
        "larger frames cannot be one colour and were not decoded."
    )
