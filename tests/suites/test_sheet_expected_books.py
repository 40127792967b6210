"""The apps-spreadsheet templates judged against an expected workbook (chart, frozen panes, standard filter),
without replicas: a workbook made on the host as the task asks scores 1.0, the untouched input and one
that does it differently (another chart type or range, other panes, another kept value) score 0.0, and
the expected workbook is the same bytes for the same variant. The episodes run in
tests/apps/test_apps_suites.py."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import openpyxl
import pytest
from openpyxl.chart import LineChart, PieChart
from openpyxl.chart.data_source import AxDataSource, NumDataSource, NumRef, StrRef
from openpyxl.chart.series import Series
from openpyxl.worksheet.filters import FilterColumn, Filters
from openpyxl.worksheet.worksheet import Worksheet

from osgym.suites import templates
from osgym.suites.apps_spreadsheet import CHART
from osgym.suites.apps_spreadsheet.views import CHARTS
from osgym.tasks.spec import TaskSpec
from tests.suites.test_office_suites import _evaluator, _score, _written

SEEDS = range(6)


def _task(template_id: str, seed: int) -> TaskSpec:
    if template_id == CHART.id:  # built but not registered yet (see apps_spreadsheet.CHART)
        return CHART.variant(seed)
    return next(t for t in templates("apps-spreadsheet") if t.id == template_id).variant(seed)


def _files(task: TaskSpec, tmp_path: Path) -> tuple[dict[str, Path], Path, str, openpyxl.Workbook]:
    """The expected workbook's getter path mapped to its bytes, the input workbook as written by setup
    (loaded), and the result's path."""
    ev = _evaluator(task)
    gold = tmp_path / "expected.xlsx"
    gold.write_bytes(_written(task, ev["expected"]["path"]))
    src = next(c for c in task.config if c.type == "launch" and c.parameters["command"][0] == "libreoffice"
               ).parameters["command"][-1]
    untouched = tmp_path / "input.xlsx"
    untouched.write_bytes(_written(task, src))
    return {ev["expected"]["path"]: gold}, untouched, ev["result"]["path"], openpyxl.load_workbook(untouched)


def _save(wb: openpyxl.Workbook, path: Path) -> Path:
    wb.save(path)
    return path


def _chart(cls: Any, sheet: str, last: int, direction: str | None = None) -> Any:
    chart = cls()
    if direction is not None:
        chart.type = direction
    chart.series.append(Series(idx=0, order=0, val=NumDataSource(numRef=NumRef(f=f"{sheet}!$B$2:$B${last}")),
                               cat=AxDataSource(strRef=StrRef(f=f"{sheet}!$A$2:$A${last}"))))
    return chart


@pytest.mark.parametrize("seed", SEEDS)
def test_a_chart_of_the_asked_type_and_range_scores_one(tmp_path: Path, seed: int) -> None:
    task = _task("sheet-insert-chart", seed)
    files, untouched, out, wb = _files(task, tmp_path)
    ws = wb.active
    assert isinstance(ws, Worksheet)
    kind = next(k for k in CHARTS if f" {k} chart " in task.instruction)
    _, cls, direction = CHARTS[kind]
    last = ws.max_row
    ws.add_chart(_chart(cls, ws.title, last, direction), "F2")
    right = _save(wb, tmp_path / "right.xlsx")
    assert _score(task, {**files, out: right}) == 1.0
    assert _score(task, {**files, out: untouched}) == 0.0
    assert _score(task, files) == 0.0
    wrong_type = openpyxl.load_workbook(untouched)
    other = PieChart if kind != "pie" else LineChart
    assert isinstance(wrong_type.active, Worksheet)
    wrong_type.active.add_chart(_chart(other, ws.title, last), "F2")
    assert _score(task, {**files, out: _save(wrong_type, tmp_path / "type.xlsx")}) == 0.0
    wrong_range = openpyxl.load_workbook(untouched)
    assert isinstance(wrong_range.active, Worksheet)
    wrong_range.active.add_chart(_chart(cls, ws.title, last - 1, direction), "F2")
    assert _score(task, {**files, out: _save(wrong_range, tmp_path / "range.xlsx")}) == 0.0


@pytest.mark.parametrize("seed", SEEDS)
def test_panes_frozen_where_asked_score_one(tmp_path: Path, seed: int) -> None:
    task = _task("sheet-freeze-panes", seed)
    files, untouched, out, wb = _files(task, tmp_path)
    gold = openpyxl.load_workbook(next(iter(files.values()))).active
    assert gold is not None and wb.active is not None and gold.freeze_panes
    wb.active.freeze_panes = gold.freeze_panes
    assert _score(task, {**files, out: _save(wb, tmp_path / "right.xlsx")}) == 1.0
    assert _score(task, {**files, out: untouched}) == 0.0
    wb.active.freeze_panes = "D4"
    assert _score(task, {**files, out: _save(wb, tmp_path / "wrong.xlsx")}) == 0.0


@pytest.mark.parametrize("seed", SEEDS)
def test_a_filter_keeping_the_asked_value_scores_one(tmp_path: Path, seed: int) -> None:
    task = _task("sheet-standard-filter", seed)
    files, untouched, out, wb = _files(task, tmp_path)
    ws = wb.active
    assert ws is not None
    col = next(i for i, c in enumerate(next(ws.iter_rows(max_row=1))) if f"whose {c.value} is" in task.instruction)
    value = task.instruction.split(" is ", 2)[-1].split(" are shown")[0]
    assert value in {r[col] for r in ws.iter_rows(min_row=2, values_only=True)}
    ws.auto_filter.ref = f"A1:D{ws.max_row}"
    ws.auto_filter.filterColumn.append(FilterColumn(colId=col, filters=Filters(filter=[value])))
    assert _score(task, {**files, out: _save(wb, tmp_path / "right.xlsx")}) == 1.0
    assert _score(task, {**files, out: untouched}) == 0.0
    ws.auto_filter.filterColumn[0].filters = Filters(filter=[value + "x"])
    assert _score(task, {**files, out: _save(wb, tmp_path / "wrong.xlsx")}) == 0.0


def test_the_expected_workbooks_are_the_same_bytes_for_the_same_variant() -> None:
    for tid in ("sheet-insert-chart", "sheet-freeze-panes", "sheet-standard-filter"):
        a, b = _task(tid, 3), _task(tid, 3)
        path = _evaluator(a)["expected"]["path"]
        assert _written(a, path) == _written(b, path), tid
        assert io.BytesIO(_written(a, path)).getvalue()[:2] == b"PK", tid
