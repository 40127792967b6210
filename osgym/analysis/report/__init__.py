"""Quality and cost reports: rich tables, an HTML report with PNG charts, and trajectory pages.

* :func:`print_report` prints the named queries of :mod:`osgym.analysis.analytics` and
  the cost model's assumptions as rich tables (:mod:`~osgym.analysis.report.tables`).
* :func:`write_html_report` writes ``report.html`` with bar charts drawn with
  Pillow (``charts/*.png``; no plotting library needed, :mod:`~osgym.analysis.report.charts`)
  and the same tables (:mod:`~osgym.analysis.report.html_report`).
* :func:`write_trajectory_page` writes one episode as an HTML page: every
  screenshot is written byte for byte as stored, and beside it a copy with the
  step's action drawn on it (a marker at the pointer target, the action as
  text; :mod:`~osgym.analysis.report.overlay`). Optionally an animated GIF of the
  overlays (:mod:`~osgym.analysis.report.trajectory`).

Everything that comes from the dataset (instructions, thoughts, actions, error
messages) is HTML-escaped: a policy's output is untrusted text.
"""

from osgym.analysis.report.charts import bar_chart
from osgym.analysis.report.html_report import write_html_report
from osgym.analysis.report.overlay import describe_action, draw_action
from osgym.analysis.report.tables import (
    SECTIONS,
    Column,
    CostInputs,
    Section,
    fit_table,
    format_value,
    print_report,
    report_tables,
    to_markdown,
)
from osgym.analysis.report.trajectory import write_trajectory_page

__all__ = [
    "SECTIONS", "Column", "CostInputs", "Section", "bar_chart", "describe_action", "draw_action", "fit_table",
    "format_value", "print_report", "report_tables", "to_markdown", "write_html_report", "write_trajectory_page",
]
