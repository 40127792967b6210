"""Seeded generation of desktop-basics variants: deterministic, distinct, valid; no replicas needed."""

from __future__ import annotations

import pytest

from osgym.errors import ConfigError, TaskLoadError
from osgym.suites import describe, expand, generate, list_suites, load_suite, templates
from osgym.suites.generators import content_key


def test_suite_has_30_plus_templates_across_domains_with_infeasible_ones() -> None:
    ts = templates("desktop-basics")
    assert len(ts) >= 30 and len({t.id for t in ts}) == len(ts)
    assert {t.domain for t in ts} >= {"terminal", "files", "editor", "windows", "settings", "infeasible"}
    assert sum(t.infeasible for t in ts) >= 3
    assert "desktop-basics" in list_suites() and describe("desktop-basics")


def test_default_set_is_variant_zero_of_every_template() -> None:
    tasks = load_suite("desktop-basics")
    assert [t.id for t in tasks] == [t.id for t in templates("desktop-basics")]
    assert {t.variant for t in tasks} == {"0"}
    assert all(t.oracle for t in tasks)
    assert all((t.oracle[-1].op == "fail") == t.infeasible for t in tasks if t.oracle)


def test_1000_variants_are_deterministic_for_a_seed_and_distinct() -> None:
    a = generate("desktop-basics", 1000, seed=42)
    b = generate("desktop-basics", 1000, seed=42)
    assert [t.model_dump() for t in a] == [t.model_dump() for t in b]
    assert len({(t.id, t.variant) for t in a}) == 1000
    assert len({content_key(t) for t in a}) == 1000
    assert len({t.instruction for t in a}) > 850  # setups differ too
    per_template = {t.id for t in a}
    assert per_template == {t.id for t in templates("desktop-basics")}
    c = generate("desktop-basics", 1000, seed=43)
    assert [t.model_dump() for t in a] != [t.model_dump() for t in c]


def test_each_template_offers_many_distinct_variants() -> None:
    for t in templates("desktop-basics"):
        keys = {content_key(t.variant(s)) for s in range(60)}
        assert len(keys) >= 35, f"{t.id}: only {len(keys)} distinct variants in 60 seeds"


def test_variant_is_deterministic_per_template_and_seed() -> None:
    t = templates("desktop-basics")[0]
    assert t.variant(5) == t.variant(5) and t.variant(5) != t.variant(6)


def test_expand_gives_one_task_per_episode_round_robin() -> None:
    tasks = expand("desktop-basics", ["terminal-create-file", "windows-close"], 7, seed=3)
    assert [t.id for t in tasks] == ["terminal-create-file", "windows-close"] * 3 + ["terminal-create-file"]
    assert len({(t.id, t.variant) for t in tasks}) == 7
    assert expand("desktop-basics", None, 5, seed=3) == generate("desktop-basics", 5, seed=3)
    # more episodes extend the plan without changing the ones already planned (resumable runs)
    assert expand("desktop-basics", None, 80, seed=3)[:40] == expand("desktop-basics", None, 40, seed=3)


def test_unknown_suite_and_tasks_are_rejected() -> None:
    with pytest.raises(TaskLoadError, match="nope"):
        load_suite("nope")
    with pytest.raises(ConfigError, match="no-such-template"):
        expand("desktop-basics", ["no-such-template"], 3, seed=0)
