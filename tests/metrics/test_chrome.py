"""Browser metrics on generated tab lists, bookmarks, settings, history rows and PDFs: a match scores 1, each kind
of mismatch 0; OSWorld's functions agree except where docs/osworld-coverage.md says."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from pypdf import PdfWriter
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

from osgym.errors import TaskLoadError
from osgym.tasks.metrics.chrome import same_url
from osgym.tasks.spec import load_task
from tests.metrics.cases import Case, File, check, ids, parity
from tests.metrics.conftest import OSWorld

# URL pairs from OSWorld's task files and around them: osgym's suffix rule and tldextract's list agree
URL_PAIRS = [
    ("https://www.airbnb.com", "https://airbnb.com.sg/"), ("https://www.drugs.com/npc/", "drugs.com/npc/"),
    ("https://www.drugs.com/npc/", "https://www.drugs.com/npp/"), ("chrome://password-manager/passwords",
                                                                   "chrome://password-manager/passwords"),
    ("https://www.bbc.co.uk/news", "https://bbc.com/news"), ("https://jalammar.github.io/x", "https://github.io/x"),
    ("https://scholar.google.com/", "https://www.google.com/"), ("http://localhost:8080/a", "http://localhost/a"),
    ("http://127.0.0.1:5000/", "http://127.0.0.1"), ("https://user:pw@www.x.com:81/p", "http://x.com/p"),
    ("file:///home/user/Desktop/a.html", "file:///home/user/Desktop/a.html"),
    ("https://www.apple.com/iphone/compare/?modelList=a,b", "https://apple.com/iphone/compare?modelList=a,b"),
    ("https://discussions.flightaware.com/t/the-banter-thread/4412", "https://flightaware.com/t/the-banter-thread/4412"),
    ("HTTPS://WWW.Example.COM/Path", "https://example.com/Path"), ("https://www.amazon.co.jp/", "https://amazon.com"),
]

ACTIVE = [Case(f"{i}", {"url": a}, {"type": "url", "url": b}, 1.0 if same_url(a, b) else 0.0)
          for i, (a, b) in enumerate(URL_PAIRS)] + [
    Case("text-result", "https://www.nfl.com/scores/2019/POST4", {"type": "url",
                                                                  "url": "https://www.nfl.com/scores/2019/POST4"}, 1.0),
    Case("no-tab", None, {"type": "url", "url": "https://www.nfl.com/"}, 0.0),
]


def test_same_url_on_task_file_urls() -> None:
    assert same_url("https://www.airbnb.com", "https://airbnb.com.sg/")
    assert same_url("https://www.bbc.co.uk/news", "https://bbc.com/news")
    assert not same_url("https://www.drugs.com/npc/", "https://www.drugs.com/npp/")
    assert not same_url("https://scholar.google.com/", "https://www.google.com/")
    assert not same_url("https://www.apple.com/iphone/compare/?modelList=a,b", "https://apple.com/iphone/compare/")


@pytest.mark.parametrize("case", ACTIVE, ids=ids(ACTIVE))
def test_is_expected_active_tab(case: Case, tmp_path: Path) -> None:
    check("is_expected_active_tab", case, tmp_path)


def test_is_expected_active_tab_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "chrome", "is_expected_active_tab", ACTIVE, tmp_path)


TABS = [
    Case("same-any-order", [{"url": "https://airbnb.com/"}, {"url": "https://www.lonelyplanet.com/"}],
         {"type": "url", "urls": ["https://www.lonelyplanet.com", "https://www.airbnb.com"]}, 1.0),
    Case("one-missing", [{"url": "https://airbnb.com/"}],
         {"type": "url", "urls": ["https://www.lonelyplanet.com", "https://www.airbnb.com"]}, 0.0),
    Case("one-extra", [{"url": "https://airbnb.com/"}, {"url": "https://github.com/"}],
         {"type": "url", "urls": ["https://www.airbnb.com"]}, 0.0),
    Case("other-page", [{"url": "https://docs.python.org/2/"}, {"url": "https://github.com"}],
         {"type": "url", "urls": ["https://github.com", "https://docs.python.org/3/"]}, 0.0),
    Case("no-tabs", [], {"type": "url", "urls": ["https://github.com"]}, 0.0),
]


@pytest.mark.parametrize("case", TABS, ids=ids(TABS))
def test_is_expected_tabs(case: Case, tmp_path: Path) -> None:
    check("is_expected_tabs", case, tmp_path)


def test_is_expected_tabs_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "chrome", "is_expected_tabs", TABS, tmp_path)


PATTERN = [
    Case("all-found", "https://www.target.com/s?AgeAppropriate:Kids&search=spider-man%20toys&S=4",
         {"expected": ["AgeAppropriate:Kids", "search=spider[-%20]?man%20toys", "S=4"]}, 1.0),
    Case("dict-result", {"url": "https://www.rei.com/c/women-jerseys/"}, {"expected": ["/women-jerseys/"]}, 1.0),
    Case("one-missing", "https://www.target.com/s?search=spider", {"expected": ["search=spider", "S=4"]}, 0.0),
    Case("extra-keys", "https://scholar.google.com/citations?user=qRAQ5BsAAAAJ&hl=en",
         {"type": "url", "url": "?hl=en&", "expected": ["https://scholar.google.com/citations", "user=qRAQ5BsAAAAJ"]},
         1.0),
    Case("no-url", None, {"expected": ["x"]}, 0.0),
]


@pytest.mark.parametrize("case", PATTERN, ids=ids(PATTERN))
def test_is_expected_url_pattern_match(case: Case, tmp_path: Path) -> None:
    check("is_expected_url_pattern_match", case, tmp_path)


def test_is_expected_url_pattern_match_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "chrome", "is_expected_url_pattern_match", PATTERN, tmp_path)


SEARCH = [
    Case("found", {"url": "https://www.google.com/search?q=Nereida&oq=x"},
         {"expect": {"pattern": r"www\.google\.com.*?/search\?q=Nereida&"}}, 1.0),
    Case("other-query", {"url": "https://www.google.com/search?q=Nereid&oq=x"},
         {"expect": {"pattern": r"www\.google\.com.*?/search\?q=Nereida&"}}, 0.0),
    Case("no-tab", None, {"expect": {"pattern": "x"}}, 0.0),
]


@pytest.mark.parametrize("case", SEARCH, ids=ids(SEARCH))
def test_is_expected_search_query(case: Case, tmp_path: Path) -> None:
    check("is_expected_search_query", case, tmp_path)


def test_is_expected_search_query_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "chrome", "is_expected_search_query", SEARCH, tmp_path)


def _bar(*children: dict[str, object]) -> dict[str, object]:
    return {"bookmark_bar": {"children": list(children)}, "other": {"children": []}}


def _folder(name: str, *urls: str) -> dict[str, object]:
    return {"type": "folder", "name": name, "children": [{"type": "url", "name": u, "url": u} for u in urls]}


LINK = {"type": "url", "name": "t", "url": "https://jalammar.github.io/illustrated-transformer/"}
AUTHORS = {"type": "liked_authors_websites_urls", "names": ["Liked Authors"],
           "urls": [["https://jimfan.me/", "https://research.nvidia.com/person/linxi-jim-fan"], "https://x.org/"]}
BOOKMARKS = [
    Case("folder", _bar(_folder("Favorites"), LINK), {"type": "bookmark_bar_folders_names", "names": ["Favorites"]},
         1.0),
    Case("folder-missing", _bar(LINK), {"type": "bookmark_bar_folders_names", "names": ["Favorites"]}, 0.0),
    Case("link", _bar(_folder("Favorites"), LINK), {"type": "bookmark_bar_websites_urls",
                                                    "urls": ["https://jalammar.github.io/illustrated-transformer/"]},
         1.0),
    Case("link-extra", _bar(LINK, {**LINK, "url": "https://x.org/"}), {"type": "bookmark_bar_websites_urls",
                                                                      "urls": [LINK["url"]]}, 0.0),
    Case("authors", _bar(_folder("Liked Authors", "https://x.org/", "https://research.nvidia.com/person/linxi-jim-fan")),
         AUTHORS, 1.0),
    Case("authors-one-missing", _bar(_folder("Liked Authors", "https://x.org/")), AUTHORS, 0.0),
    Case("authors-no-folder", _bar(_folder("Authors", "https://x.org/", "https://jimfan.me/")), AUTHORS, 0.0),
    Case("none", None, AUTHORS, 0.0),
]


@pytest.mark.parametrize("case", BOOKMARKS, ids=ids(BOOKMARKS))
def test_is_expected_bookmarks(case: Case, tmp_path: Path) -> None:
    check("is_expected_bookmarks", case, tmp_path)


def test_is_expected_bookmarks_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "chrome", "is_expected_bookmarks", BOOKMARKS, tmp_path)


EXTENSIONS = [
    Case("all", ["Momentum", "Google Translate", "Other"], {"expected": ["Google Translate", "Momentum"]}, 1.0),
    Case("one-missing", ["Momentum"], {"expected": ["Google Translate", "Momentum"]}, 0.0),
    Case("none", [], {"expected": ["Momentum"]}, 0.0),
]


@pytest.mark.parametrize("case", EXTENSIONS, ids=ids(EXTENSIONS))
def test_is_expected_installed_extensions(case: Case, tmp_path: Path) -> None:
    check("is_expected_installed_extensions", case, tmp_path)


def test_is_expected_installed_extensions_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "chrome", "is_expected_installed_extensions", EXTENSIONS, tmp_path)


NAMES = {"type": "names", "names": ["chrome-refresh-2023", "chrome-webui-refresh-2023"]}
EXPERIMENTS = [
    Case("same", ["chrome-refresh-2023@1", "chrome-webui-refresh-2023@2"], NAMES, 1.0),
    Case("one-missing", ["chrome-refresh-2023@1"], NAMES, 0.0),
    Case("other-order", ["chrome-webui-refresh-2023@2", "chrome-refresh-2023@1"], NAMES, 0.0),
]


@pytest.mark.parametrize("case", EXPERIMENTS, ids=ids(EXPERIMENTS))
def test_check_enabled_experiments(case: Case, tmp_path: Path) -> None:
    check("check_enabled_experiments", case, tmp_path)


def test_check_enabled_experiments_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "chrome", "check_enabled_experiments", EXPERIMENTS, tmp_path)


FONT = [
    Case("in-range", {"default_font_size": 20}, {"type": "range", "min": 16, "max": 99999}, 1.0),
    Case("at-min", {"default_font_size": 16}, {"type": "range", "min": 16, "max": 99999}, 0.0),
    Case("value", {"default_font_size": 16}, {"type": "value", "value": 16}, 1.0),
    Case("other-value", {"default_font_size": 14}, {"type": "value", "value": 16}, 0.0),
]


@pytest.mark.parametrize("case", FONT, ids=ids(FONT))
def test_check_font_size(case: Case, tmp_path: Path) -> None:
    check("check_font_size", case, tmp_path)


def test_check_font_size_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "chrome", "check_font_size", FONT, tmp_path)


COOKIES = [
    Case("deleted", [[1, ".google.com", "NID"]], {"type": "domains", "domains": [".amazon.com"]}, 1.0),
    Case("still-there", [[1, ".google.com", "NID"], [2, ".amazon.com", "session-id"]],
         {"type": "domains", "domains": [".amazon.com"]}, 0.0),
    Case("subdomain-of-it", [[2, "www.amazon.com", "x"]], {"type": "domains", "domains": [".amazon.com"]}, 0.0),
    Case("no-database", None, {"type": "domains", "domains": [".amazon.com"]}, 0.0, osworld="TypeError"),
]


@pytest.mark.parametrize("case", COOKIES, ids=ids(COOKIES))
def test_is_cookie_deleted(case: Case, tmp_path: Path) -> None:
    check("is_cookie_deleted", case, tmp_path)


def test_is_cookie_deleted_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "chrome", "is_cookie_deleted", COOKIES, tmp_path)


HISTORY = [
    Case("deleted", [["https://github.com/", "GitHub"]], {"type": "keywords", "keywords": ["youtube"]}, 1.0),
    Case("still-there", [["https://www.youtube.com/watch?v=1", "x"]], {"type": "keywords", "keywords": ["youtube"]},
         0.0),
    Case("no-history", None, {"type": "keywords", "keywords": ["youtube"]}, 0.0, osworld="TypeError"),
]


@pytest.mark.parametrize("case", HISTORY, ids=ids(HISTORY))
def test_check_history_deleted(case: Case, tmp_path: Path) -> None:
    check("check_history_deleted", case, tmp_path)


def test_check_history_deleted_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "chrome", "check_history_deleted", HISTORY, tmp_path)


ENTRY = "[Desktop Entry]\nVersion=1.0\nName=Play Puzzle Game 2048\nExec=/opt/google/chrome/chrome --app-id=x\n"
SHORTCUTS = [
    Case("name", {"/home/user/Desktop/a.desktop": ENTRY}, {"type": "name", "name": "Play Puzzle Game 2048"}, 1.0),
    Case("exec", {"/home/user/Desktop/a.desktop": ENTRY}, {"type": "exec",
                                                          "exec": "/opt/google/chrome/chrome --app-id=x"}, 1.0),
    Case("name-prefix-only", {"/home/user/Desktop/a.desktop": ENTRY}, {"type": "name", "name": "Play Puzzle"}, 0.0),
    Case("none", {}, {"type": "name", "name": "Play Puzzle Game 2048"}, 0.0),
]


@pytest.mark.parametrize("case", SHORTCUTS, ids=ids(SHORTCUTS))
def test_is_shortcut_on_desktop(case: Case, tmp_path: Path) -> None:
    check("is_shortcut_on_desktop", case, tmp_path)


def test_is_shortcut_on_desktop_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "chrome", "is_shortcut_on_desktop", SHORTCUTS, tmp_path)


CART = [
    Case("in-cart", {"content": "Your cart: The Dota 2 Official Soundtrack $9.99"},
         {"items": ["The Dota 2 Official Soundtrack"]}, 1.0),
    Case("not-in-cart", {"content": "Your cart is empty"}, {"items": ["The Dota 2 Official Soundtrack"]}, 0.0),
]


@pytest.mark.parametrize("case", CART, ids=ids(CART))
def test_is_added_to_steam_cart(case: Case, tmp_path: Path) -> None:
    check("is_added_to_steam_cart", case, tmp_path)


def test_is_added_to_steam_cart_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "chrome", "is_added_to_steam_cart", CART, tmp_path)


def pdf(*pages: str, name: str = "a.pdf") -> File:
    w = PdfWriter()
    for text in pages:
        page = w.add_blank_page(width=400, height=200)
        font = DictionaryObject({NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"):
                                 NameObject("/Type1"), NameObject("/BaseFont"): NameObject("/Helvetica")})
        page[NameObject("/Resources")] = DictionaryObject({NameObject("/Font"): DictionaryObject(
            {NameObject("/F1"): w._add_object(font)})})
        stream = DecodedStreamObject()
        stream.set_data(f"BT /F1 12 Tf 20 100 Td ({text}) Tj ET".encode())
        page[NameObject("/Contents")] = w._add_object(stream)
    buf = io.BytesIO()
    w.write(buf)
    return File(buf.getvalue(), name)


AGENDA = pdf("Meeting Agenda", "1. Budget 2. Hiring")
PDFS = [
    Case("same", AGENDA, AGENDA, 1.0),
    Case("one-word-differs", pdf("Meeting Agenda", "1. Budget 2. Firing"), AGENDA, 0.0),
    Case("other", pdf("Invoice 243729"), AGENDA, 0.0),
    Case("lists", [AGENDA, pdf("Invoice 243729")], [AGENDA, pdf("Invoice 243729")], 1.0),
    Case("list-one-missing", [AGENDA, None], [AGENDA, pdf("Invoice 243729")], 0.5),
    Case("not-a-pdf", File(b"%PDF-1.4 broken", "b.pdf"), AGENDA, 0.0),
]


@pytest.mark.parametrize("case", [PDFS[0], PDFS[3], PDFS[4], PDFS[5]], ids=ids([PDFS[0], PDFS[3], PDFS[4], PDFS[5]]))
def test_compare_pdfs(case: Case, tmp_path: Path) -> None:
    check("compare_pdfs", case, tmp_path)


def test_compare_pdfs_orders_by_similarity(tmp_path: Path) -> None:
    from tests.metrics.cases import ours

    same, close, other = (ours("compare_pdfs", c, tmp_path) for c in PDFS[:3])
    assert same == 1.0 > close > 0.9 > 0.5 > other


def test_compare_pdfs_parity(osworld: OSWorld, tmp_path: Path) -> None:
    # OSWorld reads the text with PyMuPDF, osgym with pypdf: on these PDFs they read the same text
    parity(osworld, "chrome", "compare_pdfs", PDFS, tmp_path)


@pytest.mark.parametrize("func, rules, named", [
    ("is_expected_active_tab", {"type": "title", "url": "x"}, "rules.type"),
    ("is_expected_url_pattern_match", {"expected": ["(x"]}, "rules.expected: Value error, not a regular expression"),
    ("is_expected_bookmarks", {"type": "bookmark_bar_websites_urls"}, "rules: Value error, type "
                                                                      "bookmark_bar_websites_urls needs urls"),
    ("check_font_size", {"type": "range", "min": 16}, "rules: Value error, type range needs min and max"),
    ("is_shortcut_on_desktop", {"type": "url", "url": "x"}, "rules.type"),
    ("is_expected_search_query", {"expect": {"regex": "x"}}, "rules.expect.regex"),
])
def test_bad_rules_fail_at_load(func: str, rules: dict[str, object], named: str) -> None:
    task = {"id": "t-chrome", "instruction": "x",
            "evaluator": {"func": func, "result": {"type": "vm_file", "path": "/tmp/x"},
                          "expected": {"type": "rule", "rules": rules}}}
    with pytest.raises(TaskLoadError, match=f"'{func}': {named}"):
        load_task(task)
