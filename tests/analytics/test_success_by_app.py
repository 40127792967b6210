"""Success by application: episodes rows carry their task's related_apps (schema 3) into real Parquet, the
``success_by_app`` query counts a multi-app episode for each of its apps, episodes of older shards (no
column) or of tasks naming no app count under their domain, and both report outputs show the table."""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from rich.console import Console

from osgym.analysis import analytics, report
from osgym.dataset.schema import EPISODES, SCHEMA_VERSION
from osgym.episodes.trajectory import EpisodeResult, Trajectory, utcnow

V2 = pa.schema([f for f in EPISODES if f.name != "related_apps"], metadata=EPISODES.metadata)


def _row(eid: str, domain: str, apps: list[str], score: float) -> dict[str, Any]:
    result = EpisodeResult(
        episode_id=eid, run_id="r", task_id=f"t-{eid}", variant="0", domain=domain, instruction="i", policy="p",
        policy_config={}, image="osgym/apps", replica_id="x", host="h", related_apps=apps,
        trajectory=Trajectory(steps=[], termination="done", score=score, ended_at=utcnow()))
    return result.episode_row() | {"schema_version": SCHEMA_VERSION}


@pytest.fixture(autouse=True)
def _packaged_prices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OSGYM_PRICES", raising=False)


def test_success_by_application_from_parquet(data: types.SimpleNamespace, tmp_path: Path) -> None:
    v3 = [_row("e1", "libreoffice_calc", ["libreoffice_calc"], 1.0),
          _row("e2", "libreoffice_calc", ["libreoffice_calc"], 0.0),
          _row("e3", "multi_apps", ["chrome", "libreoffice_calc", "chrome"], 1.0),
          _row("e4", "terminal", [], 0.0)]
    old = [{k: v for k, v in _row("e5", "os", [], 1.0).items() if k != "related_apps"} | {"schema_version": 2}]
    view = data.write_view(tmp_path, {"episodes": [v3], "steps": [[]]})
    older = Path(view.files["episodes"][0]).with_name("part-v2.parquet")  # a shard written before the column
    pq.write_table(pa.Table.from_pylist(old, schema=V2), older)
    view.files["episodes"].append(str(older))
    con = analytics.connect_view(view)
    assert con.execute("SELECT count(related_apps) FROM episodes").fetchall() == [(4,)]
    got = {r["app"]: (r["episodes"], r["successes"], r["success_rate"])
           for r in analytics.query(con, "success_by_app").to_pylist()}
    assert got == {"libreoffice_calc": (3, 2, pytest.approx(2 / 3)), "chrome": (1, 1, 1.0),
                   "terminal": (1, 0, 0.0), "os": (1, 1, 1.0)}
    console = Console(record=True, width=120)
    report.print_report(con, console)
    text = console.export_text()
    assert "Success by application" in text and "libreoffice_calc" in text
    page = report.write_html_report(con, tmp_path / "report").read_text()
    assert "Success by application" in page and "success_by_app.png" in page
