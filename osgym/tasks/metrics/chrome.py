"""Browser metrics after OSWorld's ``chrome.py``: tabs and URLs, bookmarks, settings and history, and the
text of PDFs the browser printed (``compare_pdfs``).

URLs compare as OSWorld's ``compare_urls`` does: scheme and host lower-cased, a bare ``www.`` dropped,
the public suffix dropped (``airbnb.com`` and ``airbnb.com.sg`` are one site), a lone ``/`` path
dropped. OSWorld finds the suffix with tldextract and the public-suffix list; osgym recognises the last
label, or the last two when a country code follows a common second level (``co.uk``, ``com.sg``), which
agrees on the hosts the task files name (see docs/osworld-coverage.md).

>>> same_url("https://www.airbnb.com/", "https://airbnb.com.sg")
True
>>> same_url("https://scholar.google.com/citations?user=x", "https://scholar.google.com/citations?user=y")
False
"""

from __future__ import annotations

import ipaddress
import itertools
import re
from typing import Any, Literal
from urllib.parse import urlparse, urlunparse

from pydantic import BaseModel, ConfigDict, StrictInt, StrictStr, field_validator, model_validator
from pypdf import PdfReader
from rapidfuzz import fuzz

from osgym.tasks.metrics import metric
from osgym.tasks.metrics.general import _regexes

__all__ = ["same_url"]

# Second-level labels under a country code that are themselves part of the public suffix (co.uk, com.au...).
_SECOND_LEVEL = {"ac", "co", "com", "edu", "gob", "go", "gouv", "gov", "ltd", "mil", "ne", "net", "nhs", "nic", "or",
                 "org", "plc", "sch"}


def _site(host: str) -> str:
    """The host without its public suffix, and without ``www`` when that is its only subdomain."""
    host = host.rsplit("@", 1)[-1]
    host = host[1:].split("]")[0] if host.startswith("[") else host.split(":")[0]
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        pass
    labels = [label for label in host.split(".") if label]
    if len(labels) < 2:
        return ".".join(labels)
    cut = 2 if len(labels) >= 3 and len(labels[-1]) == 2 and labels[-2] in _SECOND_LEVEL else 1
    domain, sub = labels[-cut - 1], labels[:-cut - 1]
    return domain if sub in ([], ["www"]) else ".".join([*sub, domain])


def _normal(url: str) -> str:
    if not re.match(r"^[a-zA-Z][a-zA-Z0-9+\-.]*://", url):
        url = f"http://{url}"
    p = urlparse(url)
    return urlunparse((p.scheme.lower(), _site(p.netloc.lower()), "" if p.path == "/" else p.path, p.params, p.query,
                       p.fragment))


def same_url(a: str | None, b: str | None) -> bool:
    """Whether two URLs name the same page once normalised (see the module docstring)."""
    if a is None or b is None:
        return a == b
    return _normal(a) == _normal(b)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _url_of(result: Any) -> str | None:
    if isinstance(result, str):
        return result
    if isinstance(result, dict) and isinstance(result.get("url"), str):
        return str(result["url"])
    return None


class ActiveTabRules(_Model):
    type: Literal["url"]
    url: StrictStr


@metric("is_expected_active_tab", rules=ActiveTabRules)
def is_expected_active_tab(result: Any, rules: dict[str, Any]) -> float:
    """1.0 if the active tab's URL (the getter's text, or its ``url``) is the expected page."""
    return 1.0 if result and same_url(rules["url"], _url_of(result)) else 0.0


class TabsRules(_Model):
    type: Literal["url"]
    urls: list[StrictStr]


@metric("is_expected_tabs", rules=TabsRules)
def is_expected_tabs(result: Any, rules: dict[str, Any]) -> float:
    """1.0 if the open tabs (a list of ``{"url": ...}``) are as many as the expected URLs and each expected URL
    is among them."""
    if not isinstance(result, list) or not result:
        return 0.0
    urls = [_url_of(t) for t in result]
    ok = len(urls) == len(rules["urls"]) and all(any(same_url(u, t) for t in urls) for u in rules["urls"])
    return 1.0 if ok else 0.0


