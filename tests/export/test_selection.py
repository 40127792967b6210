"""Choosing episodes by quality with DuckDB: named filters, ``--where``, and the checks that keep it an expression.

The expected sets follow the fixture's table (tests/analytics/conftest.py): e3, e4 and e7 show blank frames,
e5 a zero-size one; e2, e3 and e7 have a no-op action; e3, e6 and e8 were lost to the environment.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from osgym.analysis import analytics
from osgym.analysis.selection import check_where, combine_filters, select_episodes, select_from_store
from osgym.errors import ConfigError
from tests.export.conftest import DATASET


def _ids(store: Path, **kw: object) -> set[str]:
    sel = select_from_store(str(store), DATASET, **kw)  # type: ignore[arg-type]
    assert sel.total == 8 and sel.kept + sel.dropped == 8
    assert sel.ids is not None
    return set(sel.ids)


def test_named_filters_and_where_pick_the_expected_episodes(demo_store: Path) -> None:
    assert _ids(demo_store, filters=["successful"]) == {"e1", "e4"}
    assert _ids(demo_store, filters=["clean"]) == {"e1"}
    assert _ids(demo_store, where="success and not stuck_episode") == {"e1", "e4"}
    assert _ids(demo_store, where="stuck_episode") == {"e3"}
    assert _ids(demo_store, where="infra_error") == {"e3", "e6", "e8"}
    assert _ids(demo_store, where="task_id = 't1' and steps >= 3") == {"e1", "e2", "e7"}
    assert _ids(demo_store, where="task_id <> 'a;b -- /* ) ('") == {f"e{i}" for i in range(1, 9)}
    everything = select_from_store(str(demo_store), DATASET)
    assert everything.ids is None and (everything.total, everything.kept) == (8, 8)


def test_the_filter_columns_agree_with_the_report(demo_store: Path) -> None:
    con = analytics.connect(str(demo_store), DATASET)
    report = {r["episode_id"]: r for r in analytics.query(con, "quality_by_episode").to_pylist()}
    select_episodes(con, "true")
    rows = con.sql("SELECT episode_id, stuck_episode, blank_frames, noop_actions FROM episode_quality").fetchall()
    assert len(rows) == len(report) == 8
    for eid, stuck, blank, noop in rows:
        assert (stuck, blank, noop) == (report[eid]["stuck"], report[eid]["blank_frames"], report[eid]["noop_actions"])
    con.close()


@pytest.mark.parametrize(("where", "message"), [
    ("success; DROP TABLE episodes", "a ';' \\(a second statement\\)"),
    ("success -- and the rest", "a comment"),
    ("success /* x */", "a comment"),
    ("success) UNION SELECT 'x', true FROM episode_quality WHERE (true", "a '\\)' closing nothing"),
    ("(success", "1 unclosed '\\('"),
    ("task_id = 'open", "an unclosed ' quote"),
    ("   ", "an empty expression"),
    ("x" * 5000, "at most 4000 characters"),
])
def test_where_is_refused_unless_it_is_one_expression(demo_store: Path, where: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        select_from_store(str(demo_store), DATASET, where=where)


@pytest.mark.parametrize(("where", "message"), [
    ("episode_id IN (SELECT * FROM read_csv('/etc/passwd'))", "file system operations are disabled"),
    ("episode_id IN (SELECT file FROM glob('/*'))", "disabled"),
    ("nonexistent > 1", "columns: episode_id, run_id"),
    ("success AND install", "columns:"),
])
def test_where_runs_in_a_sandbox_that_reads_no_file(demo_store: Path, where: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        select_from_store(str(demo_store), DATASET, where=where)


def test_filters_combine_with_and_and_unknown_names_are_refused() -> None:
    assert combine_filters(None, ["successful", "clean"]) == \
        "(success) AND (blank_frames = 0 AND noop_actions = 0 AND NOT infra_error)"
    assert combine_filters(None) is None
    with pytest.raises(ConfigError, match="--filter: expected one of successful, clean, actual 'good'"):
        combine_filters(None, ["good"])
    assert check_where(" score > 0.5 ") == "score > 0.5"
