"""What the LibreOffice suites (apps-spreadsheet, apps-documents, apps-presentations) share: input and
expected files built at generation time with the same bytes for the same seed, and oracle fragments
for LibreOffice's menus and dialogs.

Oracles drive LibreOffice by keys only, so they survive windows that move or change size. A key
that opens a menu or a dialog is followed by a wait for that menu item or dialog control before the
next key: LibreOffice's GTK menus and dialogs map asynchronously, and a key sent before they show goes
to the document instead. Keys inside the document (moving the cell cursor, Ctrl+B) need no wait:
LibreOffice handles them in order. Keys Ctrl+F1..F12 are never used: the window manager takes them.
"""

from __future__ import annotations

import io
import re
import zipfile
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from openpyxl.utils import get_column_letter

from osgym.suites.apps_smoke.common import docx_bytes
from osgym.suites.generators import execute, op, q

FIXED_TIME = (1980, 1, 1, 0, 0, 0)
LO_EXPECTED_PROFILE = "file:///tmp/osgym-lo-expected"
"""The LibreOffice user profile of an evaluator's headless conversion: its own, so that it runs beside
the agent's LibreOffice instead of handing the file to it."""


def fixed_zip(data: bytes) -> bytes:
    """An OOXML package rewritten with fixed member timestamps and document dates, so that the same
    content gives the same bytes (a variant's task JSON must not change from one generation to the next).

    >>> import openpyxl
    >>> a = openpyxl.Workbook(); b = io.BytesIO(); a.save(b)
    >>> fixed_zip(b.getvalue()) == fixed_zip(fixed_zip(b.getvalue()))
    True
    """
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for name in sorted(src.namelist()):
            body = src.read(name)
            if name == "docProps/core.xml":
                body = re.sub(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z?", b"2024-01-01T00:00:00Z", body)
            dst.writestr(zipfile.ZipInfo(name, date_time=FIXED_TIME), body, compress_type=zipfile.ZIP_DEFLATED)
    return out.getvalue()


_XLSX_PARTS = {
    "[Content_Types].xml": (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
        '<Override PartName="/xl/workbook.xml" '
        'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
        '<Override PartName="/xl/worksheets/sheet1.xml" '
        'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>'),
    "_rels/.rels": (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
        'officeDocument" Target="xl/workbook.xml"/></Relationships>'),
    "xl/_rels/workbook.xml.rels": (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
        'worksheet" Target="worksheets/sheet1.xml"/></Relationships>'),
}
_SHEET_NS = ('xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" '
             'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"')


def xlsx_bytes(rows: list[list[Any]], sheet: str = "Sheet1") -> bytes:
    """The smallest workbook holding ``rows`` from A1 on one sheet (texts as inline strings, numbers as
    numbers), deterministic bytes; written directly, as openpyxl takes ~30 ms a workbook.

    >>> import openpyxl
    >>> wb = openpyxl.load_workbook(io.BytesIO(xlsx_bytes([["Name", "Qty"], ["fig & co", 3.5]], "Stock")))
    >>> wb.sheetnames, [[c.value for c in r] for r in wb.active.iter_rows()]
    (['Stock'], [['Name', 'Qty'], ['fig & co', 3.5]])
    """
    def cell_xml(ref: str, v: Any) -> str:
        if isinstance(v, bool) or not isinstance(v, int | float):
            return f'<c r="{ref}" t="inlineStr"><is><t xml:space="preserve">{escape(str(v))}</t></is></c>'
        return f'<c r="{ref}"><v>{v!r}</v></c>'

    data = "".join(f'<row r="{i}">' + "".join(cell_xml(f"{get_column_letter(j)}{i}", v)
                                              for j, v in enumerate(row, start=1)) + "</row>"
                   for i, row in enumerate(rows, start=1))
    parts = {**_XLSX_PARTS,
             "xl/workbook.xml": ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
                                 f'<workbook {_SHEET_NS}><sheets><sheet name={quoteattr(sheet)} sheetId="1" '
                                 'r:id="rId1"/></sheets></workbook>'),
             "xl/worksheets/sheet1.xml": ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
                                          f'<worksheet {_SHEET_NS}><sheetData>{data}</sheetData></worksheet>')}
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text in parts.items():
            z.writestr(zipfile.ZipInfo(name, date_time=FIXED_TIME), text, compress_type=zipfile.ZIP_DEFLATED)
    return buf.getvalue()


def cell(coordinate: str, value: object, method: str = "eq", **style: object) -> dict[str, Any]:
    """A ``compare_table`` rule: the first sheet's cell holds ``value`` (and the given style properties)."""
    props: dict[str, Any] = {"value": {"method": method, "ref": value}}
    props.update({k: {"method": "eq", "ref": v} for k, v in style.items()})
    return {"type": "check_cell", "sheet_idx": 0, "coordinate": coordinate, "props": props}


def menu(window: str, keys: list[str], item: str, role: str = "menu-item") -> list[dict[str, Any]]:
    """Open a menu by its access key (``keys``, e.g. ``["alt", "d"]``) and wait until ``item`` (of ``role``;
    ``menu`` for a submenu) shows in it."""
    return [op("hotkey", keys=keys), op("wait_enabled", window=window, control=item, role=role, timeout=30)]


