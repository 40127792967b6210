"""Getters that need the apps tier: Chromium's profile files and its tabs through DevTools (inside the
replica), the terminal's text, the wallpaper, VLC, GIMP, the default video player, and the command
palette sequence of vscode_config. Where OSWorld's getter can run against the replica (it reads files
through ``env.controller``), it runs too and both values must agree.

The profile tests come first: they write the profile files while Chromium is not running yet.
"""

from __future__ import annotations

import io
import json
import sqlite3
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import pytest
from PIL import Image

from osgym.replicas.actions import Press, Typing
from osgym.replicas.client import Replica
from osgym.replicas.pool import limits_for
from osgym.tasks import getters
from osgym.tasks.getters import Context
from osgym.tasks.setup import run_step
from osgym.tasks.spec import SetupStep
from tests.apps.test_apps_open import SCREEN
from tests.conftest import held_replica
from tests.getters.conftest import run_osworld_getters
from tests.metrics.conftest import OSWorld, osworld  # noqa: F401  (a fixture)

pytestmark = [pytest.mark.docker, pytest.mark.slow]

SITE = "/home/user/osgym-site"
PORT = 8765
PROFILE = "/home/user/.config/chromium"
OSWORLD_PROFILE = "/home/user/.config/google-chrome"  # where OSWorld's getters read the same files


@pytest.fixture(scope="module")
def apps(image: str, docker_client: docker.DockerClient) -> Iterator[Replica]:
    with held_replica(image, docker_client, "getters-apps", screen=SCREEN, limits=limits_for("apps")) as replica:
        yield replica


@pytest.fixture
def ctx(apps: Replica) -> Iterator[Context]:
    c = Context(apps)
    try:
        yield c
    finally:
        c.close()


def _fetch(ctx: Context, name: str, **options: Any) -> Any:
    getters.check(name, options, where="evaluator.result")
    return getters.fetch(ctx, name, options, "task t: evaluator.result")


def _both(replica: Replica, rel: str, data: bytes) -> None:
    """Write a profile file where Chromium keeps it and where OSWorld's getters look for Chrome's."""
    for root in (PROFILE, OSWORLD_PROFILE):
        replica.write_file(f"{root}/{rel}", data)


PREFS = {"default_search_provider_data": {"template_url_data": {"short_name": "DuckDuckGo"}},
         "profile": {"name": "Osgym Tester", "default_content_setting_values": {"cookies": 4}},
         "webkit": {"webprefs": {"default_font_size": 20, "minimum_font_size": 9}},
         "enable_do_not_track": True, "safebrowsing": {"enhanced": True},
         "session": {"restore_on_startup": 5},
         "extensions": {"settings": {"abc": {"path": "/home/user/ext/hello", "manifest": {"name": "Hello Ext"}},
                                     "def": {"path": "defghi/1.0", "manifest": {"name": "Other"}}}}}
LOCAL_STATE = {"browser": {"enabled_labs_experiments": ["smooth-scrolling@2"]}, "intl": {"app_locale": "fr"}}
BOOKMARKS = {"roots": {"bookmark_bar": {"children": [{"type": "url", "name": "Docs", "url": "https://docs.example/"}],
                                        "name": "Bookmarks bar", "type": "folder"},
                       "other": {"children": [], "name": "Other", "type": "folder"}}, "version": 1}

PROFILE_GETTERS = [  # osgym's name, OSWorld's function (chrome.py), the value both must give
    ("default_search_engine", "get_default_search_engine", "DuckDuckGo"),
    ("profile_name", "get_profile_name", "Osgym Tester"),
    ("chrome_language", "get_chrome_language", "fr"),
    ("chrome_font_size", "get_chrome_font_size", {"default_font_size": 20, "minimum_font_size": 9}),
    ("enabled_experiments", "get_enabled_experiments", ["smooth-scrolling@2"]),
    ("enable_do_not_track", "get_enable_do_not_track", "true"),
    ("enable_enhanced_safety_browsing", "get_enable_enhanced_safety_browsing", "true"),
    ("new_startup_page", "get_new_startup_page", "true"),
    ("data_delete_automacally", "get_data_delete_automacally", "true"),
    ("find_unpacked_extension_path", "get_find_unpacked_extension_path", ["/home/user/ext/hello", "defghi/1.0"]),
    ("find_installed_extension_name", "get_find_installed_extension_name", ["Hello Ext", "Other"]),
    ("bookmarks", "get_bookmarks", BOOKMARKS["roots"]),
]


