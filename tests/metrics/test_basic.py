"""Text, command-output and window metrics: a match scores 1, each kind of mismatch 0; OSWorld's agree."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from osgym.tasks import metrics
from tests.metrics.conftest import Call, OSWorld

WINDOWS = [{"title": "notes.txt", "focused": True, "maximized": True, "minimized": False},
           {"title": "xterm", "focused": False, "maximized": False, "minimized": True}]


@pytest.mark.parametrize("result, want", [("done\n", 1.0), ("done", 0.0), (None, 0.0)])
def test_exact_match(result: str | None, want: float) -> None:
    assert metrics.score("exact_match", result, {"expected": "done\n"}, {}) == want


@pytest.mark.parametrize("result, want", [("a.txt b.txt", 1.0), ("a.txt", 0.0), ("a.txt b.txt c.tmp", 0.0),
                                          (None, 0.0)])
def test_check_include_exclude(result: str | None, want: float) -> None:
    rules = {"include": ["a.txt", "b.txt"], "exclude": [".tmp"]}
    assert metrics.score("check_include_exclude", result, rules, {}) == want


TEXT_CASES: list[tuple[str, str, dict[str, Any], float]] = [
    ("same", "one\ntwo\n", {}, 1.0),
    ("differs", "one\nthree\n", {}, 0.0),
    ("blanks", "one  two\n\n", {}, 0.0),
    ("blanks-ignored", " one \t two\n\n", {"ignore_blanks": True}, 1.0),
    ("blanks-ignored-not-joined", "onetwo", {"ignore_blanks": True}, 0.0),
    ("case", "ONE\nTWO\n", {}, 0.0),
    ("case-ignored", "ONE\nTWO\n", {"ignore_case": True}, 1.0),
]


def _text_files(tmp: Path, name: str, text: str) -> tuple[str, str]:
    (tmp / f"{name}.result").write_text(text)
    (tmp / f"{name}.expected").write_text("one two" if "blanks" in name else "one\ntwo\n")
    return str(tmp / f"{name}.result"), str(tmp / f"{name}.expected")


@pytest.mark.parametrize("name, text, options, want", TEXT_CASES, ids=[c[0] for c in TEXT_CASES])
def test_compare_text_file(name: str, text: str, options: dict[str, Any], want: float, tmp_path: Path) -> None:
    assert metrics.score("compare_text_file", *_text_files(tmp_path, name, text), options) == want


def test_compare_text_file_missing_result_scores_0(tmp_path: Path) -> None:
    (tmp_path / "expected").write_text("x")
    assert metrics.score("compare_text_file", None, str(tmp_path / "expected"), {}) == 0.0


def test_file_exists(tmp_path: Path) -> None:
    assert metrics.score("file_exists", str(tmp_path), None, {}) == 1.0
    assert metrics.score("file_exists", None, None, {}) == 0.0


@pytest.mark.parametrize("listing, want", [(["a", "b"], 1.0), (["a"], 0.0), (["a", "b", "junk"], 0.0), (None, 0.0)])
def test_check_directory_tree(listing: list[str] | None, want: float) -> None:
    rules = {"present": ["a", "b"], "absent": ["junk"]}
    assert metrics.score("check_directory_tree", listing, rules, {}) == want


@pytest.mark.parametrize("rules, want", [
    ({"present": ["xterm"], "focused": "notes.txt", "maximized": ["notes.txt"], "minimized": ["xterm"], "count": 2},
     1.0),
    ({"present": ["gedit"]}, 0.0),
    ({"absent": ["xterm"]}, 0.0),
    ({"focused": "xterm"}, 0.0),
    ({"maximized": ["xterm"]}, 0.0),
    ({"count": 3}, 0.0),
])
def test_check_window_state(rules: dict[str, Any], want: float) -> None:
    assert metrics.score("check_window_state", WINDOWS, rules, {}) == want


def test_infeasible() -> None:
    # evaluate() scores an infeasible task from the agent's last action; the function only marks the name.
    assert metrics.score("infeasible", None, None, {}) == 0.0


def test_exact_match_parity(osworld: OSWorld) -> None:
    cases = [("done\n", {"expected": "done\n"}), ("done", {"expected": "done\n"}), (None, {"expected": "x"})]
    ours = [metrics.score("exact_match", r, e, {}) for r, e in cases]
    assert osworld.scores([Call("general", "exact_match", r, e, {}) for r, e in cases]) == ours


def test_check_include_exclude_parity(osworld: OSWorld) -> None:
    rules = {"include": ["a.txt", "b.txt"], "exclude": [".tmp"]}
    cases = ["a.txt b.txt", "a.txt", "a.txt b.txt c.tmp", None]
    ours = [metrics.score("check_include_exclude", r, rules, {}) for r in cases]
    assert osworld.scores([Call("general", "check_include_exclude", r, rules, {}) for r in cases]) == ours


def test_compare_text_file_parity(osworld: OSWorld, tmp_path: Path) -> None:
    ours, calls = [], []
    for name, text, options, _ in TEXT_CASES:
        result, expected = _text_files(tmp_path, name, text)
        ours.append(metrics.score("compare_text_file", result, expected, options))
        calls.append(Call("vscode", "compare_text_file", result, expected, options))
    assert osworld.scores(calls) == ours
