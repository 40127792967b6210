"""General metrics (JSON objects and files, list and CSV files, text files, literals) on generated inputs:
a match scores 1, each kind of mismatch 0; OSWorld's functions agree except where docs/osworld-coverage.md says."""

from __future__ import annotations

import json
from pathlib import Path

import docx
import pytest

from osgym.errors import TaskLoadError
from osgym.tasks.spec import load_task
from tests.metrics.cases import Case, File, check, ids, parity
from tests.metrics.conftest import OSWorld

LISTING = File("emails.bak/\nA Test E-mail.eml\nWelcome.eml\n")
CHECK_LIST = [
    Case("all-expected", LISTING, {"expect": [r"A Test E-mail.*\.eml", "^Welcome"]}, 1.0),
    Case("one-missing", LISTING, {"expect": [r"A Test E-mail.*\.eml", "Spam"]}, 0.0),
    Case("unexpected-found", LISTING, {"unexpect": [r"\.eml$"]}, 0.0),
    Case("nothing-unexpected", File(""), {"unexpect": [".+"]}, 1.0),
    Case("diff-not-empty", File("< a\n> b\n"), {"unexpect": [".+"]}, 0.0),
    Case("form-feed-is-no-line-break", File("a\x0cb\n"), {"expect": ["a.b"]}, 1.0),
    Case("missing-file", None, {"expect": ["x"]}, 0.0),
]


@pytest.mark.parametrize("case", CHECK_LIST, ids=ids(CHECK_LIST))
def test_check_list(case: Case, tmp_path: Path) -> None:
    check("check_list", case, tmp_path)


def test_check_list_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "general", "check_list", CHECK_LIST, tmp_path)


IS_IN_LIST = [
    Case("in-output", "# packages in environment at /opt/conda:\n", {"expected": "packages in environment at"}, 1.0),
    Case("not-in-output", "conda: command not found\n", {"expected": "packages in environment at"}, 0.0),
    Case("in-list", ["/home/user/Desktop/helloExtension"], {"expected": "/home/user/Desktop/helloExtension"}, 1.0),
    Case("not-in-list", ["/home/user/other"], {"expected": "/home/user/Desktop/helloExtension"}, 0.0),
    Case("no-result", None, {"expected": "x"}, 0.0, osworld="TypeError"),
]


@pytest.mark.parametrize("case", IS_IN_LIST, ids=ids(IS_IN_LIST))
def test_is_in_list(case: Case, tmp_path: Path) -> None:
    check("is_in_list", case, tmp_path)


def test_is_in_list_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "general", "is_in_list", IS_IN_LIST, tmp_path)


MANIFEST = File(json.dumps({"name": "happy-extension", "version": "0.0.1", "background": {"scripts": ["bg.js"]},
                            "permissions": ["tabs"]}))
CHECK_JSON = [
    Case("all-expected", MANIFEST, {"expect": [{"key": ["name"], "method": "eq", "ref": "happy-extension"},
                                               {"key": ["background", "scripts"], "method": "eq", "ref": ["bg.js"]}]},
         1.0),
    Case("wrong-value", MANIFEST, {"expect": [{"key": ["version"], "method": "eq", "ref": "0.0.2"}]}, 0.0),
    Case("missing-key", MANIFEST, {"expect": [{"key": ["author", "name"], "method": "eq", "ref": "x"}]}, 0.0),
    Case("into-a-string", MANIFEST, {"expect": [{"key": ["name", "first"], "method": "eq", "ref": "x"}]}, 0.0),
    Case("list-index", MANIFEST, {"expect": [{"key": ["permissions", 0], "method": "re", "ref": "^tab"}]}, 1.0),
    Case("regex-no-match", MANIFEST, {"expect": [{"key": ["name"], "method": "re", "ref": r"\bsmart\b"}]}, 0.0),
    Case("unexpected-present", MANIFEST, {"unexpect": [{"key": ["version"], "method": "eq", "ref": "0.0.1"}]}, 0.0),
    Case("unexpected-absent-eq", MANIFEST, {"unexpect": [{"key": ["author"], "method": "eq", "ref": "x"}]}, 1.0),
    # OSWorld runs re.search on the None of a missing key, which raises, and scores the file 0
    Case("unexpected-absent-regex", MANIFEST, {"unexpect": [{"key": ["author"], "method": "re", "ref": "x"}]}, 1.0,
         osworld=0.0),
    Case("not-json", File("{name: "), {"expect": [{"key": ["name"], "method": "eq", "ref": "x"}]}, 0.0),
    Case("missing-file", None, {"expect": []}, 0.0),
    Case("yaml", File("name: Test Account\nauthor:\n  email: Test@gmail.com\n"),
         {"expect": [{"key": ["author", "email"], "method": "eq", "ref": "Test@gmail.com"}]}, 1.0,
         options={"is_yaml": True}),
    Case("yaml-wrong", File("name: Test Account\nauthor:\n  email: other@gmail.com\n"),
         {"expect": [{"key": ["author", "email"], "method": "eq", "ref": "Test@gmail.com"}]}, 0.0,
         options={"is_yaml": True}),
    Case("yaml-empty", File(""), {"expect": []}, 0.0, options={"is_yaml": True}),
]