@pytest.fixture(scope="module")
def profile(apps: Replica) -> Replica:
    assert apps.execute(["pgrep", "-u", "user", "-x", "chromium|chrome"]).returncode != 0, "the browser would rewrite"
    _both(apps, "Default/Preferences", json.dumps(PREFS).encode())
    _both(apps, "Local State", json.dumps(LOCAL_STATE).encode())
    _both(apps, "Default/Bookmarks", json.dumps(BOOKMARKS).encode())
    return apps


def _profile_getter(profile: Replica, osworld: OSWorld, name: str) -> None:  # noqa: F811
    osgym_name, theirs, expected = next(g for g in PROFILE_GETTERS if g[0] == name)
    c = Context(profile)
    try:
        ours = _fetch(c, osgym_name)
    finally:
        c.close()
    assert ours == expected
    assert run_osworld_getters(osworld, profile, [("chrome", theirs, {})]) == [expected]


def test_default_search_engine(profile: Replica, osworld: OSWorld) -> None:  # noqa: F811
    _profile_getter(profile, osworld, "default_search_engine")


def test_profile_name(profile: Replica, osworld: OSWorld) -> None:  # noqa: F811
    _profile_getter(profile, osworld, "profile_name")


def test_chrome_language(profile: Replica, osworld: OSWorld) -> None:  # noqa: F811
    _profile_getter(profile, osworld, "chrome_language")


def test_chrome_font_size(profile: Replica, osworld: OSWorld) -> None:  # noqa: F811
    _profile_getter(profile, osworld, "chrome_font_size")


def test_enabled_experiments(profile: Replica, osworld: OSWorld) -> None:  # noqa: F811
    _profile_getter(profile, osworld, "enabled_experiments")


def test_enable_do_not_track(profile: Replica, osworld: OSWorld) -> None:  # noqa: F811
    _profile_getter(profile, osworld, "enable_do_not_track")


def test_enable_enhanced_safety_browsing(profile: Replica, osworld: OSWorld) -> None:  # noqa: F811
    _profile_getter(profile, osworld, "enable_enhanced_safety_browsing")


def test_new_startup_page(profile: Replica, osworld: OSWorld) -> None:  # noqa: F811
    _profile_getter(profile, osworld, "new_startup_page")


def test_data_delete_automacally(profile: Replica, osworld: OSWorld) -> None:  # noqa: F811
    _profile_getter(profile, osworld, "data_delete_automacally")


def test_find_unpacked_extension_path(profile: Replica, osworld: OSWorld) -> None:  # noqa: F811
    _profile_getter(profile, osworld, "find_unpacked_extension_path")


def test_find_installed_extension_name(profile: Replica, osworld: OSWorld) -> None:  # noqa: F811
    _profile_getter(profile, osworld, "find_installed_extension_name")


def test_bookmarks(profile: Replica, osworld: OSWorld) -> None:  # noqa: F811
    _profile_getter(profile, osworld, "bookmarks")


def _sqlite(tmp_path: Path, schema: str, rows: list[tuple[Any, ...]], insert: str) -> bytes:
    path = tmp_path / f"{uuid.uuid4().hex}.db"
    con = sqlite3.connect(path)
    con.execute(schema)
    con.executemany(insert, rows)
    con.commit()
    con.close()
    return path.read_bytes()


def test_history(profile: Replica, osworld: OSWorld, tmp_path: Path) -> None:  # noqa: F811
    rows = [("https://a.example/", "A", 13350000000000000), ("file:///home/user/b.html", "B", 13350000000000001)]
    db = _sqlite(tmp_path, "CREATE TABLE urls (id INTEGER PRIMARY KEY, url TEXT, title TEXT, last_visit_time INTEGER)",
                 rows, "INSERT INTO urls (url, title, last_visit_time) VALUES (?, ?, ?)")
    _both(profile, "Default/History", db)
    c = Context(profile)
    try:
        ours = _fetch(c, "history", dest="history.sqlite")
    finally:
        c.close()
    assert ours == rows
    theirs = run_osworld_getters(osworld, profile, [("chrome", "get_history", {"dest": "history.sqlite"})])
    assert [tuple(r) for r in theirs[0]] == ours


def test_cookie_data(profile: Replica, osworld: OSWorld, tmp_path: Path) -> None:  # noqa: F811
    rows = [(".example.org", "sid", b"\x00\x01secret"), (".osgym.test", "pref", b"")]
    db = _sqlite(tmp_path, "CREATE TABLE cookies (host_key TEXT, name TEXT, encrypted_value BLOB)", rows,
                 "INSERT INTO cookies VALUES (?, ?, ?)")
    # Chromium keeps Cookies in Default/Network/ since version 96; OSWorld's Chrome in Default/.
    profile.write_file(f"{PROFILE}/Default/Network/Cookies", db)
    profile.write_file(f"{OSWORLD_PROFILE}/Default/Cookies", db)
    c = Context(profile)
    try:
        ours = _fetch(c, "cookie_data", dest="cookies.sqlite")
    finally:
        c.close()
    assert ours == rows
    theirs = run_osworld_getters(osworld, profile, [("chrome", "get_cookie_data", {"dest": "cookies.sqlite"})])
    assert [tuple(r) for r in theirs[0]] == ours


