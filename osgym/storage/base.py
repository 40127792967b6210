"""The storage protocol: what the dataset's writer, reader, merges and sidecars, and the offline asset
cache, need from a store, and nothing else.

Paths are relative to the dataset root (``episodes/run=r1/part-00000.parquet``), with ``/``
separators. A file becomes visible whole or not at all: :meth:`Backend.put` and
:meth:`Backend.put_file` either leave the complete file at ``rel`` or nothing there, so
readers never see half of one. Every method raises :class:`~osgym.errors.StoreError` (with
``from exc``) when the store fails; :meth:`Backend.read` raises :class:`MissingFile`, a StoreError,
when there is no file at ``rel``.

To add a backend (GCS, Azure, an in-memory store for tests) write one module with a class
that has these members and register it for its URI scheme::

    register_backend("gs", lambda location, dataset, options: GcsBackend(location, dataset))

``osgym.storage.local`` is the smallest complete example.
"""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path
from typing import Protocol, runtime_checkable

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from osgym.errors import StoreError

__all__ = ["PROBE_PREFIX", "Backend", "MissingFile", "parquet_info", "probe_name", "sha256_file"]

PROBE_PREFIX = ".osgym-probe-"
"""Names of the files :meth:`Backend.check` writes and deletes (hidden: no reader lists them)."""


class MissingFile(StoreError):
    """Raised by :meth:`Backend.read` when there is no file at the path asked for."""


def probe_name() -> str:
    """A fresh name for :meth:`Backend.check`'s probe file, at the dataset root.

    >>> probe_name().startswith(PROBE_PREFIX), probe_name() != probe_name()
    (True, True)
    """
    return f"{PROBE_PREFIX}{uuid.uuid4().hex}"


@runtime_checkable
class Backend(Protocol):
    """One dataset directory in some store."""

    @property
    def root(self) -> str:
        """The dataset directory as a path inside :attr:`filesystem` (``/abs/ds``, ``bucket/prefix/ds``)."""
        ...

    @property
    def filesystem(self) -> pafs.FileSystem:
        """A pyarrow filesystem the reader opens ``f"{root}/{rel}"`` with."""
        ...

    def uri(self, rel: str) -> str:
        """``rel`` as a URI for messages and a dataset view's ``uris`` (``s3://bucket/key``, ``/abs/path``)."""
        ...

    def check(self) -> None:
        """Fail early, with a clear message, when the store is unreachable, refuses us or cannot be
        written: write a small probe file (:func:`probe_name`) at the dataset root and delete it.
        A run calls this before any replica starts, so it should fail in seconds (a short retry
        budget), with the message a later write would fail with."""
        ...

    def list(self, rel_dir: str) -> dict[str, int]:
        """File names directly under ``rel_dir`` and their sizes; ``{}`` when it does not exist."""
        ...

    def read(self, rel: str) -> bytes:
        """The whole file; :class:`MissingFile` when there is none (a backend that cannot tell raises
        StoreError: the dataset never asks for a file it has not listed)."""
        ...

    def put(self, rel: str, data: bytes, content_type: str = "application/octet-stream") -> None:
        """Write a small file whole, replacing any file at ``rel``."""
        ...

    def staging_path(self, rel: str) -> Path | None:
        """Where the writer should build a file that will become ``rel``: a local path
        :meth:`put_file` can commit cheaply (the local backend renames it), or None for a
        temporary file of the writer's own."""
        ...

    def put_file(self, staged: Path, rel: str, *, sha256: str, rows: int) -> None:
        """Commit a finished shard built at ``staged`` as ``rel`` (its sha256 and row count are
        given so a store can keep them beside it for :meth:`shard_info`). The caller removes
        ``staged`` afterwards if it is still there."""
        ...

    def delete(self, rel: str) -> None:
        """Remove ``rel``; a missing file is not an error."""
        ...

    def shard_info(self, rel: str) -> tuple[int, str]:
        """A committed Parquet file's row count and sha256 (:func:`parquet_info` computes both)."""
        ...


def sha256_file(path: Path) -> str:
    """The sha256 of a local file, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(2**20), b""):
            h.update(chunk)
    return h.hexdigest()


def parquet_info(data: bytes) -> tuple[int, str]:
    """A Parquet file's row count (from its footer) and sha256.

    Raises:
        pyarrow.ArrowException: when ``data`` is not a Parquet file.
    """
    return pq.ParquetFile(pa.BufferReader(data)).metadata.num_rows, hashlib.sha256(data).hexdigest()
