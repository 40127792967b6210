"""``compare_conference_city_in_order`` on workbooks generated here: a conference list's city column against the
expected cities (or alternatives per row), in order; a match scores 1, each kind of mismatch 0, as OSWorld."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openpyxl
import pytest

from osgym.tasks import metrics
from tests.metrics.conftest import Call, OSWorld

CITIES = [f"City{i:02d}" for i in range(21)]


def conference(path: Path, cities: list[str | None]) -> str:
    wb = openpyxl.Workbook()
    ws = wb.active
    assert ws is not None
    ws.append(["Conference", "Year", "City"])
    for i, city in enumerate(cities):
        ws.append([f"Conf{i}", 2024, city])
    wb.save(path)
    return str(path)


CITY_CASES: list[tuple[str, list[str | None], list[Any], float]] = [
    ("in-order", [f"{c}, Country" for c in CITIES], CITIES, 1.0),
    ("alternatives", CITIES, [[c, "Elsewhere"] for c in CITIES], 1.0),
    ("one-wrong", [*CITIES[:20], "Nowhere"], CITIES, 0.0),
    ("swapped", [CITIES[1], CITIES[0], *CITIES[2:]], CITIES, 0.0),
    ("empty-cell", [*CITIES[:20], None], CITIES, 0.0),
    ("too-few-expected", CITIES, CITIES[:20], 0.0),
]


@pytest.mark.parametrize("name, cities, want_cities, want", CITY_CASES, ids=[c[0] for c in CITY_CASES])
def test_compare_conference_city_in_order(name: str, cities: list[str | None], want_cities: list[Any], want: float,
                                          tmp_path: Path) -> None:
    path = conference(tmp_path / f"{name}.xlsx", cities)
    assert metrics.score("compare_conference_city_in_order", path, {"expected": want_cities}, {}) == want


def test_compare_conference_city_in_order_parity(osworld: OSWorld, tmp_path: Path) -> None:
    paths = [conference(tmp_path / f"{c[0]}.xlsx", c[1]) for c in CITY_CASES]
    ours = [metrics.score("compare_conference_city_in_order", p, {"expected": c[2]}, {})
            for p, c in zip(paths, CITY_CASES, strict=True)]
    theirs = osworld.scores([Call("table", "compare_conference_city_in_order", p, {"expected": c[2]}, {})
                             for p, c in zip(paths, CITY_CASES, strict=True)])
    assert theirs == ours
