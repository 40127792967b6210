"""General metrics after OSWorld's ``general.py``: values, JSON objects, text and list files, CSV records.

The values scored here are the agent's (a file it wrote, a command's output, a page's URL), so
every reader tolerates what an agent may leave behind: a missing file scores 0, a file that is not
valid UTF-8 is read with replacement characters, a file that does not parse scores 0.

>>> is_in_list("packages in environment at /opt", {"expected": "packages in environment"})
1.0
>>> literal_match(["A", "b"], ["a", "B"], LiteralOptions(type="list", ignore_case=True))
1.0
"""

from __future__ import annotations

import csv
import datetime
import difflib
import io
import json
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, StrictBool, StrictStr, field_validator
from rapidfuzz import fuzz

from osgym.tasks.metrics import metric
from osgym.tasks.metrics.docs import _result as open_docx  # the agent's document, size-checked, or None
from osgym.tasks.metrics.rules import ValueRule

__all__ = ["check_csv", "check_direct_json_object", "check_json", "check_line_number", "check_list",
           "compare_python_pure_text", "diff_text_file", "file_contains", "fuzzy_place_math", "is_in_list",
           "literal_match"]

# OSWorld's tasks mark a value their expected getter could not compute with this string.
EVALUATION_FAILED = "__EVALUATION_FAILED__"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def read_text(path: str | None) -> str | None:
    """The text of a file the agent left, or None if there is none (invalid UTF-8 is replaced, not fatal)."""
    if path is None:
        return None
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _regexes(patterns: list[str]) -> list[str]:
    for p in patterns:
        try:
            re.compile(p)
        except re.error as exc:
            raise ValueError(f"not a regular expression: {p!r} ({exc})") from None
    return patterns


class ListRules(_Model):
    """``expect``: regular expressions each some line must match; ``unexpect``: ones no line may match."""

    expect: list[StrictStr] = []
    unexpect: list[StrictStr] = []

    _check = field_validator("expect", "unexpect")(_regexes)


@metric("check_list", rules=ListRules, files=True)
def check_list(result: str | None, rules: dict[str, Any]) -> float:
    """1.0 if every ``expect`` pattern is found (``re.search``) in some line of the file and no
    ``unexpect`` pattern in any line."""
    text = read_text(result)
    if text is None:
        return 0.0
    lines = [line for line in re.split(r"(?<=\n)", text) if line]  # as a file iterates: a line keeps its newline
    expect = [re.compile(p) for p in rules.get("expect", [])]
    unexpect = [re.compile(p) for p in rules.get("unexpect", [])]
    found = all(any(p.search(line) for line in lines) for p in expect)
    return 1.0 if found and not any(p.search(line) for p in unexpect for line in lines) else 0.0


class InListRules(_Model):
    expected: StrictStr


@metric("is_in_list", rules=InListRules)
def is_in_list(result: Any, rules: dict[str, Any]) -> float:
    """1.0 if ``rules["expected"]`` is in the result (a substring of a text, an item of a list)."""
    if not isinstance(result, str | list | tuple):
        return 0.0  # no output at all: OSWorld raises here
    return 1.0 if rules["expected"] in result else 0.0


class KeyRule(ValueRule):
    """A :class:`ValueRule` on the value found by following ``key`` (object keys, list indices) into a document."""

    key: list[StrictStr | int]


class JsonRules(_Model):
    expect: list[KeyRule] = []
    unexpect: list[KeyRule] = []


class JsonOptions(_Model):
    """``is_yaml``: the file is YAML, not JSON."""

    is_yaml: StrictBool = False


_MISSING = object()


def _lookup(doc: Any, keys: list[str | int]) -> Any:
    for k in keys:
        try:
            doc = doc[k]
        except (KeyError, IndexError, TypeError):
            return _MISSING
    return doc


@metric("check_json", JsonOptions, rules=JsonRules, files=True)
def check_json(result: str | None, rules: dict[str, Any], options: JsonOptions) -> float:
    """1.0 if, in the JSON (or YAML) file, the value at each ``expect`` rule's ``key`` passes the rule and the
    value at each ``unexpect`` rule's key is absent or fails it."""
    text = read_text(result)
    if text is None:
        return 0.0
    try:
        doc = yaml.safe_load(text) if options.is_yaml else json.loads(text)
    except (yaml.YAMLError, ValueError):
        return 0.0
    if doc is None:
        return 0.0
    for r in rules.get("expect", []):
        value = _lookup(doc, r["key"])
        if value is _MISSING or not ValueRule(method=r["method"], ref=r.get("ref")).matches(value):
            return 0.0
    for r in rules.get("unexpect", []):
        value = _lookup(doc, r["key"])
        # An absent key holds no unwanted value (OSWorld scores 0 when a regex rule meets one: see the docs).
        if value is not _MISSING and ValueRule(method=r["method"], ref=r.get("ref")).matches(value):
            return 0.0
    return 1.0


