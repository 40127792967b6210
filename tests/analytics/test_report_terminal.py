"""``osgym report`` in an 80-column terminal: one table per section, nothing wider, no pages."""

from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path

from osgym.analysis import report

ROOT = Path(__file__).resolve().parents[2]


def test_osgym_report_of_a_real_dataset_fits_80_columns_without_pages(dataset_root: Path,
                                                                     data: types.SimpleNamespace) -> None:
    env = {k: v for k, v in os.environ.items() if k != "OSGYM_PRICES"} | {"COLUMNS": "80"}
    command = [sys.executable, "-m", "osgym", "report", data.DATASET, "--store", str(dataset_root)]
    out = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, max(lines, key=len)
    assert "(1/" not in out.stdout and "(2/" not in out.stdout
    for section in report.SECTIONS:  # each section once: one table, not parts
        assert sum(line.rstrip() == section.title for line in lines) == 1, section.title
    assert "replica unreachable: connection" in out.stdout  # a folded text cell keeps its words
    assert "$0.01799" in out.stdout and "--html" in out.stdout
