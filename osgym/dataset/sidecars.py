"""Sidecar tables: small auxiliary tables beside the dataset (``pool_events``), not in manifests."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq

from osgym.dataset.layout import run_dir
from osgym.dataset.writer import DEFAULT_COMPRESSION
from osgym.storage import S3Options, check_name, open_backend

__all__ = ["write_sidecar"]


def write_sidecar(
    uri: str | os.PathLike[str], dataset: str, table: str, run_id: str, name: str, data: pa.Table,
    *, s3: S3Options | None = None,
) -> str:
    """Write a small auxiliary table (e.g. ``pool_events``) as ``<table>/run=<run_id>/<name>.parquet``.

    Sidecar tables are not listed in manifests; they are written whole (rename or PUT),
    so a reader never sees half of one. Returns the file's URI.

    Raises:
        ValueError: for a malformed table, run_id or file name.
        StoreError: when the store cannot be reached or the file cannot be written.
    """
    check_name("table", table)
    check_name("run_id", run_id)
    check_name("name", name)
    # No probe first (Backend.check): the PUT fails with the same message, after the full retry
    # budget a write at the end of a long run deserves.
    backend = open_backend(uri, dataset, s3)
    sink = pa.BufferOutputStream()
    pq.write_table(data, sink, compression=DEFAULT_COMPRESSION)
    rel = f"{run_dir(table, run_id)}/{name}.parquet"
    backend.put(rel, sink.getvalue().to_pybytes(), "application/vnd.apache.parquet")
    return backend.uri(rel)
