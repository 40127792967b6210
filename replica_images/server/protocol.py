"""The control protocol's request rules: its one error type, its limits, and how each request is read.

One file serves two programs. The replica's server imports it as ``protocol`` (the image copies this
directory to /opt/osgym); osgym's hollow replicas import it as ``osgym.replicas.hollow.protocol``, a
symbolic link to this file that a wheel of osgym carries as a copy. A request a real replica refuses, a
hollow one therefore refuses with the same status and message. Standard library only, and typed: ruff and
mypy check it through the link, as part of osgym.

Every error becomes JSON ``{"error": message}``.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, TypeGuard, TypeVar

MAX_UPLOAD = 64 * 2**20
"""Largest body of a file upload (PUT /files; OSWorld's /setup/upload)."""
MAX_JSON_BODY = 16 * 2**20
"""Largest body of any other request: 200 actions of 10,000 characters, JSON-escaped, fit."""
UPLOAD_ROUTES = frozenset({("PUT", "/files"), ("POST", "/setup/upload")})
MAX_ACTIONS = 200
"""Most actions in one POST /actions."""
MAX_WAIT_PER_REQUEST = 120.0
"""Most seconds of WAIT one POST /actions may hold (the host sends a reply's waits one per request)."""
SETTLE_MODES = ("frames", "damage")
SETTLE_QUIET_S = 0.15  # frames: how long the screen must stay unchanged after input before it counts as settled
DAMAGE_QUIET_S = 0.1  # damage: the same, measured exactly rather than at the next look
DAMAGE_MIN_S = 0.2  # damage: the least time after the input, changes or none

R = TypeVar("R")


class HttpError(Exception):
    """Raised by a route to answer ``status`` with ``{"error": message}``."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def bad(message: str) -> HttpError:
    return HttpError(400, message)


def load_json(body: bytes) -> dict[str, Any]:
    """The request body as a JSON object ({} when empty)."""
    if not body:
        return {}
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise bad(f"body is not JSON: {str(exc)[:200]}") from None
    if not isinstance(data, dict):
        raise bad(f"expected a JSON object, actual {type(data).__name__}")
    return data


def number(data: Mapping[str, Any], key: str, lo: float, hi: float, default: Any = None,
           kind: Callable[[Any], Any] = float) -> Any:
    """``data[key]`` as a number in [lo, hi] (``default`` when absent).

    >>> number({"t": "2.5"}, "t", 0, 5), number({}, "n", 1, 9, default=3, kind=int)
    (2.5, 3)
    """
    v = data.get(key, default)
    if isinstance(v, str):
        try:
            v = float(v)
        except ValueError:
            raise bad(f"{key}: expected a number, actual {v!r:.40}") from None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or not lo <= v <= hi:
        raise bad(f"{key}: expected a number in {lo}..{hi}, actual {v!r:.40}")
    return kind(v)


MAX_WINDOW_FILTER = 200


def is_window_filter(v: object) -> TypeGuard[str]:
    """Whether ``v`` may be the ``window`` of an accessibility read: part of a top-level window's name, 1..200
    printable characters (a client asks for the whole tree rather than send one the replica refuses).

    >>> is_window_filter("Save"), is_window_filter(""), is_window_filter("a\\nb"), is_window_filter(7)
    (True, False, False, False)
    """
    return isinstance(v, str) and 0 < len(v) <= MAX_WINDOW_FILTER and v.isprintable()


def window_filter(q: Mapping[str, str]) -> str | None:
    """The ``window`` of an accessibility read (:func:`is_window_filter`), or None when not given.

    >>> window_filter({"window": "Save"}), window_filter({})
    ('Save', None)
    """
    v = q.get("window")
    if v is None:
        return None
    if not is_window_filter(v):
        raise bad(f"window: expected 1..{MAX_WINDOW_FILTER} printable characters, actual {v!r:.50}")
    return v


MAX_FIND_ROLE = 64
FIND_PARAMS = ("find_name", "find_role", "find_focused", "find_sized")


class A11yFind(NamedTuple):
    """What an accessibility read looks for, so that it can stop there (``GET /accessibility?find_...``).

    The read walks what is on screen, in the tree's order, until the first element that is of ``role`` (as the
    tree names roles: ``push-button``; any if empty), called ``name`` (any if None), focused if ``focused``,
    and with a size on screen if ``sized``; it then holds each matching top-level window with only that
    element inside it (its states and extents), not the walk that led there. A policy waiting for a button
    or a caret reads one element, not a window's tree (Calc's: ~600 elements on screen). With ``focused``,
    windows that are not active are not searched: what is focused in a window in the background has no keys.

    >>> A11yFind(name="Save", role="push-button").params()
    {'find_role': 'push-button', 'find_name': 'Save'}
    >>> a11y_find(A11yFind(role="paragraph", focused=True).params())
    A11yFind(name=None, role='paragraph', focused=True, sized=False)
    >>> a11y_find({}) is None
    True
    """

    name: str | None = None
    role: str = ""
    focused: bool = False
    sized: bool = False

    def params(self) -> dict[str, str]:
        """The query parameters that ask for it."""
        q = {"find_role": self.role} if self.role else {}
        if self.name is not None:
            q["find_name"] = self.name
        if self.focused:
            q["find_focused"] = "1"
        if self.sized:
            q["find_sized"] = "1"
        return q


def is_find_name(v: object) -> TypeGuard[str]:
    """Whether ``v`` may be the ``name`` of an :class:`A11yFind`: 1..200 printable characters, as a window filter."""
    return is_window_filter(v)


def is_find_role(v: object) -> TypeGuard[str]:
    """Whether ``v`` may be the ``role`` of an :class:`A11yFind`: a role as the tree names it, 1..64 characters of
    lowercase letters, digits and ``-``.

    >>> is_find_role("push-button"), is_find_role("Push Button"), is_find_role("")
    (True, False, False)
    """
    return isinstance(v, str) and 0 < len(v) <= MAX_FIND_ROLE and all(c.isascii() and (c.islower() or c.isdigit()
                                                                                       or c == "-") for c in v)


def a11y_find(q: Mapping[str, str]) -> A11yFind | None:
    """The :class:`A11yFind` of an accessibility read, or None when it gives no ``find_`` parameter."""
    if not any(k.startswith("find_") for k in q):
        return None
    unknown = sorted(k for k in q if k.startswith("find_") and k not in FIND_PARAMS)
    if unknown:
        raise bad(f"{unknown[0]}: expected one of {', '.join(FIND_PARAMS)}")
    name, role = q.get("find_name"), q.get("find_role", "")
    if name is not None and not is_find_name(name):
        raise bad(f"find_name: expected 1..{MAX_WINDOW_FILTER} printable characters, actual {name!r:.50}")
    if role and not is_find_role(role):
        raise bad(f"find_role: expected 1..{MAX_FIND_ROLE} of a-z, 0-9 and -, actual {role!r:.50}")
    flags = {k: number(q, f"find_{k}", 0, 1, default=0, kind=int) == 1 for k in ("focused", "sized")}
    if name is None and not role and not flags["focused"]:
        raise bad("find: expected find_name, find_role or find_focused=1 with the other find_ parameters")
    return A11yFind(name, role, **flags)


# ---- before the body: token, route, size ------------------------------------------------------------
def authorized(header: str, token: str) -> bool:
    """Whether an Authorization header carries ``Bearer <token>``."""
    scheme, _, given = header.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


def find_route(routes: Mapping[tuple[str, str], R], method: str, path: str) -> R:
    """The route for ``method path``: 405 if the path takes other methods, 404 if no route has it."""
    found = routes.get((method, path))
    if found is None:
        if any(p == path for _, p in routes):
            raise HttpError(405, f"{method} not allowed on {path}")
        raise HttpError(404, f"no route {path}")
    return found


def body_limit(routes: Mapping[tuple[str, str], Any], method: str, path: str) -> int:
    """The largest body the route takes (404 or 405 if there is none); checked before any is read."""
    find_route(routes, method, path)
    return MAX_UPLOAD if (method, path) in UPLOAD_ROUTES else MAX_JSON_BODY


def new_token(body: bytes) -> str:
    """The token of a POST /token."""
    new = load_json(body).get("token")
    if not isinstance(new, str) or not 24 <= len(new) <= 256 or not new.isascii() or not new.isprintable() \
            or " " in new:
        raise bad("token: expected 24..256 printable ASCII characters without spaces")
    return new


# ---- GET /screenshot --------------------------------------------------------------------------------
class Shot(NamedTuple):
    """What a GET /screenshot asks for."""

    fmt: str
    quality: int
    max_side: int | None
    png_level: int
    windows: bool = False
    """Also answer the window list, read before the grab, in the ``X-Windows`` header (``windows=1``)."""


WINDOWS_HEADER_MAX = 32 * 1024
"""The largest window list sent in a screenshot's ``X-Windows`` header (JSON, ASCII); past it the header is
``X-Windows-Omitted: 1`` and the client reads ``GET /windows`` instead."""


def windows_header(windows: list[dict[str, Any]]) -> dict[str, str]:
    """The header that carries ``windows`` with a screenshot.

    >>> print(windows_header([{"id": 1, "title": "Café"}])["X-Windows"])
    [{"id":1,"title":"Caf\\u00e9"}]
    """
    text = json.dumps(windows, ensure_ascii=True, separators=(",", ":"))
    return {"X-Windows": text} if len(text) <= WINDOWS_HEADER_MAX else {"X-Windows-Omitted": "1"}


def screenshot_params(q: Mapping[str, str]) -> Shot:
    """The query of a GET /screenshot, checked.

    >>> screenshot_params({"format": "jpg", "max_side": "640", "windows": "1"})
    Shot(fmt='jpeg', quality=80, max_side=640, png_level=1, windows=True)
    """
    fmt = q.get("format", "png").lower()
    fmt = "jpeg" if fmt == "jpg" else fmt
    if fmt not in ("png", "jpeg"):
        raise bad(f"format: expected png|jpeg, actual {fmt!r:.20}")
    try:
        quality = int(q.get("quality", 80))
        max_side = int(q["max_side"]) if q.get("max_side") else None
        level = int(q.get("png_level", 1))
    except ValueError as exc:
        raise bad(f"screenshot parameters must be integers: {exc}") from None
    if not 1 <= quality <= 100 or (max_side is not None and not 16 <= max_side <= 8192) or not 0 <= level <= 9:
        raise bad("quality expected 1..100, max_side 16..8192, png_level 0..9")
    windows = q.get("windows", "0")
    if windows not in ("0", "1"):
        raise bad(f"windows: expected 0|1, actual {windows!r:.20}")
    return Shot(fmt, quality, max_side, level, windows == "1")


# ---- POST /actions ----------------------------------------------------------------------------------
class Actions(NamedTuple):
    """A POST /actions, checked: the actions, their seconds of WAIT, and how to settle after them."""

    actions: list[dict[str, Any]]
    waits: float
    mode: str
    timeout: float
    interval: float
    quiet: float
    minimum: float


def read_actions(data: Mapping[str, Any], screen: tuple[int, int], check_key: Callable[[str], object]) -> Actions:
    """A POST /actions body, every action checked against the screen before any is performed.

    ``check_key`` raises ValueError for a key name the replica cannot press.
    """
    acts = data.get("actions")
    if not isinstance(acts, list) or len(acts) > MAX_ACTIONS:
        raise bad(f"actions: expected a list of at most {MAX_ACTIONS} action objects")
    for a in acts:
        validate_action(a, screen, check_key)
    waits = sum(1.0 if a.get("seconds") is None else float(a["seconds"]) for a in acts
                if a.get("action_type") == "WAIT")
    if waits > MAX_WAIT_PER_REQUEST:
        raise bad(f"actions: expected at most {MAX_WAIT_PER_REQUEST:g} s of WAIT in one request, actual {waits:g}")
    how = data.get("settle") or {}
    if not isinstance(how, dict):
        raise bad("settle: expected an object {timeout, interval, quiet, min, mode}")
    mode = how.get("mode", "frames")
    if mode not in SETTLE_MODES:
        raise bad(f"settle.mode: expected one of {', '.join(SETTLE_MODES)}, actual {mode!r:.20}")
    damage = mode == "damage"
    return Actions(acts, waits, mode, number(how, "timeout", 0, 30, default=0),
                   number(how, "interval", 0.01, 5, default=0.05),
                   number(how, "quiet", 0, 5, default=DAMAGE_QUIET_S if damage else SETTLE_QUIET_S),
                   number(how, "min", 0, 5, default=DAMAGE_MIN_S if damage else 0))


def _num(a: Mapping[str, Any], key: str, lo: float, hi: float, required: bool = True) -> None:
    v = a.get(key)
    if v is None:
        if required:
            raise bad(f"{a.get('action_type')}: missing {key!r}")
        return
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise bad(f"{a.get('action_type')}: {key} expected a number, actual {v!r:.50}")
    if not lo <= v <= hi:
        raise bad(f"{a.get('action_type')}: {key} expected {lo}..{hi}, actual {v}")


def _str(a: Mapping[str, Any], key: str, max_len: int = 10000) -> str:
    v = a.get(key)
    if not isinstance(v, str) or not v or len(v) > max_len:
        raise bad(f"{a.get('action_type')}: {key} expected a string of 1..{max_len} chars, actual {v!r:.50}")
    return v


def _button(a: Mapping[str, Any]) -> None:
    b = a.get("button")
    b = "left" if b is None else b  # null means absent, as for every optional field
    if b not in ("left", "middle", "right"):
        raise bad(f"{a.get('action_type')}: button expected left|middle|right, actual {b!r:.20}")


def _key(t: str, name: str, check_key: Callable[[str], object]) -> None:
    try:
        check_key(name)
    except ValueError as exc:
        raise bad(f"{t}: {exc}") from None


def validate_action(a: Any, screen: tuple[int, int], check_key: Callable[[str], object]) -> None:
    """Refuse (400) an action that is not a computer_13 action with its fields in range."""
    if not isinstance(a, dict):
        raise bad(f"expected an action object, actual {type(a).__name__}")
    t = a.get("action_type")
    xs, ys = (0, screen[0] - 1), (0, screen[1] - 1)
    if t in ("MOVE_TO", "DRAG_TO"):
        _num(a, "x", *xs)
        _num(a, "y", *ys)
    elif t in ("CLICK", "RIGHT_CLICK", "DOUBLE_CLICK", "SCROLL"):
        if (a.get("x") is None) != (a.get("y") is None):
            raise bad(f"{t}: give both x and y, or neither")
        _num(a, "x", *xs, required=False)
        _num(a, "y", *ys, required=False)
        if t == "CLICK":
            _button(a)
            _num(a, "num_clicks", 1, 3, required=False)
        if t == "SCROLL":
            _num(a, "dx", -100, 100, required=False)
            _num(a, "dy", -100, 100, required=False)
    elif t in ("MOUSE_DOWN", "MOUSE_UP"):
        _button(a)
    elif t == "TYPING":
        _str(a, "text")
    elif t in ("PRESS", "KEY_DOWN", "KEY_UP"):
        _key(t, _str(a, "key", 32), check_key)
    elif t == "HOTKEY":
        keys = a.get("keys")
        if not isinstance(keys, list) or not 1 <= len(keys) <= 6 or not all(isinstance(k, str) and k for k in keys):
            raise bad("HOTKEY: keys expected a list of 1..6 key names")
        for k in keys:
            _key(t, k, check_key)
    elif t == "WAIT":
        _num(a, "seconds", 0, 60, required=False)
    elif t not in ("DONE", "FAIL"):
        raise bad(f"action_type: expected a computer_13 action, actual {t!r:.40}")