class UrlPatternRules(BaseModel):
    """``expected``: regular expressions the URL must all contain. One OSWorld task also writes ``type`` and
    ``url`` here, which its function ignores, as osgym does."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    expected: list[StrictStr]
    type: StrictStr | None = None
    url: StrictStr | None = None

    _check = field_validator("expected")(_regexes)


@metric("is_expected_url_pattern_match", rules=UrlPatternRules)
def is_expected_url_pattern_match(result: Any, rules: dict[str, Any]) -> float:
    """1.0 if every ``expected`` pattern is found (``re.search``) in the URL (the getter's text, or its ``url``)."""
    url = _url_of(result) if result else None
    return 1.0 if url is not None and all(re.search(p, url) for p in rules["expected"]) else 0.0


class SearchQueryRules(_Model):
    expect: dict[Literal["pattern"], StrictStr]

    @field_validator("expect")
    @classmethod
    def _pattern(cls, v: dict[str, str]) -> dict[str, str]:
        if "pattern" not in v:
            raise ValueError("expected {'pattern': REGEX}")
        _regexes([v["pattern"]])
        return v


@metric("is_expected_search_query", rules=SearchQueryRules)
def is_expected_search_query(result: Any, rules: dict[str, Any]) -> float:
    """1.0 if the active tab's URL contains ``expect.pattern`` (``re.search``)."""
    url = _url_of(result) if result else None
    return 1.0 if url is not None and re.search(rules["expect"]["pattern"], url) else 0.0


class BookmarkRules(_Model):
    """``type``: ``bookmark_bar_folders_names`` (``names``: the bar's folders, as a set),
    ``bookmark_bar_websites_urls`` (``urls``: the bar's links, as a set) or ``liked_authors_websites_urls``
    (``urls``: for each author, one URL or a list of acceptable ones, all in the bar's "Liked Authors" folder)."""

    type: Literal["bookmark_bar_folders_names", "bookmark_bar_websites_urls", "liked_authors_websites_urls"]
    names: list[StrictStr] | None = None
    urls: list[StrictStr | list[StrictStr]] | None = None

    @model_validator(mode="after")
    def _given(self) -> BookmarkRules:
        need = "names" if self.type == "bookmark_bar_folders_names" else "urls"
        if getattr(self, need) is None:
            raise ValueError(f"type {self.type} needs {need}")
        return self


def _children(node: Any, kind: str) -> list[dict[str, Any]]:
    kids = node.get("children", []) if isinstance(node, dict) else []
    return [k for k in kids if isinstance(k, dict) and k.get("type") == kind]


@metric("is_expected_bookmarks", rules=BookmarkRules)
def is_expected_bookmarks(result: Any, rules: dict[str, Any]) -> float:
    """1.0 if Chrome's bookmarks (the ``roots`` object of its ``Bookmarks`` file) hold what the rule names."""
    if not isinstance(result, dict) or not result:
        return 0.0
    bar = result.get("bookmark_bar", {})
    if rules["type"] == "bookmark_bar_folders_names":
        return 1.0 if {b.get("name") for b in _children(bar, "folder")} == set(rules["names"]) else 0.0
    if rules["type"] == "bookmark_bar_websites_urls":
        return 1.0 if {b.get("url") for b in _children(bar, "url")} == set(rules["urls"]) else 0.0
    folder = next((b for b in _children(bar, "folder") if b.get("name") == "Liked Authors"), None)
    if folder is None:
        return 0.0
    have = {b.get("url") for b in _children(folder, "url")}
    choices = [[u] if isinstance(u, str) else u for u in rules["urls"]]
    return 1.0 if any(set(pick) == have for pick in itertools.product(*choices)) else 0.0


class ExpectedNamesRules(_Model):
    expected: list[StrictStr]


@metric("is_expected_installed_extensions", rules=ExpectedNamesRules)
def is_expected_installed_extensions(result: Any, rules: dict[str, Any]) -> float:
    """1.0 if every expected extension name is among the installed ones."""
    if not isinstance(result, list) or not result:
        return 0.0
    return 1.0 if set(rules["expected"]) <= set(result) else 0.0


class ExperimentsRules(_Model):
    type: Literal["names"]
    names: list[StrictStr]


@metric("check_enabled_experiments", rules=ExperimentsRules)
def check_enabled_experiments(result: Any, rules: dict[str, Any]) -> float:
    """1.0 if the enabled ``chrome://flags`` experiments (``name@choice``) are exactly ``names``, in order."""
    if not isinstance(result, list):
        return 0.0
    return 1.0 if [str(e).split("@")[0] for e in result] == rules["names"] else 0.0


class FontSizeRules(_Model):
    """``type``: ``value`` (the default font size must be ``value``) or ``range`` (strictly between ``min`` and
    ``max``)."""

    type: Literal["value", "range"]
    value: StrictInt | None = None
    min: StrictInt | None = None
    max: StrictInt | None = None

    @model_validator(mode="after")
    def _given(self) -> FontSizeRules:
        need = ["value"] if self.type == "value" else ["min", "max"]
        if any(getattr(self, n) is None for n in need):
            raise ValueError(f"type {self.type} needs {' and '.join(need)}")
        return self


@metric("check_font_size", rules=FontSizeRules)
def check_font_size(result: Any, rules: dict[str, Any]) -> float:
    """1.0 if Chrome's default font size (``{"default_font_size": N}``) is the value or in the range given."""
    size = result.get("default_font_size") if isinstance(result, dict) else None
    if not isinstance(size, int | float):
        return 0.0
    if rules["type"] == "value":
        return 1.0 if size == rules["value"] else 0.0
    return 1.0 if rules["min"] < size < rules["max"] else 0.0


class CookieRules(_Model):
    type: Literal["domains"]
    domains: list[StrictStr]


@metric("is_cookie_deleted", rules=CookieRules)
def is_cookie_deleted(result: Any, rules: dict[str, Any]) -> float:
    """1.0 if no cookie row (its second column, the host) belongs to one of the ``domains``; 0 if the getter
    found no cookie database to check."""
    if not isinstance(result, list):
        return 0.0
    hosts = [row[1] for row in result if isinstance(row, list | tuple) and len(row) > 1]
    return 0.0 if any(same_url(d, str(h)) for d in rules["domains"] for h in hosts) else 1.0


class HistoryRules(_Model):
    type: Literal["keywords"]
    keywords: list[StrictStr]


@metric("check_history_deleted", rules=HistoryRules)
def check_history_deleted(result: Any, rules: dict[str, Any]) -> float:
    """1.0 if no history row's URL (its first column) contains one of the ``keywords``; 0 if the getter found no
    history to check."""
    if not isinstance(result, list):
        return 0.0
    urls = [str(row[0]) for row in result if isinstance(row, list | tuple) and row]
    return 0.0 if any(k in u for k in rules["keywords"] for u in urls) else 1.0


class ShortcutRules(_Model):
    """``type``: ``name`` or ``exec``, the desktop entry key that must hold the given value."""

    type: Literal["name", "exec"]
    name: StrictStr | None = None
    exec: StrictStr | None = None

    @model_validator(mode="after")
    def _given(self) -> ShortcutRules:
        if getattr(self, self.type) is None:
            raise ValueError(f"type {self.type} needs {self.type}")
        return self


@metric("is_shortcut_on_desktop", rules=ShortcutRules)
def is_shortcut_on_desktop(result: Any, rules: dict[str, Any]) -> float:
    """1.0 if a desktop entry (the getter maps each ``.desktop`` file's path to its text) has the line
    ``Name=<name>`` or ``Exec=<exec>``."""
    if not isinstance(result, dict):
        return 0.0
    line = f"{rules['type'].capitalize()}={rules[rules['type']]}\n"
    return 1.0 if any(line in str(text) for text in result.values()) else 0.0


class CartRules(_Model):
    items: list[StrictStr]


@metric("is_added_to_steam_cart", rules=CartRules)
def is_added_to_steam_cart(result: Any, rules: dict[str, Any]) -> float:
    """1.0 if the cart page's text (``{"content": ...}``) names every item."""
    content = result.get("content") if isinstance(result, dict) else None
    return 1.0 if isinstance(content, str) and all(i in content for i in rules["items"]) else 0.0


def _pdf_text(path: str) -> str:
    return "".join(page.extract_text() + "\n" for page in PdfReader(path).pages).strip()


@metric("compare_pdfs", files=True)
def compare_pdfs(result: str | list[str | None] | None, expected: str | list[str | None] | None) -> float:
    """The mean, over the expected PDFs, of how alike each is to its result PDF's text (rapidfuzz's ratio); a
    missing or unreadable PDF counts 0."""
    got = result if isinstance(result, list) else [result]
    want = expected if isinstance(expected, list) else [expected]
    if not want:
        return 0.0
    total = 0.0
    for g, w in zip(got, want, strict=False):
        if g is None or w is None:
            continue
        try:
            total += fuzz.ratio(_pdf_text(g), _pdf_text(w)) / 100
        except Exception:  # pypdf raises many kinds of error on a malformed file: it scores 0, as in OSWorld
            continue
    return total / len(want)
