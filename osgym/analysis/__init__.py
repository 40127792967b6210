"""Analysis: DuckDB views over a dataset, the report, and what episodes cost.

- :mod:`~osgym.analysis.analytics`: :func:`connect` and the named queries in ``sql/``.
- :mod:`~osgym.analysis.frames`: which screenshots are blank (decoded with Pillow, once per connection).
- :mod:`~osgym.analysis.duck`: the DuckDB plumbing both share.
- :mod:`~osgym.analysis.report`: the terminal and HTML reports, trajectory pages.
- :mod:`~osgym.analysis.profile`: a run's or a dataset's measured profile, the input of
  :mod:`osgym.replicas.cost` (the one cost model).
"""

from osgym.analysis.analytics import connect, query

__all__ = ["connect", "query"]
