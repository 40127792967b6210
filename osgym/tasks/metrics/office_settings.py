"""LibreOffice's user settings, after OSWorld's metrics that read them: the settings file
``registrymodifications.xcu`` (an XML list of ``item`` elements keyed by ``oor:path``, each with ``prop``
elements keyed by ``oor:name``) sets Writer's default font, Impress's presenter console and the autosave
interval. These metrics read a settings file, not a document, so they live apart from :mod:`.docs` and
:mod:`.slides`.
"""

from __future__ import annotations

from typing import Any
from xml.etree import ElementTree

from pydantic import BaseModel, ConfigDict

from osgym.tasks.metrics import metric
from osgym.tasks.metrics.docs import FontRules

__all__ = ["check_auto_saving_time", "check_presenter_console_disable", "find_default_font"]

_OOR = "http://openoffice.org/2001/registry"


class _Rules(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _root(path: str | None) -> ElementTree.Element | None:
    """The settings file's root element; None if the file is missing or not XML."""
    if not path:
        return None
    try:
        return ElementTree.parse(path).getroot()
    except (OSError, ElementTree.ParseError):
        return None


def _items(root: ElementTree.Element, item_path: str) -> list[ElementTree.Element]:
    return list(root.iterfind(f".//item[@{{{_OOR}}}path='{item_path}']"))


def _settings(path: str | None, item_path: str, prop: str) -> list[str | None] | None:
    """The values the settings file gives ``prop`` under ``item_path``, in file order; None if the file is
    missing or not XML."""
    root = _root(path)
    if root is None:
        return None
    return [None if (v := p.find("value")) is None else v.text
            for item in _items(root, item_path) for p in item.iterfind(f"prop[@{{{_OOR}}}name='{prop}']")]


@metric("find_default_font", rules=FontRules, files=True)
def find_default_font(result: str | None, rules: dict[str, Any]) -> float:
    """1.0 if the settings set Writer's default font to ``rules["font_name"]`` (the last value written counts)."""
    root = _root(result)
    if root is None:
        return 0.0
    font = None
    for item in _items(root, "/org.openoffice.Office.Writer/DefaultFont"):
        for prop in item.iterfind(f".//prop[@{{{_OOR}}}name='Standard']"):
            for value in prop.iterfind("value"):
                font = value.text
    return 1.0 if font == rules["font_name"] else 0.0


@metric("check_presenter_console_disable", files=True)
def check_presenter_console_disable(result: str | None, expected: Any = None) -> float:
    """1.0 if the settings turn Impress's presenter console off (its first setting counts)."""
    values = _settings(result, "/org.openoffice.Office.Impress/Misc/Start", "EnablePresenterScreen")
    return 1.0 if values and (values[0] or "").lower() == "false" else 0.0


class AutosaveRules(_Rules):
    minutes: int


@metric("check_auto_saving_time", rules=AutosaveRules, files=True)
def check_auto_saving_time(result: str | None, rules: dict[str, Any]) -> float:
    """1.0 if the settings save documents automatically every ``rules["minutes"]`` minutes."""
    values = _settings(result, "/org.openoffice.Office.Common/Save/Document", "AutoSaveTimeIntervall")
    if not values or values[-1] is None:
        return 0.0
    try:
        return 1.0 if int(values[-1]) == rules["minutes"] else 0.0
    except ValueError:
        return 0.0
