"""The seeded variation of apps-tier tasks (osgym.suites.variation), on the task JSON: it only adds setup
steps around the target app's start, is deterministic per seed, covers its themes and zooms, keeps windows
on the screen, and its distractor never passes for the target. The GUI side (oracles scoring 1.0 on varied
variants, their input going to the app) is tests/apps/test_apps_suites.py."""

from __future__ import annotations

import dataclasses
import random
import re

import pytest

from osgym.suites import list_suites, required_tier, templates
from osgym.suites.generators import Template, launch, wait
from osgym.suites.variation import DISTRACTOR_DIR, DPIS, NONE, THEMES, Variation
from osgym.tasks.spec import SetupStep

APPS = [t for name in list_suites() if required_tier(name) == "apps" for t in templates(name)]
SEEDS = range(60)


def _plain(t: Template) -> Template:
    return dataclasses.replace(t, vary=NONE)


def _commands(config: list[dict[str, object]] | list[object]) -> list[str]:
    return [str(s.parameters.get("command")) for s in config]  # type: ignore[union-attr]


def _unzoomed(step: SetupStep) -> SetupStep:
    command = step.parameters.get("command")
    if step.type != "launch" or not isinstance(command, list):
        return step
    kept = [c for c in command if not str(c).startswith("--force-device-scale-factor=")]
    return step.model_copy(update={"parameters": {**step.parameters, "command": kept}})


@pytest.mark.parametrize("template", APPS, ids=[t.id for t in APPS])
def test_variation_only_adds_setup_around_the_app_and_is_seeded(template: Template) -> None:
    assert isinstance(template.vary, Variation), "apps-tier templates get the default variation at registration"
    for seed in (0, 1, 2):
        varied, plain = template.variant(seed), _plain(template).variant(seed)
        assert varied == template.variant(seed)
        assert varied.model_dump(exclude={"config"}) == plain.model_dump(exclude={"config"})
        # the builder's steps all remain, in order, with the added ones between them (Chromium's zoom is a flag)
        it = iter(_unzoomed(s) for s in varied.config)
        assert all(any(s == v for v in it) for s in plain.config), f"{template.id} seed {seed}"
        assert len(varied.config) > len(plain.config), f"{template.id}: seed {seed} is not varied"
        assert varied.config[-1] == plain.config[-1], "the setup still ends waiting for the app, focused"
    assert len({str(template.variant(s).config) for s in SEEDS}) == len(SEEDS)


def test_every_theme_and_zoom_is_drawn_and_windows_stay_on_the_screen() -> None:
    themes, dpis = set(), set()
    for t in APPS:
        for seed in SEEDS:
            commands = "\n".join(_commands(t.variant(seed).config))
            theme = re.search(r"/Net/ThemeName -s (\S+)", commands)
            dpi = re.search(r"/Xft/DPI -n -t int -s (\d+)", commands)
            assert theme and dpi, f"{t.id} seed {seed}: no theme or zoom"
            themes.add(theme.group(1))
            dpis.add(int(dpi.group(1)))
            place = re.search(r"python3 - (\d+) (\d+) (\d+) (\d+) <<'PY'", commands)
            assert t.vary is not None
            if not t.vary.geometry:  # a template that lays its windows out itself (apps-multi) or keeps the app's
                assert place is None, f"{t.id} seed {seed}: placed although its variation leaves geometry out"
                continue
            assert place, f"{t.id} seed {seed}: the app's window is not placed"
            fx, fy, fw, fh = (int(v) for v in place.groups())
            assert fx + fw <= 1000 and fy + fh <= 1000 and fw >= 550 and fh >= 600
            if "chromium" in commands:
                assert f"--force-device-scale-factor={int(dpi.group(1)) / 96:g}" in commands
    assert themes == set(THEMES) and dpis == set(DPIS)


def test_the_distractor_is_never_the_targets_program_nor_matches_its_window() -> None:
    data = {"instruction": "i", "config": [launch(["mousepad", "/tmp/a.txt"]), wait("a.txt")],
            "evaluator": {"func": "infeasible"}}
    for seed in SEEDS:
        config = Variation()(data, random.Random(seed))["config"]
        launches = [s for s in config if s["type"] == "launch"]
        assert [s["parameters"]["command"][0] for s in launches] == ["thunar", "mousepad"]
        assert launches[0]["parameters"]["command"][1].startswith(DISTRACTOR_DIR + "/")
        waits = [s["parameters"]["title"] for s in config if s["type"] == "wait_window"]
        assert "a.txt" not in waits[0] and waits[-1] == "a.txt"


def test_a_template_can_take_some_kinds_or_none() -> None:
    data = {"instruction": "i", "config": [launch(["gedit"]), wait("gedit")], "evaluator": {"func": "infeasible"}}
    assert NONE(data, random.Random(1)) == data
    assert Variation()({**data, "config": []}, random.Random(1))["config"] == []
    only_theme = Variation(zoom=False, geometry=False, distractor=False)(data, random.Random(1))["config"]
    assert [s["type"] for s in only_theme] == ["execute", "execute", "launch", "wait_window"]
    assert "/Xft/DPI -n -t int -s 96" in only_theme[0]["parameters"]["command"]
    full = Variation()(data, random.Random(1))["config"]
    assert only_theme[0] in full or "/Net/ThemeName" in full[0]["parameters"]["command"]
