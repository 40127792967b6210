"""Archive and database metrics: OSWorld's ``compare_archive`` (``chrome.py``) and ``run_sqlite3``
(``general.py``).

Archives are the agent's: osgym never unpacks one onto disk under its own member names (OSWorld
calls ``shutil.unpack_archive``). It reads the members it compares into memory, after checking the
sizes the archive declares, and writes each to a scratch file of its own naming for the per-file metric.

>>> _children(["book/a.pdf", "book/sub/b.pdf", "c.txt"], "book")
({'a.pdf': 'book/a.pdf'}, {'sub'})
"""

from __future__ import annotations

import sqlite3
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, StrictBool, StrictStr

from osgym.tasks.metrics import get, metric
from osgym.tasks.metrics._files import MAX_UNPACKED

__all__ = ["compare_archive", "run_sqlite3"]

MAX_MEMBERS = 10_000  # an archive listing more entries than this is refused
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


def _members(path: str, folder: str) -> tuple[dict[str, bytes], set[str]] | None:
    """The files directly in ``folder`` of the zip or tar archive (name to bytes) and its sub-folder names,
    or None if it is no archive, or declares too much."""
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as z:
                infos = z.infolist()
                if len(infos) > MAX_MEMBERS or sum(i.file_size for i in infos) > MAX_UNPACKED:
                    return None
                files, dirs = _children([i.filename for i in infos], folder)
                return {f: z.read(member) for f, member in files.items()}, dirs
        with tarfile.open(path) as t:
            infos_t = []
            for info in t:  # tar has no index: stop reading a stream that lists too much
                infos_t.append(info)
                if len(infos_t) > MAX_MEMBERS:
                    return None
            if sum(i.size for i in infos_t if i.isfile()) > MAX_UNPACKED:
                return None
            names = [i.name + ("/" if i.isdir() else "") for i in infos_t if i.isfile() or i.isdir()]
            files, dirs = _children(names, folder)
            out = {}
            for f, member in files.items():
                reader = t.extractfile(member)
                if reader is None:
                    return None
                out[f] = reader.read()
            return out, dirs
    except (OSError, zipfile.BadZipFile, tarfile.TarError, KeyError, ValueError, EOFError):
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
