"""``osgym dataset export --format sft`` as a user runs it: a progress bar on stderr, one line of result or error."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.export.conftest import DATASET


def _osgym(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "osgym", *args], capture_output=True, text=True, timeout=300,
                          env={"COLUMNS": "200", "PATH": "/usr/bin:/bin", "HOME": "/tmp"},
                          cwd=Path(__file__).resolve().parents[2])


def test_the_cli_exports_with_a_filter_and_shows_progress_on_stderr(demo_store: Path, tmp_path: Path) -> None:
    out = tmp_path / "sft"
    r = _osgym("dataset", "export", DATASET, "--store", str(demo_store), "--out", str(out), "--format", "sft",
               "--filter", "successful", "--where", "not stuck_episode", "--action-format", "uitars",
               "--per", "episode", "--max-side", "32")
    assert r.returncode == 0, r.stderr
    assert "exported 2 samples from 2 episodes" in r.stdout and "filter kept 2 of 8 episodes" in r.stdout
    assert "export demo" in r.stderr and "2/2" in r.stderr
    facts = json.loads((out / "export.json").read_text())
    assert facts["options"]["max_side"] == 32 and facts["options"]["action_format"] == "uitars"
    assert facts["filter"]["label"] == "filter successful AND where not stuck_episode"


def test_bad_input_is_one_line_on_stderr_and_writes_nothing(demo_store: Path, tmp_path: Path) -> None:
    for extra, message in [
        (["--where", "success; DELETE FROM episodes"], "error: --where: expected one SQL expression, actual a ';'"),
        (["--where", "nope"], "error: --where 'nope': Binder Error"),
        (["--filter", "shiny"], "error: --filter: expected one of successful, clean, actual 'shiny'"),
        (["--style", "alpaca"], "error: sft export: style: Input should be 'trl' or 'llamafactory'"),
        (["--format", "csv"], "error: --format: expected jsonl or sft, actual 'csv'"),
    ]:
        r = _osgym("dataset", "export", DATASET, "--store", str(demo_store), "--out", str(tmp_path / "x"),
                   "--format", "sft", *extra)
        assert r.returncode == 2, (extra, r.stdout, r.stderr)
        assert r.stderr.count("error:") == 1 and r.stderr[r.stderr.index("error:"):].startswith(message), r.stderr
        assert "Traceback" not in r.stderr
        assert not (tmp_path / "x").exists()
