"""A recipe mixes built-in suites with ``suites: {name: weight}``: validated when it loads, planned as
distinct variants in the weights' proportions, and a plan for more episodes starts with the one for fewer."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from osgym.collection.collector import plan
from osgym.collection.recipe import load_recipe
from osgym.errors import ConfigError
from osgym.suites import list_suites, required_tier, templates
from osgym.suites.generators import content_key

MIX = {"name": "mix", "episodes": 30, "suites": {"apps-smoke": 2, "desktop-basics": 1}, "tier": "apps",
       "image": "osgym/apps"}  # an image named outright: desktop-basics' tier is not checked against it


def test_a_mixed_recipe_plans_each_suite_in_proportion_distinct_and_prefix_stable() -> None:
    jobs, refused = plan(load_recipe(MIX), "r1")
    assert not refused and len(jobs) == 30
    apps = {t.id for t in templates("apps-smoke")}
    counts = Counter("apps-smoke" if j.task.id in apps else "desktop-basics" for j in jobs)
    assert counts == {"apps-smoke": 20, "desktop-basics": 10}
    assert len({content_key(j.task) for j in jobs}) == 30
    fewer, _ = plan(load_recipe({**MIX, "episodes": 7}), "r1")
    assert [j.episode_id for j in fewer] == [j.episode_id for j in jobs[:7]]


@pytest.mark.parametrize(("change", "message"), [
    ({"suites": {"nope": 1}}, "unknown suites ['nope']"),
    ({"suites": {"apps-smoke": 0}}, "weights must be positive"),
    ({"suites": {}}, "at least one"),
    ({"suite": "apps-smoke"}, "suites and suite both name the tasks"),
    ({"task_dir": "x"}, "suites and task_dir both name the tasks"),
    ({"tier": "desktop", "image": None}, "suite apps-smoke runs on the apps tier"),
])
def test_a_bad_mix_fails_when_the_recipe_loads(change: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_recipe({k: v for k, v in {**MIX, **change}.items() if v is not None})


def test_the_nightly_recipe_mixes_the_apps_tier_suites() -> None:
    recipe = load_recipe(Path(__file__).parents[2] / "datasets" / "nightly.yaml")
    assert recipe.suites and recipe.suite is None and recipe.tier == "apps"
    assert set(recipe.suites) == {name for name in list_suites() if required_tier(name) == "apps"}