class DirectJsonRules(_Model):
    """``expected``: key to value; ``expect_in_result``: values are alternatives (a list) or substrings (a string)."""

    expected: dict[str, Any]
    expect_in_result: StrictBool = False


def _as_object(result: Any) -> Any:
    if isinstance(result, str):
        # OSWorld reads a Python-style dict printed by a script the same way: quotes swapped, then JSON
        try:
            return json.loads(result.strip().replace("'", '"'))
        except ValueError:
            return None
    return result


@metric("check_direct_json_object", rules=DirectJsonRules)
def check_direct_json_object(result: Any, rules: dict[str, Any]) -> float:
    """1.0 if the result object (or its JSON text) holds every ``expected`` key with the expected value.

    With ``expect_in_result``, a list expected value matches if any of its items equals the result's
    string value or is an item of its list value, and a string expected value matches if it is a
    substring of the result's. An expected value ``__EVALUATION_FAILED__`` (the getter of a relative
    date could not compute it) scores 0.

    >>> check_direct_json_object('{"q": "coffee"}', {"expected": {"q": "coffee"}})
    1.0
    >>> check_direct_json_object({"q": "tea"}, {"expected": {"q": ["coffee", "tea"]}, "expect_in_result": True})
    1.0
    """
    obj = _as_object(result)
    expected = rules["expected"]
    if not isinstance(obj, dict) or EVALUATION_FAILED in expected.values():
        return 0.0
    if not rules.get("expect_in_result", False):
        if expected.get("ignore_list_order"):
            return 0.0  # OSWorld sorts the flag's own value and fails on it: no task file sets it
        return 1.0 if all(obj.get(k) == v for k, v in expected.items()) else 0.0
    for key, want in expected.items():
        got = obj.get(key)
        if isinstance(want, list):
            ok = any((isinstance(got, list) and w in got) or (isinstance(got, str) and w == got) for w in want)
        elif isinstance(want, str):
            ok = isinstance(got, str) and want in got
        else:
            ok = False  # OSWorld compares only lists and strings in this mode
        if not ok:
            return 0.0
    return 1.0


@metric("diff_text_file", files=True)
def diff_text_file(result: str | None, expected: str | None) -> float:
    """The similarity of two text files' lines, in [0, 1] (``difflib.SequenceMatcher`` over whole lines)."""
    a, b = read_text(result), read_text(expected)
    if a is None or b is None:
        return 0.0
    return difflib.SequenceMatcher(a=a.splitlines(), b=b.splitlines()).ratio()


class CsvRules(_Model):
    """``expect``: records (column to value) some row must contain; ``unexpect``: ones no row may contain."""

    expect: list[dict[str, StrictStr]] = []
    unexpect: list[dict[str, StrictStr]] = []


def _record_in(pattern: dict[str, Any], row: dict[str, Any]) -> bool:
    return all(k in row and row[k] == v for k, v in pattern.items())


@metric("check_csv", rules=CsvRules, files=True)
def check_csv(result: str | None, rules: dict[str, Any]) -> float:
    """1.0 if the CSV file (with a header row) has, for every ``expect`` record, a row holding it, and no row
    holding an ``unexpect`` record."""
    text = read_text(result)
    if text is None:
        return 0.0
    rows = list(csv.DictReader(io.StringIO(text)))  # a quoted field may hold a newline
    found = all(any(_record_in(r, row) for row in rows) for r in rules.get("expect", []))
    clean = not any(_record_in(r, row) for r in rules.get("unexpect", []) for row in rows)
    return 1.0 if found and clean else 0.0


class LiteralOptions(_Model):
    """``type``: compare as strings or as lists of strings; ``ignore_case``: lower-cased first."""

    type: Literal["str", "list"] = "str"
    ignore_case: StrictBool = False


