"""Thunderbird metrics after OSWorld's ``thunderbird.py``: preferences (``prefs.js``), message filters
(``msgFilterRules.dat``) and the messages of a mail folder (mbox files).

>>> _prefs('user_pref("mail.identity.id1.auto_quote", false);\\nuser_pref("a.b", "x\\\\"y");')
[('mail.identity.id1.auto_quote', False), ('a.b', 'x"y')]
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, StrictBool, StrictStr

from osgym.tasks.metrics import metric
from osgym.tasks.metrics.general import read_text
from osgym.tasks.metrics.rules import ValueRule

__all__ = ["check_thunderbird_filter", "check_thunderbird_folder", "check_thunderbird_prefs"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


_PREF = re.compile(r'^user_pref\("(?P<key>(?:[^"]|\\")+)", (?P<val>.+)\);$')


def _prefs(text: str) -> list[tuple[str, Any]]:
    """Each ``user_pref("key", value);`` line's key and JSON value (lines whose value is no JSON are left out)."""
    out = []
    for line in text.splitlines():
        m = _PREF.match(line.strip())
        if m is None:
            continue
        try:
            out.append((m.group("key"), json.loads(m.group("val"))))
        except ValueError:
            continue
    return out


class PrefsRules(_Model):
    """``expect``: preference name to the rule its value must pass; ``unexpect``: rules its value must fail."""

    expect: dict[str, ValueRule] = {}
    unexpect: dict[str, ValueRule] = {}


@metric("check_thunderbird_prefs", rules=PrefsRules, files=True)
def check_thunderbird_prefs(result: str | None, rules: dict[str, Any]) -> float:
    """1.0 if every ``expect`` preference is set (its last setting counting) to a value passing its rule and no
    ``unexpect`` preference is set to one passing its rule. A preference left at its default has no line."""
    text = read_text(result)
    if text is None:
        return 0.0
    expect = {k: ValueRule.model_validate(v) for k, v in rules.get("expect", {}).items()}
    unexpect = {k: ValueRule.model_validate(v) for k, v in rules.get("unexpect", {}).items()}
    passed = dict.fromkeys(expect, False)
    for key, value in _prefs(text):
        if key in expect:
            passed[key] = expect[key].matches(value)
        elif key in unexpect and unexpect[key].matches(value):
            return 0.0
    return 1.0 if all(passed.values()) else 0.0


# One condition of a filter: "AND (subject,contains,discount)", "OR (from,is,"a, b")", or "ALL".
_CONDITION = re.compile(r'\b(?:AND|OR) \((?:[\w ]+),(?:[\w \']+),(?:"(?:(?:[^"]|\")+)"|(?:[^)]+))\)|\bALL\b')
_FILTER_LINE = re.compile(r'^(name|enabled|type|action|actionValue|condition)="(.*)"$')


def _unescape(value: str) -> str:
    return value.replace('\\"', '"').replace("\\\\", "\\")


def _filters(text: str) -> list[dict[str, Any]]:
    """The filters of a ``msgFilterRules.dat``: a filter starts at its ``name`` line and counts once it has a
    ``condition`` (as Thunderbird writes them, after the actions); a later ``action`` line still updates it."""
    filters: list[dict[str, Any]] = []
    current: dict[str, Any] = {}
    for line in text.splitlines():
        m = _FILTER_LINE.match(line)
        if m is None:
            continue
        field, value = m.group(1), _unescape(m.group(2))
        if field == "name":
            current = {"name": value}
        elif field == "condition":
            current["condition"] = _CONDITION.findall(value)
            filters.append(current)
        else:
            current[field] = value
    return filters


class FilterRules(_Model):
    """``expect``: filters (field to value; ``condition`` is the list of conditions) some filter must match;
    ``unexpect``: ones no filter may match."""

    expect: list[dict[str, StrictStr | list[StrictStr]]] = []
    unexpect: list[dict[str, StrictStr | list[StrictStr]]] = []


def _matches(pattern: dict[str, Any], item: dict[str, Any]) -> bool:
    return all(k in item and item[k] == v for k, v in pattern.items())


@metric("check_thunderbird_filter", rules=FilterRules, files=True)
def check_thunderbird_filter(result: str | None, rules: dict[str, Any]) -> float:
    """1.0 if the filter file has a filter matching each ``expect`` entry and none matching an ``unexpect`` one."""
    text = read_text(result)
    if text is None:
        return 0.0
    filters = _filters(text)
    found = all(any(_matches(r, f) for f in filters) for r in rules.get("expect", []))
    clean = not any(_matches(r, f) for r in rules.get("unexpect", []) for f in filters)
    return 1.0 if found and clean else 0.0


class FolderOptions(_Model):
    """``ignore_status``: drop ``X-Mozilla-Status`` headers; ``ignore_keys``: drop ``X-Mozilla-Keys`` headers;
    ``remove_deleted``: leave out messages marked deleted; ``remove_duplicate``: count each message once."""

    ignore_status: StrictBool = False
    ignore_keys: StrictBool = False
    remove_deleted: StrictBool = True
    remove_duplicate: StrictBool = True


_MESSAGE_START = re.compile(r"^From - ", re.M | re.I)  # Thunderbird's mbox separator line
_DELETED = re.compile(r"X-Mozilla-Status: 000[89]")


def _messages(text: str, options: FolderOptions) -> list[str]:
    out = []
    for msg in _MESSAGE_START.split(text.strip()):
        if not msg.strip() or (options.remove_deleted and _DELETED.search(msg)):
            continue
        if options.ignore_status:
            msg = re.sub(r"X-Mozilla-Status\d?:[\s\d]+", "", msg)
        if options.ignore_keys:
            msg = re.sub(r"(X-Mozilla-Keys:[^\n]*?)\n(MIME-Version)", r"\2", msg)
        out.append(msg.strip())
    return sorted(set(out)) if options.remove_duplicate else sorted(out)


@metric("check_thunderbird_folder", FolderOptions, files=True)
def check_thunderbird_folder(result: str | list[str | None] | None, expected: str | list[str | None] | None,
                             options: FolderOptions) -> float:
    """1.0 if each mail folder file holds the same messages as its expected file (in any order; see the options
    for what is ignored). OSWorld's function skips every non-empty message, and so scores any two files 1."""
    got = result if isinstance(result, list) else [result]
    want = expected if isinstance(expected, list) else [expected]
    if len(got) != len(want):
        return 0.0
    for g, w in zip(got, want, strict=True):
        a, b = read_text(g), read_text(w)
        if a is None or b is None or _messages(a, options) != _messages(b, options):
            return 0.0
    return 1.0
