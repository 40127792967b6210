"""Chromium's tabs through the DevTools protocol, from inside the replica (apps tier).

The apps tier's Chromium serves DevTools on the replica's own loopback (``127.0.0.1:9222``), never
published: a small Python program of ours (:data:`DEVTOOLS_SCRIPT`) runs inside the replica as the
agent's user, asks DevTools, and prints JSON. What a task names (a URL, selectors) reaches it as one
JSON argument, never spliced into code; in the page, selectors are data handed to a fixed function.

OSWorld reads the active tab's URL from the address bar's accessible text (``goto_prefix`` plus
what the omnibox shows) and reloads pages with Playwright. osgym asks DevTools: the active tab is
the page target used last (DevTools lists targets most recently active first), its URL is shown the
way the omnibox elides it (:func:`omnibox_text`), and its HTML is the live document, not a reload
(replicas are offline; the live DOM is what the agent left).
"""

from __future__ import annotations

import json
from typing import Any, Literal
from urllib.parse import parse_qs, urlparse

from pydantic import BaseModel, ConfigDict, StrictBool, StrictStr

from osgym.errors import EvaluatorError
from osgym.tasks.getters import Context, getter

DEVTOOLS = "127.0.0.1:9222"

# Runs inside the replica: python3 -c DEVTOOLS_SCRIPT '<json request>'. Stdlib only (the image has no
# websocket library): DevTools' JSON list over HTTP, and one short WebSocket session for Runtime.evaluate.
DEVTOOLS_SCRIPT = r"""
import base64, json, os, socket, struct, sys, time, urllib.request
req = json.loads(sys.argv[1])
BASE = "http://%s" % req["devtools"]

def http(path, method="GET", answer=True):
    r = urllib.request.Request(BASE + path, method=method)
    with urllib.request.urlopen(r, timeout=10) as f:
        body = f.read(16 << 20)
    return json.loads(body) if answer else None

def pages():
    try:
        return [t for t in http("/json/list") if t.get("type") == "page"]
    except OSError as exc:
        print(json.dumps({"no_devtools": "no DevTools at %s: %s" % (BASE, exc)}))
        sys.exit(0)

class WS:
    def __init__(self, url):
        host, _, path = url[len("ws://"):].partition("/")
        name, _, port = host.partition(":")
        self.s = socket.create_connection((name, int(port)), timeout=15)
        key = base64.b64encode(os.urandom(16)).decode()
        self.s.sendall(("GET /%s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % (path, host, key)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.s.recv(4096)
            if not chunk:
                raise OSError("DevTools closed the handshake")
            head += chunk
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise OSError("DevTools refused the WebSocket: %r" % head[:200])
        self.buf = head.split(b"\r\n\r\n", 1)[1]
        self.n = 0
    def _read(self, k):
        while len(self.buf) < k:
            chunk = self.s.recv(65536)
            if not chunk:
                raise OSError("DevTools closed the WebSocket")
            self.buf += chunk
        out, self.buf = self.buf[:k], self.buf[k:]
        return out
    def call(self, method, **params):
        self.n += 1
        data = json.dumps({"id": self.n, "method": method, "params": params}).encode()
        mask = os.urandom(4)
        n = len(data)
        head = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack(">H", n)
                                if n < 65536 else bytes([0x80 | 127]) + struct.pack(">Q", n))
        self.s.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))
        while True:
            message = b""
            while True:
                b0, b1 = self._read(2)
                n = b1 & 0x7F
                if n == 126:
                    n = struct.unpack(">H", self._read(2))[0]
                elif n == 127:
                    n = struct.unpack(">Q", self._read(8))[0]
                if n > 64 << 20:
                    raise OSError("DevTools message too large")
                message += self._read(n)
                if b0 & 0x80:
                    break
            if b0 & 0x0F == 0x8:
                raise OSError("DevTools closed the WebSocket")
            answer = json.loads(message)
            if answer.get("id") == self.n:
                if "error" in answer:
                    raise OSError("DevTools: %s" % answer["error"])
                return answer["result"]

def evaluate(target, expression):
    ws = WS(target["webSocketDebuggerUrl"])
    try:
        res = ws.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
    finally:
        ws.s.close()
    return res.get("result", {}).get("value")

PAGE = "({title: document.title, url: location.href, content: document.documentElement.outerHTML})"
op = req["op"]
if op == "tabs":
    print(json.dumps([{"title": t.get("title", ""), "url": t.get("url", "")} for t in pages()]))
elif op == "active":
    ps = pages()
    print(json.dumps({"url": ps[0]["url"], "title": ps[0].get("title", "")} if ps else None))
elif op in ("html", "query"):
    ps = pages()
    if not ps:
        print(json.dumps(None))
    else:
        expr = PAGE if op == "html" else "(%s)(%s)" % (req["function"], json.dumps(req["spec"]))
        print(json.dumps(evaluate(ps[0], expr)))
elif op == "open":
    target = http("/json/new?" + urllib.request.quote(req["url"], safe=":/?&=%#"), method="PUT")
    try:
        deadline = time.monotonic() + req["timeout"]
        info = None
        while time.monotonic() < deadline:
            # about:blank is 'complete' before the navigation starts: wait for the page asked for.
            info = evaluate(target, "document.readyState === 'complete' && location.href !== 'about:blank' ? "
                            + PAGE + " : null")
            if info is not None:
                break
            time.sleep(0.25)
        print(json.dumps(info or evaluate(target, PAGE)))
    finally:
        http("/json/close/" + target["id"], answer=False)
"""

