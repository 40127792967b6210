"""The Save As race (issue 11), provoked on purpose.

The cause: GTK's file chooser updates the sensitivity of its accept button ("Save") from a 150 ms
timeout that every change to the Name field restarts, and the dialog ignores Enter while that
button is insensitive. Nothing on screen changes when the timeout fires except the button, so
the replica's settle (two equal frames 50 ms apart) returns before it. An oracle that pressed
Enter on the next step therefore lost the key whenever the step took less than 150 ms: on a
quiet machine, often; under load, almost never.

``test_the_file_chooser_ignores_enter_until_save_is_sensitive`` shows the cause on a real dialog.
``test_an_agent_that_types_and_presses_enter_at_once_still_saves`` drives the suite's own Save As
oracles through an *eager* agent, which sends every keyboard action it can decide without
looking at the screen in one step, as a model that emits several actions per reply does. The
oracle that pressed Enter without checking the Save button failed this every time; the oracle
that waits for the button to be sensitive passes it every time, at any machine speed.
"""

from __future__ import annotations

import dataclasses
import re
import time
from typing import Any

import pytest

from osgym.agents.policies.base import Decision
from osgym.agents.policies.scripted import ScriptedPolicy, _control_enabled
from osgym.episodes import EpisodeLimits, run_episode
from osgym.episodes.trajectory import Step
from osgym.replicas.actions import Hotkey, Press, Typing
from osgym.replicas.observation import Observation
from osgym.replicas.pool import ReplicaPool
from osgym.suites import templates
from osgym.tasks.spec import TaskSpec

pytestmark = [pytest.mark.docker, pytest.mark.slow]

KEYBOARD = {"TYPING", "PRESS", "HOTKEY"}
SAVE_AS_TEMPLATES = templates("desktop-basics", ["editor-save-text", "editor-write-list", "editor-save-copy"])
LIMITS = EpisodeLimits(max_steps=40, deadline_s=120, settle_s=0.5)


class EagerPolicy:
    """Wraps a policy and bundles its consecutive keyboard actions into one step.

    After a keyboard action it asks the inner policy again at once, on the same windows but
    without an accessibility tree, and keeps going while the answer is more keyboard input.
    Anything else (a click, or a wait, which needs a fresh look) is held for the next step.
    """

    name = "eager"

    def __init__(self, inner: ScriptedPolicy) -> None:
        self.inner = inner
        self._held: Decision | None = None

    def config(self) -> dict[str, Any]:
        return {"inner": self.inner.config()}

    def reset(self, task: TaskSpec, *, seed: int) -> None:
        self.inner.reset(task, seed=seed)
        self._held = None

    def act(self, observation: Observation, history: list[Step]) -> Decision:
        if self._held is not None:
            held, self._held = self._held, None
            if held.waiting or not _keyboard_only(held):
                return held
            first = held
        else:
            first = self.inner.act(observation, history)
        if first.waiting or not _keyboard_only(first):
            return first
        bundle, needs_a11y = list(first.actions), first.needs_a11y
        unseen = dataclasses.replace(observation, a11y=None)
        while True:
            nxt = self.inner.act(unseen, history)
            if nxt.waiting or not _keyboard_only(nxt):
                self._held = nxt
                break
            bundle += nxt.actions
            needs_a11y = needs_a11y or nxt.needs_a11y
        return Decision(bundle, thought="eager: " + " + ".join(a.action_type for a in bundle), needs_a11y=needs_a11y)


def _keyboard_only(decision: Decision) -> bool:
    return all(a.action_type in KEYBOARD for a in decision.actions)


def _save_button(tree: str) -> bool:
    return _control_enabled(tree, "Save As", "Save", "push-button")


def test_the_file_chooser_ignores_enter_until_save_is_sensitive(shared_pool: ReplicaPool) -> None:
    with shared_pool.lease(timeout=300) as r:
        r.launch(["mousepad"])
        r.wait_window("Mousepad", timeout=30)
        r.act([Hotkey(keys=["ctrl", "s"])])
        r.wait_window("Save As", timeout=30)
        # The key events reach GTK together, well inside its 150 ms timeout: Enter meets an insensitive Save.
        r.act([Hotkey(keys=["ctrl", "a"]), Typing(text="/home/user/Documents/race.txt"), Press(key="enter")],
              settle=1.0)
        assert r.wait_window("Save As", timeout=1).title == "Save As", "the dialog should have ignored Enter"
        assert _save_button(r.accessibility()), "Save should be sensitive once the timeout fired"
        assert r.execute(["test", "-e", "/home/user/Documents/race.txt"]).returncode == 1
        r.act([Press(key="enter")])  # the same key, now that Save is sensitive
        r.wait_window("race.txt - Mousepad", timeout=30)
        deadline = time.monotonic() + 30
        while r.execute(["test", "-e", "/home/user/Documents/race.txt"]).returncode != 0:
            assert time.monotonic() < deadline, "mousepad never wrote the file"
            time.sleep(0.1)


@pytest.mark.parametrize("seed", (0, 1))
@pytest.mark.parametrize("template", SAVE_AS_TEMPLATES, ids=[t.id for t in SAVE_AS_TEMPLATES])
def test_an_agent_that_types_and_presses_enter_at_once_still_saves(shared_pool: ReplicaPool, template: Any,
                                                                   seed: int) -> None:
    task = template.variant(seed)
    with shared_pool.lease(timeout=300) as r:
        traj = run_episode(r, task, EagerPolicy(ScriptedPolicy()), seed=7, limits=LIMITS)
    assert traj.error_class is None, traj.error_message
    assert traj.termination == "done" and traj.score == 1.0
    typed_with = [s.action_type for s in traj.steps if "TYPING" in s.action_type]
    assert any(re.fullmatch(r"(HOTKEY,)?TYPING", t) for t in typed_with), typed_with  # the bundling happened
    enter = [s for s in traj.steps if s.action.get("action_type") == "PRESS" and s.action.get("key") == "enter"]
    assert len(enter) == 1 and enter[0].a11y is not None
    assert _save_button(enter[0].a11y), "Enter went before the tree showed Save sensitive"
