"""Archive and database metrics: OSWorld's ``compare_archive`` (``chrome.py``) and ``run_sqlite3``
(``general.py``).

Archives are the agent's: osgym never unpacks one onto disk under its own member names (OSWorld
calls ``shutil.unpack_archive``). It reads the members it compares into memory, after checking the
sizes the archive declares, and writes each to a scratch file of its own naming for the per-file metric.

A tar archive is read once, as a stream, and refused (scoring 0, with a warning naming the reason) as
soon as its members number more than ``MAX_MEMBERS``, the sizes its files declare pass ``MAX_UNPACKED``,
the decompressed stream passes that plus room for headers (pax and long-name headers are sizes no file
declares, and tarfile reads them whole), or reading takes longer than ``ARCHIVE_TIMEOUT_S``: a few kB of
bzip2 can inflate to terabytes, and a file of empty gzip members inflates to nothing, slowly.

>>> _children(["book/a.pdf", "book/sub/b.pdf", "c.txt"], "book")
({'a.pdf': 'book/a.pdf'}, {'sub'})
"""

from __future__ import annotations

import bz2
import gzip
import io
import logging
import lzma
import sqlite3
import tarfile
import tempfile
import time
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import IO, Any, Literal

from pydantic import BaseModel, ConfigDict, StrictBool, StrictStr

from osgym.tasks.metrics import get, metric
from osgym.tasks.metrics._files import MAX_UNPACKED

__all__ = ["compare_archive", "run_sqlite3"]

log = logging.getLogger(__name__)

MAX_MEMBERS = 10_000  # an archive listing more entries than this is refused
MAX_STREAM = MAX_UNPACKED + 16 * 2**20  # a tar stream's bytes: the files' plus headers and padding (~1 kB each)
ARCHIVE_TIMEOUT_S = 30.0  # reading one archive within the limits takes a few seconds
SQL_TIMEOUT_S = 10.0  # a task's query runs at most this long on the agent's database


class ArchiveOptions(BaseModel):
    """``file_path``: the folder inside the archives whose files are compared (default: the top);
    ``file_type``: how each pair of files is compared: ``text`` (:func:`compare_text_file`, which takes
    ``ignore_blanks`` and ``ignore_case``), ``pdf`` (:func:`compare_pdfs`) or ``image`` (:func:`compare_images`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    file_path: StrictStr = ""
    file_type: Literal["text", "pdf", "image"] = "text"
    ignore_blanks: StrictBool = False
    ignore_case: StrictBool = False


def _children(names: list[str], folder: str) -> tuple[dict[str, str], set[str]]:
    """The files directly inside ``folder`` (``""``: the top), each to its member name, and the sub-folders
    there, given an archive's member names (``./`` prefixes and doubled slashes count for nothing).

    >>> _children(["./book/a.pdf", "book/sub/b.pdf", "book/", "c.txt"], "book")
    ({'a.pdf': './book/a.pdf'}, {'sub'})
    """
    base = PurePosixPath(folder.strip("/")).parts if folder.strip("/") else ()
    files, dirs = {}, set()
    for name in names:
        parts = PurePosixPath(name.strip("/")).parts
        if len(parts) <= len(base) or parts[:len(base)] != base:
            continue
        if len(parts) == len(base) + 1 and not name.endswith("/"):
            files[parts[-1]] = name
        else:
            dirs.add(parts[len(base)])
    return files, dirs


class _Refused(Exception):
    """The archive passes a limit; the message says which. Not a TarError, which tarfile would swallow."""


class _Capped(io.RawIOBase):
    """``inner``'s bytes, refused past ``cap`` of them or past ``deadline`` (``time.monotonic()``)."""

    def __init__(self, inner: io.BufferedIOBase, cap: int, deadline: float) -> None:
        super().__init__()
        self.inner, self.cap, self.deadline, self.total = inner, cap, deadline, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if time.monotonic() > self.deadline:
            raise _Refused(f"reading it took longer than {ARCHIVE_TIMEOUT_S:g} s")
        data = self.inner.read(min(len(buffer), self.cap - self.total + 1))  # never ask past the cap
        self.total += len(data)
        if self.total > self.cap:
            raise _Refused(f"it unpacks to more than {self.cap} bytes")
        buffer[:len(data)] = data
        return len(data)


# By magic number, as tarfile detects them; each reader inflates in bounded steps (tarfile's own stream
# mode does not: one 10 kB read of bzip2 can inflate to gigabytes at once).
_DECOMPRESSORS: tuple[tuple[bytes, Callable[[IO[bytes]], io.BufferedIOBase]], ...] = (
    (b"\x1f\x8b", lambda f: gzip.GzipFile(fileobj=f)),
    (b"BZh", lambda f: bz2.BZ2File(f)),
    (b"\xfd7zXZ\x00", lambda f: lzma.LZMAFile(f)),
    (b"\x5d\x00\x00", lambda f: lzma.LZMAFile(f)),  # .lzma (LZMA alone)
)


