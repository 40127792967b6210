"""Accessibility-tree metrics: ``check_accessibility_tree`` after OSWorld's ``general.py`` (CSS selectors over the
tree's XML) and ``check_left_panel`` after its ``slides.py``.

OSWorld turns the selectors into XPath with cssselect and runs them with lxml. osgym matches the same
selectors on the standard library's ElementTree: type selectors (``tool-bar``, ``*``), attribute selectors
(``[name]``, ``[attr|id=x]``, with ``= ~= |= ^= $= *= !=``), and the combinators descendant, ``>``, ``~``
and ``+``; a selector using anything else (pseudo-classes, ids, classes) is refused when the task loads.
Attribute prefixes are the tree's namespaces (``attr``, ``st``, ``cp``, ...); both OSWorld's current
namespace URIs and its older ``uri:deskat:`` ones are recognised.

>>> tree = '<desktop><application name="Thunderbird"><page-tab name="About"/></application></desktop>'
>>> check_accessibility_tree(tree, [{"selectors": ["application[name=Thunderbird] > page-tab[name^=Ab]"]}])
1.0
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, RootModel, StrictBool, StrictStr, field_validator
from rapidfuzz import fuzz

from osgym.tasks.metrics import metric

__all__ = ["check_accessibility_tree", "check_left_panel", "compile_selector"]

_KINDS = {"st": "state", "attr": "attributes", "cp": "component", "doc": "document",
          "docattr": "document/attributes", "txt": "text", "val": "value", "act": "action"}
_OLD = {"st": "state", "attr": "attributes", "cp": "component", "doc": "document", "docattr": "attributes.document",
        "txt": "text", "val": "value", "act": "action"}
NAMESPACES = {p: (f"https://accessibility.ubuntu.example.org/ns/{k}", f"uri:deskat:{_OLD[p]}.at-spi.gnome.org")
              for p, k in _KINDS.items()}

_IDENT = r"[A-Za-z_][\w-]*|\*"
_STRING = r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\''
_TOKEN = re.compile(rf"""
    \s*(?P<comb>[>~+])\s*
  | (?P<ws>\s+)
  | (?P<type>(?:(?:{_IDENT})?\|)?(?:{_IDENT}))
  | \[\s*(?P<attr>(?:[A-Za-z_][\w-]*\|)?[A-Za-z_][\w-]*)\s*
      (?:(?P<op>[~|^$*!]?=)\s*(?P<val>{_STRING}|[\w-]+)\s*)?\]
