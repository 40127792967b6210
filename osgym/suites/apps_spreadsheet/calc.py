"""apps-spreadsheet templates: each builds its input file, its instruction, a ``compare_table`` or
``compare_csv`` evaluator and a keyboard oracle."""

from __future__ import annotations

import random
from typing import Any

from osgym.replicas.accounts import AGENT_HOME as HOME
from osgym.suites.app_files import write_files
from osgym.suites.apps_smoke.common import DONE, NAMES, WORDS, open_app, save_as, unprefixed, write_expected
from osgym.suites.generators import op, vm_file
from osgym.suites.office import cell, dialog_ok, file_dialog, menu, xlsx_bytes

CALC = "LibreOffice Calc"
DOCS = f"{HOME}/Documents"
PRODUCTS = ["Apples", "Bread", "Candles", "Dates", "Eggs", "Flour", "Grapes", "Honey", "Ink", "Jam", "Kale",
            "Lamps", "Mugs", "Nails", "Oats", "Pens", "Quilts", "Rice", "Soap", "Tea", "Umbrellas", "Vases",
            "Wax", "Yarn", "Zips"]
PEOPLE = ["Alice", "Bruno", "Chen", "Dara", "Elif", "Farid", "Greta", "Hugo", "Ines", "Jonas", "Kemal", "Lena",
          "Mateo", "Nadia", "Oskar", "Priya", "Quinn", "Rosa", "Sven", "Tomas", "Uma", "Viktor", "Wanda", "Yusuf",
          "Zoe"]
CITIES = ["Lisbon", "Oslo", "Quito", "Perth", "Tunis", "Riga", "Lima", "Kyoto", "Dakar", "Hanoi", "Cork", "Bern"]


def _stem(rng: random.Random) -> str:
    return f"{rng.choice(NAMES)}-{rng.randint(100, 999)}"


def _right(n: int) -> list[dict[str, Any]]:
    return [op("press", key="right") for _ in range(n)]


def _down(n: int) -> list[dict[str, Any]]:
    return [op("press", key="down") for _ in range(n)]


def _ready(title: str) -> dict[str, Any]:
    """Wait until the sheet's cell cursor has the keyboard focus (Calc drops keys until then)."""
    return op("wait_focused", window=title, role="table-cell", timeout=90)


