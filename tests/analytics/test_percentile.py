"""One percentile in osgym: the Python helper the benches use gives the report's DuckDB figure."""

from __future__ import annotations

import math
import random

import duckdb
import pytest

from osgym.analysis.percentile import percentile


@pytest.mark.parametrize("n", [1, 2, 5, 20, 101])
def test_percentile_is_duckdbs_quantile_cont(n: int) -> None:
    rng = random.Random(n)
    values = [rng.uniform(0, 1000) for _ in range(n)]
    con = duckdb.connect()
    con.execute("CREATE TABLE sample (v DOUBLE)")
    con.executemany("INSERT INTO sample VALUES (?)", [(v,) for v in values])
    for q in (0, 1, 25, 50, 90, 95, 99, 100):
        (want,) = con.execute("SELECT quantile_cont(v, $q) FROM sample", {"q": q / 100}).fetchone() or (None,)
        assert percentile(values, q) == pytest.approx(want, rel=1e-12, abs=1e-12), (n, q)


def test_percentile_edges() -> None:
    assert math.isnan(percentile([], 50))
    assert percentile(iter([3.0, 1.0, 2.0]), 50) == 2.0  # any iterable, any order
    with pytest.raises(ValueError, match="0..100"):
        percentile([1.0], 101)
