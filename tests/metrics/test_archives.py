"""compare_archive on generated zip and tar archives and run_sqlite3 on a generated database: a match scores 1,
each kind of mismatch 0; OSWorld's functions agree except where docs/osworld-coverage.md says."""

from __future__ import annotations

import io
import sqlite3
import tarfile
import zipfile
from pathlib import Path

import pytest

from osgym.errors import TaskLoadError
from osgym.tasks import metrics
from osgym.tasks.spec import load_task
from tests.metrics.cases import Case, File, check, materialize, parity
from tests.metrics.conftest import OSWorld
from tests.metrics.test_chrome import pdf


def _zip(members: dict[str, bytes], name: str = "a.zip") -> File:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for n, data in members.items():
            z.writestr(n, data)
    return File(buf.getvalue(), name)


def _tar(members: dict[str, bytes], name: str = "a.tar.gz") -> File:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for n, data in members.items():
            info = tarfile.TarInfo(n)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return File(buf.getvalue(), name)


SLIDES = {"lecture_slides/1.pdf": pdf("Lecture one").content, "lecture_slides/2.pdf": pdf("Lecture two").content}
TEXTS = {"notes/a.txt": b"alpha\n", "notes/b.txt": b"beta\n"}
ARCHIVES = [
    Case("pdf-same", _zip(SLIDES), _zip(SLIDES, "g.zip"), 1.0, options={"file_path": "lecture_slides",
                                                                       "file_type": "pdf"}),
    Case("pdf-one-differs", _zip({**SLIDES, "lecture_slides/2.pdf": pdf("Lecture 2").content}),
         _zip(SLIDES, "g.zip"), 0.9, options={"file_path": "lecture_slides", "file_type": "pdf"}),
    Case("pdf-missing-file", _zip({"lecture_slides/1.pdf": SLIDES["lecture_slides/1.pdf"]}), _zip(SLIDES, "g.zip"),
         0.0, options={"file_path": "lecture_slides", "file_type": "pdf"}),
    Case("tar-pdf-top", _tar({"1.pdf": pdf("Lecture one").content}), _tar({"1.pdf": pdf("Lecture one").content},
                                                                          "g.tar.gz"), 1.0,
         options={"file_type": "pdf"}),
    # `tar czf pdf.tar.gz .` names its members ./1.pdf
    Case("tar-dot-prefix", _tar({"./1.pdf": pdf("Lecture one").content}), _tar({"1.pdf": pdf("Lecture one").content},
                                                                               "g.tar.gz"), 1.0,
         options={"file_type": "pdf"}),
    Case("text-same", _zip(TEXTS), _zip(TEXTS, "g.zip"), 1.0, options={"file_path": "notes"}),
    Case("text-one-differs", _zip({**TEXTS, "notes/b.txt": b"BETA\n"}), _zip(TEXTS, "g.zip"), 0.5,
         options={"file_path": "notes"}),
    Case("text-ignore-case", _zip({**TEXTS, "notes/b.txt": b"BETA\n"}), _zip(TEXTS, "g.zip"), 1.0,
         options={"file_path": "notes", "ignore_case": True}),
    Case("extra-folder", _zip({**TEXTS, "notes/sub/c.txt": b"c"}), _zip(TEXTS, "g.zip"), 0.0,
         options={"file_path": "notes"}),
    Case("missing", None, _zip(TEXTS, "g.zip"), 0.0, options={"file_path": "notes"}),
    # OSWorld unpacks first and raises on what is no archive, or lacks the folder
    Case("not-an-archive", File(b"not an archive", "a.zip"), _zip(TEXTS, "g.zip"), 0.0,
         options={"file_path": "notes"}, osworld="ReadError"),
    Case("folder-absent", _zip({"other/a.txt": b"alpha\n"}), _zip(TEXTS, "g.zip"), 0.0,
         options={"file_path": "notes"}, osworld="FileNotFoundError"),
]


def test_compare_archive(tmp_path: Path) -> None:
    for case in ARCHIVES:
        if case.id == "pdf-one-differs":
            from tests.metrics.cases import ours

            assert 0.5 < ours("compare_archive", case, tmp_path) < 1.0
        else:
            check("compare_archive", case, tmp_path)


