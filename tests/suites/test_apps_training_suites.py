"""The apps-tier training suites (apps-browser, apps-images, apps-media, apps-mail, apps-code, apps-multi)
without replicas: every template's variants are valid task files, distinct, with at least 2,000 distinct
instructions, and oracles that wait for the app's focus before their first input. The episodes (oracle
1.0, noop 0.0) run in tests/apps/test_apps_suites.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from osgym.suites import generate, list_suites, required_tier, templates
from osgym.suites.generators import Template, content_key
from osgym.tasks.spec import TaskSpec
from tests.suites.processes import Pending, in_processes, params, selected

SUITES = {"apps-browser": "web-", "apps-images": "img-", "apps-media": "media-", "apps-mail": "mail-",
          "apps-code": "code-", "apps-multi": "multi-"}
TEMPLATES = [t for s in SUITES for t in templates(s)]
INPUT_OPS = {"type", "press", "hotkey", "click", "click_window"}
SEEDS = 2600


def test_each_suite_is_registered_on_the_apps_tier_with_prefixed_unique_ids() -> None:
    every = [t.id for s in list_suites() for t in templates(s)]
    assert len(every) == len(set(every)), "template ids repeat across suites"
    for suite, prefix in SUITES.items():
        assert required_tier(suite) == "apps"
        assert templates(suite) and all(t.id.startswith(prefix) for t in templates(suite)), suite


Drawn = tuple[frozenset[str], frozenset[str], TaskSpec]
"""A template's instructions and content keys over :data:`SEEDS` seeds, and its seed-0 variant."""


def _draw(template_id: str) -> Drawn:
    """Runs in a worker process (:func:`drawn`)."""
    template = next(t for t in TEMPLATES if t.id == template_id)
    tasks = [template.variant(seed) for seed in range(SEEDS)]  # each one loaded and checked as a task file
    return frozenset(t.instruction for t in tasks), frozenset(content_key(t) for t in tasks), tasks[0]


@pytest.fixture(scope="module")
def drawn(request: pytest.FixtureRequest) -> Iterator[dict[str, Pending[Drawn]]]:
    """:func:`_draw` of each selected template, all started when the first of them runs."""
    test = test_template_has_two_thousand_distinct_instructions_and_valid_distinct_variants
    with in_processes(_draw, [t.id for t in params(selected(request, test), "template")]) as pending:
        yield pending


@pytest.mark.parametrize("template", TEMPLATES, ids=[t.id for t in TEMPLATES])
def test_template_has_two_thousand_distinct_instructions_and_valid_distinct_variants(
        drawn: dict[str, Pending[Drawn]], template: Template) -> None:
    instructions, content_keys, first = drawn[template.id].result()
    assert len(instructions) >= 2000
    assert len(content_keys) >= 2000
    assert template.difficulty in (1, 2, 3)
    assert first == template.variant(0)  # a worker drew ``first``: the same task from another process


@pytest.mark.parametrize("template", TEMPLATES, ids=[t.id for t in TEMPLATES])
def test_oracle_waits_for_the_focus_before_its_first_input_and_ends_done(template: Template) -> None:
    for seed in range(20):
        task = template.variant(seed)
        ops = [o.op for o in task.oracle or []]
        first_input = next(i for i, op in enumerate(ops) if op in INPUT_OPS)
        assert "wait_focused" in ops[:first_input], f"{template.id}: {ops}"
        assert ops[-1] == "done" and "wait" not in ops, f"{template.id}: a fixed-time wait in {ops}"
        assert task.evaluator is not None and task.related_apps


@pytest.mark.parametrize("suite", list(SUITES))
def test_a_suite_draws_many_distinct_variants_deterministically(suite: str) -> None:
    tasks = generate(suite, 60, seed=5)
    assert len({content_key(t) for t in tasks}) == 60 and tasks == generate(suite, 60, seed=5)
