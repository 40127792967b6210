"""Thunderbird metrics on generated prefs.js, filter and mbox files: a match scores 1, each kind of mismatch 0;
OSWorld's functions agree except where docs/osworld-coverage.md says."""

from __future__ import annotations

from pathlib import Path

import pytest

from osgym.errors import TaskLoadError
from osgym.tasks.spec import load_task
from tests.metrics.cases import Case, File, check, ids, parity
from tests.metrics.conftest import OSWorld

PREFS = File('// Mozilla User Preferences\n'
             'user_pref("mail.identity.id1.auto_quote", false);\n'
             'user_pref("mail.identity.id1.htmlSigText", "Anonym\\nXYZ Lab");\n'
             'user_pref("extensions.activeThemeID", "thunderbird-compact-dark@mozilla.org");\n'
             'user_pref("mail.server.default.applyIncomingFilters", true);\n'
             'user_pref("mail.imap.use_status_for_biff", false);\n'
             'user_pref("mail.server.server1.check_time", 10);\n', "prefs.js")
PREFS_CASES = [
    Case("bool", PREFS, {"expect": {"mail.identity.id1.auto_quote": {"method": "eq", "ref": False}}}, 1.0),
    Case("regex-dotall", PREFS, {"expect": {"mail.identity.id1.htmlSigText": {"method": "re.S",
                                                                               "ref": "Anonym.+XYZ Lab"}}}, 1.0),
    Case("regex-no-dotall", PREFS, {"expect": {"mail.identity.id1.htmlSigText": {"method": "re",
                                                                                  "ref": "Anonym.+XYZ Lab"}}}, 0.0),
    Case("two-and-unexpected-absent", PREFS, {
        "expect": {"mail.server.default.applyIncomingFilters": {"method": "eq", "ref": True},
                   "mail.imap.use_status_for_biff": {"method": "eq", "ref": False}},
        "unexpect": {"mail.server.default.autosync_offline_stores": {"method": "eq", "ref": False}}}, 1.0),
    Case("unexpected-present", PREFS, {"unexpect": {"mail.imap.use_status_for_biff": {"method": "eq",
                                                                                       "ref": False}}}, 0.0),
    Case("default-not-set", PREFS, {"expect": {"mail.identity.id1.reply_on_top": {"method": "eq", "ref": 1}}}, 0.0),
    Case("number-compare", PREFS, {"expect": {"mail.server.server1.check_time": {"method": "ge", "ref": 5}}}, 1.0),
    Case("wrong-value", PREFS, {"expect": {"extensions.activeThemeID": {"method": "re", "ref": "light"}}}, 0.0),
    Case("missing", None, {"expect": {}}, 0.0),
]


@pytest.mark.parametrize("case", PREFS_CASES, ids=ids(PREFS_CASES))
def test_check_thunderbird_prefs(case: Case, tmp_path: Path) -> None:
    check("check_thunderbird_prefs", case, tmp_path)


def test_check_thunderbird_prefs_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "thunderbird", "check_thunderbird_prefs", PREFS_CASES, tmp_path)


FILTERS = File('version="9"\nlogging="no"\n'
               'name="Promotions"\nenabled="yes"\ntype="17"\naction="Move to folder"\n'
               'actionValue="mailbox://nobody@Local%20Folders/Promotions"\n'
               'condition="AND (subject,contains,discount)"\n'
               'name="Forward all"\nenabled="yes"\ntype="17"\naction="Forward"\nactionValue="anonym-x2024@gmail.com"\n'
               'condition="ALL"\n'
               'name="Quoted \\"x\\""\nenabled="no"\ntype="1"\naction="Delete"\n'
               'condition="OR (from,is,\\"a, b\\") OR (subject,contains,x)"\n', "msgFilterRules.dat")
