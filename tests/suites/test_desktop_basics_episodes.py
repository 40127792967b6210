"""Every desktop-basics template on real replicas: the scripted oracle scores 1.0 on 3 seeded
variants, and a do-nothing policy scores 0.0 on the same variants (so the evaluators can fail).

For each variant one replica is leased: the do-nothing episode runs first (setup, DONE,
evaluate: evaluation only reads state), then the oracle solves the task on the same desktop,
whose setup is therefore already applied. All variants are submitted at once to two worker
threads, one per replica of the shared pool; each test waits for its own variant.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor

import pytest

from osgym.agents.policies.noop import NoopPolicy
from osgym.agents.policies.scripted import ScriptedPolicy
from osgym.episodes import EpisodeLimits, run_episode
from osgym.episodes.trajectory import Trajectory
from osgym.errors import ReplicaError
from osgym.replicas.pool import ReplicaPool
from osgym.suites import templates
from osgym.suites.generators import Template
from osgym.tasks.spec import TaskSpec

pytestmark = [pytest.mark.docker, pytest.mark.slow]

TEMPLATES = templates("desktop-basics")
SEEDS = (0, 1, 2)
LIMITS = EpisodeLimits(max_steps=40, deadline_s=120, settle_s=0.5)
GUI_INPUT = {"CLICK", "TYPING", "PRESS", "HOTKEY"}
Pair = tuple[Trajectory, Trajectory]


def _noop_then_oracle(pool: ReplicaPool, task: TaskSpec, attempts: int = 3) -> Pair:
    """As production does, a replica fault (e.g. an app that never maps its window) retries on a fresh replica."""
    for attempt in range(1, attempts + 1):
        try:
            return _on_one_replica(pool, task)
        except ReplicaError:
            if attempt == attempts:
                raise
    raise AssertionError("unreachable")


def _on_one_replica(pool: ReplicaPool, task: TaskSpec) -> Pair:
    with pool.lease(timeout=300) as r:
        idle = run_episode(r, task, NoopPolicy(), seed=7, limits=LIMITS)
        solved = run_episode(r, task.model_copy(update={"config": []}), ScriptedPolicy(), seed=7, limits=LIMITS)
    return idle, solved


@pytest.fixture(scope="module")
def episodes(shared_pool: ReplicaPool, request: pytest.FixtureRequest) -> Iterator[dict[tuple[str, int], Future[Pair]]]:
    selected = [(i.callspec.params["template"], i.callspec.params["seed"]) for i in request.session.items
                if i.module is request.module and hasattr(i, "callspec")]  # only what -k selected
    with ThreadPoolExecutor(2, thread_name_prefix="episode") as ex:
        futures = {(t.id, s): ex.submit(_noop_then_oracle, shared_pool, t.variant(s)) for t, s in selected}
        yield futures
        for f in futures.values():
            f.cancel()


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("template", TEMPLATES, ids=[t.id for t in TEMPLATES])
def test_oracle_scores_one_and_noop_scores_zero(episodes: dict[tuple[str, int], Future[Pair]],
                                                template: Template, seed: int) -> None:
    idle, solved = episodes[(template.id, seed)].result(timeout=600)
    where = f"{template.id} seed {seed}"
    assert idle.termination == "done" and idle.error_class is None, f"{where}: {idle.error_message}"
    assert idle.score == 0.0, f"{where}: doing nothing scored {idle.score}"
    assert solved.error_class is None, f"{where}: {solved.error_message}"
    assert solved.termination == ("fail" if template.infeasible else "done")
    assert solved.score == 1.0, f"{where}: the oracle scored {solved.score}"
    kinds = set().union(*(set(st.action_type.split(",")) for st in solved.steps))
    assert kinds & GUI_INPUT, f"{where}: solved without GUI input: {kinds}"
