"""Suites: tasks authored and generated in osgym, apart from the runtime that runs them (:mod:`osgym.tasks`).

A suite is a list of :class:`~osgym.suites.generators.Template`. Its default task
set is variant 0 of every template; :func:`generate` draws many distinct
variants, and :func:`expand` turns a recipe's ``suite``/``tasks``/``episodes``/``seed``
into one task per episode. This module is the registry of the built-in suites; the package holds:

- :mod:`~osgym.suites.generators`: :class:`~osgym.suites.generators.Template` and the JSON pieces suites repeat.
- :mod:`~osgym.suites.variation`: the seeded theme, zoom, window geometry and distractor of apps-tier tasks.
- the built-in suites, one package each (``desktop_basics``, ``apps_smoke``, ``apps_spreadsheet``, ...), and what
  several share: :mod:`~osgym.suites.apps_smoke.common` (opening an app, Save As), :mod:`~osgym.suites.app_files`
  (files into a replica) and :mod:`~osgym.suites.office` (LibreOffice's files and dialogs).
- :mod:`~osgym.suites.export`: a suite's variants as OSWorld task files (``osgym suites export``).
- :mod:`~osgym.suites.preview`: a task's initial state as a picture (``osgym suites show --screenshot``).
- :mod:`~osgym.suites.sample`, :mod:`~osgym.suites.sample_apps` and :mod:`~osgym.suites.sample_assets`: the
  folders of OSWorld-format task files ``osgym tasks sample`` writes, and their assets.

Each generated task may carry an ``oracle``: the steps the ``scripted`` policy
(:mod:`osgym.agents.policies.scripted`) replays to solve it.

>>> tasks = generate("desktop-basics", 50, seed=7)
>>> len({(t.id, t.variant) for t in tasks}) == 50 and tasks == generate("desktop-basics", 50, seed=7)
True
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from types import ModuleType

from osgym.errors import ConfigError, TaskLoadError
from osgym.suites import (
    apps_browser,
    apps_code,
    apps_documents,
    apps_images,
    apps_mail,
    apps_media,
    apps_multi,
    apps_presentations,
    apps_smoke,
    apps_spreadsheet,
    desktop_basics,
)
from osgym.suites.generators import Template, content_key
from osgym.suites.variation import DEFAULT as DEFAULT_VARIATION
from osgym.tasks.spec import TaskSpec

SUITES: dict[str, ModuleType] = {m.NAME: m for m in (desktop_basics, apps_smoke, apps_spreadsheet, apps_documents,
                                                     apps_presentations, apps_browser, apps_images, apps_media,
                                                     apps_mail, apps_code, apps_multi)}


def _registered(suite: ModuleType) -> tuple[Template, ...]:
    """The suite's templates as the registry serves them. An apps-tier template gets the default
    variation (window geometry, theme, zoom and a distractor, seeded per variant: osgym.suites.variation)
    unless it sets its own ``vary`` (variation.NONE, or some kinds only). The module's own list is left
    as its author wrote it."""
    if getattr(suite, "TIER", None) != "apps":
        return tuple(suite.TEMPLATES)
    return tuple(t if t.vary is not None else dataclasses.replace(t, vary=DEFAULT_VARIATION) for t in suite.TEMPLATES)


_TEMPLATES: dict[str, tuple[Template, ...]] = {name: _registered(m) for name, m in SUITES.items()}
MAX_ATTEMPTS_PER_TASK = 50


def list_suites() -> list[str]:
    """Names of the built-in suites."""
    return sorted(SUITES)


def _module(name: str) -> ModuleType:
    if name not in SUITES:
        raise TaskLoadError(f"suite: expected one of {list_suites()}, actual {name!r}")
    return SUITES[name]


def describe(name: str) -> str:
    """The suite's one-line description.

    Raises:
        TaskLoadError: if there is no such suite.
    """
    return str(_module(name).DESCRIPTION)


def required_tier(name: str) -> str | None:
    """The image tier the suite's tasks need (its ``TIER``), or None if it names none or is unknown.

    >>> required_tier("apps-smoke"), required_tier("desktop-basics")
    ('apps', None)
    """
    module = SUITES.get(name)
    return None if module is None else getattr(module, "TIER", None)


def templates(name: str, ids: list[str] | None = None) -> list[Template]:
    """The suite's templates, optionally only those with the given ids (in suite order).

    Raises:
        TaskLoadError: if there is no such suite.
        ConfigError: if ``ids`` names templates the suite does not have.
    """
    _module(name)  # the suite's name, checked
    found = list(_TEMPLATES[name])
    if ids:
        known = {t.id for t in found}
        missing = [i for i in ids if i not in known]
        if missing:
            raise ConfigError(f"recipe field 'tasks': {missing} not in suite {name} (has {sorted(known)})")
        found = [t for t in found if t.id in ids]
    return found


def load_suite(name: str) -> list[TaskSpec]:
    """The suite's default task set: variant 0 of every template.

    Raises:
        TaskLoadError: if there is no such suite or a template builds an invalid task.
    """
    return [t.variant(0) for t in templates(name)]


def generate(name: str, n: int, seed: int = 0, tasks: list[str] | None = None,
             on_task: Callable[[int], None] | None = None) -> list[TaskSpec]:
    """``n`` distinct variants, templates taken round-robin, deterministic for ``seed``.

    Variant seeds are drawn from ``seed``; a draw that repeats an earlier variant's
    content is skipped, so no two returned tasks are the same task. ``on_task(k)`` is
    called after the ``k``-th task is drawn (a progress bar).

    Raises:
        TaskLoadError: if there is no such suite.
        ConfigError: if ``tasks`` names unknown templates, or the templates cannot yield ``n``
            distinct variants (as soon as one template repeats itself ``MAX_ATTEMPTS_PER_TASK``
            times in a row: templates take turns, so one exhausted template stops the draw).
    """
    chosen = templates(name, tasks)
    rng = random.Random(f"{name}/{seed}")
    seen: set[str] = set()
    out: list[TaskSpec] = []
    misses = 0
    while len(out) < n:
        template = chosen[len(out) % len(chosen)]
        task = template.variant(rng.randrange(2**31))
        key = content_key(task)
        if key in seen:
            misses += 1
            if misses >= MAX_ATTEMPTS_PER_TASK:
                given = sum(t.id == template.id for t in out)
                raise ConfigError(f"suite {name}: cannot draw {n} distinct variants of {len(chosen)} templates: "
                                  f"template {template.id} gave {given} distinct variants and then "
                                  f"{MAX_ATTEMPTS_PER_TASK} repeats in a row (at most about "
                                  f"{given * len(chosen)} variants with templates taking turns)")
            continue
        misses = 0
        seen.add(key)
        out.append(task)
        if on_task is not None:
            on_task(len(out))
    return out


def expand(suite: str, tasks: list[str] | None, episodes: int, seed: int) -> list[TaskSpec]:
    """One task variant per episode for a recipe (``suite``, ``tasks``, ``episodes``, ``seed``).

    Episode ``i`` gets a variant of template ``i % len(templates)``; all are distinct.

    Raises:
        TaskLoadError: if there is no such suite.
        ConfigError: if ``tasks`` names templates the suite does not have.
    """
    return generate(suite, episodes, seed, tasks)


def mix_schedule(weights: dict[str, float], n: int) -> list[str]:
    """Which suite each of ``n`` episodes draws from: each about ``weight / sum`` of them, interleaved
    (smooth weighted round-robin). A schedule for more episodes starts with the one for fewer.

    >>> mix_schedule({"a": 2, "b": 1}, 6)
    ['a', 'b', 'a', 'a', 'b', 'a']
    """
    total = sum(weights.values())
    names = sorted(weights)
    current = dict.fromkeys(names, 0.0)
    out = []
    for _ in range(n):
        for name in names:
            current[name] += weights[name]
        pick = max(names, key=lambda k: current[k])  # ties go to the first name: deterministic
        current[pick] -= total
        out.append(pick)
    return out


def expand_mix(weights: dict[str, float], episodes: int, seed: int) -> list[TaskSpec]:
    """One task variant per episode for a recipe mixing suites (``suites: {name: weight}``).

    Episode ``i`` goes to suite ``mix_schedule(weights, episodes)[i]`` and takes that suite's next
    variant of :func:`generate` with ``seed``: a plan for more episodes starts with the plan for fewer.

    Raises:
        TaskLoadError: if a suite does not exist.
        ConfigError: if a suite cannot yield its share of distinct variants.
    """
    schedule = mix_schedule(weights, episodes)
    drawn = {name: iter(generate(name, schedule.count(name), seed)) for name in weights if name in schedule}
    return [next(drawn[name]) for name in schedule]