# The page-side half of active_tab_html_parse: OSWorld's categories, read from the live document.
_QUERY_FUNCTION = r"""function (spec) {
  const out = {};
  const text = (e) => (e && e.textContent || "").trim();
  const xpath = (p) =>
    document.evaluate(p, document, null, XPathResult.FIRST_ORDERED_NODE_TYPE, null).singleNodeValue;
  if (spec.category === "class") {
    for (const [cls, ranks] of Object.entries(spec.class_multiObject || {})) {
      const texts = Array.from(document.getElementsByClassName(cls), text);
      for (const [rank, key] of Object.entries(ranks)) {
        if (texts.length > Number(rank)) out[key] = texts[Number(rank)];
      }
    }
    for (const [cls, key] of Object.entries(spec.class_singleObject || {})) {
      const texts = Array.from(document.getElementsByClassName(cls), text);
      if (texts.length) out[key] = texts[0];
    }
  } else if (spec.category === "xpath") {
    for (const [p, key] of Object.entries(spec.xpathObject || {})) {
      const e = xpath(p);
      if (e) out[key] = text(e);
    }
  } else if (spec.category === "input") {
    for (const [p, key] of Object.entries(spec.inputObject || {})) {
      const e = xpath(p);
      if (e) out[key] = (e.value || "").trim();
    }
  } else if (spec.category === "label") {
    const all = Array.from(document.querySelectorAll("body *"));
    for (const [label, key] of Object.entries(spec.labelObject || {})) {
      const want = label.toLowerCase();
      const e = all.find((n) => text(n).toLowerCase().includes(want) &&
                               !Array.from(n.children).some((c) => text(c).toLowerCase().includes(want)));
      if (e && text(e)) out[key] = text(e);
    }
  }
  return out;
}"""


def devtools(ctx: Context, request: dict[str, Any], where: str, *, missing: Any = None, timeout: float = 60) -> Any:
    """Run :data:`DEVTOOLS_SCRIPT` in the replica with ``request``; its JSON answer, or ``missing`` when
    DevTools does not answer: Chromium is not running (the agent may have closed it), which scores 0
    as OSWorld's getters do (they return an empty list or None), not an evaluator error.

    Raises:
        EvaluatorError: naming ``where``, if the program fails or DevTools answers something unusable.
    """
    res = ctx.replica.execute(["python3", "-c", DEVTOOLS_SCRIPT, json.dumps({"devtools": DEVTOOLS, **request})],
                              timeout=timeout)
    if res.returncode != 0:
        raise EvaluatorError(f"{where}: asking Chromium's DevTools failed: {res.error.strip()[-300:]}")
    try:
        answer = json.loads(res.output)
    except ValueError as exc:
        raise EvaluatorError(f"{where}: Chromium's DevTools answered no JSON: {res.output[:200]!r}") from exc
    if isinstance(answer, dict) and set(answer) == {"no_devtools"}:
        return missing
    return answer


def omnibox_text(url: str) -> str:
    """The URL as Chromium's address bar shows it: no ``http(s)://``, no leading ``www.``, no lone ``/``.

    >>> omnibox_text("https://www.example.com/"), omnibox_text("http://example.com/a?b=1")
    ('example.com', 'example.com/a?b=1')
    >>> omnibox_text("file:///home/user/a.html")
    'file:///home/user/a.html'
    """
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https"):
        return url
    shown = url.split("://", 1)[1]
    shown = shown.removeprefix("www.")
    return shown[:-1] if parsed.path == "/" and not parsed.query and not parsed.fragment and shown.endswith("/") \
        else shown


