"""Desktop settings metrics after OSWorld's ``basic_os.py``: favourite apps, time zone, text scaling, moved
files and the clipboard, each read from a command's output or a directory listing.

>>> check_text_enlarged("1.25\\n")
1.0
>>> is_utc_0("Local time: x\\nUniversal time: x\\nRTC time: x\\nTime zone: Etc/UTC (UTC, +0000)\\n")
1.0
"""

from __future__ import annotations

import ast
from typing import Any

from pydantic import BaseModel, ConfigDict, StrictStr, ValidationError

from osgym.tasks.metrics import metric

__all__ = ["check_text_enlarged", "is_utc_0"]


class NamesRules(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    expected: list[StrictStr]


def _same_names(names: list[Any], expected: list[str]) -> float:
    return 1.0 if len(names) == len(expected) and set(names) == set(expected) else 0.0


@metric("check_gnome_favorite_apps", rules=NamesRules)
def check_gnome_favorite_apps(result: Any, rules: dict[str, Any]) -> float:
    """1.0 if ``gsettings get org.gnome.shell favorite-apps`` printed exactly the expected apps (in any order).

    The output is a Python-style list; it is read as a literal (OSWorld ``eval``s it, which would run
    whatever an agent arranged for the command to print).
    """
    if not isinstance(result, str):
        return 0.0
    try:
        apps = ast.literal_eval(result.strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return 0.0
    return _same_names(list(apps), rules["expected"]) if isinstance(apps, list | tuple) else 0.0


@metric("is_utc_0")
def is_utc_0(result: Any, expected: Any = None) -> float:
    """1.0 if ``timedatectl status``'s fourth line (the time zone) ends with ``+0000)``."""
    lines = result.split("\n") if isinstance(result, str) else []
    return 1.0 if len(lines) > 3 and lines[3].endswith("+0000)") else 0.0


@metric("check_text_enlarged")
def check_text_enlarged(result: Any, expected: Any = None) -> float:
    """1.0 if the text scaling factor printed by ``gsettings`` is above 1."""
    try:
        return 1.0 if float(result) > 1.0 else 0.0
    except (TypeError, ValueError):
        return 0.0


@metric("check_moved_jpgs", rules=NamesRules)
def check_moved_jpgs(result: Any, rules: dict[str, Any]) -> float:
    """1.0 if the directory holds exactly the expected files (in any order). The listing is OSWorld's tree
    (``{"children": [{"name": ...}]}``) or a list of names."""
    if isinstance(result, dict):
        names = [c.get("name") for c in result.get("children", []) if isinstance(c, dict)]
    elif isinstance(result, list):
        names = list(result)
    else:
        return 0.0
    return _same_names(names, rules["expected"])


class ClipboardRules(BaseModel):
    """``expected``: a text, or texts, the clipboard must contain."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    expected: StrictStr | list[StrictStr]


@metric("is_in_vm_clickboard")
def is_in_vm_clickboard(result: Any, expected: Any) -> float:
    """1.0 if the clipboard (``xsel --clipboard --output``, the *expected* getter here, as OSWorld's task files
    have it) contains the text or every text of the ``rule`` given as the *result*.

    Raises:
        ValueError: if the result is not a rule ``{"expected": text or texts}`` (the task file is wrong).
    """
    try:
        rules = ClipboardRules.model_validate(result)
    except ValidationError:
        raise ValueError("is_in_vm_clickboard: the result getter must be a rule {'expected': text or texts}, "
                         f"actual {result!r:.100}") from None
    if not isinstance(expected, str):
        return 0.0
    want = [rules.expected] if isinstance(rules.expected, str) else rules.expected
    return 1.0 if all(w in expected for w in want) else 0.0
