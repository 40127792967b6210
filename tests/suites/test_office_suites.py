"""The LibreOffice suites (apps-spreadsheet, apps-documents, apps-presentations) without replicas: every
template yields 2,000 distinct instructions, its variants are valid and deterministic task files, oracles
wait for the app's focus before their first key and use GUI ops only, and the evaluators score a file
made the way the task asks 1.0 and the untouched input 0.0. The episodes themselves (oracle 1.0, noop
0.0 on real replicas) run in tests/apps/test_apps_suites.py."""

from __future__ import annotations

import base64
import random
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openpyxl
import pytest
from openpyxl.styles import Font

from osgym.suites import generate, list_suites, required_tier, templates
from osgym.suites.generators import Template, content_key
from osgym.tasks.metrics import score
from osgym.tasks.spec import TaskSpec
from tests.suites.processes import Pending, in_processes, params, selected

SUITES = {"apps-spreadsheet": "sheet-", "apps-documents": "doc-", "apps-presentations": "slides-"}
TEMPLATES = [t for name in SUITES for t in templates(name)]
GUI_OPS = {"click_window", "wait_window", "wait_gone", "wait_enabled", "wait_focused", "wait_element", "click_element",
           "type", "press", "hotkey", "click", "done"}
INPUT_OPS = {"type", "press", "hotkey", "click", "click_window", "click_element"}
DISTINCT = 2000


def test_the_suites_are_registered_on_the_apps_tier_with_prefixed_unique_ids() -> None:
    every_id = [t.id for name in list_suites() for t in templates(name)]
    assert len(every_id) == len(set(every_id))
    for name, prefix in SUITES.items():
        assert name in list_suites() and required_tier(name) == "apps"
        ts = templates(name)
        assert ts and all(t.id.startswith(prefix) and 1 <= t.difficulty <= 3 for t in ts), name
    assert {len(templates(n)) for n in SUITES} and len(TEMPLATES) >= 9


def _instructions(template_id: str) -> tuple[frozenset[str], int]:
    """Distinct instructions until :data:`DISTINCT` (or 30% more seeds), and the seeds drawn. Drawn as
    ``Template.variant`` draws them (same RNG, same build), without validating each task file: the loader's
    check of a setup command holding a base64 deck takes ~0.1 s (the test below validates). Runs in a worker
    process (:func:`instructions`)."""
    template = _by_id(template_id)
    seen: set[str] = set()
    seed = 0
    while len(seen) < DISTINCT and seed < DISTINCT * 13 // 10:
        seen.add(template.build(random.Random(f"{template.id}/{seed}"))["instruction"])
        seed += 1
    return frozenset(seen), seed


@pytest.fixture(scope="module")
def instructions(request: pytest.FixtureRequest) -> Iterator[dict[str, Pending[tuple[frozenset[str], int]]]]:
    """:func:`_instructions` of each selected template, all started when the first of them runs."""
    items = selected(request, test_each_template_gives_2000_distinct_instructions)
    with in_processes(_instructions, [t.id for t in params(items, "template")]) as pending:
        yield pending


@pytest.mark.parametrize("template", TEMPLATES, ids=[t.id for t in TEMPLATES])
def test_each_template_gives_2000_distinct_instructions(
        instructions: dict[str, Pending[tuple[frozenset[str], int]]], template: Template) -> None:
    seen, seed = instructions[template.id].result()
    assert template.build(random.Random(f"{template.id}/7"))["instruction"] == template.variant(7).instruction
    assert len(seen) >= DISTINCT, f"{template.id}: {len(seen)} distinct instructions in {seed} seeds"


@pytest.mark.parametrize("name", sorted(SUITES))
def test_variants_are_distinct_deterministic_and_solved_by_gui_ops(name: str) -> None:
    tasks = generate(name, 60, seed=5)
    assert len({content_key(t) for t in tasks}) == 60 and tasks == generate(name, 60, seed=5)
    for t in tasks:
        ops = [o.op for o in t.oracle or []]
        assert set(ops) <= GUI_OPS, f"{t.id}: {ops}"
        first_input = next(i for i, o in enumerate(ops) if o in INPUT_OPS)
        assert "wait_focused" in ops[:first_input], f"{t.id}: types before the app has the focus: {ops}"
        assert ops[-1] == "done" and t.related_apps and t.related_apps[0].startswith("libreoffice_")
        assert len(ops) <= 40, f"{t.id}: {len(ops)} oracle ops, more than the apps test's step limit"


# ---- evaluators on files made on the host --------------------------------------------------------
def _written(task: TaskSpec, path: str) -> bytes:
    """The bytes a setup or postconfig step writes to ``path`` (``printf '%s' B64 | base64 -d > path``)."""
    d = task.model_dump(mode="json")
    for step in [*d["config"], *(d["evaluator"].get("postconfig") or [])]:
        words = shlex.split(str(step["parameters"].get("command", "")))
        if path in words and "base64" in words:
            return base64.b64decode(words[words.index("printf") + 2])
    raise AssertionError(f"no step writes {path}")


