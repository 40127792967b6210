"""scripts/osworld_metric_coverage.py on a generated OSWorld-shaped repository: Linux task files only, every
evaluator func counted, a file covered only when all its funcs are registered."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parents[2] / "scripts" / "osworld_metric_coverage.py"


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, timeout=60)


def test_counts_linux_task_files_by_registered_funcs(tmp_path: Path) -> None:
    examples = tmp_path / "evaluation_examples" / "examples"
    tasks = {
        "chrome/a.json": {"evaluator": {"func": "is_expected_tabs"}},
        "chrome/b.json": {"evaluator": {"func": ["check_list", "compare_holograms"]}},
        "vlc/c.json": {"evaluator": "evaluation_dir"},
        "os/d.json": {"evaluator": {"func": ""}},
        "Windows/e.json": {"evaluator": {"func": "compare_holograms"}},  # not a Linux task
        "template.json": {"evaluator": {"func": "func"}},  # not a task
    }
    for path, body in tasks.items():
        (examples / path).parent.mkdir(parents=True, exist_ok=True)
        (examples / path).write_text(json.dumps(body))
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "tasks")
    out = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path), "--json"], capture_output=True, text=True,
                         check=True, timeout=120, cwd=SCRIPT.parents[1])
    summary = json.loads(out.stdout)
    assert summary["files"] == 4 and summary["all_registered"] == 1, summary
    assert summary["missing"] == {"compare_holograms": 1, "(evaluator is not an object)": 1, "(empty func)": 1}