def dialog_ok(window: str, button: str = "OK") -> list[dict[str, Any]]:
    """Confirm a dialog with Enter once its default ``button`` is shown and sensitive, and wait for it to go."""
    return [op("wait_enabled", window=window, control=button, timeout=60), op("press", key="enter"),
            op("wait_gone", title=window, timeout=60)]


def file_dialog(title: str, button: str, path: str) -> list[dict[str, Any]]:
    """Fill a GTK file chooser titled ``title`` once it has the focus: the full path in its name field, then
    ``button`` by Enter once GTK has made it sensitive (it ignores Enter for 150 ms after the last keystroke)."""
    return [op("wait_window", title=title, focused=True, timeout=60), op("hotkey", keys=["ctrl", "a"]),
            op("type", text=path),
            op("wait_enabled", window=title, control=button, timeout=30), op("press", key="enter")]


def dialog_closed(dialog: str, window: str) -> list[dict[str, Any]]:
    """Wait until the dialog titled ``dialog`` has gone and the focus is back on ``window``: the window
    manager hands it back a moment after the dialog unmaps, and a key in between goes to no window (a quiet
    run lost a Ctrl+Shift+S right after Insert Image closed)."""
    return [op("wait_gone", title=dialog, timeout=60), op("wait_window", title=window, focused=True, timeout=30)]


def unlocked(path: str, timeout_s: int = 60) -> dict[str, Any]:
    """A postconfig step that waits while LibreOffice still writes ``path`` (its lock file is there):
    an export leaves no mark on screen when it ends, so the evaluator, not the agent, waits for it."""
    folder, name = path.rsplit("/", 1)
    lock = f"{folder}/.~lock.{name}#"
    return execute(f"for i in $(seq {timeout_s * 5}); do [ -e {q(lock)} ] || exit 0; sleep 0.2; done; exit 0")


def convert_expected(source: str, fmt: str, folder: str) -> dict[str, Any]:
    """A postconfig step converting ``source`` (an expected input kept beside the expected files) with a
    headless LibreOffice of its own profile, into ``folder``; a first start takes ~30 s on a loaded host."""
    step = execute(f"soffice -env:UserInstallation={LO_EXPECTED_PROFILE} --headless --convert-to {q(fmt)} "
                   f"--outdir {q(folder)} {q(source)} >/dev/null 2>&1 && "
                   f"test -s {q(source.rsplit('.', 1)[0] + '.' + fmt.split(':')[0])}")
    step["parameters"]["timeout"] = 240
    return step


def docx_with_table(paragraphs: list[str], table: list[list[str]]) -> bytes:
    """A Word document of ``paragraphs`` followed by ``table`` (rows of cell texts), deterministic bytes.

    >>> from docx import Document
    >>> d = Document(io.BytesIO(docx_with_table(["Title"], [["A", "B"], ["1", "2"]])))
    >>> [p.text for p in d.paragraphs], [[c.text for c in r.cells] for r in d.tables[0].rows]
    (['Title'], [['A', 'B'], ['1', '2']])
    """
    def par(text: str) -> str:
        return f'<w:p><w:r><w:t xml:space="preserve">{escape(text)}</w:t></w:r></w:p>'

    grid = "".join("<w:gridCol/>" for _ in table[0])
    rows = "".join("<w:tr>" + "".join(f"<w:tc>{par(c)}</w:tc>" for c in row) + "</w:tr>" for row in table)
    return docx_with_body("".join(par(p) for p in paragraphs) + f"<w:tbl><w:tblGrid>{grid}</w:tblGrid>{rows}</w:tbl>")


def docx_with_body(body: str) -> bytes:
    """The smallest Word package with ``body`` (WordprocessingML inside ``<w:body>``), deterministic bytes."""
    base = docx_bytes([""])
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(base)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for name in src.namelist():
            data = src.read(name)
            if name == "word/document.xml":
                head, _, _ = data.decode().partition("<w:body>")
                data = f"{head}<w:body>{body}</w:body></w:document>".encode()
            dst.writestr(zipfile.ZipInfo(name, date_time=FIXED_TIME), data, compress_type=zipfile.ZIP_DEFLATED)
    return out.getvalue()


ODF_NAMESPACES = ('xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
                  'xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" '
                  'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.3"')
"""The namespaces of an OpenDocument text's content.xml and styles.xml root elements."""
_ODF_MANIFEST = ('<?xml version="1.0" encoding="UTF-8"?><manifest:manifest '
                 'xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.3">'
                 '<manifest:file-entry manifest:full-path="/" '
                 'manifest:media-type="application/vnd.oasis.opendocument.text"/>'
                 '<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>'
                 '<manifest:file-entry manifest:full-path="styles.xml" manifest:media-type="text/xml"/>'
                 '</manifest:manifest>')


def odt_package(content: str, styles: str) -> bytes:
    """An OpenDocument text package of ``content`` (content.xml) and ``styles`` (styles.xml): the mimetype
    first and stored, as ODF requires; the same bytes for the same text."""
    parts = {"mimetype": "application/vnd.oasis.opendocument.text", "content.xml": content, "styles.xml": styles,
             "META-INF/manifest.xml": _ODF_MANIFEST}
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, text in parts.items():
            how = zipfile.ZIP_STORED if name == "mimetype" else zipfile.ZIP_DEFLATED
            z.writestr(zipfile.ZipInfo(name, date_time=FIXED_TIME), text, compress_type=how)
    return buf.getvalue()