def _score(task: TaskSpec, files: dict[str, Path]) -> float:
    """The task's metric(s) on local files (by each getter's path), combined by its conj."""
    ev = _evaluator(task)
    funcs = ev["func"] if isinstance(ev["func"], list) else [ev["func"]]

    def fetch(getter: Any) -> Any:
        if getter is None:
            return None
        if getter["type"] == "rule":
            return getter["rules"]
        path = files.get(getter["path"])
        return str(path) if path is not None and path.exists() else None

    def as_list(v: Any) -> list[Any]:
        return v if isinstance(v, list) and len(funcs) > 1 else [v]

    results = as_list(ev["result"])
    expected = as_list(ev.get("expected")) if ev.get("expected") is not None else [None] * len(funcs)
    options = as_list(ev.get("options")) if ev.get("options") is not None else [{}] * len(funcs)
    scores = [score(f, fetch(r), fetch(e), o or {}) for f, r, e, o in zip(funcs, results, expected, options,
                                                                               strict=True)]
    return min(scores) if ev.get("conj", "and") == "and" else max(scores)


def _evaluator(task: TaskSpec) -> dict[str, Any]:
    return dict(task.model_dump(mode="json")["evaluator"])


def _by_id(template_id: str) -> Template:
    return next(t for t in TEMPLATES if t.id == template_id)


@pytest.mark.parametrize("seed", range(4))
def test_a_sheet_with_the_asked_cells_scores_one_and_the_untouched_input_zero(tmp_path: Path, seed: int) -> None:
    """For each workbook template: the cells its rules name, written by openpyxl (values and styles),
    pass; the input workbook as setup writes it does not (the task asks for a change)."""
    for t in TEMPLATES:
        task = t.variant(seed)
        ev = _evaluator(task)
        if ev["func"] != "compare_table" or "expected" in ev:
            continue  # judged against an expected workbook: tests/suites/test_sheet_expected_books.py
        src = next(c for c in task.config if c.type == "launch").parameters["command"][-1]
        out = ev["result"]["path"]
        untouched = tmp_path / f"{t.id}-input.xlsx"
        untouched.write_bytes(_written(task, src) if src.endswith(".xlsx") else b"not a workbook")
        wb = openpyxl.Workbook()
        ws = wb.active
        assert ws is not None
        for rule in ev["options"]["rules"]:
            c = ws[rule["coordinate"]]
            c.value = rule["props"]["value"]["ref"]
            if "font_bold" in rule["props"]:
                c.font = Font(bold=True)
            if "number_format" in rule["props"]:
                c.number_format = rule["props"]["number_format"]["ref"]
        made = tmp_path / f"{t.id}.xlsx"
        wb.save(made)
        assert _score(task, {out: made}) == 1.0, t.id
        assert _score(task, {out: untouched}) == 0.0, t.id
        assert _score(task, {}) == 0.0, t.id


def test_a_pptx_deck_with_the_asked_texts_scores_one_and_one_without_them_zero(tmp_path: Path) -> None:
    from osgym.suites.apps_presentations.impress import deck_bytes

    task = _by_id("slides-title-bullets").variant(11)
    ev = _evaluator(task)
    expected_getter = ev["expected"]
    gold = tmp_path / "expected.pptx"
    gold.write_bytes(_written(task, expected_getter["path"]))
    out = ev["result"]["path"]
    same = tmp_path / "same.pptx"
    same.write_bytes(gold.read_bytes())
    wrong = tmp_path / "wrong.pptx"
    wrong.write_bytes(deck_bytes([(0, ["Other title", "Other subtitle"]), (1, ["Agenda", "One\nTwo"])]))
    files = {out: same, expected_getter["path"]: gold}
    assert _score(task, files) == 1.0
    assert _score(task, {**files, out: wrong}) == 0.0
    assert _score(task, {expected_getter["path"]: gold}) == 0.0


@pytest.mark.parametrize("template_id", ["doc-line-spacing", "doc-find-replace"])
def test_a_docx_made_as_asked_scores_one_and_the_untouched_input_zero(tmp_path: Path, template_id: str) -> None:
    """The expected document (as the task asks it) passes, the input the setup writes does not."""
    for seed in range(4):
        task = _by_id(template_id).variant(seed)
        ev = _evaluator(task)
        src = task.instruction.split("~/Documents/", 1)[1].split(" ", 1)[0]
        untouched, gold = tmp_path / f"{seed}-input.docx", tmp_path / f"{seed}-expected.docx"
        untouched.write_bytes(_written(task, f"/home/user/Documents/{src}"))
        gold.write_bytes(_written(task, ev["expected"]["path"]))
        files = {ev["expected"]["path"]: gold}
        assert _score(task, {**files, ev["result"]["path"]: gold}) == 1.0, (template_id, seed)
        assert _score(task, {**files, ev["result"]["path"]: untouched}) == 0.0, (template_id, seed)
        assert _score(task, files) == 0.0, (template_id, seed)


def test_the_variants_of_one_seed_are_the_same_bytes() -> None:
    """Input and expected files are built with fixed timestamps: a variant's task JSON never changes."""
    rng_seeds = random.Random(1).sample(range(10**6), 3)
    for t in TEMPLATES:
        for s in rng_seeds:
            assert content_key(t.variant(s)) == content_key(t.variant(s)), t.id