@metric("literal_match", LiteralOptions)
def literal_match(result: Any, expected: Any, options: LiteralOptions) -> float:
    """1.0 if the result equals the expected value as text (``type: str``), or item by item as text (``type:
    list``; both must be lists of the same length)."""
    def norm(v: Any) -> str:
        return str(v).lower() if options.ignore_case else str(v)

    if options.type == "str":
        return 1.0 if norm(result) == norm(expected) else 0.0
    if not isinstance(result, list | tuple) or not isinstance(expected, list | tuple) or len(result) != len(expected):
        return 0.0
    return 1.0 if [norm(v) for v in result] == [norm(v) for v in expected] else 0.0


class ContainsRules(_Model):
    expected: list[StrictStr]


@metric("file_contains", rules=ContainsRules, files=True)
def file_contains(result: str | None, rules: dict[str, Any]) -> float:
    """1.0 if the text file contains every string in ``rules["expected"]``."""
    text = read_text(result)
    return 1.0 if text is not None and all(s in text for s in rules["expected"]) else 0.0


class LineNumberRules(_Model):
    """``expected``: how many lines must hold a time of day (``HH:MM:SS``); a number or its digits."""

    expected: int | StrictStr

    @field_validator("expected")
    @classmethod
    def _number(cls, v: int | str) -> int | str:
        int(v)  # raises ValueError, reported at load
        return v


_TIME_OF_DAY = re.compile(r"([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)")


@metric("check_line_number", rules=LineNumberRules, files=True)
def check_line_number(result: str | None, rules: dict[str, Any]) -> float:
    """1.0 if the number of lines holding a time of day (``HH:MM:SS``, as ``sar`` prints) is ``rules["expected"]``."""
    text = read_text(result)
    if text is None:
        return 0.0
    count = sum(1 for line in text.splitlines() if _TIME_OF_DAY.search(line))
    return 1.0 if count == int(rules["expected"]) else 0.0


_SOURCE_HEADER = ("#!", "# -*- coding:", "# coding:", "# coding=")


def _python_lines(text: str) -> list[str]:
    lines = text.splitlines()
    start = 0
    while start < min(3, len(lines)) and lines[start].strip().startswith(_SOURCE_HEADER):
        start += 1  # a shebang or coding line in the first three is not the program
    return [line.expandtabs(4).rstrip() for line in lines[start:] if line.strip()]


@metric("compare_python_pure_text", files=True)
def compare_python_pure_text(result: str | None, expected: str | None) -> float:
    """1.0 if two Python files hold the same lines, ignoring blank lines, trailing blanks, tabs versus four
    spaces, and a shebang or coding line at the top."""
    a, b = read_text(result), read_text(expected)
    if a is None or b is None:
        return 0.0
    return 1.0 if _python_lines(a) == _python_lines(b) else 0.0


class FuzzyPlaceRules(_Model):
    """``expected``: the acceptable answers; the document must hold three words, each close to one of them."""

    expected: list[StrictStr]


@metric("fuzzy_place_math", rules=FuzzyPlaceRules, files=True)
def fuzzy_place_math(result: str | None, rules: dict[str, Any]) -> float:
    """The mean, over the Word document's words, of each word's best fuzzy ratio to an expected answer;
    0 unless the document holds exactly three words."""
    doc = open_docx(result)
    if doc is None:
        return 0.0
    words = [w for para in doc.paragraphs for w in para.text.split()]
    if len(words) != 3:
        return 0.0
    return sum(max((fuzz.ratio(w, a) / 100 for a in rules["expected"]), default=0.0) for w in words) / 3


def _minutes(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError(f"compare_time_in_speedtest_results: expected a number of minutes, actual {value!r}") from None


@metric("compare_time_in_speedtest_results", files=("result",))  # expected: minutes (time_diff_range)
def compare_time_in_speedtest_results(result: str | None, expected: Any) -> float:
    """1.0 if the time of the first result row of a Speedtest CSV export (the second column's ``HH:MM`` ending)
    is less than ``expected`` minutes from the evaluator's clock. Midnight wraps round (OSWorld's difference
    does not: 23:59 and 00:01 are 1438 minutes apart there).

    Raises:
        ValueError: if ``expected`` is not a number of minutes.
    """
    limit = _minutes(expected)
    text = read_text(result)
    if text is None:
        return 0.0
    lines = text.splitlines()
    try:
        stamp = lines[1].split(",")[1].strip()[-5:]
        taken = datetime.datetime.strptime(stamp, "%H:%M")
    except (IndexError, ValueError):
        return 0.0
    now = datetime.datetime.now()
    apart = abs(taken.hour * 60 + taken.minute - (now.hour * 60 + now.minute))
    return 1.0 if min(apart, 24 * 60 - apart) < limit else 0.0
