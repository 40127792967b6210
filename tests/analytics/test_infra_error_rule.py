"""The infrastructure-error rule is defined once (``sql/_infra_error.sql``) and every success view follows it."""

from __future__ import annotations

import re
from importlib import resources

import duckdb
import pytest

from osgym.analysis import analytics
from osgym.errors import ERROR_CLASSES, INFRA_ERROR_CLASSES

SUCCESS_VIEWS = {"success_by_task": "task_id", "success_by_domain": "domain", "success_by_policy": "policy"}
SUCCESS_QUERIES = (*SUCCESS_VIEWS, "success_by_app")  # by application too: an episode may count for several


def sql_files() -> dict[str, str]:
    folder = resources.files("osgym.analysis").joinpath("sql")
    return {p.name: p.read_text(encoding="utf-8") for p in folder.iterdir() if p.name.endswith(".sql")}


def test_the_rule_is_defined_in_exactly_one_place() -> None:
    files = sql_files()
    defining = [name for name, sql in files.items() if re.search(r"MACRO\s+is_infra_error\b", sql)]
    assert defining == ["_infra_error.sql"]
    for name, sql in files.items():  # the set of classes is not retyped in SQL: it comes from osgym.errors
        body = "\n".join(line for line in sql.splitlines() if not line.lstrip().startswith("--"))
        quoted = [c for c in INFRA_ERROR_CLASSES if f"'{c}'" in body]
        assert len(quoted) <= 1, f"{name} lists infrastructure error classes {quoted}; use is_infra_error"
    # the success figures are computed once, in the shared view, which applies the rule twice
    assert files["_success_groups.sql"].count("is_infra_error(error_class)") == 2
    for view in SUCCESS_QUERIES:
        body = files[f"{view}.sql"]
        assert "FROM success_groups" in body and "is_infra_error" not in body, view
        assert not any(f"'{c}'" in body for c in ERROR_CLASSES), view


def test_the_classes_come_from_osgym_errors(con: duckdb.DuckDBPyConnection) -> None:
    got = {r[0] for r in con.sql("SELECT error_class FROM infra_error_classes").fetchall()}
    assert got == set(INFRA_ERROR_CLASSES) and got <= set(ERROR_CLASSES)
    assert con.execute("SELECT is_infra_error(NULL), is_infra_error('policy_error'), "
                   "is_infra_error('replica_fault')").fetchone() == (False, False, True)


@pytest.mark.parametrize("classes", [INFRA_ERROR_CLASSES, ("timeout",), ("replica_fault",), ()])
def test_changing_the_rule_changes_every_success_view(con: duckdb.DuckDBPyConnection,
                                                      classes: tuple[str, ...]) -> None:
    analytics.define_infra_error(con, classes)
    episodes = con.sql("SELECT success, error_class FROM episodes").fetchall()
    infra = sum(1 for _, cls in episodes if cls in classes)
    successes = sum(1 for ok, _ in episodes if ok)
    for view, key in SUCCESS_VIEWS.items():
        got = analytics.query(con, view).to_pylist()
        assert sum(r["infra_errors"] for r in got) == infra, view
        for r in got:  # each group's rate leaves out exactly its own infra errors
            group = [(ok, cls) for ok, cls in con.sql(f"SELECT success, error_class FROM episodes WHERE {key} = $k",
                                                      params={"k": r[key]}).fetchall()]
            kept = [ok for ok, cls in group if cls not in classes]
            expected = sum(1 for ok in kept if ok) / len(kept) if kept else None
            assert r["success_rate_excl_infra"] == pytest.approx(expected), (view, r[key])
    assert successes == 2 and infra == {INFRA_ERROR_CLASSES: 3, ("timeout",): 1, ("replica_fault",): 2, (): 0}[classes]