def test_compare_archive_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "chrome", "compare_archive", ARCHIVES, tmp_path)


def test_compare_archive_refuses_what_unpacks_too_far(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("notes/a.txt", b"\0" * (300 * 2**20))  # 300 MB of zeros in about 300 kB
    gold = tmp_path / "gold.zip"
    with zipfile.ZipFile(gold, "w") as z:
        z.writestr("notes/a.txt", b"a")
    assert bomb.stat().st_size < 2**20
    assert metrics.score("compare_archive", str(bomb), str(gold), {"file_path": "notes"}) == 0.0


def test_compare_archive_never_writes_member_paths(tmp_path: Path) -> None:
    result = materialize(_zip({"../../escaped.txt": b"x", "notes/a.txt": b"a"}, "r.zip"), tmp_path)
    gold = materialize(_zip({"notes/a.txt": b"a"}, "g.zip"), tmp_path)
    assert metrics.score("compare_archive", result, gold, {"file_path": "notes"}) == 1.0
    assert not (tmp_path.parent / "escaped.txt").exists() and not Path("escaped.txt").exists()


def _db(path: Path, flagged: bool) -> str:
    conn = sqlite3.connect(path)
    conn.executescript("create table messages (id integer, folderID integer);"
                       "create table messageAttributes (messageID integer, attributeID integer, value integer);"
                       "insert into messages values (1, 13), (2, 7);")
    if flagged:
        conn.execute("insert into messageAttributes values (1, 58, 1)")
    conn.commit()
    conn.close()
    return str(path)


SQL = {"sql": "select sum(1) > 0 from messageAttributes where attributeID = 58 and value = 1 and messageID in "
              "(select id from messages where folderID = 13);"}


def test_run_sqlite3(tmp_path: Path) -> None:
    assert metrics.score("run_sqlite3", _db(tmp_path / "yes.sqlite", True), SQL, {}) == 1.0
    assert metrics.score("run_sqlite3", _db(tmp_path / "no.sqlite", False), SQL, {}) == 0.0
    assert metrics.score("run_sqlite3", None, SQL, {}) == 0.0
    (tmp_path / "text.sqlite").write_text("not a database")
    assert metrics.score("run_sqlite3", str(tmp_path / "text.sqlite"), SQL, {}) == 0.0


@pytest.mark.parametrize("sql", ["delete from messages", "attach database '/tmp/osgym-attached.db' as x",
                                 "select load_extension('/tmp/x.so')"])
def test_run_sqlite3_query_may_only_read(sql: str, tmp_path: Path) -> None:
    db = _db(tmp_path / "db.sqlite", True)
    with pytest.raises(ValueError, match="run_sqlite3: the task's query was refused"):
        metrics.score("run_sqlite3", db, {"sql": sql}, {})
    assert metrics.score("run_sqlite3", db, SQL, {}) == 1.0  # nothing was deleted
    assert not Path("/tmp/osgym-attached.db").exists()


def test_run_sqlite3_query_is_bounded_in_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from osgym.tasks.metrics import archives

    monkeypatch.setattr(archives, "SQL_TIMEOUT_S", 0.2)
    endless = {"sql": "with recursive c(x) as (select 1 union all select x + 1 from c) select count(*) from c"}
    with pytest.raises(ValueError, match="refused: interrupted"):
        metrics.score("run_sqlite3", _db(tmp_path / "db.sqlite", True), endless, {})


def test_run_sqlite3_parity(osworld: OSWorld, tmp_path: Path) -> None:
    cases = [Case("yes", _db(tmp_path / "yes.sqlite", True), SQL, 1.0),
             Case("no", _db(tmp_path / "no.sqlite", False), SQL, 0.0)]
    parity(osworld, "general", "run_sqlite3", cases, tmp_path)


def test_bad_archive_options_fail_at_load() -> None:
    task = {"id": "t-archive", "instruction": "x",
            "evaluator": {"func": "compare_archive", "options": {"file_type": "video"}}}
    with pytest.raises(TaskLoadError, match="'compare_archive': option file_type"):
        load_task(task)