@pytest.mark.parametrize("case", CHECK_JSON, ids=ids(CHECK_JSON))
def test_check_json(case: Case, tmp_path: Path) -> None:
    check("check_json", case, tmp_path)


def test_check_json_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "general", "check_json", CHECK_JSON, tmp_path)


CHECK_DIRECT = [
    Case("dict-equal", {"q": "drip coffee maker", "tbs": "mr:1"}, {"expected": {"q": "drip coffee maker"}}, 1.0),
    Case("dict-differs", {"q": "coffee"}, {"expected": {"q": "drip coffee maker"}}, 0.0),
    Case("key-missing", {}, {"expected": {"q": "x"}}, 0.0),
    Case("text-python-quotes", " {'from': 'Mon, 10:00'} ", {"expected": {"from": "Mon, 10:00"}}, 1.0),
    Case("evaluation-failed", {"from": "x"}, {"expected": {"from": "__EVALUATION_FAILED__"}}, 0.0),
    Case("none", None, {"expected": {"q": "x"}}, 0.0),
    # OSWorld sorts the flag's own value too and fails on it: the flag always scores 0
    Case("ignore-list-order-flag", {"q": ["a", "b"]}, {"expected": {"q": ["b", "a"], "ignore_list_order": True}}, 0.0),
    Case("not-an-object", ["q"], {"expected": {"q": "x"}}, 0.0),
    # OSWorld parses the text outside its try block and raises
    Case("text-not-json", "Traceback (most recent call last)", {"expected": {"q": "x"}}, 0.0,
         osworld="JSONDecodeError"),
    Case("in-result-list", {"hash1": "Everest"}, {"expected": {"hash1": ["Himalayas", "Everest"]},
                                                  "expect_in_result": True}, 1.0),
    Case("in-result-list-of-list", {"hash1": ["Hua", "x"]}, {"expected": {"hash1": ["hua", "Hua"]},
                                                             "expect_in_result": True}, 1.0),
    Case("in-result-list-none", {"hash1": "K2"}, {"expected": {"hash1": ["Himalayas", "Everest"]},
                                                  "expect_in_result": True}, 0.0),
    Case("in-result-substring", {"loc": "Boston Logan Intl Airport, BOS"}, {"expected": {"loc": "BOS"},
                                                                            "expect_in_result": True}, 1.0),
    Case("in-result-substring-missing", {"loc": "JFK"}, {"expected": {"loc": "BOS"}, "expect_in_result": True}, 0.0),
    Case("in-result-number", {"n": 3}, {"expected": {"n": 3}, "expect_in_result": True}, 0.0),
]


@pytest.mark.parametrize("case", CHECK_DIRECT, ids=ids(CHECK_DIRECT))
def test_check_direct_json_object(case: Case, tmp_path: Path) -> None:
    check("check_direct_json_object", case, tmp_path)


def test_check_direct_json_object_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "general", "check_direct_json_object", CHECK_DIRECT, tmp_path)


GOLD_JS = File("function a() {\n  return 1;\n}\n")
DIFF_TEXT = [
    Case("same", GOLD_JS, GOLD_JS, 1.0),
    Case("one-line-differs", File("function a() {\n  return 2;\n}\n"), GOLD_JS, 2 / 3),
    Case("empty", File(""), GOLD_JS, 0.0),
    Case("missing", None, GOLD_JS, 0.0),
]


@pytest.mark.parametrize("case", DIFF_TEXT, ids=ids(DIFF_TEXT))
def test_diff_text_file(case: Case, tmp_path: Path) -> None:
    check("diff_text_file", case, tmp_path)


def test_diff_text_file_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "general", "diff_text_file", DIFF_TEXT, tmp_path)


ACCOUNTS = File("url,user,password\nimap://outlook.office365.com,anon@outlook.com,pw1\n"
                "smtp://smtp.office365.com,anon@outlook.com,pw1\n")
