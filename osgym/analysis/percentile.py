"""Percentiles as the report computes them: linear interpolation between the two closest ranks.

The report's SQL takes DuckDB's ``quantile_cont``; Python code (the benches) takes :func:`percentile`,
which gives the same figure (``tests/analytics/test_percentile.py`` compares the two), so a p95 means one
thing wherever osgym prints it. Nearest-rank variants disagree with each other on small samples: two
earlier helpers here rounded the rank differently and gave different p50s of the same five values.
"""

from __future__ import annotations

import math
from collections.abc import Iterable


def percentile(values: Iterable[float], q: float) -> float:
    """The ``q``-th percentile of ``values``, interpolated as DuckDB's ``quantile_cont(v, q / 100)``.

    Args:
        values: the sample, in any order.
        q: the percentile, 0 to 100.

    Returns:
        The percentile, or NaN for an empty sample.

    Raises:
        ValueError: if ``q`` is outside 0..100.

    >>> percentile([4.0, 1.0, 3.0, 2.0], 50), percentile([1.0, 2.0, 3.0, 4.0], 95)
    (2.5, 3.85)
    >>> percentile([7.0], 99), percentile([], 50)
    (7.0, nan)
    """
    if not 0 <= q <= 100:
        raise ValueError(f"q: expected a percentile in 0..100, actual {q}")
    ordered = sorted(values)
    if not ordered:
        return math.nan
    rank = (len(ordered) - 1) * q / 100
    below = math.floor(rank)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (rank - below)