# ---- Chromium through DevTools ------------------------------------------------------------------------

def test_devtools_getters_without_chromium_give_what_osworld_gives(profile: Replica) -> None:
    """The agent closed the browser: no tabs, no active URL (a score of 0), not an evaluator error."""
    c = Context(profile)
    try:
        assert _fetch(c, "open_tabs_info") == []
        assert _fetch(c, "active_url_from_accessTree") is None
        assert _fetch(c, "active_tab_info") is None
        assert _fetch(c, "active_tab_url_parse", parse_keys=["q"]) is None
        assert _fetch(c, "active_tab_html_parse", category="xpath", xpathObject={"//b": "b"}) is None
    finally:
        c.close()


PAGE = """<!doctype html><html><head><title>Osgym Page</title></head><body>
<p class="price">12 EUR</p><p class="price">15 EUR</p><span class="city"> Zurich </span>
<div id="box"><b>bold text</b></div><input id="q" value=" typed words ">
<label>Departure: Monday</label></body></html>"""


@pytest.fixture(scope="module")
def chromium(profile: Replica) -> Replica:
    """Chromium with two tabs of a site served on the replica's loopback; the second one is active."""
    profile.write_file(f"{SITE}/index.html", PAGE.encode())
    profile.write_file(f"{SITE}/other.html", b"<html><head><title>Other</title></head><body>other</body></html>")
    profile.launch(["python3", "-m", "http.server", str(PORT), "--bind", "127.0.0.1", "--directory", SITE])
    profile.launch(["chromium", f"http://127.0.0.1:{PORT}/other.html",
                    f"http://127.0.0.1:{PORT}/index.html?city=Zurich&when=today&id=7"])
    # Wait for both tabs, then make the index page the active one (DevTools' /json/activate).
    probe = ("import json, time, urllib.request\n"
             "def pages():\n"
             "    listed = json.load(urllib.request.urlopen('http://127.0.0.1:9222/json/list', timeout=2))\n"
             "    return [t for t in listed if t['type'] == 'page' and t['title'] in ('Osgym Page', 'Other')]\n"
             "for _ in range(240):\n"
             "    try:\n"
             "        ps = pages()\n"
             "        if len(ps) == 2:\n"
             "            index = next(t for t in ps if t['title'] == 'Osgym Page')\n"
             "            urllib.request.urlopen('http://127.0.0.1:9222/json/activate/' + index['id'], timeout=5)\n"
             "            print('ok'); break\n"
             "    except OSError: pass\n"
             "    time.sleep(0.5)\n")
    res = profile.execute(["python3", "-c", probe], timeout=150)
    assert res.output.strip() == "ok", res
    profile.wait_window("Osgym Page", timeout=30)
    return profile


def test_open_tabs_info(chromium: Replica) -> None:
    c = Context(chromium)
    try:
        tabs = _fetch(c, "open_tabs_info")
    finally:
        c.close()
    assert {"title": "Osgym Page", "url": f"http://127.0.0.1:{PORT}/index.html?city=Zurich&when=today&id=7"} in tabs
    assert {"title": "Other", "url": f"http://127.0.0.1:{PORT}/other.html"} in tabs


def test_active_url_from_accessTree(chromium: Replica) -> None:
    c = Context(chromium)
    try:
        # OSWorld: goto_prefix + the address bar's text, which hides the scheme.
        assert _fetch(c, "active_url_from_accessTree", goto_prefix="http://") == \
            f"http://127.0.0.1:{PORT}/index.html?city=Zurich&when=today&id=7"
        assert _fetch(c, "active_url_from_accessTree") == \
            f"https://127.0.0.1:{PORT}/index.html?city=Zurich&when=today&id=7"
    finally:
        c.close()


def test_active_tab_info(chromium: Replica) -> None:
    c = Context(chromium)
    try:
        info = _fetch(c, "active_tab_info")
    finally:
        c.close()
    assert info["title"] == "Osgym Page" and info["url"].endswith("index.html?city=Zurich&when=today&id=7")
    assert '<p class="price">12 EUR</p>' in info["content"]