CHECK_CSV = [
    Case("expected-rows", ACCOUNTS, {"expect": [{"url": "imap://outlook.office365.com", "password": "pw1"},
                                                {"url": "smtp://smtp.office365.com"}]}, 1.0),
    Case("row-missing", ACCOUNTS, {"expect": [{"url": "pop3://x"}]}, 0.0),
    Case("value-differs", ACCOUNTS, {"expect": [{"url": "imap://outlook.office365.com", "password": "pw2"}]}, 0.0),
    Case("unexpected-row", ACCOUNTS, {"unexpect": [{"url": "imap://outlook.office365.com"}]}, 0.0),
    Case("unexpected-absent", File("url,user\n"), {"unexpect": [{"url": "imap://outlook.office365.com"}]}, 1.0),
    Case("quoted-newline", File('url,note\nimap://a,"two\nlines"\n'), {"expect": [{"url": "imap://a",
                                                                                 "note": "two\nlines"}]}, 1.0),
    Case("missing", None, {"expect": []}, 0.0),
]


@pytest.mark.parametrize("case", CHECK_CSV, ids=ids(CHECK_CSV))
def test_check_csv(case: Case, tmp_path: Path) -> None:
    check("check_csv", case, tmp_path)


def test_check_csv_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "general", "check_csv", CHECK_CSV, tmp_path)


LITERAL = [
    Case("str-same", "42", 42, 1.0),
    Case("str-differs", "42", 41, 0.0),
    Case("str-case", "Yes", "yes", 0.0),
    Case("str-ignore-case", "Yes", "yes", 1.0, options={"ignore_case": True}),
    Case("list-same", ["Ada", "1", "2"], ["ada", 1, 2], 1.0, options={"type": "list", "ignore_case": True}),
    Case("list-case", ["Ada"], ["ada"], 0.0, options={"type": "list"}),
    Case("list-length", ["a", "b"], ["a"], 0.0, options={"type": "list"}),
    Case("list-not-list", "a", ["a"], 0.0, options={"type": "list"}),
]


@pytest.mark.parametrize("case", LITERAL, ids=ids(LITERAL))
def test_literal_match(case: Case, tmp_path: Path) -> None:
    check("literal_match", case, tmp_path)


def test_literal_match_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "general", "literal_match", LITERAL, tmp_path)


REPORT = File("Linux 6.1 (host)\n12:00:01 CPU %user %nice %system %iowait %steal %idle\n"
              "12:00:02 all 1.0 0.0 0.5 0.0 0.0 98.5\n12:00:03 all 1.0 0.0 0.5 0.0 0.0 98.5\n")
FILE_CONTAINS = [
    Case("all-present", REPORT, {"expected": ["CPU", "%user", "%idle"]}, 1.0),
    Case("one-absent", REPORT, {"expected": ["CPU", "%guest"]}, 0.0),
    Case("missing", None, {"expected": ["CPU"]}, 0.0),
]


@pytest.mark.parametrize("case", FILE_CONTAINS, ids=ids(FILE_CONTAINS))
def test_file_contains(case: Case, tmp_path: Path) -> None:
    check("file_contains", case, tmp_path)


def test_file_contains_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "general", "file_contains", FILE_CONTAINS, tmp_path)


LINE_NUMBER = [
    Case("three-timed-lines", REPORT, {"expected": "3"}, 1.0),
    Case("count-as-int", REPORT, {"expected": 3}, 1.0),
    Case("wrong-count", REPORT, {"expected": "31"}, 0.0),
    Case("missing", None, {"expected": "3"}, 0.0),
]


@pytest.mark.parametrize("case", LINE_NUMBER, ids=ids(LINE_NUMBER))
def test_check_line_number(case: Case, tmp_path: Path) -> None:
    check("check_line_number", case, tmp_path)


def test_check_line_number_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "general", "check_line_number", LINE_NUMBER, tmp_path)


GOLD_PY = File("#!/usr/bin/env python3\nimport os\n\n\ndef f():\n    return os.sep\n")
PURE_TEXT = [
    Case("same", GOLD_PY, GOLD_PY, 1.0),
    Case("blank-lines-tabs-header", File("# -*- coding: utf-8 -*-\nimport os\ndef f():\n\treturn os.sep   \n\n"),
         GOLD_PY, 1.0),
    Case("markdown-fence-left", File("```python\nimport os\ndef f():\n    return os.sep\n```\n"), GOLD_PY, 0.0),
    Case("code-differs", File("import os\ndef f():\n    return os.pathsep\n"), GOLD_PY, 0.0),
    Case("missing", None, GOLD_PY, 0.0),
]


@pytest.mark.parametrize("case", PURE_TEXT, ids=ids(PURE_TEXT))
def test_compare_python_pure_text(case: Case, tmp_path: Path) -> None:
    check("compare_python_pure_text", case, tmp_path)


def test_compare_python_pure_text_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "general", "compare_python_pure_text", PURE_TEXT, tmp_path)


def _docx(path: Path, paragraphs: list[str]) -> str:
    d = docx.Document()
    for p in paragraphs:
        d.add_paragraph(p)
    d.save(str(path))
    return str(path)


