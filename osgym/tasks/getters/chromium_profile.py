"""Chromium's state from its profile files, where OSWorld's VM keeps Chrome's: ``~/.config/google-chrome``.

Preferences, Local State and Bookmarks are JSON files fetched whole and parsed on the host with
``json`` (size-capped by the client). History and Cookies are SQLite databases: they are queried
inside the replica (python3's ``sqlite3``, on a copy, read-only), so an agent-made database file is
never opened by a parser on the host; only the rows come back, as JSON.

Where OSWorld's getter returns a default when the file cannot be read (``"Google"``, ``[]``), so do
these: a setting never changed is absent from Preferences.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from osgym.errors import EvaluatorError
from osgym.replicas.accounts import AGENT_HOME as HOME
from osgym.tasks.getters import Context, getter
from osgym.tasks.getters.files import read_vm_file, relative_name

PROFILE_DIR = f"{HOME}/.config/google-chrome"
PREFERENCES = f"{PROFILE_DIR}/Default/Preferences"
LOCAL_STATE = f"{PROFILE_DIR}/Local State"
BOOKMARKS = f"{PROFILE_DIR}/Default/Bookmarks"


def read_json(ctx: Context, path: str) -> dict[str, Any] | None:
    """The JSON object in ``path`` on the replica; None if it is missing or not a JSON object."""
    data = read_vm_file(ctx, path)
    if data is None:
        return None
    try:
        value = json.loads(data)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _prefs(ctx: Context) -> dict[str, Any]:
    return read_json(ctx, PREFERENCES) or {}


def _get(d: Any, *keys: str, default: Any = None) -> Any:
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return default
        d = d[k]
    return d


@getter("default_search_engine")
def default_search_engine(ctx: Context, o: None, where: str) -> str:
    """The default search engine's short name (``"Google"`` if never changed)."""
    return str(_get(_prefs(ctx), "default_search_provider_data", "template_url_data", "short_name",
                    default="Google"))


@getter("profile_name")
def profile_name(ctx: Context, o: None, where: str) -> str | None:
    """The profile's name (``profile.name`` in Preferences)."""
    name = _get(_prefs(ctx), "profile", "name")
    return None if name is None else str(name)


@getter("chrome_language")
def chrome_language(ctx: Context, o: None, where: str) -> str:
    """The browser's UI language (``intl.app_locale`` in Local State; ``en-US`` if never set)."""
    return str(_get(read_json(ctx, LOCAL_STATE) or {}, "intl", "app_locale", default="en-US"))


@getter("chrome_font_size")
def chrome_font_size(ctx: Context, o: None, where: str) -> dict[str, Any]:
    """``webkit.webprefs`` (font sizes) from Preferences, or Chromium's defaults."""
    prefs = read_json(ctx, PREFERENCES)
    if prefs is None:
        return {"default_fixed_font_size": 13, "default_font_size": 16}
    value = _get(prefs, "webkit", "webprefs",
                 default={"default_fixed_font_size": 13, "default_font_size": 16, "minimum_font_size": 13})
    return dict(value) if isinstance(value, dict) else {}


@getter("enabled_experiments")
def enabled_experiments(ctx: Context, o: None, where: str) -> list[str]:
    """The chrome://flags experiments turned on (``browser.enabled_labs_experiments`` in Local State)."""
    value = _get(read_json(ctx, LOCAL_STATE) or {}, "browser", "enabled_labs_experiments", default=[])
    return [str(v) for v in value] if isinstance(value, list) else []


def _flag(value: Any) -> str:
    return "true" if value else "false"


@getter("enable_do_not_track")
def enable_do_not_track(ctx: Context, o: None, where: str) -> str:
    """``"true"`` if "Send a Do Not Track request" is on."""
    return _flag(_get(_prefs(ctx), "enable_do_not_track"))


@getter("enable_enhanced_safety_browsing")
def enable_enhanced_safety_browsing(ctx: Context, o: None, where: str) -> str:
    """``"true"`` if Safe Browsing's enhanced protection is on."""
    return _flag(_get(_prefs(ctx), "safebrowsing", "enhanced"))


@getter("new_startup_page")
def new_startup_page(ctx: Context, o: None, where: str) -> str:
    """``"true"`` if Chromium opens the New Tab page on start (no ``session`` entry, or restore_on_startup 5)."""
    prefs = _prefs(ctx)
    if "session" not in prefs:
        return "true"
    return _flag(_get(prefs, "session", "restore_on_startup") == 5)


@getter("data_delete_automacally")
def data_delete_automacally(ctx: Context, o: None, where: str) -> str:
    """``"true"`` if site-data settings were changed (``profile.default_content_setting_values`` exists);
    OSWorld's spelling of the name is kept.

    Chromium since OSWorld's tasks were written keeps its own markers there (``has_migrated_*``, in every
    new profile): a dict of only those counts as absent, or a fresh browser would score a task that asks
    to change these settings (99146c54)."""
    values = _get(_prefs(ctx), "profile", "default_content_setting_values")
    if isinstance(values, dict) and values and all(str(k).startswith("has_migrated_") for k in values):
        values = None
    return _flag(values is not None)


