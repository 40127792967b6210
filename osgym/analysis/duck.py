"""DuckDB plumbing the analysis modules share: Arrow batches out of a relation, and a small
per-connection key-value table (``osgym_meta``) for what a connection recorded about itself."""

from __future__ import annotations

from typing import Any

import duckdb
import pyarrow as pa

META_TABLE = "osgym_meta"


def arrow_batches(rel: duckdb.DuckDBPyRelation, batch_size: int) -> Any:
    """A reader of ``rel``'s rows as Arrow record batches (the method's name differs across DuckDB versions)."""
    for name in ("to_arrow_reader", "fetch_arrow_reader", "record_batch"):
        method = getattr(rel, name, None)
        if method is not None:
            return method(batch_size)
    raise RuntimeError("this duckdb version has no Arrow reader on relations")  # pragma: no cover


def to_arrow(rel: duckdb.DuckDBPyRelation) -> pa.Table:
    """``rel`` as one Arrow table (the method's name differs across DuckDB versions)."""
    method = getattr(rel, "to_arrow_table", None) or rel.arrow
    return method()


def meta_get(con: duckdb.DuckDBPyConnection, key: str) -> str | None:
    """A value this connection recorded about itself (its route, work done once)."""
    rows = con.execute(f"SELECT value FROM {META_TABLE} WHERE key = $key", {"key": key}).fetchall()
    return rows[0][0] if rows else None


def meta_set(con: duckdb.DuckDBPyConnection, key: str, value: str) -> None:
    """Record ``value`` under ``key`` for this connection."""
    con.execute(f"INSERT OR REPLACE INTO {META_TABLE} VALUES ($key, $value)", {"key": key, "value": value})
