"""E-book metric: OSWorld's ``compare_epub`` (``others.py``).

An EPUB is a zip archive. Its text members are compared line by line as ``diff_text_file`` does
(``difflib`` ratio of the line lists), after the normalisation OSWorld applies: ``toc.ncx`` without the
lines that name a ``navPoint``, ``content.opf`` without the ``dc:identifier`` lines (a fresh UUID in
every conversion), and each ``.html`` member re-serialised by lxml's HTML parser and pretty-printer with
its line breaks removed first, so that only the markup counts, not how it was wrapped. The members
are paired in name order; the score is the mean ratio over the result's members.

OSWorld writes the normalised members under ``<result>.dir/`` by their member names; osgym keeps them
in memory, so a member in a sub-folder is compared too (OSWorld cannot open the file it would write
there) and a member name with ``..`` writes nothing anywhere.

>>> _lines("content.opf", b'<metadata>\\n<dc:identifier>urn:uuid:1</dc:identifier>\\n<dc:title>T</dc:title>')
['<metadata>', '<dc:title>T</dc:title>']
>>> _lines("c.html", b"<p>a\\n b</p>")
['<p>a b</p>']
"""

from __future__ import annotations

import difflib
import zipfile

import lxml.etree
import lxml.html

from osgym.tasks.metrics import metric
from osgym.tasks.metrics._files import MAX_UNPACKED

__all__ = ["compare_epub"]

MAX_MEMBERS = 10_000  # an e-book listing more entries than this is refused
DROPPED = {"toc.ncx": "navPoint", "content.opf": "dc:identifier"}  # member -> lines holding this are left out


def _lines(name: str, data: bytes) -> list[str]:
    """The normalised lines of member ``name``.

    Raises:
        UnicodeDecodeError: if it is not UTF-8.
        lxml.etree.LxmlError: if an HTML member holds no markup at all.
    """
    text = data.decode()
    if name in DROPPED:
        return [line for line in text.splitlines() if DROPPED[name] not in line]
    # Line breaks go before parsing (OSWorld's normalisation): text wrapped differently parses the same.
    flat = text.replace("\n", "").replace("\r", "")
    tree = lxml.html.fromstring(flat.encode())
    out: str = lxml.html.tostring(tree, pretty_print=True, encoding="unicode")
    return out.splitlines()


def _members(path: str) -> list[list[str]] | None:
    """The normalised members of the e-book at ``path`` in name order (``None``: not a readable e-book)."""
    try:
        with zipfile.ZipFile(path) as z:
            infos = z.infolist()
            if len(infos) > MAX_MEMBERS or sum(i.file_size for i in infos) > MAX_UNPACKED:
                return None
            names = [n for n in DROPPED if n in z.NameToInfo]
            names += [i.filename for i in infos if i.filename.endswith(".html")]
            return [_lines(n, z.read(n)) for n in sorted(names)]
    except (OSError, zipfile.BadZipFile, ValueError, lxml.etree.LxmlError):
        # ValueError covers UnicodeDecodeError and lxml's refusals of odd input
        return None


@metric("compare_epub", files=True)
def compare_epub(result: str | None, expected: str) -> float:
    """The mean line similarity of the result e-book's members to the expected one's, paired in name
    order (``toc.ncx``, ``content.opf`` and the ``.html`` chapters); 0 for no file or one that is not a
    readable e-book.

    Raises:
        ValueError: if the expected file is not a readable e-book.
    """
    if result is None:
        return 0.0
    gold = _members(expected)
    if gold is None:
        raise ValueError(f"compare_epub: the expected file {expected!r} is not a readable e-book")
    mine = _members(result)
    if not mine:
        return 0.0
    return sum(difflib.SequenceMatcher(a=a, b=b).ratio() for a, b in zip(mine, gold, strict=False)) / len(mine)
