"""The local backend: a directory on a local filesystem; files become visible by ``os.replace``.

A file is written to a ``.<name>.….incomplete`` name of its own beside its final name, fsynced,
renamed into place and the directory fsynced, so a crash leaves either the old state or the whole
file, and two processes writing the same name at once never write into one temporary file. A
dataset's writer builds each shard at ``.<name>.incomplete`` (:meth:`LocalBackend.staging_path`),
which a resume recognises and removes if the writer died before the rename.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from osgym.errors import StoreError
from osgym.storage.base import MissingFile, probe_name, sha256_file

__all__ = ["LocalBackend"]


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class LocalBackend:
    """A directory on a local filesystem (see :class:`~osgym.storage.base.Backend`).

    ``file_mode``: the permission bits of every file :meth:`put` writes; None leaves them to the
    umask. The asset cache asks for ``0o644``: a compatibility replica's server, another uid, reads it
    through a read-only mount.
    """

    def __init__(self, root: Path, *, file_mode: int | None = None) -> None:
        self._root = root
        self._file_mode = file_mode
        self.root = str(root)
        self.filesystem = pafs.LocalFileSystem()

    def __repr__(self) -> str:
        return f"LocalBackend({self.root})"

    @property
    def path(self) -> Path:
        """The directory itself."""
        return self._root

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
        """The whole file.

        Raises:
            MissingFile: when there is no file at ``rel``.
            StoreError: when it cannot be read.
        """
        try:
            return self._path(rel).read_bytes()
        except FileNotFoundError as exc:
            raise MissingFile(f"cannot read {self._path(rel)}: {exc}") from exc
        except OSError as exc:
            raise StoreError(f"cannot read {self._path(rel)}: {exc}") from exc

    def put(self, rel: str, data: bytes, content_type: str = "application/octet-stream") -> None:
        final = self._path(rel)
        self._make_parent(final)
        staged = final.with_name(f".{final.name}.{uuid.uuid4().hex[:12]}.incomplete")
        try:
            fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
            try:
                with os.fdopen(fd, "wb") as f:
                    if self._file_mode is not None:
                        os.fchmod(f.fileno(), self._file_mode)
                    f.write(data)
            except BaseException:
                staged.unlink(missing_ok=True)
                raise
        except OSError as exc:
            raise StoreError(f"cannot write {staged}: {exc}; check the directory's permissions and free "
                             "space") from exc
        try:
            self._move_into_place(staged, rel)
        except BaseException:
            staged.unlink(missing_ok=True)
            raise

    def staging_path(self, rel: str) -> Path:
        final = self._path(rel)
        self._make_parent(final)
        return final.with_name(f".{final.name}.incomplete")

    def put_file(self, staged: Path, rel: str, *, sha256: str, rows: int) -> None:
        own = self.staging_path(rel)
        if staged != own:  # built elsewhere: copy it beside its final name first
            try:
                own.write_bytes(staged.read_bytes())
            except OSError as exc:
                raise StoreError(f"cannot write {own}: {exc}") from exc
        self._move_into_place(own, rel)

    def _make_parent(self, final: Path) -> None:
        try:
            final.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create {final.parent}: {exc}; check the directory's permissions and "
                             "free space") from exc

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
