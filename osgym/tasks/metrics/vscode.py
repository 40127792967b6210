"""VS Code and project-file metrics after OSWorld's ``vscode.py``: settings, key bindings, extensions, archives.

>>> is_extension_installed("ms-python.python\\n", {"type": "contain", "expected": "ms-python.python"})
1.0
>>> compare_config(None, {"expected": "project"})
0.0
"""

from __future__ import annotations

import difflib
import io
import json
import zipfile
from html.parser import HTMLParser
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr
from pypdf import PdfReader
from pypdf.errors import PyPdfError

from osgym.tasks.metrics import metric
from osgym.tasks.metrics._files import too_big
from osgym.tasks.metrics.general import read_text

__all__ = ["check_html_background_image", "check_json_keybindings", "check_json_settings", "compare_config",
           "compare_result_files", "compare_zip_files", "is_extension_installed"]

PDF_SIMILARITY = 0.95  # how alike two PDFs' texts must be for compare_zip_files to count them equal


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SettingsRules(_Model):
    """``expected``: setting name to value; each must be in the file with that value."""

    expected: dict[str, Any]


def _json(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


@metric("check_json_settings", rules=SettingsRules, files=True)
def check_json_settings(result: str | None, rules: dict[str, Any]) -> float:
    """1.0 if the JSON file (a ``settings.json``, a ``.code-workspace``) holds every expected key with its value.

    The file is read as strict JSON, as OSWorld does: VS Code writes it so, and a comment makes it score 0.
    """
    data = _json(read_text(result))
    if not isinstance(data, dict):
        return 0.0
    return 1.0 if all(k in data and data[k] == v for k, v in rules["expected"].items()) else 0.0


class KeybindingRules(_Model):
    """``expected``: one binding (``key``, ``command``, ``when``...) that must be in the list."""

    expected: dict[str, Any]


@metric("check_json_keybindings", rules=KeybindingRules, files=True)
def check_json_keybindings(result: str | None, rules: dict[str, Any]) -> float:
    """1.0 if the ``keybindings.json`` list holds the expected binding (an equal object). VS Code starts the
    file with a ``//`` comment line, so a file that is not JSON is read again without its first line."""
    text = read_text(result)
    if text is None:
        return 0.0
    data = _json(text)
    if not isinstance(data, list):
        data = _json(text.split("\n", 1)[1] if "\n" in text else "")
    return 1.0 if isinstance(data, list) and rules["expected"] in data else 0.0


class ConfigRules(_Model):
    expected: StrictStr


@metric("compare_config", rules=ConfigRules, files=True)
def compare_config(result: str | None, rules: dict[str, Any]) -> float:
    """1.0 if the file's whole text is ``rules["expected"]``."""
    return 1.0 if read_text(result) == rules["expected"] else 0.0


class ExtensionRules(_Model):
    """``type``: ``contain`` or ``not_contain``; ``expected``: the text (an extension id) to look for."""

    type: Literal["contain", "not_contain"]
    expected: StrictStr


@metric("is_extension_installed", rules=ExtensionRules)
def is_extension_installed(result: Any, rules: dict[str, Any]) -> float:
    """1.0 if the command output (``code --list-extensions | grep ...``) contains ``expected`` (``contain``)
    or does not (``not_contain``); no output at all scores 0."""
    if not isinstance(result, str):
        return 0.0
    found = rules["expected"] in result
    return 1.0 if found == (rules["type"] == "contain") else 0.0


def _pdf_text(data: bytes) -> str | None:
    try:
        return "".join(page.extract_text() for page in PdfReader(io.BytesIO(data)).pages)
    except (PyPdfError, ValueError, OSError, KeyError, TypeError):
        return None


@metric("compare_zip_files", files=True)
def compare_zip_files(result: str | None, expected: str | None) -> float:
    """1.0 if two zip archives hold the same member names with the same bytes; PDF members count as equal
    when their texts are at least 95 % alike (a re-exported PDF differs in its metadata)."""
    if result is None or expected is None or too_big(result):
        return 0.0
    try:
        with zipfile.ZipFile(result) as got, zipfile.ZipFile(expected) as want:
            names = set(got.namelist())
            if names != set(want.namelist()):
                return 0.0
            for name in names:
                a, b = got.read(name), want.read(name)
                if name.lower().endswith(".pdf"):
                    ta, tb = _pdf_text(a), _pdf_text(b)
                    if ta is None or tb is None or difflib.SequenceMatcher(None, ta, tb).ratio() < PDF_SIMILARITY:
                        return 0.0
                elif a != b:
                    return 0.0
    except (OSError, zipfile.BadZipFile, ValueError):
        return 0.0  # the agent's file is no zip archive (or a member is corrupt)
    return 1.0


class BackgroundImageRules(BaseModel):
    """``value``: the image file name the page's CSS must set as ``background-image``. OSWorld's one task also
    writes ``"type:": "value"`` (sic), accepted and ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    value: StrictStr
    kind: Literal["value"] = Field("value", alias="type:")
    kind2: Literal["value"] = Field("value", alias="type")


class _StyleText(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.styles: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "style":
            self._in_style = True
            self.styles.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "style":
            self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.styles[-1] += data


@metric("check_html_background_image", rules=BackgroundImageRules, files=True)
def check_html_background_image(result: str | None, rules: dict[str, Any]) -> float:
    """1.0 if a ``<style>`` element of the HTML file says ``background-image: url('VALUE')``."""
    text = read_text(result)
    if text is None:
        return 0.0
    parser = _StyleText()
    parser.feed(text)
    parser.close()
    needle = f"background-image: url('{rules['value']}')"
    return 1.0 if any(needle in style for style in parser.styles) else 0.0


@metric("compare_result_files", files=True)
def compare_result_files(result: str | None, expected: str | None) -> float:
    """1.0 if the result file states the expected file's answer: the same text (ends trimmed), or, when the
    answer is a number, a text containing it or a number within 1e-4 of it."""
    a, b = read_text(result), read_text(expected)
    if a is None or b is None:
        return 0.0
    a, b = a.strip(), b.strip()
    try:
        want = float(b)
    except ValueError:
        return 1.0 if a == b else 0.0
    if b in a:
        return 1.0  # the answer inside a sentence
    try:
        return 1.0 if abs(float(a) - want) < 1e-4 else 0.0
    except ValueError:
        return 0.0
