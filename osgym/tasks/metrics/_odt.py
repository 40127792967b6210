"""Reading an OpenDocument text (``.odt``) as OSWorld's document metrics do with odfpy: the paragraphs of
content.xml, then those of styles.xml (the page styles' headers and footers), each paragraph's own text
and that of its direct spans. Shared by :mod:`.docs` (``compare_docx_files``) and :mod:`.docs_marks`."""

from __future__ import annotations

import zipfile
from xml.etree import ElementTree

TEXT_NS = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"


def odt_parts(path: str) -> list[ElementTree.Element]:
    """The roots of an OpenDocument file's content.xml and (if present) styles.xml, in that order: the
    order odfpy loads them in, so the body's paragraphs come before the headers' and footers'.

    Raises:
        KeyError: if the file has no content.xml (it is no OpenDocument file).
        ElementTree.ParseError: if a part is not XML.
    """
    with zipfile.ZipFile(path) as z:
        roots = [ElementTree.fromstring(z.read("content.xml"))]
        if "styles.xml" in z.namelist():  # headers and footers, and their automatic styles
            roots.append(ElementTree.fromstring(z.read("styles.xml")))
    return roots


def odt_paragraph(p: ElementTree.Element) -> str:
    """A paragraph's text as OSWorld reads it: its own text and that of its direct spans (nested spans,
    links, and spaces written as ``text:s`` are left out)."""
    parts = [p.text or ""]
    for child in p:
        if child.tag == f"{{{TEXT_NS}}}span":
            parts.append(child.text or "")
            parts.extend(inner.tail or "" for inner in child)
        parts.append(child.tail or "")
    return "".join(parts)


def odt_paragraphs(path: str) -> list[str]:
    """Every paragraph's text, the body's first, then the headers' and footers'.

    Raises:
        KeyError, OSError, zipfile.BadZipFile: if the file is no readable OpenDocument file.
        ValueError: if one of its parts is not XML.
    """
    try:
        parts = odt_parts(path)
    except ElementTree.ParseError as exc:
        raise ValueError(f"{path}: {exc}") from exc
    return [odt_paragraph(p) for root in parts for p in root.iter(f"{{{TEXT_NS}}}p")]
