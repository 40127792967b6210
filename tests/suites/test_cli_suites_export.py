"""``osgym suites export``: N distinct variants as OSWorld task files that ``osgym tasks check`` loads and a recipe's
task_dir/task_index runs; stable ids; clear errors and nothing half-written on bad input or a failure mid-way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from osgym import suites
from osgym.cli import app
from osgym.collection.collector import plan
from osgym.collection.recipe import load_recipe
from osgym.suites.export import export_variants, task_uuid, write_export

OSWORLD_FIELDS = {"id", "snapshot", "instruction", "source", "config", "trajectory", "related_apps", "evaluator"}


def _export(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(app, ["suites", "export", *args], env={"COLUMNS": "200"})
    return res.exit_code, res.output


def test_export_writes_distinct_variants_that_load_back_and_run(tmp_path: Path) -> None:
    out = tmp_path / "tasks"
    code, text = _export("apps-smoke", "--variants", "12", "--seed", "5", "--out", str(out))
    assert code == 0, text
    files = sorted((out / "examples").rglob("*.json"))
    index = json.loads((out / "test_all.json").read_text())
    assert len(files) == 12 == sum(len(ids) for ids in index.values())
    generated = suites.generate("apps-smoke", 12, 5)
    assert {task_uuid("apps-smoke", t.id, t.variant) for t in generated} == {f.stem for f in files}
    for f in files:
        data = json.loads(f.read_text())
        assert OSWORLD_FIELDS <= set(data) and data["osgym"]["suite"] == "apps-smoke" and data["osgym"]["oracle"]
        assert f.parent.name in index and f.stem in index[f.parent.name]
    checked = CliRunner().invoke(app, ["tasks", "check", str(out / "examples")], env={"COLUMNS": "200"})
    assert checked.exit_code == 0 and "refused" in checked.output
    total = [line for line in checked.output.splitlines() if line.startswith("total")][0].split()
    assert total[1:] == ["12", "0", "0", "12"], checked.output  # loaded, live sites, refused, total
    recipe = load_recipe({"name": "exported", "episodes": 12, "tier": "apps", "task_dir": str(out / "examples"),
                          "task_index": str(out / "test_all.json")})
    jobs, refused = plan(recipe, "r")
    assert not refused
    assert {(j.task.variant, bool(j.task.oracle)) for j in jobs} == {(t.variant, True) for t in generated}
    again = tmp_path / "again"
    assert _export("apps-smoke", "--variants", "12", "--seed", "5", "--out", str(again))[0] == 0
    assert [p.read_bytes() for p in files] == [(again / p.relative_to(out)).read_bytes() for p in files]


@pytest.mark.parametrize(("args", "message"), [
    (["nope", "--variants", "2"], "suite: expected one of"),
    (["apps-smoke", "--variants", "0"], "expected at least 1, actual 0"),
    (["desktop-basics", "--variants", "100000"], "cannot draw 100000 distinct variants"),
])
def test_bad_requests_fail_clearly_and_write_nothing(tmp_path: Path, args: list[str], message: str) -> None:
    code, text = _export(*args, "--out", str(tmp_path / "out"))
    assert code == 2 and message in " ".join(text.split()) and "Traceback" not in text
    assert list(tmp_path.iterdir()) == []


def test_a_non_empty_directory_is_refused_and_an_empty_one_is_used(tmp_path: Path) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    code, text = _export("apps-smoke", "--variants", "2", "--out", str(tmp_path / "full"))
    assert code == 2 and "exists and is not an empty directory" in " ".join(text.split())
    assert [p.name for p in (tmp_path / "full").iterdir()] == ["keep.txt"]
    (tmp_path / "empty").mkdir()
    assert _export("apps-smoke", "--variants", "2", "--out", str(tmp_path / "empty"))[0] == 0
    assert len(list((tmp_path / "empty" / "examples").rglob("*.json"))) == 2


def test_a_failure_mid_write_leaves_nothing_behind(tmp_path: Path) -> None:
    tasks = export_variants("apps-smoke", 6)

    def interrupt(i: int) -> None:
        if i == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_export(tmp_path / "out", tasks, on_file=interrupt)
    assert list(tmp_path.iterdir()) == []