def _table_eval(path: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {"func": "compare_table", "result": vm_file(path), "options": {"rules": rules}}


def sheet_row_totals(rng: random.Random) -> dict[str, Any]:
    stem = _stem(rng)
    src, out = f"{DOCS}/{stem}.xlsx", f"{DOCS}/{stem}-totals.xlsx"
    head = rng.choice([("Item", "Price", "Qty"), ("Product", "Cost", "Units"), ("Article", "Rate", "Count")])
    n = rng.randint(3, 6)
    items = rng.sample(PRODUCTS, n)
    prices = [rng.randint(2, 400) / 4 for _ in items]  # quarters: exact in binary floating point
    qtys = [rng.randint(1, 60) for _ in items]
    rows: list[list[Any]] = [list(head), *([a, p, q] for a, p, q in zip(items, prices, qtys, strict=True))]
    last = n + 1
    totals = [p * q for p, q in zip(prices, qtys, strict=True)]
    typed = "Total\n" + "".join(f"=B{i}*C{i}\n" for i in range(2, last + 1)) + f"=SUM(D2:D{last})"
    rules = [cell("A2", items[0]), cell("D1", "Total"),
             *(cell(f"D{i}", t, "approx:0.001") for i, t in enumerate(totals, start=2)),
             cell(f"C{last + 1}", "Sum"), cell(f"D{last + 1}", sum(totals), "approx:0.001")]
    title = f"{stem}.xlsx - {CALC}"
    return {
        "instruction": f"The workbook ~/Documents/{stem}.xlsx is open in LibreOffice Calc. In column D add the "
                       f"header Total and, for each row, a formula for {head[1]} times {head[2]}. Below the last "
                       f"row put Sum in column C and a formula adding up the Total column in column D. Save the "
                       f"workbook in Excel format as ~/Documents/{stem}-totals.xlsx",
        "related_apps": ["libreoffice_calc"],
        "config": [write_files({src: xlsx_bytes(rows, rng.choice(["Sheet1", "Orders", "Stock"]))}),
                   *open_app(["libreoffice", "--calc", src], title)],
        "evaluator": _table_eval(out, rules),
        "oracle": [_ready(title), op("hotkey", keys=["ctrl", "Home"]), *_right(3), op("type", text=typed),
                   # Shift+Tab enters the sum and moves left, to the label's cell
                   op("hotkey", keys=["shift", "tab"]), op("type", text="Sum\n"), *save_as(out, CALC), DONE],
    }


def sheet_save_csv(rng: random.Random) -> dict[str, Any]:
    stem = _stem(rng)
    out = f"{DOCS}/{stem}.csv"
    head = rng.choice([("Name", "Score"), ("Player", "Points"), ("Student", "Mark"), ("Runner", "Minutes")])
    n = rng.randint(3, 6)
    # Column A holds no entry that starts another, so Calc's AutoInput never completes what is typed.
    names = unprefixed(rng, [w for w in WORDS if not head[0].lower().startswith(w[:3])], n)
    values = [rng.randint(1, 999) for _ in names]
    lines = [",".join(head), *(f"{a},{b}" for a, b in zip(names, values, strict=True))]
    typed = "".join(f"{line.replace(',', chr(9))}\n" for line in lines)
    postconfig, expected = write_expected(f"{stem}.csv", ("\n".join(lines) + "\n").encode())
    listing = "; ".join(f"{a} {b}" for a, b in zip(names, values, strict=True))
    return {
        "instruction": f"In LibreOffice Calc, enter a table starting at A1 with the headers {head[0]} and {head[1]}, "
                       f"then one row per entry: {listing}. Save it as a CSV file (comma-separated) at "
                       f"~/Documents/{stem}.csv",
        "related_apps": ["libreoffice_calc"], "config": open_app(["libreoffice", "--calc"], CALC),
        "evaluator": {"func": "compare_csv", "result": vm_file(out), "expected": vm_file(expected, "expected.csv"),
                      "options": {}, "postconfig": [postconfig]},
        "oracle": [_ready(CALC), op("type", text=typed), op("hotkey", keys=["ctrl", "shift", "s"]),
                   *file_dialog("Save", "Save", out), *dialog_ok("Export Text File"),
                   op("wait_window", title=f"{stem}.csv - {CALC}", timeout=60), DONE],
    }


FORMATS = {
    # what the instruction asks, the shortcut a person uses for it, the code Calc writes to .xlsx
    "number": ("as numbers with two decimals and a thousands separator", ["ctrl", "shift", "1"], "#,##0.00"),
    "percent": ("as percentages with two decimals", ["ctrl", "shift", "5"], "0.00%"),
}


def sheet_format_cells(rng: random.Random) -> dict[str, Any]:
    stem = _stem(rng)
    src, out = f"{DOCS}/{stem}.xlsx", f"{DOCS}/{stem}-formatted.xlsx"
    kind = rng.choice(sorted(FORMATS))
    wording, keys, code = FORMATS[kind]
    n = rng.randint(3, 7)
    labels = rng.sample(CITIES, n)
    if kind == "percent":
        head = (rng.choice(["City", "Office", "Branch"]), rng.choice(["Share", "Growth", "Margin"]))
        values: list[float] = [rng.randint(1, 999) / 1000 for _ in labels]
    else:
        head = (rng.choice(["City", "Office", "Branch"]), rng.choice(["Revenue", "Budget", "Sales"]))
        values = [rng.randint(1000, 999999) / 4 for _ in labels]
    rows: list[list[Any]] = [list(head), *([a, v] for a, v in zip(labels, values, strict=True))]
    rules = [cell("A1", head[0], font_bold=True), cell("B1", head[1], font_bold=True),
             *(cell(f"B{i}", v, "approx:0.0001", number_format=code) for i, v in enumerate(values, start=2))]
    title = f"{stem}.xlsx - {CALC}"
    return {
        "instruction": f"The workbook ~/Documents/{stem}.xlsx is open in LibreOffice Calc. Make the header row bold "
                       f"and show the {head[1]} values (B2:B{n + 1}) {wording}. Save the workbook in Excel format "
                       f"as ~/Documents/{stem}-formatted.xlsx",
        "related_apps": ["libreoffice_calc"],
        "config": [write_files({src: xlsx_bytes(rows)}), *open_app(["libreoffice", "--calc", src], title)],
        "evaluator": _table_eval(out, rules),
        "oracle": [_ready(title), op("hotkey", keys=["ctrl", "Home"]), op("hotkey", keys=["shift", "space"]),
                   op("hotkey", keys=["ctrl", "b"]), op("hotkey", keys=["ctrl", "Home"]), op("press", key="down"),
                   op("press", key="right"), *(op("hotkey", keys=["shift", "down"]) for _ in range(n - 1)),
                   op("hotkey", keys=keys), *save_as(out, CALC), DONE],
    }


def sheet_sort_rows(rng: random.Random) -> dict[str, Any]:
    stem = _stem(rng)
    src, out = f"{DOCS}/{stem}.xlsx", f"{DOCS}/{stem}-sorted.xlsx"
    n = rng.randint(4, 8)
    people = rng.sample(PEOPLE, n)
    scores = rng.sample(range(10, 1000), n)
    cities = [rng.choice(CITIES) for _ in people]
    head = ["Name", rng.choice(["Score", "Points", "Sales"]), "City"]
    rows: list[list[Any]] = [[a, b, c] for a, b, c in zip(people, scores, cities, strict=True)]
    col, descending = rng.choice([(0, False), (0, True), (1, False), (1, True)])
    ordered = sorted(rows, key=lambda r: r[col], reverse=descending)
    rules = [cell("A1", "Name"), *(cell(f"{c}{i}", v) for i, r in enumerate(ordered, start=2)
                                   for c, v in zip("ABC", r, strict=True))]
    order = "descending (largest first)" if descending else "ascending"
    if col == 0:
        order = "descending (Z to A)" if descending else "ascending (A to Z)"
    title = f"{stem}.xlsx - {CALC}"
    item = "Sort Descending" if descending else "Sort Ascending"
    return {
        "instruction": f"The workbook ~/Documents/{stem}.xlsx is open in LibreOffice Calc. Sort the table's rows by "
                       f"the {head[col]} column in {order} order, keeping the header row on top and each row's "
                       f"values together. Save the workbook in Excel format as ~/Documents/{stem}-sorted.xlsx",
        "related_apps": ["libreoffice_calc"],
        "config": [write_files({src: xlsx_bytes([head, *rows])}), *open_app(["libreoffice", "--calc", src], title)],
        "evaluator": _table_eval(out, rules),
        # The cursor in the sort column's data: Data > Sort Ascending/Descending sorts the table around it,
        # and keeps the header row (text above a numeric column) out of the sort.
        "oracle": [_ready(title), op("hotkey", keys=["ctrl", "Home"]), *_right(col), op("press", key="down"),
                   *menu(title, ["alt", "d"], item), *_down(2 if descending else 1), op("press", key="enter"),
                   *save_as(out, CALC), DONE],
    }


STATS = [("Average", "AVERAGE"), ("Maximum", "MAX"), ("Minimum", "MIN")]


def sheet_column_stats(rng: random.Random) -> dict[str, Any]:
    stem = _stem(rng)
    src, out = f"{DOCS}/{stem}.xlsx", f"{DOCS}/{stem}-stats.xlsx"
    head = ["Name", rng.choice(["Hours", "Visits", "Orders", "Steps"])]
    n = rng.randint(3, 8)
    people = rng.sample(PEOPLE, n)
    values = [rng.randint(1, 500) for _ in people]
    stats = rng.sample(STATS, rng.randint(2, 3))
    last = n + 1
    fn = {"AVERAGE": sum(values) / n, "MAX": max(values), "MIN": min(values)}
    typed = "".join(f"{label}\t={f}(B2:B{last})\n" for label, f in stats)
    rules = [cell("A2", people[0]), cell(f"B{last}", values[-1]),
             *(c for i, (label, f) in enumerate(stats, start=last + 1)
               for c in (cell(f"A{i}", label), cell(f"B{i}", fn[f], "approx:0.001")))]
    asked = ", then ".join(f"{label} with the {f.lower()} of column B" for label, f in stats)
    title = f"{stem}.xlsx - {CALC}"
    # A CSV input was tried first: walking the accessibility tree of a Calc document imported from CSV
    # crashed LibreOffice 7.4 (after its Text Import dialog) or hung it past 30 s (with --infilter).
    return {
        "instruction": f"The workbook ~/Documents/{stem}.xlsx is open in LibreOffice Calc. Below the last row add "
                       f"one row per statistic, its label in column A and a formula in column B: {asked}. Save "
                       f"the result in Excel format as ~/Documents/{stem}-stats.xlsx",
        "related_apps": ["libreoffice_calc"],
        "config": [write_files({src: xlsx_bytes([head, *([a, v] for a, v in zip(people, values, strict=True))])}),
                   *open_app(["libreoffice", "--calc", src], title)],
        "evaluator": _table_eval(out, rules),
        "oracle": [_ready(title), op("hotkey", keys=["ctrl", "Home"]), *_down(last),
                   op("type", text=typed), *save_as(out, CALC), DONE],
    }
