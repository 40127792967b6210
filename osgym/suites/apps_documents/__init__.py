"""The ``apps-documents`` suite: LibreOffice Writer tasks on the ``apps`` tier: formatting, tables, headers
and footers, line spacing, find and replace, and PDF export, evaluated by OSWorld's document metrics
(``is_first_line_centered``, ``evaluate_strike_through_last_paragraph``, ``compare_docx_tables``,
``compare_docx_files``, ``compare_line_spacing``, ``compare_pdfs``, ``check_pdf_pages``).

Setup writes a Word document into ``~/Documents`` and opens it; the evaluator's postconfig writes the
expected document after the agent has finished (a PDF export's expected file is the same input
exported by a headless LibreOffice of its own profile). Oracles use Writer's shortcuts and its menus
by access keys and arrows, waiting for each menu item or dialog button before the next key.
"""

from __future__ import annotations

from osgym.suites.apps_documents.pages import doc_find_replace, doc_header_footer, doc_line_spacing
from osgym.suites.apps_documents.writer import (
    doc_export_pdf,
    doc_insert_table,
    doc_sign_export_pdf,
    doc_strike_center,
)
from osgym.suites.generators import Template

NAME = "apps-documents"
TIER = "apps"
"""A recipe of this suite must ask for ``tier: apps``."""
DESCRIPTION = "LibreOffice Writer: formatting, tables, headers, find and replace, PDF export (needs tier: apps)."

TEMPLATES: list[Template] = [
    Template("doc-export-pdf", "libreoffice_writer", "export a document as PDF from the File menu", doc_export_pdf,
             difficulty=1),
    Template("doc-strike-center", "libreoffice_writer", "center the title, strike through the last paragraph",
             doc_strike_center, difficulty=2),
    Template("doc-insert-table", "libreoffice_writer", "insert a table from the Table menu and fill it in",
             doc_insert_table, difficulty=2),
    Template("doc-sign-export-pdf", "libreoffice_writer", "add a closing paragraph, then export as PDF",
             doc_sign_export_pdf, difficulty=2),
    Template("doc-header-footer", "libreoffice_writer", "add a page header and/or footer from the Insert menu",
             doc_header_footer, difficulty=2),
    Template("doc-line-spacing", "libreoffice_writer", "set the line spacing of the text from the Format menu",
             doc_line_spacing, difficulty=1),
    Template("doc-find-replace", "libreoffice_writer", "replace a word everywhere with Find and Replace",
             doc_find_replace, difficulty=2),
]
