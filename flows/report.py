"""The ``report`` flow: a dataset's quality and cost tables as Prefect artifacts (and optional HTML)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow
from prefect.artifacts import create_markdown_artifact, create_table_artifact

from osgym.analysis import analytics
from osgym.analysis.report import SECTIONS, CostInputs, report_tables, to_markdown, write_html_report


def publish_report_artifacts(store: str, dataset: str, key_prefix: str = "osgym") -> dict[str, Any]:
    """Create one table artifact per report section plus a markdown summary; returns the summary numbers."""
    con = analytics.connect(store, dataset)
    summary = analytics.summary(con)
    inputs = CostInputs.of(con)
    tables = report_tables(con, inputs)
    slug = "".join(c if c.isalnum() else "-" for c in dataset.lower())
    for section in SECTIONS:
        create_table_artifact(key=f"{key_prefix}-{slug}-{section.query.replace('_', '-')}",
                              table=tables[section.query].to_pylist(), description=section.title)
    lines = [f"# {dataset}", "", "| metric | value |", "|---|---|",
             *[f"| {k} | {v} |" for k, v in summary.items()], ""]
    for section in SECTIONS:
        lines += [f"## {section.title}", "", to_markdown(tables[section.query]), ""]
    lines += ["## Cost assumptions", "", *[f"- {a}" for a in inputs.assumptions()]]
    create_markdown_artifact(key=f"{key_prefix}-{slug}-report", markdown="\n".join(lines),
                             description=f"quality and cost of {dataset}")
    return summary


@flow(name="report")
def report(dataset: str, store: str = "./data", html_dir: str | None = None) -> dict[str, Any]:
    """Publish a dataset's report as artifacts; with ``html_dir``, also write the HTML report there."""
    summary = publish_report_artifacts(store, dataset)
    if html_dir:
        summary["html"] = str(write_html_report(analytics.connect(store, dataset), Path(html_dir)))
    return summary
