"""No free rewards: doing nothing (the ``noop`` policy) scores 0 on every built-in template and on every sample
OSWorld-format task, except the infeasible ones (OSWorld scores those 1 only for FAIL; noop says DONE, so 0).
A task that pays for doing nothing teaches an agent that doing nothing pays.

The noop episodes run where each task's other episodes already run, batched on two replicas of its tier, not a
second time here (the suite has a time budget):

- desktop-basics (the desktop tier's templates): ``tests/suites/test_desktop_basics_episodes.py``, noop then the
  oracle on 3 seeds of every template;
- the apps tier's suites: ``tests/apps/test_apps_suites.py``, noop and the oracle on seed 0 of every template;
- ``osgym tasks sample --tier apps``: ``tests/apps/test_osworld_apps_e2e.py``, noop and the oracle on every task;
- ``osgym tasks sample`` (the desktop tier's): ``tests/test_fidelity.py``, twice each through ``osgym tasks check
  --run``, which also asks that their setup fails nowhere.

Each of them asserts a noop score of 0.0 with no error. This module checks, without replicas, that their lists
are complete, so that a new template or sample task cannot go without its noop episode.
"""

from __future__ import annotations

from pathlib import Path

from osgym import suites
from osgym.suites.sample import SAMPLE
from osgym.suites.sample_apps import apps_sample, task_id
from tests import test_fidelity
from tests.apps import test_apps_suites, test_osworld_apps_e2e
from tests.suites import test_desktop_basics_episodes


def test_every_template_has_a_noop_episode_on_its_tier() -> None:
    desktop = sorted(t.id for t in test_desktop_basics_episodes.TEMPLATES)
    apps = sorted(t.id for t in test_apps_suites.TEMPLATES)
    tiers = {None: "desktop", "desktop": "desktop", "apps": "apps"}
    every: dict[str, list[str]] = {"desktop": [], "apps": []}
    for name in suites.list_suites():
        every[tiers[suites.required_tier(name)]] += [t.id for t in suites.templates(name)]
    assert (desktop, apps) == (sorted(every["desktop"]), sorted(every["apps"])), "templates no test runs noop on"
    assert len(desktop) + len(apps) >= 83
    assert test_desktop_basics_episodes.SEEDS == (0, 1, 2)


def test_every_sample_task_has_a_noop_episode(tmp_path: Path) -> None:
    apps_ids = {t["id"] for tasks in apps_sample().values() for t in tasks}
    assert {task_id(n) for n in test_osworld_apps_e2e.TASK_NAMES} == apps_ids
    # tests/test_fidelity.py writes the whole desktop sample into its folder and asks each task to be faithful
    written = {p.stem for p in test_fidelity._folder(tmp_path).rglob("*.json")}
    desktop_ids = {t["id"] for tasks in SAMPLE.values() for t in tasks}
    assert len(desktop_ids) == 4 and desktop_ids <= written
