"""Text, command-output, file and window metrics (OSWorld's general ones and osgym's own)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, StrictBool

from osgym.tasks.metrics import metric


class _Rules(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ExpectedRules(_Rules):
    """``expected``: the value the result must equal."""

    expected: Any


class IncludeExcludeRules(_Rules):
    include: list[str] = []
    exclude: list[str] = []


class TreeRules(_Rules):
    present: list[str] = []
    absent: list[str] = []


class WindowRules(TreeRules):
    focused: str | None = None
    maximized: list[str] = []
    minimized: list[str] = []
    count: int | None = None


@metric("exact_match", rules=ExpectedRules)
def exact_match(result: Any, rules: dict[str, Any]) -> float:
    """1.0 if the result equals ``rules["expected"]``.

    >>> exact_match("hi\\n", {"expected": "hi\\n"})
    1.0
    """
    return 1.0 if result == rules["expected"] else 0.0


@metric("check_include_exclude", rules=IncludeExcludeRules)
def check_include_exclude(result: Any, rules: dict[str, Any]) -> float:
    """1.0 if every ``include`` string is in the result and no ``exclude`` string is.

    >>> check_include_exclude("a b", {"include": ["a"], "exclude": ["c"]})
    1.0
    """
    if result is None:
        return 0.0
    text = result if isinstance(result, str) else "\n".join(map(str, result))
    ok = all(s in text for s in rules.get("include", [])) and not any(s in text for s in rules.get("exclude", []))
    return 1.0 if ok else 0.0


class TextFileOptions(BaseModel):
    """``ignore_blanks``: runs of whitespace compare as one space, ends trimmed; ``ignore_case``: lower-cased."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    ignore_blanks: StrictBool = False
    ignore_case: StrictBool = False


@metric("compare_text_file", TextFileOptions, files=True)
def compare_text_file(actual: str | None, expected: str | None, options: TextFileOptions) -> float:
    """1.0 if two text files have the same content (optionally ignoring blanks/case)."""
    if actual is None or expected is None:
        return 0.0
    a, b = Path(actual).read_text(errors="replace"), Path(expected).read_text(errors="replace")
    if options.ignore_blanks:  # as OSWorld: every run of whitespace counts as one space, ends trimmed
        a, b = " ".join(a.split()), " ".join(b.split())
    if options.ignore_case:
        a, b = a.lower(), b.lower()
    return 1.0 if a == b else 0.0


@metric("file_exists")
def file_exists(result: Any, expected: Any = None) -> float:
    """1.0 if the getter found the file."""
    return 1.0 if result is not None else 0.0


@metric("check_directory_tree", rules=TreeRules)
def check_directory_tree(result: Any, rules: dict[str, Any]) -> float:
    """1.0 if the directory holds every name in ``rules["present"]`` and none in ``rules["absent"]``.

    The result is ``list_directory``'s tree (OSWorld's shape: the directory's own entries are its
    ``children``) or a plain list of names.

    >>> tree = {"type": "directory", "name": "d", "children": [{"type": "file", "name": "a.txt"}]}
    >>> check_directory_tree(tree, {"present": ["a.txt"], "absent": ["b.txt"]})
    1.0
    """
    if isinstance(result, dict):
        result = [c.get("name") for c in result.get("children", []) if isinstance(c, dict)]
    names = set(result or [])
    return 1.0 if set(rules.get("present", [])) <= names and not (set(rules.get("absent", [])) & names) else 0.0


@metric("check_window_state", rules=WindowRules)
def check_window_state(result: Any, rules: dict[str, Any]) -> float:
    """1.0 if the window list (from the ``vm_windows`` getter) matches every rule given.

    Rules name windows by exact title: ``present`` and ``absent`` (lists), ``focused``
    (one title), ``maximized`` and ``minimized`` (lists that must be in that state),
    ``count`` (the number of windows).

    >>> wins = [{"title": "a", "focused": True, "maximized": False, "minimized": False}]
    >>> check_window_state(wins, {"present": ["a"], "absent": ["b"], "focused": "a"})
    1.0
    >>> check_window_state(wins, {"maximized": ["a"]})
    0.0
    """
    if result is None:
        return 0.0
    by_title = {w["title"]: w for w in result}
    ok = all(t in by_title for t in rules.get("present", []))
    ok = ok and not any(t in by_title for t in rules.get("absent", []))
    if "focused" in rules:
        ok = ok and bool(by_title.get(rules["focused"], {}).get("focused"))
    for state in ("maximized", "minimized"):
        ok = ok and all(by_title.get(t, {}).get(state) for t in rules.get(state, []))
    if "count" in rules:
        ok = ok and len(result) == int(rules["count"])
    return 1.0 if ok else 0.0


@metric("infeasible")
def infeasible(result: Any, expected: Any) -> float:
    """Marks an infeasible task: :func:`osgym.tasks.evaluate.evaluate` scores it from the last action, never by this."""
    return 0.0

