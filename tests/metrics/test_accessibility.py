"""check_accessibility_tree on a generated accessibility tree: selectors that match score 1, each kind of
mismatch 0; OSWorld's function (cssselect and lxml) agrees except where docs/osworld-coverage.md says."""

from __future__ import annotations

from pathlib import Path

import pytest

from osgym.errors import TaskLoadError
from osgym.tasks.metrics.accessibility import NAMESPACES
from osgym.tasks.spec import load_task
from tests.metrics.cases import Case, check, ids, parity
from tests.metrics.conftest import OSWorld


def tree(ns: int = 0, pills: tuple[str, ...] = ("fox@someuniversity.edu", "iron@someuniversity.edu")) -> str:
    xmlns = " ".join(f'xmlns:{p}="{uris[ns]}"' for p, uris in NAMESPACES.items())
    pill = "".join(f'<section attr:class="address-pill"><label attr:class="pill-label" name="{p}">{p}</label>'
                   f'</section>' for p in pills)
    return (f'<desktop-frame {xmlns} name="main"><application name="Thunderbird">'
            f'<frame name="Write: report" st:active="true"><tool-bar attr:id="MsgHeadersToolbar">'
            f'<label name="From"/><label name="To"/>{pill}</tool-bar>'
            f'<page-tab-list attr:id="tabmail-tabs"><page-tab name="Inbox"/><page-tab name="About Profiles">'
            f'About Profiles</page-tab></page-tab-list></frame></application></desktop-frame>')


TO_FOX = ('tool-bar[attr|id=MsgHeadersToolbar] label[name=To]~[attr|class="address-pill"]>'
          'label[attr|class="pill-label"][name*="fox@someuniversity.edu"]')
ABOUT = 'application[name=Thunderbird] page-tab-list[attr|id="tabmail-tabs"]>page-tab[name="About Profiles"]'
CASES = [
    Case("task-selectors", tree(), [{"selectors": [TO_FOX]}, {"selectors": [ABOUT]}], 1.0),
    Case("pill-missing", tree(pills=("iron@someuniversity.edu",)), [{"selectors": [TO_FOX]}], 0.0),
    Case("tab-missing", tree().replace("About Profiles", "Settings"), [{"selectors": [ABOUT]}], 0.0),
    Case("any-of-selectors", tree(), [{"selectors": ["page-tab[name=Nope]", "page-tab[name=Inbox]"]}], 1.0),
    Case("text-exact", tree(), [{"selectors": ["page-tab[name^=About]"], "text": "About Profiles", "exact": True}],
         1.0),
    Case("text-exact-differs", tree(), [{"selectors": ["page-tab[name^=About]"], "text": "About", "exact": True}],
         0.0),
    Case("text-fuzzy", tree(), [{"selectors": ["page-tab[name^=About]"], "text": "About Profile", "exact": False}],
         0.962962962962963),  # rapidfuzz's ratio of the two texts
    Case("adjacent", tree(), [{"selectors": ["label[name=From] + label[name=To]"]}], 1.0),
    Case("adjacent-not", tree(), [{"selectors": ["label[name=From] + section"]}], 0.0),
    Case("child-not-descendant", tree(), [{"selectors": ["application > tool-bar"]}], 0.0),
    Case("descendant", tree(), [{"selectors": ['application tool-bar label[name$="university.edu"]']}], 1.0),
    Case("word-and-dash", tree(), [{"selectors": ['frame[name~=report][st|active="true"]',
                                                  "label[attr|class|=pill]"]}], 1.0),
    Case("not-equal", tree(), [{"selectors": ["page-tab[name!=Inbox]"], "text": "About Profiles", "exact": True}],
         1.0),
    # OSWorld's docstring says `exact` defaults to true, its code reads r["exact"]
    Case("text-without-exact", tree(), [{"selectors": ["page-tab"], "text": "About Profiles"}], 1.0,
         osworld="KeyError"),
    Case("any-element", tree(), [{"selectors": ["tool-bar > *[name=To]"]}], 1.0),
    Case("attribute-exists", tree(), [{"selectors": ["tool-bar[attr|id]"]}, {"selectors": ["tool-bar[name]"]}],
         0.0),
    # OSWorld (desktop-env 1.0.2) knows only its current namespace URIs; its older trees used uri:deskat:...
    Case("older-namespaces", tree(ns=1), [{"selectors": [TO_FOX]}], 1.0, osworld=0.0),
    Case("not-xml", "<desktop-frame>", [{"selectors": ["label"]}], 0.0, osworld="XMLSyntaxError"),
]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_check_accessibility_tree(case: Case, tmp_path: Path) -> None:
    check("check_accessibility_tree", case, tmp_path)


def test_check_accessibility_tree_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "general", "check_accessibility_tree", CASES, tmp_path)


@pytest.mark.parametrize("rules, named", [
    ([{"xpath": "//label"}], "rules.0.selectors: Field required"),
    ([{"selectors": ["label:first-child"]}], "rules.0.selectors: Value error, selector 'label:first-child': "
                                             "cannot read ':first-child'"),
    ([{"selectors": ["label[foo|id=x]"]}], "rules.0.selectors: Value error, unknown namespace prefix 'foo'"),
    ([{"selectors": ["> label"]}], "rules.0.selectors: Value error, selector '> label': a combinator without"),
    ({"selectors": ["label"]}, "rules: Input should be a valid list"),
])
def test_bad_rules_fail_at_load(rules: object, named: str) -> None:
    task = {"id": "t-a11y", "instruction": "x",
            "evaluator": {"func": "check_accessibility_tree", "result": {"type": "vm_file", "path": "/tmp/x"},
                          "expected": {"type": "rule", "rules": rules}}}
    with pytest.raises(TaskLoadError, match=f"'check_accessibility_tree': {named}"):
        load_task(task)


IMPRESS = ('<desktop-frame><application name="soffice"><frame name="deck.pptx - LibreOffice Impress">'
           '<panel><document-frame name="{}"/></panel></frame></application></desktop-frame>')
LEFT_PANEL = [
    Case("open", IMPRESS.format("Slides View"), None, 1.0),
    Case("closed", IMPRESS.format("Presentation"), None, 0.0),
    Case("not-xml", "<desktop-frame", None, 0.0, osworld="ParseError"),
]


@pytest.mark.parametrize("case", LEFT_PANEL, ids=ids(LEFT_PANEL))
def test_check_left_panel(case: Case, tmp_path: Path) -> None:
    check("check_left_panel", case, tmp_path)


def test_check_left_panel_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "slides", "check_left_panel", LEFT_PANEL, tmp_path)
