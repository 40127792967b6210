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
class Column:
    """A column the terminal shows: the query's column and its short header."""

    name: str
    label: str


def columns(spec: str) -> tuple[Column, ...]:
    """Columns from ``"name:label name:label ..."`` (a label's ``_`` prints as a space).

    >>> columns("task_id:task success_rate_excl_infra:excl._infra")
    (Column(name='task_id', label='task'), Column(name='success_rate_excl_infra', label='excl. infra'))
    """
    pairs = (item.split(":") for item in spec.split())
    return tuple(Column(name, label.replace("_", " ")) for name, label in pairs)


_SUCCESS = "episodes:eps success_rate:success infra_errors:infra success_rate_excl_infra:excl._infra " \
           "mean_score:score mean_steps:steps"


@dataclass(frozen=True)
class Section:
    """One block of the report: a title, the named query behind it, and what the terminal shows of it.

    Attributes:
        title: the section's heading.
        query: the named query (:mod:`osgym.analysis.analytics`) whose result the section shows.
        terminal: the columns an 80-column terminal shows, most important first, with short headers; the
            first is the row's key. Empty: every column under its own name. The HTML report and the
            markdown artifacts show every column.
    """

    title: str
    query: str
    terminal: tuple[Column, ...] = ()


SECTIONS: tuple[Section, ...] = (
    Section("Success by task", "success_by_task", columns(f"task_id:task {_SUCCESS}")),
    Section("Success by domain", "success_by_domain", columns(f"domain:domain {_SUCCESS}")),
    Section("Success by application", "success_by_app", columns(f"app:app {_SUCCESS}")),
    Section("Success by policy", "success_by_policy", columns(f"policy:policy {_SUCCESS}")),
    Section("Failure causes", "failure_causes",
            columns("termination:ended error_class:error episodes:eps share_of_episodes:share "
                    "example_message:example")),
    Section("Replica faults and retries by host", "host_faults",
            columns("host:host episodes:eps attempts:attempts retried_episodes:retried retry_rate:retry_% "
                    "replica_faults:faults fault_rate:fault_%")),
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
        """The ``cost`` query's parameters: what the cost model (:func:`osgym.replicas.cost.cost_of`) charges
        for one replica-second, one input token, one output token and one stored byte of this profile."""
        def one(replica_s: float = 0.0, input_tokens: float = 0.0, output_tokens: float = 0.0,
                bytes_written: float = 0.0) -> cost.Cost:
            return cost.cost_of(self.prices, self.profile, host=self.host, replica_s=replica_s,
                                input_tokens=input_tokens, output_tokens=output_tokens, bytes_written=bytes_written)

        return {
            "usd_per_replica_s": one(replica_s=1).compute_usd,
            "usd_per_input_token": one(input_tokens=1).tokens_usd,
            "usd_per_output_token": one(output_tokens=1).tokens_usd,
            "usd_per_byte": one(bytes_written=1).storage_usd,
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


TEXT_MIN_WIDTH = 12
"""The narrowest a text column folds to before the terminal leaves a column out."""


def _table(title: str, width: int, **kwargs: Any) -> Table:
    return Table(title=title, title_justify="left", header_style="bold", min_width=min(len(title), width), **kwargs)


def fit_table(title: str, table: pa.Table, width: int = 80,
              shown: tuple[Column, ...] = ()) -> tuple[Table, tuple[str, ...]]:
    """A result as one rich table no wider than ``width``, never split into pages.

    The table shows ``shown`` (every column under its own name if empty): the first column always, then
    each next one that still fits. Numbers never wrap; a text cell folds down to :data:`TEXT_MIN_WIDTH`
    characters. A one-row result that does not fit is turned on its side (one line per column, every
    column). No rows print as "(no rows)".

    Args:
        title: the table's title.
        table: a named query's result.
        width: the most characters a line may take.
        shown: the columns to show, most important first, with their headers.

    Returns:
        The table, and the names of the columns it left out (for the HTML report to show).

    >>> import pyarrow as pa
    >>> wide = pa.table({"key": ["a", "b"], **{f"column_{i}": [1.5, 2.5] for i in range(12)}})
    >>> t, left_out = fit_table("t", wide)
    >>> len(t.columns), left_out[:2]
    (7, ('column_6', 'column_7'))
    """
    if table.num_rows == 0:
        empty = _table(title, width, show_header=False)
        empty.add_column("none")
        empty.add_row("(no rows)")
        return empty, ()
    wanted = shown or tuple(Column(n, n) for n in table.column_names)
    types = {f.name: f.type for f in table.schema}
    rows = table.to_pylist()
    cells = {c.name: [format_value(c.name, r[c.name]) for r in rows] for c in wanted}

    def need(c: Column) -> int:  # the narrowest the column can be, with its borders
        widest = max([len(c.label), *(len(v) for v in cells[c.name])])
        return 3 + (widest if is_numeric(types[c.name]) else max(len(c.label), min(widest, TEXT_MIN_WIDTH)))

    kept = [wanted[0]]
    used = 1 + need(wanted[0])
    for c in wanted[1:]:
        if used + need(c) <= width:
            kept.append(c)
            used += need(c)
    left_out = tuple(n for n in table.column_names if n not in {c.name for c in kept})
    if len(rows) == 1 and len(kept) < len(wanted):
        side = _table(title, width)
        side.add_column("what", no_wrap=True)
        side.add_column("value", justify="right", overflow="fold")
        for name in table.column_names:
            side.add_row(name, format_value(name, rows[0][name]))
        return side, ()
    out = _table(title, width)
    for c in kept:
        numeric = is_numeric(types[c.name])
        out.add_column(c.label, justify="right" if numeric else "left", min_width=len(c.label), no_wrap=numeric,
                       overflow="fold")
    for i in range(len(rows)):
        out.add_row(*(cells[c.name][i] for c in kept))
    return out, left_out


def print_report(con: duckdb.DuckDBPyConnection, console: Console, inputs: CostInputs | None = None) -> None:
    """Print the summary, every section's table (fitted to the console's width: the columns that matter,
    short headers, no pages) and the cost assumptions.

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
    left_out = False
    for section in SECTIONS:
        table, omitted = fit_table(section.title, tables[section.query], console.width, section.terminal)
        console.print(table)
        left_out = left_out or bool(omitted)
    console.print(blank_note(con))
    console.print("[bold]Cost assumptions[/bold]")
    for line in inputs.assumptions():
        console.print(f"  • {line}", markup=False, highlight=False)
    if left_out:
        console.print("More columns, under their full names: osgym report DATASET --html DIR.", markup=False,
                      highlight=False)


def blank_note(con: duckdb.DuckDBPyConnection) -> str:
    """A sentence on how blank frames were found (frames decoded, blank, undecodable)."""
    stats = frames.frame_stats(con)
    return (
        f"Blank-frame check: decoded {stats['checked']} small candidate frame(s), "
        f"{stats['blank']} single-colour, {stats['undecodable']} undecodable; "
        "larger frames cannot be one colour and were not decoded."
    )
