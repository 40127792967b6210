"""Building blocks of osgym's HTML pages: the stylesheet, and a table with formatted, escaped cells."""

from __future__ import annotations

import html
from collections.abc import Mapping

import pyarrow as pa

from osgym.analysis.report.tables import format_value, is_numeric

CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px auto;max-width:1100px;color:#222}
h1{margin-bottom:4px}h2{margin-top:32px;border-bottom:1px solid #ddd;padding-bottom:4px}
table{border-collapse:collapse;font-size:13px;margin:8px 0}
th,td{border:1px solid #ddd;padding:3px 8px;vertical-align:top}th{background:#f4f4f4;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.cards{display:flex;flex-wrap:wrap;gap:10px}.card{border:1px solid #ddd;border-radius:6px;padding:8px 14px}
.card b{display:block;font-size:20px}.muted{color:#777;font-size:13px}
img.chart{max-width:100%;border:1px solid #eee}
pre{background:#f6f6f6;padding:6px;white-space:pre-wrap;word-break:break-word;font-size:12px}
.step{border-top:1px solid #ddd;padding:12px 0}.step img{max-width:100%;border:1px solid #ccc}
"""


def html_table(table: pa.Table, links: Mapping[str, str] | None = None) -> str:
    """An HTML table of ``table``, cells formatted and escaped; a cell equal to a key of ``links`` links there."""
    numeric = {f.name for f in table.schema if is_numeric(f.type)}
    head = "".join(f"<th>{html.escape(n)}</th>" for n in table.column_names)
    body = []
    for row in table.to_pylist():
        cells = []
        for n in table.column_names:
            text = html.escape(format_value(n, row[n]))
            if links and isinstance(row[n], str) and row[n] in links:
                text = f'<a href="{html.escape(links[row[n]])}">{text}</a>'
            cells.append(f'<td class="num">{text}</td>' if n in numeric else f"<td>{text}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
