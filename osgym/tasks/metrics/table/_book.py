"""Reading workbooks as OSWorld's table metrics read them, and its sheet-index notation over a pair of them."""

from __future__ import annotations

import contextlib
import datetime as dt
import warnings
import zipfile
from collections.abc import Iterator
from functools import cached_property
from pathlib import Path
from typing import Any

import openpyxl
import pandas as pd
from openpyxl.utils import get_column_letter
from openpyxl.utils.datetime import to_excel
from openpyxl.utils.exceptions import InvalidFileException
from openpyxl.worksheet.cell_range import CellRange

# Errors a damaged or foreign file raises while openpyxl or pandas read it.
UNREADABLE = (OSError, zipfile.BadZipFile, InvalidFileException, KeyError, ValueError, TypeError)


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """openpyxl warns that it drops parts it cannot model (sparklines, slicers); reading, we don't mind."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*extension is not supported", category=UserWarning)
        yield


class Book:
    """One workbook file, each view of it read once: formulas and styles, computed values, pandas frames."""

    def __init__(self, path: str):
        """Raises what openpyxl raises on a file that is not a workbook (see ``UNREADABLE``)."""
        self.path = path
        with quiet():
            self.styled = openpyxl.load_workbook(path)
        self.names: list[str] = list(self.styled.sheetnames)

    @cached_property
    def computed(self) -> openpyxl.Workbook:
        with quiet():
            return openpyxl.load_workbook(self.path, data_only=True)

    def frame(self, sheet: str) -> pd.DataFrame:
        with quiet():
            return pd.read_excel(self.path, sheet_name=sheet, engine="openpyxl")

    def value(self, sheet: str, coordinate: str) -> Any:
        """The computed value of a cell as OSWorld reads it: floats for numbers and dates, else the text."""
        v = self.computed[sheet][coordinate].value
        if isinstance(v, bool) or v is None or isinstance(v, str):
            return v
        if isinstance(v, dt.datetime | dt.date | dt.time | dt.timedelta):
            return float(to_excel(v))  # type: ignore[no-untyped-call]
        return float(v)

    def printed(self, sheet: str) -> list[str] | None:
        """The lines of the sheet's CSV export beside the workbook, stripped, trailing blank lines dropped."""
        csv = Path(f"{Path(self.path).with_suffix('')}-{sheet}.csv")
        try:
            lines = [line.strip() for line in read_text(csv).splitlines()]
        except OSError:
            return None
        while lines and not lines[-1]:
            lines.pop()
        return lines


def read_text(path: Path) -> str:
    """UTF-8 text, else Latin-1 (which reads any bytes), as OSWorld's CSV reader falls back."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


class Pair:
    """The result and expected workbooks, and OSWorld's sheet-index notation over them."""

    def __init__(self, result: Book, expected: Book | None):
        self.result, self.expected = result, expected

    def sheet(self, idx: int | str) -> tuple[Book, str] | None:
        """The workbook and sheet name ``idx`` names, or None if there is no such sheet.

        Raises:
            ValueError: if ``idx`` names the expected workbook and the task gives none.
        """
        book: Book | None = self.result
        key: int | str = idx
        if isinstance(idx, str):
            book = self.result if idx[0] == "R" else self.expected
            key = int(idx[2:]) if idx[1] == "I" else idx[2:]
        if book is None:
            raise ValueError(f"sheet {idx!r} is in the expected workbook, but the task gives no expected file")
        names = book.names
        if isinstance(key, int):
            return (book, names[key]) if key < len(names) else None
        return (book, key) if key in names else None


def coordinates(rng: CellRange) -> list[str]:
    """The cells of ``rng``, row by row.

    >>> coordinates(CellRange("A1:B2"))
    ['A1', 'B1', 'A2', 'B2']
    """
    return [f"{get_column_letter(col)}{row}" for row, col in rng.cells]