def _tar_members(path: str, folder: str) -> tuple[dict[str, bytes], set[str]]:
    """:func:`_members` for a tar archive (plain, gzip, bzip2 or xz), read once as a stream within the limits.

    Raises:
        _Refused: as soon as the archive passes a limit.
        tarfile.TarError, OSError, EOFError, zlib.error, lzma.LZMAError: if it is no readable tar archive.
    """
    deadline = time.monotonic() + ARCHIVE_TIMEOUT_S
    with open(path, "rb") as raw:
        magic = raw.read(6)
        raw.seek(0)
        # the raw reads carry the deadline too: input that inflates to nothing never reaches the cap
        packed = io.BufferedReader(_Capped(raw, 2**63, deadline))
        unpacked: io.BufferedIOBase = packed
        for prefix, decompressor in _DECOMPRESSORS:
            if magic.startswith(prefix):
                unpacked = decompressor(packed)
                break
        stream = io.BufferedReader(_Capped(unpacked, MAX_STREAM, deadline))
        names, out, declared = [], {}, 0
        with tarfile.open(fileobj=stream, mode="r|") as t:
            for count, info in enumerate(t, 1):
                if count > MAX_MEMBERS:
                    raise _Refused(f"it lists more than {MAX_MEMBERS} members")
                if info.isfile():
                    declared += info.size
                    if declared > MAX_UNPACKED:  # before tarfile reads (or skips) the member's bytes
                        raise _Refused(f"its files declare more than {MAX_UNPACKED} bytes")
                if not (info.isfile() or info.isdir()):
                    continue
                names.append(info.name + ("/" if info.isdir() else ""))
                if info.isfile() and _children([info.name], folder)[0]:
                    reader = t.extractfile(info)  # a stream's member is readable only while it is current
                    if reader is None:
                        raise tarfile.ReadError(f"{info.name!r} cannot be read")
                    out[info.name] = reader.read()
        files, dirs = _children(names, folder)
        return {f: out[member] for f, member in files.items()}, dirs


def _members(path: str, folder: str) -> tuple[dict[str, bytes], set[str]] | None:
    """The files directly in ``folder`` of the zip or tar archive (name to bytes) and its sub-folder names,
    or None if it is no archive, or passes a limit (logged)."""
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as z:
                infos = z.infolist()
                if len(infos) > MAX_MEMBERS or sum(i.file_size for i in infos) > MAX_UNPACKED:
                    log.warning("compare_archive: %s scores 0: it lists more than %d members or declares more "
                                "than %d bytes", path, MAX_MEMBERS, MAX_UNPACKED)
                    return None
                files, dirs = _children([i.filename for i in infos], folder)
                return {f: z.read(member) for f, member in files.items()}, dirs
        return _tar_members(path, folder)
    except _Refused as exc:
        log.warning("compare_archive: %s scores 0: %s", path, exc)
        return None
    except (OSError, zipfile.BadZipFile, tarfile.TarError, KeyError, ValueError, EOFError, zlib.error,
            lzma.LZMAError):
        return None


_PER_FILE = {"text": "compare_text_file", "pdf": "compare_pdfs", "image": "compare_images"}


@metric("compare_archive", ArchiveOptions, files=True)
def compare_archive(result: str | None, expected: str | None, options: ArchiveOptions) -> float:
    """The mean score of the per-file metric over the files in ``file_path`` of the two archives (zip or tar);
    0 unless both hold the same file and folder names there. Folders are not compared inside."""
    if result is None or expected is None:
        return 0.0
    got, want = _members(result, options.file_path), _members(expected, options.file_path)
    if got is None or want is None or set(got[0]) != set(want[0]) or got[1] != want[1]:
        return 0.0
    if not got[0]:
        return 1.0  # the same (empty) folder; OSWorld divides by zero here
    per_file = get(_PER_FILE[options.file_type])
    opts = {"ignore_blanks": options.ignore_blanks, "ignore_case": options.ignore_case} \
        if options.file_type == "text" else {}
    total = 0.0
    with tempfile.TemporaryDirectory(prefix="osgym-archive-") as tmp:
        for i, name in enumerate(sorted(got[0])):
            suffix = PurePosixPath(name).suffix[:16]
            a, b = Path(tmp, f"{i}-result{suffix}"), Path(tmp, f"{i}-expected{suffix}")
            a.write_bytes(got[0][name])
            b.write_bytes(want[0][name])
            parsed = per_file.parse(opts)
            total += float(per_file.func(str(a), str(b)) if parsed is None else per_file.func(str(a), str(b), parsed))
    return total / len(got[0])


class SqlRules(BaseModel):
    """``sql``: one query whose first row's first column is the score (a number; NULL counts 0)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    sql: StrictStr


def _read_only(action: int, *args: Any) -> int:
    # A task file's SQL is untrusted: it may read, never write, attach other files or load extensions.
    allowed = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}
    return sqlite3.SQLITE_OK if action in allowed else sqlite3.SQLITE_DENY


@metric("run_sqlite3", rules=SqlRules, files=True)
def run_sqlite3(result: str | None, rules: dict[str, Any]) -> float:
    """The first column of the first row the query returns on the SQLite database (e.g. Thunderbird's
    ``global-messages-db.sqlite``), opened read-only; a missing database, a failed query or no row scores 0.

    Raises:
        ValueError: if the query does more than read (it is denied), or runs longer than ``SQL_TIMEOUT_S``.
    """
    if result is None or not Path(result).is_file():
        return 0.0
    conn = sqlite3.connect(f"{Path(result).resolve().as_uri()}?mode=ro", uri=True)
    deadline = time.monotonic() + SQL_TIMEOUT_S
    try:
        conn.set_authorizer(_read_only)
        conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
        try:
            row = conn.execute(rules["sql"]).fetchone()
        except sqlite3.DatabaseError as exc:
            if "not authorized" in str(exc) or "interrupted" in str(exc):
                raise ValueError(f"run_sqlite3: the task's query was refused: {exc}") from None
            return 0.0  # not a database, or no such table: the agent's file is not what the task wants
        try:
            return float(row[0] or 0) if row else 0.0
        except (TypeError, ValueError):
            return 0.0
    finally:
        conn.close()