FILTER_CASES = [
    Case("move", FILTERS, {"expect": [{"enabled": "yes", "action": "Move to folder",
                                       "actionValue": "mailbox://nobody@Local%20Folders/Promotions",
                                       "condition": ["AND (subject,contains,discount)"]}]}, 1.0),
    Case("forward", FILTERS, {"expect": [{"enabled": "yes", "action": "Forward",
                                          "actionValue": "anonym-x2024@gmail.com", "condition": ["ALL"]}]}, 1.0),
    Case("quoted", FILTERS, {"expect": [{"name": 'Quoted "x"', "enabled": "no",
                                         "condition": ['OR (from,is,"a, b")', "OR (subject,contains,x)"]}]}, 1.0),
    Case("other-folder", FILTERS, {"expect": [{"action": "Move to folder", "actionValue": "mailbox://x"}]}, 0.0),
    Case("other-condition", FILTERS, {"expect": [{"action": "Forward", "condition": ["AND (from,is,x)"]}]}, 0.0),
    Case("unexpected", FILTERS, {"unexpect": [{"action": "Delete"}]}, 0.0),
    Case("missing", None, {"expect": []}, 0.0),
]


@pytest.mark.parametrize("case", FILTER_CASES, ids=ids(FILTER_CASES))
def test_check_thunderbird_filter(case: Case, tmp_path: Path) -> None:
    check("check_thunderbird_filter", case, tmp_path)


def test_check_thunderbird_filter_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "thunderbird", "check_thunderbird_filter", FILTER_CASES, tmp_path)


def _mbox(*messages: tuple[str, str]) -> File:
    return File("".join(f"From - Thu Jan 25 10:00:00 2024\nX-Mozilla-Status: {status}\nX-Mozilla-Keys: \n"
                        f"MIME-Version: 1.0\nSubject: {subject}\n\nbody of {subject}\n\n"
                        for subject, status in messages), "folder")


GOLD = _mbox(("Bill 1", "0001"), ("Bill 2", "0001"))
# OSWorld's reader skips every non-empty message (`if mail.strip(): continue`), so any two folders score 1
FOLDER = [
    Case("same", GOLD, GOLD, 1.0),
    Case("other-order-duplicate-deleted", _mbox(("Bill 2", "0001"), ("Bill 1", "0001"), ("Bill 1", "0001"),
                                                ("Spam", "0009")), GOLD, 1.0),
    Case("status-differs", _mbox(("Bill 1", "0000"), ("Bill 2", "0001")), GOLD, 0.0, osworld=1.0),
    Case("status-ignored", _mbox(("Bill 1", "0000"), ("Bill 2", "0001")), GOLD, 1.0,
         options={"ignore_status": True}),
    Case("message-missing", _mbox(("Bill 1", "0001")), GOLD, 0.0, osworld=1.0),
    Case("lists", [GOLD, _mbox(("Ad", "0001"))], [GOLD, _mbox(("Ad", "0001"))], 1.0),
    Case("missing", None, GOLD, 0.0),
]


@pytest.mark.parametrize("case", FOLDER, ids=ids(FOLDER))
def test_check_thunderbird_folder(case: Case, tmp_path: Path) -> None:
    check("check_thunderbird_folder", case, tmp_path)


def test_check_thunderbird_folder_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "thunderbird", "check_thunderbird_folder", FOLDER, tmp_path)


@pytest.mark.parametrize("func, rules, named", [
    ("check_thunderbird_prefs", {"expect": {"a": {"method": "like", "ref": 1}}}, "rules.expect.a.method"),
    ("check_thunderbird_prefs", {"expect": [{"method": "eq", "ref": 1}]}, "rules.expect: Input should be a valid"),
    ("check_thunderbird_filter", {"expect": {"action": "Forward"}}, "rules.expect: Input should be a valid list"),
])
def test_bad_rules_fail_at_load(func: str, rules: dict[str, object], named: str) -> None:
    task = {"id": "t-tb", "instruction": "x",
            "evaluator": {"func": func, "result": {"type": "vm_file", "path": "/tmp/x"},
                          "expected": {"type": "rule", "rules": rules}}}
    with pytest.raises(TaskLoadError, match=f"'{func}': {named}"):
        load_task(task)


def test_bad_folder_option_fails_at_load() -> None:
    task = {"id": "t-tb", "instruction": "x", "evaluator": {"func": "check_thunderbird_folder",
                                                             "options": {"ignore_status": "yes"}}}
    with pytest.raises(TaskLoadError, match="'check_thunderbird_folder': option ignore_status"):
        load_task(task)
