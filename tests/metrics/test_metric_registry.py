"""The metric registry: names are accepted at load only if registered, and every registered metric is tested."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from osgym.errors import TaskLoadError
from osgym.tasks import metrics
from osgym.tasks.check import CheckReport
from osgym.tasks.spec import load_task

HERE = Path(__file__).parent
# Metrics osgym added that have no OSWorld function to compare with.
OSGYM_ONLY = {"check_directory_tree", "check_window_state", "file_exists", "infeasible"}
# OSWorld's function cannot run here: it reads with easyocr (torch, models fetched on first use).
NO_PARITY = {"compare_image_text"}


def _test_functions() -> set[str]:
    return {node.name for path in HERE.glob("test_*.py") for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")}


def test_every_registered_metric_has_a_test_and_a_parity_test() -> None:
    tests = _test_functions()
    untested = [n for n in metrics.METRICS.names() if f"test_{n}" not in tests]
    exempt = OSGYM_ONLY | NO_PARITY
    no_parity = [n for n in metrics.METRICS.names() if n not in exempt and f"test_{n}_parity" not in tests]
    assert not untested, f"registered metrics without a test_<name> in tests/metrics: {untested}"
    assert not no_parity, f"registered metrics without a test_<name>_parity in tests/metrics: {no_parity}"


def test_unregistered_metric_fails_at_load_naming_it_and_the_known_ones() -> None:
    with pytest.raises(TaskLoadError) as info:
        load_task({"id": "t-x", "instruction": "x", "evaluator": {"func": "compare_holograms"}})
    msg = str(info.value)
    assert "'compare_holograms'" in msg and "compare_table" in msg and "t-x" in msg, msg


def test_refused_metric_fails_at_load_with_its_reason_and_cannot_be_registered() -> None:
    assert not set(metrics.REFUSED) & set(metrics.METRICS.names())
    with pytest.raises(TaskLoadError, match="'contains_mp4_video': OSWorld defines no such function"):
        load_task({"id": "t-x", "instruction": "x", "evaluator": {"func": "contains_mp4_video"}})
    with pytest.raises(ValueError, match="refused on purpose: OSWorld defines no such function"):
        metrics.metric("contains_mp4_video")(lambda result, expected: 1.0)


def test_tasks_check_gives_a_refused_metric_its_reason() -> None:
    report = CheckReport()
    report.add("libreoffice_impress", loaded=False, refused=[("metric", "contains_mp4_video")])
    assert "1  metric contains_mp4_video  (OSWorld defines no such function" in report.render()


def test_a_metric_without_options_rejects_any() -> None:
    with pytest.raises(TaskLoadError, match="'exact_match' takes no options, actual \\['strict'\\]"):
        load_task({"id": "t-x", "instruction": "x", "evaluator": {"func": "exact_match", "options": {"strict": True}}})


def test_registering_a_second_function_under_a_taken_name_fails() -> None:
    with pytest.raises(ValueError, match="already registered"):
        metrics.metric("compare_table")(lambda result, expected: 1.0)


def test_options_of_each_func_in_a_list_are_checked_against_that_func() -> None:
    ok = {"func": ["compare_table", "exact_match"], "options": [{"rules": [{"type": "sheet_name"}]}, {}]}
    assert load_task({"id": "t-ok", "instruction": "x", "evaluator": ok}).evaluator.funcs[0] == "compare_table"
    swapped = {"func": ["compare_table", "exact_match"], "options": [{}, {"rules": [{"type": "sheet_name"}]}]}
    with pytest.raises(TaskLoadError, match="'compare_table': option rules: Field required"):
        load_task({"id": "t-bad", "instruction": "x", "evaluator": swapped})


@pytest.mark.parametrize("func, rules, named", [
    ("compare_font_names", {"font": "Arial"}, "rules.font_name: Field required"),
    ("check_pdf_pages", {"relation": "__class__", "ref_value": 2}, "rules.relation"),
    ("check_transition", {"slide_idx": 0, "transition_type": "a/../b"}, "rules.transition_type"),
    ("exact_match", {"expectd": "x"}, "rules.expected: Field required"),
    ("check_include_exclude", {"include": "abc"}, "rules.include"),
    ("evaluate_presentation_fill_to_rgb_distance", {"rgb": [1, 2]}, "rules.rgb"),
])
def test_bad_rules_of_a_rule_getter_fail_at_load_naming_metric_and_entry(func: str, rules: dict[str, object],
                                                                         named: str) -> None:
    task = {"id": "t-rules", "instruction": "x",
            "evaluator": {"func": func, "result": {"type": "vm_file", "path": "/tmp/x"},
                          "expected": {"type": "rule", "rules": rules}}}
    with pytest.raises(TaskLoadError, match=f"'{func}': {named}"):
        load_task(task)


def test_good_rules_load() -> None:
    task = {"id": "t-rules", "instruction": "x",
            "evaluator": {"func": "check_pdf_pages", "result": {"type": "vm_file", "path": "/tmp/x.pdf"},
                          "expected": {"type": "rule", "rules": {"relation": "ge", "ref_value": 2}}}}
    assert load_task(task).evaluator.funcs == ["check_pdf_pages"]
