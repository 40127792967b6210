"""HTML file metric: OSWorld's ``compare_htmls`` (``chrome.py``).

OSWorld parses both files with BeautifulSoup on lxml's HTML parser and walks the two trees in document
order, pair by pair: two strings must be equal; two elements must have the same name, the same text
(stripped) and the same attributes. osgym builds the same tree from the same parser's events (lxml's
parser-target interface), applying what BeautifulSoup does to them on the way:

* consecutive text events are one string; a string of ASCII whitespace only becomes ``"\\n"`` if it
  holds a line break, else ``" "`` (not inside ``pre`` or ``textarea``);
* ``class`` and the other attributes HTML defines as space-separated lists compare as lists of words;
* an element's text is its descendants' text, less comments and the doctype, and less the contents of
  ``script``, ``style``, ``template``, ``rt`` and ``rp`` (unless the element is one of those: then only
  that contents).

>>> [n.name or n.string for n in _nodes('<p class="a  b">x<!--c--></p>')]
['html', 'body', 'p', 'x', 'c']
>>> _nodes('<p class="a  b">x<!--c--></p>')[2].attrs
{'class': ['a', 'b']}
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import lxml.etree
from pydantic import BaseModel, ConfigDict, StrictBool

from osgym.tasks.metrics import metric

__all__ = ["compare_htmls"]

MAX_BYTES = 64 * 2**20  # an HTML file larger than this is refused; a spreadsheet exported as HTML is far smaller
ASCII_SPACES = " \n\t\f\r"
PRESERVE_WHITESPACE = {"pre", "textarea"}
# Tags whose strings BeautifulSoup keeps apart from the page's text (its string-container classes).
CONTAINERS = {"rt", "rp", "style", "script", "template"}
# Attributes HTML defines as space-separated lists, per tag ("*": any), as BeautifulSoup splits them.
LIST_ATTRIBUTES = {"*": {"class", "accesskey", "dropzone"}, "a": {"rel", "rev"}, "link": {"rel", "rev"},
                   "td": {"headers"}, "th": {"headers"}, "form": {"accept-charset"}, "object": {"archive"},
                   "area": {"rel"}, "icon": {"sizes"}, "iframe": {"sandbox"}, "output": {"for"}}
WORDS = re.compile(r"\S+")


@dataclass(eq=False)
class _Node:
    """An element (``name`` set) or a string (``string`` set, ``kind``: the container tag it is in,
    ``""`` for page text, ``"!"`` for a comment, doctype or processing instruction)."""

    name: str | None = None
    attrs: dict[str, str | list[str]] = field(default_factory=dict)
    children: list[_Node] = field(default_factory=list)
    string: str | None = None
    kind: str = ""

    def text(self) -> str:
        own = self.name if self.name in CONTAINERS else ""
        return "".join(n.string or "" for n in _walk(self.children) if n.string is not None and n.kind == own)


def _walk(nodes: list[_Node]) -> list[_Node]:
    out: list[_Node] = []
    stack = list(reversed(nodes))
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(reversed(node.children))
    return out


class _Builder:
    """lxml parser target that builds the tree BeautifulSoup would from the same events."""

    def __init__(self) -> None:
        self.root = _Node(name="[document]")
        self.open = [self.root]
        self.pending: list[str] = []

    def _flush(self, kind: str | None = None) -> None:
        if not self.pending:
            return
        text = "".join(self.pending)
        self.pending = []
        names = [n.name for n in self.open]
        if not PRESERVE_WHITESPACE.intersection(names) and not text.strip(ASCII_SPACES):
            text = "\n" if "\n" in text else " "
        if kind is None:
            kind = next((n for n in reversed(names) if n in CONTAINERS), "")
        self.open[-1].children.append(_Node(string=text, kind=kind))

    def start(self, tag: str, attrib: dict[str, str], nsmap: object = None) -> None:
        self._flush()
        attrs: dict[str, str | list[str]] = dict(attrib)
        lists = LIST_ATTRIBUTES["*"] | LIST_ATTRIBUTES.get(tag.lower(), set())
        for key in lists & attrs.keys():
            attrs[key] = WORDS.findall(str(attrs[key]))
        node = _Node(name=tag, attrs=attrs)
        self.open[-1].children.append(node)
        self.open.append(node)

    def end(self, tag: str) -> None:
        self._flush()
        if len(self.open) > 1:
            self.open.pop()

    def data(self, data: str) -> None:
        self.pending.append(data)

    def _special(self, text: str) -> None:
        self._flush()
        self.pending.append(text)
        self._flush("!")

    def comment(self, text: str) -> None:
        self._special(text)

    def pi(self, target: str, data: str | None = None) -> None:
        self._special(f"{target} {data or ''}")

    def doctype(self, name: str | None, pubid: str | None, system: str | None) -> None:
        text = name or ""
        if pubid is not None:
            text += f' PUBLIC "{pubid}"' + (f' "{system}"' if system is not None else "")
        elif system is not None:
            text += f' SYSTEM "{system}"'
        self._special(text)

    def close(self) -> _Node:
        self._flush()
        return self.root


def _nodes(text: str) -> list[_Node]:
    """The document's elements and strings in document order.

    Raises:
        lxml.etree.LxmlError: if lxml finds no document at all.
    """
    builder = _Builder()
    parser = lxml.etree.HTMLParser(target=builder, recover=True)
    parser.feed(text)
    root: _Node = parser.close()
    return _walk(root.children)


def _read(path: str) -> list[_Node] | None:
    """The nodes of the HTML file at ``path`` (``None``: missing, too large, not UTF-8 or no HTML)."""
    try:
        p = Path(path)
        if p.stat().st_size > MAX_BYTES:
            return None
        return _nodes(p.read_bytes().decode("utf-8"))
    except (OSError, ValueError, lxml.etree.LxmlError):  # ValueError covers UnicodeDecodeError
        return None


class HtmlOptions(BaseModel):
    """``ignore_sdnum``: elements whose attributes differ only in LibreOffice's ``sdnum`` (a cell's number
    format) still match."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    ignore_sdnum: StrictBool = False


def _same(a: _Node, b: _Node, ignore_sdnum: bool) -> bool:
    if a.name is None or b.name is None:
        return a.name is None and b.name is None and a.string == b.string
    if a.name != b.name or a.text().strip() != b.text().strip():
        return False
    if ignore_sdnum:
        return {k: v for k, v in a.attrs.items() if k != "sdnum"} == {k: v for k, v in b.attrs.items() if k != "sdnum"}
    return a.attrs == b.attrs


@metric("compare_htmls", HtmlOptions, files=True)
def compare_htmls(result: str | None, expected: str, options: HtmlOptions) -> float:
    """1 if every element and string of the result page matches the expected page's in document order and
    neither page has more; 0 otherwise, or for no file, or one that is not UTF-8 HTML. (OSWorld compares
    as far as the shorter page goes, so an empty file matches any page there.)

    Raises:
        ValueError: if the expected file is not UTF-8 HTML.
    """
    if result is None:
        return 0.0
    gold = _read(expected)
    if gold is None:
        raise ValueError(f"compare_htmls: the expected file {expected!r} is not UTF-8 HTML")
    mine = _read(result)
    if mine is None:
        return 0.0
    if len(mine) != len(gold):
        return 0.0
    return float(all(_same(a, b, options.ignore_sdnum) for a, b in zip(mine, gold, strict=True)))
