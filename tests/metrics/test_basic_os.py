"""Desktop settings metrics on generated command outputs and listings: a match scores 1, each kind of mismatch 0;
OSWorld's functions agree except where docs/osworld-coverage.md says."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.metrics.cases import Case, check, ids, parity
from tests.metrics.conftest import OSWorld

FAVOURITES = {"expected": ["google-chrome.desktop", "thunderbird.desktop"]}
FAVOURITE_APPS = [
    Case("same", "['thunderbird.desktop', 'google-chrome.desktop']\n", FAVOURITES, 1.0),
    Case("one-more", "['thunderbird.desktop', 'google-chrome.desktop', 'vim.desktop']", FAVOURITES, 0.0),
    Case("one-less", "['thunderbird.desktop']", FAVOURITES, 0.0),
    # OSWorld eval()s the output, so code an agent arranged for gsettings to print runs in the evaluator;
    # osgym reads it as a literal only (both score this 0: the code returns a string, not the list)
    Case("code-not-a-list", "__import__('os').getcwd()", FAVOURITES, 0.0),
]


@pytest.mark.parametrize("case", FAVOURITE_APPS, ids=ids(FAVOURITE_APPS))
def test_check_gnome_favorite_apps(case: Case, tmp_path: Path) -> None:
    check("check_gnome_favorite_apps", case, tmp_path)


def test_check_gnome_favorite_apps_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "basic_os", "check_gnome_favorite_apps", FAVOURITE_APPS, tmp_path)


def _timedatectl(zone: str) -> str:
    return (f"               Local time: Thu 2024-01-25 12:56:06 WET\n"
            f"           Universal time: Thu 2024-01-25 12:56:06 UTC\n"
            f"                 RTC time: Thu 2024-01-25 12:56:05\n"
            f"                Time zone: {zone}\nSystem clock synchronized: yes\n")


UTC = [
    Case("utc", _timedatectl("Etc/UTC (UTC, +0000)"), None, 1.0),
    Case("faroe-winter", _timedatectl("Atlantic/Faroe (WET, +0000)"), None, 1.0),
    Case("berlin", _timedatectl("Europe/Berlin (CET, +0100)"), None, 0.0),
    Case("short-output", "Failed to connect to bus", None, 0.0, osworld="IndexError"),
]


@pytest.mark.parametrize("case", UTC, ids=ids(UTC))
def test_is_utc_0(case: Case, tmp_path: Path) -> None:
    check("is_utc_0", case, tmp_path)


def test_is_utc_0_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "basic_os", "is_utc_0", UTC, tmp_path)


ENLARGED = [Case("larger", "1.25\n", None, 1.0), Case("default", "1.0\n", None, 0.0),
            Case("smaller", "0.8", None, 0.0), Case("no-output", "", None, 0.0, osworld="ValueError")]


@pytest.mark.parametrize("case", ENLARGED, ids=ids(ENLARGED))
def test_check_text_enlarged(case: Case, tmp_path: Path) -> None:
    check("check_text_enlarged", case, tmp_path)


def test_check_text_enlarged_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "basic_os", "check_text_enlarged", ENLARGED, tmp_path)


def _tree(*names: str) -> dict[str, object]:
    return {"name": "cpjpg", "type": "directory", "children": [{"name": n, "type": "file"} for n in names]}


JPGS = {"expected": ["a.jpg", "b.jpg"]}
MOVED = [
    Case("same", _tree("b.jpg", "a.jpg"), JPGS, 1.0),
    Case("one-missing", _tree("a.jpg"), JPGS, 0.0),
    Case("one-extra", _tree("a.jpg", "b.jpg", "c.png"), JPGS, 0.0),
    Case("flat-list", ["a.jpg", "b.jpg"], JPGS, 1.0, osworld="TypeError"),
]


@pytest.mark.parametrize("case", MOVED, ids=ids(MOVED))
def test_check_moved_jpgs(case: Case, tmp_path: Path) -> None:
    check("check_moved_jpgs", case, tmp_path)


def test_check_moved_jpgs_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "basic_os", "check_moved_jpgs", MOVED, tmp_path)


CLIPBOARD = [
    Case("text", {"expected": "/home/user/Data3/List3/secret.docx"}, "/home/user/Data3/List3/secret.docx", 1.0),
    Case("texts", {"expected": ["a", "b"]}, "b and a", 1.0),
    Case("other", {"expected": "/home/user/secret.docx"}, "/home/user/other.docx", 0.0),
    Case("one-of-texts", {"expected": ["a", "c"]}, "a b", 0.0),
]


@pytest.mark.parametrize("case", CLIPBOARD, ids=ids(CLIPBOARD))
def test_is_in_vm_clickboard(case: Case, tmp_path: Path) -> None:
    check("is_in_vm_clickboard", case, tmp_path)


def test_is_in_vm_clickboard_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "basic_os", "is_in_vm_clickboard", CLIPBOARD, tmp_path)


def test_is_in_vm_clickboard_without_a_rule_raises_naming_it() -> None:
    # evaluate() reports a ValueError from a metric as an EvaluatorError naming the task
    from osgym.tasks import metrics

    with pytest.raises(ValueError, match="is_in_vm_clickboard: the result getter must be a rule"):
        metrics.score("is_in_vm_clickboard", "not a rule", "clipboard", {})
