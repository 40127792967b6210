"""The step profile ``osgym pool plan --think-time`` prices, measured for real: ``bench_pool.py active``'s small
version (two desktop replicas, a few seconds), read back and priced by the command."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench.bench_pool import _active_level
from osgym.cli import app
from osgym.replicas import capacity


def test_a_paced_run_measures_a_step_profile_that_pool_plan_prices(
        image: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = argparse.Namespace(tier="desktop", screen=(640, 480), mem_limit=256, settle=1.0, idle=2.0, period=0.5,
                              duration=4.0, format="png", profile_out=str(tmp_path))
    _active_level(image, args, 2)
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert line["errors"] == 0 and line["steps"] >= 12, line  # 2 replicas x 8 periods, less a late last one
    assert line["replica_cores_each"] > 0 and line["host_side_cores_each"] > 0
    path = tmp_path / "desktop-0.5s-2.json"
    step = capacity.step_profile(path=path)
    assert step.cpu_per_step_s > 0.001 and 0 < step.step_s < 0.5 and step.idle_cores > 0 and step.mem_mib > 5
    assert "2 desktop replicas at 640x480, a step every 0.5 s" in step.source
    out = CliRunner().invoke(app, ["pool", "plan", "--think-time", "5", "--step-profile", str(path)])
    assert out.exit_code == 0 and "at this pace:" in out.output, out.output