def test_active_tab_url_parse(chromium: Replica, osworld: OSWorld) -> None:  # noqa: F811
    config = {"goto_prefix": "http://", "parse_keys": ["city", "when", "absent"], "replace": {"when": "time"}}
    c = Context(chromium)
    try:
        got = _fetch(c, "active_tab_url_parse", **config)
        url = _fetch(c, "active_url_from_accessTree", goto_prefix="http://")
    finally:
        c.close()
    assert got == {"city": "Zurich", "absent": "", "time": "today"}
    # OSWorld's parsing of the same active URL
    assert run_osworld_getters(osworld, chromium, [("chrome", "get_active_tab_url_parse", config)],
                               active_url=url) == [got]


def test_url_dashPart(chromium: Replica, osworld: OSWorld) -> None:  # noqa: F811
    configs = [{"goto_prefix": "http://", "partIndex": 3, "needDeleteId": True, "returnType": "string"},
               {"goto_prefix": "http://", "partIndex": -1, "needDeleteId": False, "returnType": "json", "key": "page"}]
    c = Context(chromium)
    try:
        got = [_fetch(c, "url_dashPart", **config) for config in configs]
        url = _fetch(c, "active_url_from_accessTree", goto_prefix="http://")
    finally:
        c.close()
    assert got == ["index.html", {"page": "index.html?city=Zurich&when=today&id=7"}]
    assert run_osworld_getters(osworld, chromium, [("chrome", "get_url_dashPart", cfg) for cfg in configs],
                               active_url=url) == got


def test_active_tab_html_parse(chromium: Replica) -> None:
    c = Context(chromium)
    try:
        by_class = _fetch(c, "active_tab_html_parse", category="class", class_singleObject={"city": "where"},
                          class_multiObject={"price": {"0": "first", "1": "second", "5": "absent"}})
        by_xpath = _fetch(c, "active_tab_html_parse", category="xpath",
                          xpathObject={"//div[@id='box']": "box", "//nav": "none"})
        by_input = _fetch(c, "active_tab_html_parse", category="input", inputObject={"//input[@id='q']": "query"})
        by_label = _fetch(c, "active_tab_html_parse", category="label", labelObject={"departure": "dep"})
    finally:
        c.close()
    assert by_class == {"where": "Zurich", "first": "12 EUR", "second": "15 EUR"}
    assert by_xpath == {"box": "bold text"}
    assert by_input == {"query": "typed words"}
    assert by_label == {"dep": "Departure: Monday"}


def test_page_info(chromium: Replica) -> None:
    c = Context(chromium)
    try:
        info = _fetch(c, "page_info", url=f"http://127.0.0.1:{PORT}/other.html")
        tabs = _fetch(c, "open_tabs_info")
    finally:
        c.close()
    assert info["title"] == "Other" and "other</body>" in info["content"]
    assert len([t for t in tabs if t["title"] == "Other"]) == 1  # the tab page_info opened is closed again


def test_chrome_open_tabs_and_chrome_close_tabs_setup_steps(chromium: Replica) -> None:
    """The setup steps OSWorld's Chrome tasks start with, through DevTools inside the replica."""
    extra = [f"http://127.0.0.1:{PORT}/other.html?tab={i}" for i in range(2)]
    run_step(chromium, SetupStep(type="chrome_open_tabs", parameters={"urls_to_open": extra}),
             where="task t: config[0]")
    c = Context(chromium)
    try:
        deadline = time.monotonic() + 30
        while not {u for u in extra} <= {t["url"] for t in _fetch(c, "open_tabs_info")}:
            assert time.monotonic() < deadline, _fetch(c, "open_tabs_info")
            time.sleep(0.25)
        run_step(chromium, SetupStep(type="chrome_close_tabs", parameters={"urls_to_close": extra}),
                 where="task t: config[1]")
        assert not {u for u in extra} & {t["url"] for t in _fetch(c, "open_tabs_info")}
        assert any(t["title"] == "Osgym Page" for t in _fetch(c, "open_tabs_info"))  # the others stay
    finally:
        c.close()


# ---- desktop and apps ---------------------------------------------------------------------------------

