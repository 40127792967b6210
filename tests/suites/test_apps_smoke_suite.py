"""The apps-smoke suite and its recipe without replicas: variants are valid and distinct, oracles wait
for an app to take keys before typing into it, and the recipe asks for (and must ask for) the apps tier.
The episodes themselves run in tests/apps/test_apps_suites.py (``make test-apps``)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from osgym.collection.collector import plan_jobs
from osgym.collection.recipe import load_recipe
from osgym.errors import ConfigError
from osgym.suites import generate, list_suites, required_tier, templates
from osgym.suites.apps_smoke.common import write_expected
from osgym.suites.generators import content_key

RECIPE = Path(__file__).resolve().parents[2] / "datasets" / "apps-smoke.yaml"
INPUT_OPS = {"type", "press", "hotkey", "click", "click_window"}


def test_one_template_per_app_family_with_distinct_variants() -> None:
    ts = templates("apps-smoke")
    assert "apps-smoke" in list_suites() and required_tier("apps-smoke") == "apps"
    assert {t.domain for t in ts} == {"libreoffice_calc", "libreoffice_writer", "chrome", "terminal", "editor"}
    tasks = generate("apps-smoke", 100, seed=3)
    assert len({content_key(t) for t in tasks}) == 100 and tasks == generate("apps-smoke", 100, seed=3)


@pytest.mark.parametrize("seed", range(20))
def test_every_oracle_waits_for_the_focus_before_its_first_input(seed: int) -> None:
    """A freshly opened app's window maps before it takes keys (LibreOffice drops ~0.6 s of typing)."""
    for t in templates("apps-smoke"):
        ops = [o.op for o in t.variant(seed).oracle or []]
        first_input = next(i for i, op in enumerate(ops) if op in INPUT_OPS)
        assert "wait_focused" in ops[:first_input], f"{t.id}: {ops}"
        assert ops[-1] == "done"


def test_the_recipe_collects_every_template_on_the_apps_tier() -> None:
    recipe = load_recipe(RECIPE)
    assert (recipe.suite, recipe.tier, recipe.screen, recipe.replicas, recipe.policy.name) == (
        "apps-smoke", "apps", (1920, 1080), 2, "scripted")
    jobs = plan_jobs(recipe, "r1")
    assert len(jobs) == recipe.episodes == 6
    assert {j.task.id for j in jobs} == {t.id for t in templates("apps-smoke")}


def test_a_recipe_of_the_suite_on_another_tier_is_refused_before_any_replica_starts() -> None:
    with pytest.raises(ConfigError, match=r"suite apps-smoke runs on the apps tier.*actual tier 'desktop'.*tier: apps"):
        load_recipe(RECIPE, tier="desktop")
    assert load_recipe(RECIPE, tier="desktop", image="osgym/apps:custom").image == "osgym/apps:custom"


def test_the_expected_document_is_never_written_through_what_the_agent_left(tmp_path: Path) -> None:
    """The Writer task's postconfig runs after the agent, in the agent's account: a symlink planted at the
    expected folder (to the agent's own result, say) is removed, not written through."""
    victim = tmp_path / "Documents"
    victim.mkdir()
    (victim / "note.docx").write_bytes(b"the agent's result")
    folder = tmp_path / "expected"
    folder.symlink_to(victim)
    step, path = write_expected("note.docx", b"expected bytes", folder=str(folder))
    subprocess.run(["bash", "-c", step["parameters"]["command"]], check=True, timeout=10)
    assert (victim / "note.docx").read_bytes() == b"the agent's result"
    assert not folder.is_symlink() and Path(path).read_bytes() == b"expected bytes"