PLACES = ["益田路5055号", "福华三路111号", "正义街1号"]


@pytest.mark.parametrize("paragraphs, want", [(PLACES, 1.0), (["益田路5055号", "福华三路111号"], 0.0),
                                              (["益田路5055号", "福华三路111号", "xyz"], 2 / 3)])
def test_fuzzy_place_math(paragraphs: list[str], want: float, tmp_path: Path) -> None:
    from osgym.tasks import metrics

    got = metrics.score("fuzzy_place_math", _docx(tmp_path / "a.docx", paragraphs), {"expected": PLACES}, {})
    assert got == pytest.approx(want)
    assert metrics.score("fuzzy_place_math", None, {"expected": PLACES}, {}) == 0.0


def test_fuzzy_place_math_parity(osworld: OSWorld, tmp_path: Path) -> None:
    cases = [Case(str(i), _docx(tmp_path / f"{i}.docx", p), {"expected": PLACES}, 0.0)
             for i, p in enumerate([PLACES, PLACES[:2], [*PLACES[:2], "xyz"], ["益田路", "福华", "正义"]])]
    parity(osworld, "general", "fuzzy_place_math", cases, tmp_path)


@pytest.mark.parametrize("func, rules, named", [
    ("check_list", {"expect": ["(unclosed"]}, "rules.expect: Value error, not a regular expression"),
    ("check_json", {"expect": [{"key": ["a"], "method": "like", "ref": 1}]}, "rules.expect.0.method"),
    ("check_json", {"expect": [{"method": "eq", "ref": 1}]}, "rules.expect.0.key: Field required"),
    ("check_direct_json_object", {"expected": ["q"]}, "rules.expected: Input should be a valid dictionary"),
    ("check_csv", {"expect": {"url": "x"}}, "rules.expect: Input should be a valid list"),
    ("check_line_number", {"expected": "thirty"}, "rules.expected"),
    ("is_in_list", {"expected": ["a"]}, "rules.expected: Input should be a valid string"),
])
def test_bad_rules_fail_at_load(func: str, rules: dict[str, object], named: str) -> None:
    task = {"id": "t-general", "instruction": "x",
            "evaluator": {"func": func, "result": {"type": "vm_file", "path": "/tmp/x"},
                          "expected": {"type": "rule", "rules": rules}}}
    with pytest.raises(TaskLoadError, match=f"'{func}': {named}"):
        load_task(task)


def test_bad_options_fail_at_load() -> None:
    for options, named in (({"type": "set"}, "option type"), ({"is_yaml": True}, "option is_yaml")):
        task = {"id": "t-literal", "instruction": "x", "evaluator": {"func": "literal_match", "options": options}}
        with pytest.raises(TaskLoadError, match=f"'literal_match': {named}"):
            load_task(task)


def _speedtest(minutes_ago: int) -> File:
    import datetime

    taken = datetime.datetime.now() - datetime.timedelta(minutes=minutes_ago)
    return File(f"Date,Time,Download,Upload\n{taken:%Y-%m-%d},{taken:%Y-%m-%d %H:%M},94.2,20.1\n", "speed.csv")


SPEEDTEST = [
    Case("just-now", _speedtest(0), "60", 1.0),
    Case("three-hours-ago", _speedtest(180), "60", 0.0),
    Case("no-rows", File("Date,Time\n", "speed.csv"), "60", 0.0),
    Case("missing", None, "60", 0.0),
]


@pytest.mark.parametrize("case", SPEEDTEST, ids=ids(SPEEDTEST))
def test_compare_time_in_speedtest_results(case: Case, tmp_path: Path) -> None:
    check("compare_time_in_speedtest_results", case, tmp_path)


def test_compare_time_in_speedtest_results_wraps_round_midnight(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import datetime

    from osgym.tasks import metrics
    from osgym.tasks.metrics import general

    class LateClock(datetime.datetime):
        @classmethod
        def now(cls, tz: datetime.tzinfo | None = None) -> LateClock:
            return cls(2024, 3, 12, 23, 58)

    monkeypatch.setattr(general.datetime, "datetime", LateClock)
    (tmp_path / "s.csv").write_text("Date,Time\n2024-03-13,2024-03-13 00:03\n")
    assert metrics.score("compare_time_in_speedtest_results", str(tmp_path / "s.csv"), "60", {}) == 1.0
    with pytest.raises(ValueError, match="expected a number of minutes, actual 'an hour'"):
        metrics.score("compare_time_in_speedtest_results", str(tmp_path / "s.csv"), "an hour", {})


def test_compare_time_in_speedtest_results_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "general", "compare_time_in_speedtest_results", SPEEDTEST, tmp_path)
