"""The command line: bad input gets a clear message and exit code 2, before anything starts."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

from osgym.dataset import open_dataset

ROOT = Path(__file__).resolve().parents[1]


def _osgym(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "osgym", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={**os.environ, **(env or {})})


def test_a_recipe_with_a_bad_field_fails_before_any_replica_starts(tmp_path: Path) -> None:
    recipe = yaml.safe_load((ROOT / "datasets" / "smoke.yaml").read_text())
    recipe["replicaz"] = 3
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(recipe))
    # No Docker daemon at this address: had the command reached for replicas, it would fail on Docker instead.
    out = _osgym("collect", str(path), env={"DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"})
    assert out.returncode == 2
    assert "replicaz" in out.stderr and "Traceback" not in out.stderr


def test_a_bad_value_names_the_field(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"name": "x", "episodes": 0}))
    out = _osgym("collect", str(path), env={"DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"})
    assert out.returncode == 2 and "'episodes'" in out.stderr and "Traceback" not in out.stderr


def test_an_unknown_image_tier_is_named() -> None:
    out = _osgym("images", "tag", "--tier", "office")
    assert out.returncode == 2 and "'office'" in out.stderr and "'apps'" in out.stderr
    assert "Traceback" not in out.stderr


def test_an_unknown_task_is_named(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"name": "x", "episodes": 2, "tasks": ["no-such-task"]}))
    out = _osgym("collect", str(path), env={"DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"})
    assert out.returncode == 2 and "no-such-task" in out.stderr and "Traceback" not in out.stderr


def test_collect_shows_progress_and_writes_the_dataset(tmp_path: Path, image: str) -> None:
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump({"name": "tiny", "episodes": 2, "replicas": 1, "standby": 0, "image": image,
                                    "tasks": ["terminal-create-file"], "screen": [800, 600],
                                    "store": str(tmp_path / "data")}))
    out = _osgym("collect", str(path), "--run-id", "cli-run", "--no-report", env={"COLUMNS": "200"})
    assert out.returncode == 0, out.stderr[-2000:]
    # rich prints the bar's last state when stdout is not a terminal
    assert re.search(r"2/2 ok 2 failed 0 retried 0 \| replicas [01] healthy \| [\d.]+ ep/min", out.stdout), out.stdout
    assert "run cli-run: 2 episodes written (0 already committed)" in out.stdout
    view = open_dataset(tmp_path / "data", "tiny")
    assert view.runs == ["cli-run"] and view.episodes.count_rows() == 2