""", re.X)


@dataclass(frozen=True)
class _Compound:
    tag: str | None  # None: any element
    tests: tuple[Callable[[ET.Element], bool], ...]

    def matches(self, el: ET.Element) -> bool:
        return (self.tag is None or el.tag == self.tag) and all(t(el) for t in self.tests)


def _names(qualified: str) -> list[str]:
    if "|" not in qualified:
        return [qualified]
    prefix, local = qualified.split("|", 1)
    if prefix not in NAMESPACES:
        raise ValueError(f"unknown namespace prefix {prefix!r} (known: {', '.join(NAMESPACES)})")
    return [f"{{{uri}}}{local}" for uri in NAMESPACES[prefix]]


_OPS: dict[str, Callable[[str, str], bool]] = {
    "=": lambda v, want: v == want,
    "~=": lambda v, want: bool(want) and not re.search(r"\s", want) and want in v.split(),
    "|=": lambda v, want: v == want or v.startswith(want + "-"),
    "^=": lambda v, want: bool(want) and v.startswith(want),
    "$=": lambda v, want: bool(want) and v.endswith(want),
    "*=": lambda v, want: bool(want) and want in v,
}


def _attribute_test(name: str, op: str | None, raw: str | None) -> Callable[[ET.Element], bool]:
    keys = _names(name)
    want = raw[1:-1].replace("\\" + raw[0], raw[0]).replace("\\\\", "\\") if raw and raw[0] in "\"'" else raw
    if op is None:
        return lambda el: any(k in el.attrib for k in keys)
    if op == "!=":  # cssselect: the attribute is absent or differs
        return lambda el: all(el.attrib.get(k) != want for k in keys)
    compare = _OPS[op]
    return lambda el: any(k in el.attrib and compare(el.attrib[k], want or "") for k in keys)


def compile_selector(selector: str) -> list[tuple[str, _Compound]]:
    """One selector as (combinator, compound) pairs, left to right; the first combinator is ``" "``.

    Raises:
        ValueError: naming the part of the selector osgym cannot match.
    """
    steps: list[tuple[str, _Compound]] = []
    pos, comb = 0, " "
    tag: str | None = None
    tests: list[Callable[[ET.Element], bool]] = []
    started = False
    text = selector.strip()

    def close() -> None:
        nonlocal tag, tests, started
        if not started:
            raise ValueError(f"selector {selector!r}: a combinator without an element before it")
        steps.append((comb, _Compound(tag, tuple(tests))))
        tag, tests, started = None, [], False

    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ValueError(f"selector {selector!r}: cannot read {text[pos:pos + 20]!r} (supported: type and "
                             "attribute selectors, descendant, >, ~ and + combinators)")
        pos = m.end()
        if m.group("comb") or m.group("ws"):
            close()
            comb = m.group("comb") or " "
        elif m.group("type"):
            if started:
                raise ValueError(f"selector {selector!r}: a type selector must come first in {m.group('type')!r}")
            t = m.group("type")
            tag = None if t in ("*", "*|*") or t.endswith("|*") else _names(t)[0]
            started = True
        else:
            tests.append(_attribute_test(m.group("attr"), m.group("op"), m.group("val")))
            started = True
    close()
    return steps


def _select(root: ET.Element, steps: list[tuple[str, _Compound]]) -> list[ET.Element]:
    parent = {child: p for p in root.iter() for child in p}

    def earlier_siblings(el: ET.Element) -> list[ET.Element]:
        p = parent.get(el)
        if p is None:
            return []
        kids = list(p)
        return kids[:kids.index(el)][::-1]

    seen: dict[tuple[int, int], bool] = {}

    def fits(el: ET.Element, i: int) -> bool:
        key = (id(el), i)
        if key not in seen:  # each (element, step) is decided once: descendant chains stay linear
            seen[key] = decide(el, i)
        return seen[key]

    def decide(el: ET.Element, i: int) -> bool:
        comb, compound = steps[i]
        if not compound.matches(el):
            return False
        if i == 0:
            return True
        if comb == ">":
            p = parent.get(el)
            return p is not None and fits(p, i - 1)
        if comb == " ":
            p = parent.get(el)
            while p is not None:
                if fits(p, i - 1):
                    return True
                p = parent.get(p)
            return False
        siblings = earlier_siblings(el)
        return any(fits(s, i - 1) for s in (siblings[:1] if comb == "+" else siblings))

    return [el for el in root.iter() if fits(el, len(steps) - 1)]


class TreeRule(BaseModel):
    """``selectors``: CSS selectors, any of which may match; ``text``: the text a matched element must have,
    exactly (``exact``, the default) or scored by fuzzy ratio."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    selectors: list[StrictStr] = Field(min_length=1)
    text: StrictStr | None = None
    exact: StrictBool = True

    @field_validator("selectors")
    @classmethod
    def _readable(cls, v: list[str]) -> list[str]:
        for s in v:
            compile_selector(s)
        return v


class TreeRules(RootModel[list[TreeRule]]):
    """The rules, all of which must match (scores multiply). OSWorld's ``xpath`` rules are not supported."""


def _tree(result: Any) -> ET.Element | None:
    """The accessibility tree a getter gave, parsed; None when it is missing or not XML (scores 0)."""
    if not isinstance(result, str):
        return None
    try:
        return ET.fromstring(result)
    except ET.ParseError:
        return None


@metric("check_accessibility_tree", rules=TreeRules)
def check_accessibility_tree(result: Any, rules: list[dict[str, Any]]) -> float:
    """The product over the rules of each rule's best match: 1 if an element matches its selectors (and has its
    ``text``, when given; with ``exact: false`` the fuzzy ratio of the text instead), 0 if none does."""
    root = _tree(result)
    if root is None:
        return 0.0
    total = 1.0
    for r in rules:
        found = [el for s in r["selectors"] for el in _select(root, compile_selector(s))]
        if not found:
            return 0.0
        if r.get("text") is None:
            continue
        if r.get("exact", True):
            total *= 1.0 if any(el.text == r["text"] for el in found) else 0.0
        else:
            total *= max(fuzz.ratio(r["text"], el.text or "") / 100 for el in found)
    return total


@metric("check_left_panel")
def check_left_panel(result: Any, expected: Any = None) -> float:
    """1.0 if LibreOffice Impress shows its slide pane: the tree has a ``document-frame`` named ``Slides View``."""
    root = _tree(result)
    if root is None:
        return 0.0
    return 1.0 if any(f.get("name") == "Slides View" for f in root.iter("document-frame")) else 0.0
