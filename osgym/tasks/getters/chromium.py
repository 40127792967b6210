"""Chromium's tabs through the DevTools protocol, from inside the replica (apps tier).

DevTools is asked from inside the replica (:mod:`osgym.tasks.devtools`). What a task names (a URL,
selectors) reaches it as one JSON argument, never spliced into code; in the page, selectors are data
handed to a fixed function (:data:`_QUERY_FUNCTION`).

OSWorld reads the active tab's URL from the address bar's accessible text (``goto_prefix`` plus
what the omnibox shows) and reloads pages with Playwright. osgym asks DevTools: the active tab is
the page target used last (DevTools lists targets most recently active first), its URL is shown the
way the omnibox elides it (:func:`omnibox_text`), and its HTML is the live document, not a reload
(replicas are offline; the live DOM is what the agent left).
"""

from __future__ import annotations

from typing import Any, Literal
from urllib.parse import parse_qs, urlparse

from pydantic import BaseModel, ConfigDict, StrictBool, StrictStr

from osgym.errors import EvaluatorError
from osgym.tasks.devtools import NO_BROWSER, ask
from osgym.tasks.getters import Context, getter

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
    """:func:`osgym.tasks.devtools.ask` for a getter: its answer, or ``missing`` when Chromium is not
    running (the agent may have closed it), which scores 0 as OSWorld's getters do (they return an
    empty list or None), not an evaluator error.

    Raises:
        EvaluatorError: naming ``where``, if the program fails or DevTools answers something unusable.
    """
    answer = ask(ctx.replica, request, where=where, error=EvaluatorError, timeout=timeout)
    return missing if answer is NO_BROWSER else answer


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