def _extension_settings(ctx: Context) -> dict[str, Any]:
    value = _get(_prefs(ctx), "extensions", "settings", default={})
    return value if isinstance(value, dict) else {}


@getter("find_unpacked_extension_path")
def find_unpacked_extension_path(ctx: Context, o: None, where: str) -> list[str]:
    """The path of every installed extension (unpacked ones are where the user loaded them from)."""
    return [str(s["path"]) for s in _extension_settings(ctx).values() if isinstance(s, dict) and "path" in s]


@getter("find_installed_extension_name")
def find_installed_extension_name(ctx: Context, o: None, where: str) -> list[str]:
    """The name of every installed extension (from its manifest as Preferences keeps it)."""
    names = (_get(s, "manifest", "name") for s in _extension_settings(ctx).values())
    return [str(n) for n in names if n is not None]


@getter("bookmarks")
def bookmarks(ctx: Context, o: None, where: str) -> dict[str, Any] | list[Any]:
    """The bookmark roots (``bookmark_bar``, ``other``, ``synced``) of the Bookmarks file; ``[]`` without one."""
    data = read_json(ctx, BOOKMARKS)
    if data is None:
        return []
    roots = data.get("roots", {})
    return roots if isinstance(roots, dict) else {}


# Runs inside the replica: copies a profile database (Chromium keeps it locked while it runs) to a
# private temporary file and runs one of these fixed queries on it, read-only. argv: database, query name.
_SQLITE_SCRIPT = r"""
import base64, json, os, shutil, sqlite3, sys, tempfile
QUERIES = {"history": "SELECT url, title, last_visit_time FROM urls", "cookies": "SELECT * FROM cookies"}
name, found = sys.argv[1], [p for p in sys.argv[2:] if os.path.isfile(p)]
if not found:
    print(json.dumps(None)); sys.exit(0)
src = found[0]
with tempfile.TemporaryDirectory() as d:
    copy = os.path.join(d, "db")
    shutil.copyfile(src, copy)
    con = sqlite3.connect("file:%s?mode=ro" % copy, uri=True)
    try:
        rows = con.execute(QUERIES[name]).fetchmany(200000)
    except sqlite3.DatabaseError as exc:
        print(json.dumps({"error": str(exc)})); sys.exit(0)
    finally:
        con.close()
enc = lambda v: {"b64": base64.b64encode(v).decode()} if isinstance(v, bytes) else v
print(json.dumps([[enc(v) for v in row] for row in rows]))
"""


def _decode(v: Any) -> Any:
    return base64.b64decode(v["b64"]) if isinstance(v, dict) and set(v) == {"b64"} else v


def query_profile_db(ctx: Context, databases: list[str], query: str, where: str) -> list[tuple[Any, ...]] | None:
    """The rows of a fixed query (``history`` or ``cookies``) on the first of ``databases`` (paths in the
    profile's ``Default``) that exists; None if none does.

    Raises:
        EvaluatorError: if the database cannot be read.
    """
    paths = [f"{PROFILE_DIR}/Default/{d}" for d in databases]
    database = databases[0]
    res = ctx.replica.execute(["python3", "-c", _SQLITE_SCRIPT, query, *paths], timeout=60)
    if res.returncode != 0:
        raise EvaluatorError(f"{where}: reading Chromium's {database} failed: {res.error.strip()[-300:]}")
    rows = json.loads(res.output)
    if isinstance(rows, dict):
        raise EvaluatorError(f"{where}: Chromium's {database} is no database: {rows.get('error')}")
    return None if rows is None else [tuple(_decode(v) for v in row) for row in rows]


class DestOptions(BaseModel):
    """``dest``: OSWorld's name for the database's copy in its cache (checked; unused, the query runs in
    the replica)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    dest: str | None = None

    @field_validator("dest")
    @classmethod
    def _inside(cls, v: str | None) -> str | None:
        return None if v is None else relative_name(v)


@getter("history", DestOptions)
def history(ctx: Context, o: DestOptions, where: str) -> list[tuple[Any, ...]] | None:
    """Browsing history: ``(url, title, last_visit_time)`` rows of the History database."""
    return query_profile_db(ctx, ["History"], "history", where)


@getter("cookie_data", DestOptions)
def cookie_data(ctx: Context, o: DestOptions, where: str) -> list[tuple[Any, ...]] | None:
    """Every row of the Cookies database's ``cookies`` table (blobs as bytes)."""
    # Chromium moved the database to Network/ in version 96; OSWorld's older Chrome kept it in Default/.
    return query_profile_db(ctx, ["Network/Cookies", "Cookies"], "cookies", where)
