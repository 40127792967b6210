"""apps-presentations' layout and picture templates without replicas: their getter's script, run on decks
python-pptx makes the way the task asks (or not), gives output that ``check_include_exclude`` scores 1.0
only for the asked slide. The episodes on real replicas run in tests/apps/test_apps_suites.py."""

from __future__ import annotations

import base64
import io
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from pptx import Presentation
from pptx.util import Inches

from osgym.suites import templates
from osgym.suites.apps_presentations.slide_edits import SLIDE_FACTS
from osgym.tasks.metrics import score
from osgym.tasks.spec import TaskSpec

TEMPLATES = {t.id: t for t in templates("apps-presentations")}


def _facts(data: bytes | None, tmp_path: Path) -> str:
    """What the task's getter prints for a saved deck of ``data`` (None: no file)."""
    path = tmp_path / "deck.pptx"
    path.unlink(missing_ok=True)
    if data is not None:
        path.write_bytes(data)
    done = subprocess.run([sys.executable, "-c", SLIDE_FACTS, str(path)], capture_output=True, text=True,
                          check=False)
    return done.stdout + done.stderr


def _score(task: TaskSpec, facts: str) -> float:
    ev = task.model_dump(mode="json")["evaluator"]
    assert ev["func"] == "check_include_exclude" and ev["result"]["type"] == "vm_command_line"
    return score("check_include_exclude", facts, ev["expected"]["rules"], {})


def _input(task: TaskSpec, suffix: str) -> bytes:
    """The bytes the setup writes to the (one) path ending in ``suffix``."""
    for step in task.model_dump(mode="json")["config"]:
        words = shlex.split(str(step["parameters"].get("command", "")))
        for i, w in enumerate(words):
            if w == ">" and words[i + 1].endswith(suffix):
                return base64.b64decode(words[i - 4])
    raise AssertionError(f"no setup step writes a {suffix} file")


def _saved(prs: Any) -> bytes:
    buf = io.BytesIO()
    prs.save(buf)
    return buf.getvalue()


def _asked_slide(task: TaskSpec) -> int:
    return int(task.instruction.split(" slide ", 1)[1].split()[0]) - 1


def test_a_picture_on_the_asked_slide_scores_one_elsewhere_or_missing_zero(tmp_path: Path) -> None:
    for seed in range(6):
        task = TEMPLATES["slides-insert-image"].variant(seed)
        deck, png, k = _input(task, ".pptx"), _input(task, ".png"), _asked_slide(task)

        def with_picture(on: int, deck: bytes = deck, png: bytes = png) -> bytes:
            prs = Presentation(io.BytesIO(deck))
            prs.slides[on].shapes.add_picture(io.BytesIO(png), Inches(1), Inches(1))
            return _saved(prs)

        assert _score(task, _facts(with_picture(k), tmp_path)) == 1.0, seed
        assert _score(task, _facts(with_picture((k + 1) % 3), tmp_path)) == 0.0, seed
        assert _score(task, _facts(deck, tmp_path)) == 0.0, seed
        assert _score(task, _facts(None, tmp_path)) == 0.0, seed


def test_the_asked_layout_scores_one_the_untouched_deck_zero(tmp_path: Path) -> None:
    """python-pptx's template names "Title Only" as Impress does: a variant asking for it is scored on a deck
    of as many slides whose asked slide has that layout."""
    found = 0
    for seed in range(60):
        task = TEMPLATES["slides-change-layout"].variant(seed)
        if "to 'Title Only'" not in task.instruction:
            continue
        deck, k = _input(task, ".pptx"), _asked_slide(task)
        n = len(Presentation(io.BytesIO(deck)).slides)
        made = Presentation()
        for i in range(n):
            made.slides.add_slide(made.slide_layouts[5 if i == k else 0 if i == 0 else 1])
        assert made.slides[k].slide_layout.name == "Title Only"
        assert _score(task, _facts(_saved(made), tmp_path)) == 1.0, seed
        made.slides.add_slide(made.slide_layouts[1])
        assert _score(task, _facts(_saved(made), tmp_path)) == 0.0, seed  # one slide too many
        assert _score(task, _facts(deck, tmp_path)) == 0.0, seed
        assert _score(task, _facts(None, tmp_path)) == 0.0, seed
        found += 1
    assert found >= 3
