"""``osgym tasks sample --tier apps`` without replicas: the files it writes load, name only cached assets
once ``--cache`` has staged them, come out the same on every run, and the recipe that runs them loads.
The tasks themselves run on apps replicas in tests/apps/test_osworld_apps_e2e.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from osgym.collection.recipe import load_recipe
from osgym.suites.sample_apps import DEFAULT_BASE_URL, apps_sample
from osgym.tasks.asset_urls import missing_assets
from osgym.tasks.assets import AssetCache
from osgym.tasks.spec import load_task

ROOT = Path(__file__).resolve().parents[1]


def _osgym(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "osgym", *args], capture_output=True, text=True, timeout=120,
                          cwd=ROOT)


def test_sample_writes_tasks_index_and_assets_and_fills_a_cache(tmp_path: Path) -> None:
    out = _osgym("tasks", "sample", str(tmp_path / "s"), "--tier", "apps", "--cache", str(tmp_path / "c"))
    assert out.returncode == 0, out.stderr
    assert "12 task files" in out.stdout and "18 assets" in out.stdout
    index = json.loads((tmp_path / "s" / "test_all.json").read_text())
    assert {d: len(ids) for d, ids in index.items()} == {
        "chrome": 2, "libreoffice_calc": 1, "libreoffice_writer": 1, "libreoffice_impress": 1, "gimp": 1, "vlc": 1,
        "thunderbird": 1, "vs_code": 1, "os": 2, "multi_apps": 1}
    cache = AssetCache(tmp_path / "c")
    for domain, ids in index.items():
        for tid in ids:
            task = load_task(tmp_path / "s" / "examples" / domain / f"{tid}.json")
            assert task.oracle and task.id == tid
            assert any(s.type == "download" for s in task.config), f"{domain}/{tid} downloads nothing"
            assert missing_assets(task, cache) == []
            assert missing_assets(task, None), "every task names a remote URL"
    assert sorted(p.name for p in (tmp_path / "s" / "assets").iterdir()) == sorted(
        url.rsplit("/", 1)[1] for url in cache.manifest())


def test_sample_is_the_same_on_every_run(tmp_path: Path) -> None:
    assert apps_sample() == apps_sample(DEFAULT_BASE_URL.rstrip("/"))
    for name in ("a", "b"):
        assert _osgym("tasks", "sample", str(tmp_path / name), "--tier", "apps").returncode == 0
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert files and all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files)


def test_bad_options_are_clear_errors(tmp_path: Path) -> None:
    out = _osgym("tasks", "sample", str(tmp_path / "s"), "--tier", "bogus")
    assert out.returncode == 2 and "expected desktop or apps" in out.stderr and "Traceback" not in out.stderr
    out = _osgym("tasks", "sample", str(tmp_path / "s"), "--cache", str(tmp_path / "c"))
    assert out.returncode == 2 and "--tier apps" in " ".join(out.stderr.split()) and "Traceback" not in out.stderr


def test_the_apps_sample_recipe_is_valid() -> None:
    rec = load_recipe(ROOT / "datasets" / "osworld-apps-sample.yaml")
    assert rec.task_dir and rec.task_index and rec.suite is None and rec.tier == "apps"
    assert rec.task_dir.endswith("osworld-apps-sample-tasks/examples") and rec.policy.name == "scripted"
