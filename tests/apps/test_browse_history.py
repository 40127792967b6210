"""``update_browse_history`` on a fresh apps replica: the visits land in the History of the replica's own
Chromium (its schema made by a headless Chromium), the ``history`` getter and ``check_history_deleted`` see
them, and the GUI Chromium then starts on that profile and keeps them."""

from __future__ import annotations

import time
from collections.abc import Iterator

import docker
import pytest

from osgym.errors import SetupError, TaskLoadError
from osgym.replicas.client import Replica
from osgym.replicas.pool import limits_for
from osgym.tasks import getters, metrics
from osgym.tasks.getters import Context
from osgym.tasks.setup import run_setup
from osgym.tasks.spec import load_task
from tests.apps.test_apps_open import SCREEN
from tests.conftest import held_replica

pytestmark = [pytest.mark.docker, pytest.mark.slow]

VISITS = [{"url": "https://www.youtube.com/watch?v=osgym1", "title": "A video", "visit_time_from_now_in_seconds": 3600},
          {"url": "https://news.example/", "title": "News", "visit_time_from_now_in_seconds": 300}]


def _task(steps: list[dict[str, object]]) -> dict[str, object]:
    return {"id": "t-history", "instruction": "x", "config": steps, "evaluator": {
        "func": "check_history_deleted", "result": {"type": "history", "dest": "history.sqlite"},
        "expected": {"type": "rule", "rules": {"type": "keywords", "keywords": ["youtube"]}}}}


HOLDS_HISTORY = "ls -l /proc/$(pgrep -o -x chromium)/fd 2>/dev/null | grep -q '/Default/History$'"
"""Whether Chromium's main process holds its profile's History database open (it runs as `user`, as this does)."""


@pytest.fixture(scope="module")
def apps(image: str, docker_client: docker.DockerClient) -> Iterator[Replica]:
    with held_replica(image, docker_client, "history", screen=SCREEN, limits=limits_for("apps")) as replica:
        yield replica


def test_update_browse_history_before_chromium_starts(apps: Replica) -> None:
    task = load_task(_task([{"type": "update_browse_history", "parameters": {"history": VISITS}}]))
    run_setup(apps, task.config, task_id=task.id)
    rows = _rows(apps)
    assert isinstance(rows, list)
    assert {(r[0], r[1]) for r in rows} == {(v["url"], v["title"]) for v in VISITS}
    now_us = (time.time() + 11644473600) * 1e6
    ages = sorted(round((now_us - r[2]) / 1e6) for r in rows)
    assert abs(ages[0] - 300) < 120 and abs(ages[1] - 3600) < 120, ages
    assert metrics.score("check_history_deleted", rows, {"type": "keywords", "keywords": ["youtube"]}, {}) == 0.0
    # The GUI Chromium starts on that profile and keeps the visits: a History it found damaged or of a
    # schema it cannot read would be razed and made anew, empty.
    apps.launch(["chromium"])
    apps.wait_window("Chromium", timeout=30)
    # proof that Chromium has read the database, rather than a guess of when: its history backend holds the
    # file open once it has opened (or razed and remade) it
    deadline = time.monotonic() + 120
    while apps.execute(HOLDS_HISTORY, shell=True, timeout=30).returncode != 0:
        assert time.monotonic() < deadline, "Chromium never opened its History database"
        time.sleep(0.5)
    assert _rows(apps) == rows


def _rows(replica: Replica) -> object:
    ctx = Context(replica)
    try:
        return getters.fetch(ctx, "history", {"dest": "history.sqlite"}, "task t: evaluator.result")
    finally:
        ctx.close()


def test_update_browse_history_while_chromium_runs_fails_clearly(apps: Replica) -> None:
    """Runs after the test above: its Chromium holds the History database."""
    task = load_task(_task([{"type": "update_browse_history", "parameters": {"history": VISITS[:1]}}]))
    with pytest.raises(SetupError, match=r"config\[0\]: update_browse_history: Chromium is running"):
        run_setup(apps, task.config, task_id=task.id)


@pytest.mark.parametrize("history, named", [
    ([], "parameters.history: expected a list"),
    ([{"url": "https://a.example/", "title": "A"}], r"history\[0\].visit_time_from_now_in_seconds: Field required"),
    ([{**VISITS[0], "visit_time_from_now_in_seconds": -5}], "greater than or equal to 0"),
])
def test_bad_history_is_refused_at_load(history: list[object], named: str) -> None:
    with pytest.raises(TaskLoadError, match=named):
        load_task(_task([{"type": "update_browse_history", "parameters": {"history": history}}]))