def test_vm_terminal_output(apps: Replica, osworld: OSWorld) -> None:  # noqa: F811
    title = f"getterterm{uuid.uuid4().hex[:6]}"
    apps.launch(["xfce4-terminal", "--title", title])
    apps.wait_window(title, timeout=20, focused=True)
    try:
        apps.act([Typing(text="echo getter-$((6*7))"), Press(key="enter")])
        c = Context(apps)
        deadline = time.monotonic() + 20
        text = None
        try:
            while text is None or "getter-42" not in text:
                assert time.monotonic() < deadline, f"terminal text without the output: {text!r}"
                time.sleep(0.25)
                text = _fetch(c, "vm_terminal_output")
        finally:
            c.close()
        # OSWorld's getter reads the same text (its controller's /terminal, here the replica's).
        # CI once saw None here: a failure names what the replica refused, the focused window and a fresh read.
        refused: list[str] = []
        theirs = run_osworld_getters(osworld, apps, [("general", "get_vm_terminal_output", {})], refused=refused)
        assert theirs == [text], (refused, [w.title for w in apps.windows() if w.focused], apps.terminal())
    finally:
        apps.close_window(title)


def test_vscode_config(apps: Replica) -> None:
    """The palette sequence goes to the focused window: in a terminal, the "command" is a shell line
    that writes the file the getter then fetches (VS Code writes its settings the same way)."""
    title = f"paletteterm{uuid.uuid4().hex[:6]}"
    # A shell without history: bash reads Ctrl+Shift+P as Ctrl+P and would recall an earlier command.
    apps.launch(["xfce4-terminal", "--title", title, "-x", "env", "HISTFILE=/dev/null", "bash", "--norc"])
    apps.wait_window(title, timeout=20, focused=True)
    out = f"/home/user/palette-{uuid.uuid4().hex[:6]}.json"
    c = Context(apps)
    try:
        got = _fetch(c, "vscode_config", vscode_extension_command=f"echo '{{\"ok\": 1}}' > {out}", path=out,
                     dest="settings.json")
        assert got is not None and json.loads(Path(got).read_text()) == {"ok": 1}
    finally:
        c.close()
        apps.close_window(title)


def test_vm_wallpaper(ctx: Context) -> None:
    buf = io.BytesIO()
    Image.new("RGB", (32, 18), (12, 150, 90)).save(buf, format="PNG")
    path = f"/home/user/wall-{uuid.uuid4().hex[:6]}.png"
    ctx.replica.write_file(path, buf.getvalue())
    ctx.replica.set_wallpaper(path)
    got = _fetch(ctx, "vm_wallpaper", dest="wallpaper.png")
    assert Path(got).read_bytes() == buf.getvalue() and ctx.scratch.holds(got)


def test_vlc_config(ctx: Context, osworld: OSWorld) -> None:  # noqa: F811
    got = _fetch(ctx, "vlc_config", dest="vlcrc")
    data = Path(got).read_bytes()
    assert data == ctx.replica.read_file("/home/user/.config/vlc/vlcrc") and b"[" in data
    assert run_osworld_getters(osworld, ctx.replica, [("vlc", "get_vlc_config", {"dest": "vlcrc"})]) == [data]


def test_gimp_config_file(ctx: Context, osworld: OSWorld) -> None:  # noqa: F811
    got = _fetch(ctx, "gimp_config_file", file_name="gimprc", dest="gimprc")
    data = Path(got).read_bytes()
    assert data == ctx.replica.read_file("/home/user/.config/GIMP/2.10/gimprc")
    theirs = run_osworld_getters(osworld, ctx.replica,
                                 [("gimp", "get_gimp_config_file", {"file_name": "gimprc", "dest": "gimprc"})])
    assert theirs == [data]
    assert _fetch(ctx, "gimp_config_file", file_name="no-such-file", dest="x") is None


def test_vlc_playing_info(apps: Replica) -> None:
    c = Context(apps)
    try:
        assert _fetch(c, "vlc_playing_info", dest="status.xml") is None  # VLC not running: no answer
        pid = apps.launch(["vlc", "--extraintf", "http", "--http-host", "127.0.0.1", "--http-port", "8080",
                     "--http-password", "password"])
        deadline = time.monotonic() + 60
        got = None
        while got is None:
            assert time.monotonic() < deadline, "VLC's HTTP interface never answered"
            time.sleep(0.5)
            got = _fetch(c, "vlc_playing_info", dest="status.xml")
        text = Path(got).read_text()
        assert "<root>" in text and "<state>" in text
    finally:
        c.close()
        if "pid" in locals():
            apps.execute(["kill", str(pid)])


def test_default_video_player(ctx: Context) -> None:
    """As on OSWorld's VM: Videos (Totem) for most video types, whatever MP4 opens with (VLC)."""
    assert ctx.replica.execute(["xdg-mime", "query", "default", "video/mp4"]).output.strip() == "vlc.desktop"
    expected = ctx.replica.execute(["xdg-mime", "query", "default", "video/x-matroska"]).output.strip()
    assert expected == "org.gnome.Totem.desktop"
    assert _fetch(ctx, "default_video_player") == "org.gnome.Totem.desktop\n"