class _Options(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PrefixOptions(_Options):
    """``goto_prefix``: OSWorld puts it before the address bar's text (default ``https://``)."""

    goto_prefix: StrictStr = "https://"


def active_url(ctx: Context, prefix: str, where: str) -> str | None:
    """The active tab's URL as OSWorld builds it from the address bar: ``prefix`` + :func:`omnibox_text`."""
    tab = devtools(ctx, {"op": "active"}, where)
    if not tab or not tab.get("url"):
        return None
    url = str(tab["url"])
    return prefix + omnibox_text(url) if urlparse(url).scheme in ("http", "https") else url


@getter("open_tabs_info")
def open_tabs_info(ctx: Context, o: None, where: str) -> list[dict[str, str]]:
    """Every open tab as ``{"title", "url"}``, in the order they were last used, oldest first."""
    tabs: list[dict[str, str]] = devtools(ctx, {"op": "tabs"}, where, missing=[])
    return list(reversed(tabs))


@getter("active_url_from_accessTree", PrefixOptions)
def active_url_from_accessTree(ctx: Context, o: PrefixOptions, where: str) -> str | None:
    """The active tab's URL, as ``goto_prefix`` + the address bar's text (None: no tab)."""
    return active_url(ctx, o.goto_prefix, where)


@getter("active_tab_info", PrefixOptions)
def active_tab_info(ctx: Context, o: PrefixOptions, where: str) -> dict[str, str] | None:
    """The active tab's ``{"title", "url", "content"}`` (its live HTML); None if there is no tab."""
    info: dict[str, str] | None = devtools(ctx, {"op": "html"}, where)
    return info


class UrlParseOptions(PrefixOptions):
    parse_keys: list[StrictStr]
    replace: dict[str, StrictStr] = {}


@getter("active_tab_url_parse", UrlParseOptions)
def active_tab_url_parse(ctx: Context, o: UrlParseOptions, where: str) -> dict[str, str] | None:
    """The first value of each of ``parse_keys`` in the active tab's query string ('' if absent),
    with keys renamed by ``replace``."""
    url = active_url(ctx, o.goto_prefix, where)
    if url is None:
        return None
    query = parse_qs(urlparse(url).query)
    values = {k: query.get(k, [""])[0] for k in o.parse_keys}
    for old, new in o.replace.items():
        if old in values:
            values[new] = values.pop(old)
    return values


class DashPartOptions(PrefixOptions):
    partIndex: int
    needDeleteId: StrictBool = False
    returnType: Literal["string", "json"]
    key: StrictStr | None = None


@getter("url_dashPart", DashPartOptions)
def url_dashPart(ctx: Context, o: DashPartOptions, where: str) -> str | dict[str, str] | None:
    """Part ``partIndex`` of the active tab's URL split at ``/`` (without its query if ``needDeleteId``),
    as a string or ``{key: part}``.

    Raises:
        EvaluatorError: if the URL has no such part, or ``returnType`` json lacks ``key``.
    """
    url = active_url(ctx, o.goto_prefix, where)
    if url is None:
        return None
    parts = url.split("/")
    if not -len(parts) <= o.partIndex < len(parts):
        raise EvaluatorError(f"{where}: partIndex {o.partIndex} is outside the active URL {url!r:.200}")
    part = parts[o.partIndex].split("?")[0] if o.needDeleteId else parts[o.partIndex]
    if o.returnType == "string":
        return part
    if o.key is None:
        raise EvaluatorError(f"{where}: returnType 'json' needs 'key'")
    return {o.key: part}


class HtmlParseOptions(PrefixOptions):
    category: Literal["class", "label", "xpath", "input"]
    class_singleObject: dict[str, StrictStr] = {}
    class_multiObject: dict[str, dict[str, StrictStr]] = {}
    labelObject: dict[str, StrictStr] = {}
    xpathObject: dict[str, StrictStr] = {}
    inputObject: dict[str, StrictStr] = {}


@getter("active_tab_html_parse", HtmlParseOptions)
def active_tab_html_parse(ctx: Context, o: HtmlParseOptions, where: str) -> dict[str, str] | None:
    """Texts from the active tab's live document, by OSWorld's categories: elements of a class (the
    first, or by rank), the first node of an XPath, an input's value, an element whose text holds a label.
    Each found text is stored under the key the task names."""
    spec = o.model_dump(exclude={"goto_prefix"})
    found: dict[str, str] | None = devtools(ctx, {"op": "query", "function": _QUERY_FUNCTION, "spec": spec}, where)
    return found


class PageOptions(_Options):
    url: StrictStr
    timeout: float = 30


@getter("page_info", PageOptions)
def page_info(ctx: Context, o: PageOptions, where: str) -> dict[str, str] | None:
    """Opens ``url`` in a new tab, waits for it to load (at most ``timeout`` s), and returns its
    ``{"title", "url", "content"}``; the tab is closed again."""
    wait = min(o.timeout, 120)
    info: dict[str, str] | None = devtools(ctx, {"op": "open", "url": o.url, "timeout": wait}, where, timeout=wait + 30)
    return info
