"""The local backend: a dataset directory on a local filesystem; files become visible by ``os.replace``.

A file is written to ``.<name>.incomplete`` beside its final name, fsynced, renamed into
place and the directory fsynced, so a crash leaves either the old state or the whole file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from osgym.dataset.backends.base import probe_name, sha256_file
from osgym.dataset.uri import StoreURI
from osgym.errors import StoreError

__all__ = ["LocalBackend"]


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class LocalBackend:
    """A dataset directory on a local filesystem (see :class:`~osgym.dataset.backends.base.Backend`)."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self.root = str(root)
        self.filesystem = pafs.LocalFileSystem()

    @classmethod
    def from_uri(cls, location: StoreURI, dataset: str, options: Any = None) -> LocalBackend:
        """The backend of ``file`` URIs: ``<path>/<dataset>``.

        Raises:
            ValueError: when ``options`` are given (they belong to an object store).
        """
        if options is not None:
            raise ValueError(
                f"s3 options were given for a local store {location.path!r}; use an s3:// URI or drop them"
            )
        return cls(Path(location.path) / dataset)

    def __repr__(self) -> str:
        return f"LocalBackend({self.root})"

    def _path(self, rel: str) -> Path:
        return self._root / rel

    def uri(self, rel: str) -> str:
        return str(self._path(rel))

    def check(self) -> None:
        """Create the dataset directory, then write and delete a probe file in it.

        Raises:
            StoreError: naming the directory, if it cannot be created or written.
        """
        try:
            self._root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the dataset directory {self._root}: {exc}; check the path") from exc
        probe = self._root / probe_name()
        try:
            os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
            probe.unlink()
        except OSError as exc:
            raise StoreError(f"cannot write {probe}: {exc}; check the dataset directory's permissions and free "
                             "space") from exc

    def list(self, rel_dir: str) -> dict[str, int]:
        d = self._path(rel_dir)
        try:
            return {e.name: e.stat().st_size for e in os.scandir(d) if e.is_file()}
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise StoreError(f"cannot list {d}: {exc}") from exc

    def read(self, rel: str) -> bytes:
        try:
            return self._path(rel).read_bytes()
        except OSError as exc:
            raise StoreError(f"cannot read {self._path(rel)}: {exc}") from exc

    def put(self, rel: str, data: bytes, content_type: str = "application/octet-stream") -> None:
        staged = self.staging_path(rel)
        try:
            staged.write_bytes(data)
        except OSError as exc:
            raise StoreError(f"cannot write {staged}: {exc}") from exc
        self._move_into_place(staged, rel)

    def staging_path(self, rel: str) -> Path:
        final = self._path(rel)
        try:
            final.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create {final.parent}: {exc}; check the dataset directory's permissions and "
                             "free space") from exc
        return final.with_name(f".{final.name}.incomplete")

    def put_file(self, staged: Path, rel: str, *, sha256: str, rows: int) -> None:
        if staged != self.staging_path(rel):  # built elsewhere: copy it beside its final name first
            self.put(rel, staged.read_bytes())
            return
        self._move_into_place(staged, rel)

    def _move_into_place(self, staged: Path, rel: str) -> None:
        final = self._path(rel)
        try:
            _fsync(staged)
            os.replace(staged, final)
            _fsync(final.parent)
        except OSError as exc:
            raise StoreError(f"cannot move {staged} into place as {final}: {exc}") from exc

    def delete(self, rel: str) -> None:
        try:
            self._path(rel).unlink(missing_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot delete {self._path(rel)}: {exc}") from exc

    def shard_info(self, rel: str) -> tuple[int, str]:
        path = self._path(rel)
        try:
            return pq.read_metadata(path).num_rows, sha256_file(path)
        except (OSError, pa.ArrowException) as exc:
            raise StoreError(f"cannot read the existing shard {path}: {exc}.") from exc
