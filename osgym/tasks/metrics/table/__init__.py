"""Spreadsheet and CSV metrics, after OSWorld's ``compare_table`` and ``compare_csv``.

``compare_table`` reads the agent's workbook (``result``) and, when given, a golden one
(``expected``), then checks ``options.rules`` in order; the score is 1.0 only if every rule passes.
A rule names sheets as OSWorld does: an ``int`` or ``"RI<n>"`` is the n-th sheet of the result,
``"RN<name>"`` the result's sheet by name, ``"EI<n>"`` / ``"EN<name>"`` the expected workbook's.

Rule types (``type``):

- ``sheet_name``: both workbooks have the same sheet names in the same order.
- ``sheet_data``: two sheets hold the same table (pandas, first row as header), numbers rounded to
  ``precision`` decimals (default 4). ``ignore_case`` is accepted and changes nothing, as in OSWorld.
- ``sheet_print``: two sheets print the same: the ``<book>-<sheet>.csv`` files exported beside each
  workbook have the same lines, trailing blank lines dropped (``ignore_case`` optional).
- ``sheet_fuzzy``: cell by cell over ranges, after optional normalisation, one sheet's text
  ``includes``, is ``included_by``, ``exact_match``-es or ``fuzzy_match``-es (rapidfuzz ratio >=
  ``threshold``) the other's.
- ``freeze``: two sheets have the same frozen panes.
- ``zoom``: a sheet's zoom (100 when unset) passes a value rule (see :mod:`.rules`).
- ``check_cell``: a cell's ``value`` and style properties each pass a value rule.
- ``data_validation``: every data validation of a sheet matches one of ``dv_props``, and there are at
  least as many validations as entries in ``dv_props``. Its attributes are openpyxl's (``sqref`` or
  ``ranges`` for the cells it covers, ``type``, ``formula1``...).
- ``row_props`` / ``col_props``: two sheets' row or column dimensions agree on ``props``.
- ``chart``: two sheets have charts over the same data ranges, agreeing on ``chart_props``
  (``title legend anchor width height type direction xtitle ytitle ztitle``).
- ``filter``: two sheets have the same auto-filter: range, filtered columns and sort state.
- ``style``: every cell of two sheets agrees on the style properties ``props`` (those of
  ``check_cell``), as shown: a cell that a conditional format highlights takes that format's style.
  Conditional formats of type ``cellIs`` comparing with a number or a quoted text are evaluated;
  any other kind raises ``ValueError`` when the rule is checked (OSWorld evaluates formulas with a
  spreadsheet engine).
- ``sparkline``: two sheets have the same sparklines (each cell's sparkline and its data range).
- ``pivot_table``: two sheets have pivot tables over the same data sources, agreeing on
  ``pivot_props`` (see :mod:`._pivot`).

A rule that names a sheet the workbook lacks fails. (For ``filter``, ``row_props``, ``col_props`` and
``pivot_table`` OSWorld reads such a sheet as holding nothing, so there two missing sheets agree.)

The rules' models are in :mod:`._options`, how each reads and compares its sheets in :mod:`._checks`,
the workbook reader and the sheet-index notation in :mod:`._book`.

Cell values are read as OSWorld reads them from the file: the value the spreadsheet program last
computed (not the formula), numbers and dates as floats (dates as Excel serial numbers). Where
OSWorld's reader fails, these read something comparable instead: booleans read as ``True``/``False``
(OSWorld: nothing), a chart's one-cell anchor as ``None`` parts (OSWorld raises), a hyperlink as its
target (OSWorld: an object no rule can match).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openpyxl
from pydantic import BaseModel, ConfigDict, StrictBool

from osgym.tasks.metrics import metric
from osgym.tasks.metrics._files import too_big
from osgym.tasks.metrics.table._book import UNREADABLE, Book, Pair, quiet, read_text
from osgym.tasks.metrics.table._checks import passes
from osgym.tasks.metrics.table._options import TableOptions

__all__ = ["CsvOptions", "TableOptions", "compare_conference_city_in_order", "compare_csv", "compare_table"]


@metric("compare_table", TableOptions, files=True)
def compare_table(result: str | None, expected: str | None, options: TableOptions) -> float:
    """1.0 if the result workbook passes every rule (module docstring); 0.0 if missing, unreadable or too big.

    Raises:
        ValueError: if the expected workbook cannot be read, or a rule names it and the task gives none.
    """
    if result is None or not Path(result).is_file() or too_big(result):
        return 0.0
    try:
        book = Book(result)
    except UNREADABLE:
        return 0.0  # the agent left something that is not a workbook: a failed task, not a broken evaluator
    gold = None
    if expected is not None:
        try:
            gold = Book(expected)
        except UNREADABLE as exc:
            raise ValueError(f"expected workbook {expected} cannot be read: {exc}") from exc
    pair = Pair(book, gold)
    return 1.0 if all(passes(rule, pair) for rule in options.rules) else 0.0


class CsvOptions(BaseModel):
    """``strict`` (default true): compare lines as they are, else stripped; ``ignore_case``: lower-case both."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    strict: StrictBool = True
    ignore_case: StrictBool = False


@metric("compare_csv", CsvOptions, files=True)
def compare_csv(result: str | None, expected: str | list[str] | None, options: CsvOptions) -> float:
    """1.0 if the result CSV has the same lines as the expected file (or as any one of a list of them).

    Raises:
        ValueError: if no expected file is given.
    """
    if result is None:
        return 0.0
    if expected is None:
        raise ValueError("compare_csv needs an expected file")
    try:
        got = _csv_lines(result, options)
    except OSError:
        return 0.0
    for path in [expected] if isinstance(expected, str) else expected:
        try:
            if got == _csv_lines(path, options):
                return 1.0
        except OSError:
            continue  # OSWorld skips a missing alternative
    return 0.0


def _csv_lines(path: str, options: CsvOptions) -> list[str]:
    lines = read_text(Path(path)).splitlines()
    if not options.strict:
        lines = [s.strip() for s in lines]
    if options.ignore_case:
        lines = [s.lower() for s in lines]
    return lines


class CityRules(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    expected: list[str | list[str]]


@metric("compare_conference_city_in_order", rules=CityRules, files=True)
def compare_conference_city_in_order(result: str | None, rules: dict[str, Any]) -> float:
    """1.0 if each of cells C2:C22 of the active sheet contains its expected city, in order.

    ``rules["expected"]`` lists one entry per cell: a text the cell must contain, or a list of texts
    of which it must contain one. A missing entry or an empty cell scores 0, as in OSWorld.
    """
    if result is None or too_big(result):
        return 0.0
    try:
        with quiet():
            ws = openpyxl.load_workbook(result).active
    except UNREADABLE:
        return 0.0
    if ws is None:
        return 0.0
    want = rules["expected"]
    got = [c.value for row in ws["C2:C22"] for c in row]
    if len(want) < len(got):
        return 0.0
    for cell, city in zip(got, want, strict=False):
        options = [city] if isinstance(city, str) else city if isinstance(city, list) else None
        if options is None or not isinstance(cell, str) or not any(o in cell for o in options):
            return 0.0
    return 1.0
