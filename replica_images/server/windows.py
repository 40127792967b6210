"""Which windows a request names, and waiting for one to appear.

Two rules:

- osgym's (``{"title": T}``): ``T`` is a case-insensitive substring of the title or of the class, or the
  instance name whole;
- wmctrl's (``{"title": T, "strict": bool, "by_class": bool}``), the one OSWorld's server applies on Linux
  (``wmctrl -a``/``-c`` with ``-x`` for ``by_class`` and ``-F`` for ``strict``): ``T`` against the title, or
  with ``by_class`` against the class as ``instance.class``; with ``strict`` the whole string,
  case-sensitively, else a case-insensitive substring.

OSWorld's VM runs wmctrl once, right after a task's ``launch`` step, with no wait: its apps map their windows
within a second or two there. Here an app may take longer (VS Code for the web: 15-20 s to its titled
window, more under load), so a request may ask to wait, up to :data:`MAX_WAIT_S`, for a match to appear.
"""

import time

from protocol import bad, number

MAX_WAIT_S = 60.0
POLL_S = 0.1


def wmctrl_match(window, name, strict, by_class):
    """wmctrl's test of one window (see the module's docstring)."""
    hay = f"{window.get('wm_instance', '')}.{window['wm_class']}" if by_class else window["title"]
    return hay == name if strict else name.casefold() in hay.casefold()


def _flag(data, key):
    v = data.get(key, False)
    if not isinstance(v, bool):
        raise bad(f"{key}: expected true or false, actual {v!r:.40}")
    return v


def matcher(data):
    """``(test, label)`` for a request's ``{id}``, ``{title}`` or ``{title, strict, by_class}``.

    Raises:
        HttpError: 400 if the request names no window, or ``strict``/``by_class`` are not booleans.
    """
    if "id" in data:
        wid = data["id"]
        return (lambda w: w["id"] == wid), repr(wid)
    title = data.get("title")
    if not isinstance(title, str) or not title:
        raise bad("expected {id} or {title}")
    if "strict" in data or "by_class" in data:
        strict, by_class = _flag(data, "strict"), _flag(data, "by_class")
        return (lambda w: wmctrl_match(w, title, strict, by_class)), repr(title)
    needle = title.lower()
    return (lambda w: needle in w["title"].lower() or needle in w["wm_class"].lower()
            or needle == w.get("wm_instance", "").lower()), repr(title)


def wait_seconds(data):
    """The request's ``timeout``: how long to wait for a match (0, the default: look once)."""
    return number(data, "timeout", 0, MAX_WAIT_S, default=0)


def find(screen, test, timeout=0.0):
    """The windows that pass ``test``, in the window manager's order; if none, poll up to ``timeout`` seconds
    for one. An empty list if none came."""
    deadline = time.monotonic() + timeout
    while True:
        found = [w for w in screen.windows() if test(w)]
        if found or time.monotonic() >= deadline:
            return found
        time.sleep(POLL_S)
