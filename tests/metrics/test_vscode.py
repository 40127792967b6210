"""VS Code metrics (settings, key bindings, extensions, config text, zip archives, result files) on generated
inputs: a match scores 1, each kind of mismatch 0; OSWorld's functions agree except where the docs say."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from pypdf import PdfWriter
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

from osgym.errors import TaskLoadError
from osgym.tasks.spec import load_task
from tests.metrics.cases import Case, File, check, ids, parity
from tests.metrics.conftest import OSWorld

SETTINGS = File(json.dumps({"editor.wordWrapColumn": 50, "files.exclude": {"**/__pycache__": True},
                            "debug.focusEditorOnBreak": False}, indent=4))
JSON_SETTINGS = [
    Case("one-setting", SETTINGS, {"expected": {"editor.wordWrapColumn": 50}}, 1.0),
    Case("nested-and-false", SETTINGS, {"expected": {"files.exclude": {"**/__pycache__": True},
                                                     "debug.focusEditorOnBreak": False}}, 1.0),
    Case("nothing-expected", SETTINGS, {"expected": {}}, 1.0),
    Case("wrong-value", SETTINGS, {"expected": {"editor.wordWrapColumn": 80}}, 0.0),
    Case("absent", SETTINGS, {"expected": {"files.autoSave": "afterDelay"}}, 0.0),
    Case("jsonc-comment", File('// user settings\n{"editor.wordWrapColumn": 50}'),
         {"expected": {"editor.wordWrapColumn": 50}}, 0.0),
    Case("missing", None, {"expected": {}}, 0.0),
]


@pytest.mark.parametrize("case", JSON_SETTINGS, ids=ids(JSON_SETTINGS))
def test_check_json_settings(case: Case, tmp_path: Path) -> None:
    check("check_json_settings", case, tmp_path)


def test_check_json_settings_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "vscode", "check_json_settings", JSON_SETTINGS, tmp_path)


BINDING = {"key": "ctrl+j", "command": "workbench.action.focusActiveEditorGroup", "when": "terminalFocus"}
KEYBINDINGS = [
    Case("plain-json", File(json.dumps([BINDING])), {"expected": BINDING}, 1.0),
    Case("after-comment-line", File("// Place your key bindings in this file\n" + json.dumps([{"key": "x"}, BINDING])),
         {"expected": BINDING}, 1.0),
    Case("other-when", File(json.dumps([{**BINDING, "when": "editorFocus"}])), {"expected": BINDING}, 0.0),
    Case("not-a-list", File(json.dumps(BINDING)), {"expected": BINDING}, 0.0),
    Case("not-json", File("// only a comment\n"), {"expected": BINDING}, 0.0),
]


@pytest.mark.parametrize("case", KEYBINDINGS, ids=ids(KEYBINDINGS))
def test_check_json_keybindings(case: Case, tmp_path: Path) -> None:
    check("check_json_keybindings", case, tmp_path)


def test_check_json_keybindings_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "vscode", "check_json_keybindings", KEYBINDINGS, tmp_path)


COMPARE_CONFIG = [
    Case("same", File("project"), {"expected": "project"}, 1.0),
    Case("trailing-newline", File("project\n"), {"expected": "project"}, 0.0),
    Case("other", File("folder"), {"expected": "project"}, 0.0),
    Case("missing", None, {"expected": "project"}, 0.0),
]


@pytest.mark.parametrize("case", COMPARE_CONFIG, ids=ids(COMPARE_CONFIG))
def test_compare_config(case: Case, tmp_path: Path) -> None:
    check("compare_config", case, tmp_path)


def test_compare_config_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "vscode", "compare_config", COMPARE_CONFIG, tmp_path)


EXTENSIONS = [
    Case("contains", "ms-python.python\n", {"type": "contain", "expected": "ms-python.python"}, 1.0),
    Case("does-not-contain", "", {"type": "contain", "expected": "ms-python.python"}, 0.0),
    Case("not-contain-ok", "", {"type": "not_contain", "expected": "mattn.lisp"}, 1.0),
    Case("not-contain-found", "mattn.lisp\n", {"type": "not_contain", "expected": "mattn.lisp"}, 0.0),
    Case("no-output", None, {"type": "contain", "expected": "x"}, 0.0, osworld="TypeError"),
]


@pytest.mark.parametrize("case", EXTENSIONS, ids=ids(EXTENSIONS))
def test_is_extension_installed(case: Case, tmp_path: Path) -> None:
    check("is_extension_installed", case, tmp_path)


def test_is_extension_installed_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "vscode", "is_extension_installed", EXTENSIONS, tmp_path)


def _pdf(text: str, title: str) -> bytes:
    """A one-page PDF showing ``text``, with ``title`` in its metadata (so two exports differ in bytes)."""
    w = PdfWriter()
    page = w.add_blank_page(width=300, height=200)
    font = DictionaryObject({NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
                             NameObject("/BaseFont"): NameObject("/Helvetica")})
    page[NameObject("/Resources")] = DictionaryObject({NameObject("/Font"): DictionaryObject(
        {NameObject("/F1"): w._add_object(font)})})
    stream = DecodedStreamObject()
    stream.set_data(f"BT /F1 12 Tf 20 100 Td ({text}) Tj ET".encode())
    page[NameObject("/Contents")] = w._add_object(stream)
    w.add_metadata({"/Title": title})
    buf = io.BytesIO()
    w.write(buf)
    return buf.getvalue()


def _zip(members: dict[str, bytes]) -> File:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return File(buf.getvalue(), "a.zip")


REPORT = "Recruitment and retention of health professionals across Europe"
GOLD_ZIP = _zip({"notes.txt": b"hello", "report.pdf": _pdf(REPORT, "gold")})
ZIPS = [
    Case("same-bytes", GOLD_ZIP, GOLD_ZIP, 1.0),
    Case("pdf-reexported", _zip({"notes.txt": b"hello", "report.pdf": _pdf(REPORT, "agent")}), GOLD_ZIP, 1.0),
    Case("pdf-other-text", _zip({"notes.txt": b"hello", "report.pdf": _pdf("Something else", "agent")}),
         GOLD_ZIP, 0.0),
    Case("member-differs", _zip({"notes.txt": b"hellO", "report.pdf": _pdf(REPORT, "gold")}), GOLD_ZIP, 0.0),
    Case("member-missing", _zip({"notes.txt": b"hello"}), GOLD_ZIP, 0.0),
    Case("missing", None, GOLD_ZIP, 0.0),
    # OSWorld's zipfile raises on a file that is no archive
    Case("not-a-zip", File(b"PK but not", "a.zip"), GOLD_ZIP, 0.0, osworld="BadZipFile"),
]


@pytest.mark.parametrize("case", ZIPS, ids=ids(ZIPS))
def test_compare_zip_files(case: Case, tmp_path: Path) -> None:
    check("compare_zip_files", case, tmp_path)


def test_compare_zip_files_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "vscode", "compare_zip_files", ZIPS, tmp_path)


PAGE = "<html><head><style>body {{ background-image: url('{}'); }}</style></head><body>x</body></html>"
BACKGROUND = [
    Case("set", File(PAGE.format("anmi_sharper.png")), {"type:": "value", "value": "anmi_sharper.png"}, 1.0),
    Case("other-image", File(PAGE.format("anmi.png")), {"value": "anmi_sharper.png"}, 0.0),
    Case("only-in-body-text", File("<p>background-image: url('anmi_sharper.png')</p>"),
         {"value": "anmi_sharper.png"}, 0.0),
    Case("missing", None, {"value": "anmi_sharper.png"}, 0.0),
]


@pytest.mark.parametrize("case", BACKGROUND, ids=ids(BACKGROUND))
def test_check_html_background_image(case: Case, tmp_path: Path) -> None:
    check("check_html_background_image", case, tmp_path)


def test_check_html_background_image_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "vscode", "check_html_background_image", BACKGROUND, tmp_path)


RESULT_FILES = [
    Case("same-text", File("Paris\n"), File("Paris"), 1.0),
    Case("other-text", File("Lyon"), File("Paris"), 0.0),
    Case("number-in-sentence", File("The answer is 42.5 km"), File("42.5"), 1.0),
    Case("number-close", File("42.50001"), File("42.5"), 1.0),
    Case("number-far", File("42.6"), File("42.5"), 0.0),
    Case("number-vs-words", File("about forty"), File("42.5"), 0.0),
    Case("missing", None, File("42.5"), 0.0),
]


@pytest.mark.parametrize("case", RESULT_FILES, ids=ids(RESULT_FILES))
def test_compare_result_files(case: Case, tmp_path: Path) -> None:
    check("compare_result_files", case, tmp_path)


def test_compare_result_files_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "vscode", "compare_result_files", RESULT_FILES, tmp_path)


@pytest.mark.parametrize("func, rules, named", [
    ("check_json_settings", {"expect": {"a": 1}}, "rules.expected: Field required"),
    ("is_extension_installed", {"type": "contains", "expected": "x"}, "rules.type"),
    ("compare_config", {"expected": 1}, "rules.expected: Input should be a valid string"),
    ("check_html_background_image", {"value": "a.png", "type:": "url"}, "rules.type:"),
])
def test_bad_rules_fail_at_load(func: str, rules: dict[str, object], named: str) -> None:
    task = {"id": "t-vscode", "instruction": "x",
            "evaluator": {"func": func, "result": {"type": "vm_file", "path": "/tmp/x"},
                          "expected": {"type": "rule", "rules": rules}}}
    with pytest.raises(TaskLoadError, match=f"'{func}': {named}"):
        load_task(task)
