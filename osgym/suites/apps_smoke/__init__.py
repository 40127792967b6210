"""The ``apps-smoke`` suite: one short task per application family of the ``apps`` tier (LibreOffice
Calc and Writer, Chromium, xfce4-terminal, gedit), evaluated in OSWorld's task format with its metrics
(``compare_table``, ``compare_docx_files``, ...). Run it on ``tier: apps`` (``datasets/apps-smoke.yaml``).

Every template draws its names, words and numbers from a seeded RNG and carries a scripted oracle
that works the app as a person would: keys and the app's own dialogs, never the control API's
``/execute`` (the terminal task types its command into the terminal). Oracles wait for state, never a
fixed time: a window's title, a dialog button's sensitivity, and before typing into a freshly opened
app, its keyboard focus (``wait_focused``: LibreOffice maps its window ~0.6 s before it takes keys).
"""

from __future__ import annotations

from osgym.suites.apps_smoke.browser import chromium_fill_form
from osgym.suites.apps_smoke.office import calc_enter_table, writer_write_note
from osgym.suites.apps_smoke.system import gedit_append_line, terminal_count_matches
from osgym.suites.generators import Template

NAME = "apps-smoke"
TIER = "apps"
"""A recipe of this suite must ask for ``tier: apps`` (checked when it loads)."""
DESCRIPTION = "One task per app of the apps tier: Calc, Writer, Chromium, terminal, gedit (needs tier: apps)."

TEMPLATES: list[Template] = [
    Template("calc-enter-table", "libreoffice_calc", "type a small table with a SUM formula, save as .xlsx",
             calc_enter_table),
    Template("writer-write-note", "libreoffice_writer", "write three paragraphs, center the title, save as .docx",
             writer_write_note),
    Template("chromium-fill-form", "chrome", "fill in and send a form on a local page", chromium_fill_form),
    Template("terminal-count-matches", "terminal", "count matching lines with grep in xfce4-terminal",
             terminal_count_matches),
    Template("gedit-append-line", "editor", "add a line at the end of a file in gedit and save", gedit_append_line),
]
