"""The scripted policy's noise: wrong actions followed by recovery, deterministic per seed."""

from __future__ import annotations

import pytest

from osgym.agents.policies.scripted import ScriptedPolicy
from osgym.errors import PolicyError
from osgym.replicas.actions import Done, MoveTo, Press, Typing
from osgym.replicas.observation import Observation, Window
from osgym.suites import templates


class _EveryTitle(Window):
    """The active window of ``_AnyWindow``: whichever window an op waits on to have the focus."""

    def matches(self, title_contains: str) -> bool:
        return True


class _AnyWindow(Observation):
    """An observation in which every window an op waits for exists and has the focus, every dialog is
    gone, and (in its accessibility tree) the Save As dialog's Save button is sensitive."""

    def window(self, title_contains: str) -> Window | None:
        return Window(1, title_contains, 10, 30, 300, 200, True, "X")

    @property
    def focused_window(self) -> Window | None:
        return _EveryTitle(1, "any", 10, 30, 300, 200, True, "X")


SAVE_ENABLED = ('<desktop-frame xmlns:st="https://accessibility.ubuntu.example.org/ns/state"><application>'
                '<file-chooser name="Save As"><push-button name="Save" st:showing="true" st:sensitive="true"/>'
                '</file-chooser></application></desktop-frame>')
OBS = _AnyWindow(b"", "png", 1280, 800, "x", 0, (), a11y=SAVE_ENABLED)


def _actions(task, noise: float, seed: int) -> list:  # type: ignore[no-untyped-def]
    p = ScriptedPolicy(noise=noise)
    p.reset(task, seed=seed)
    out = []
    for _ in range(200):
        a = p.act(OBS, [])
        out += a.actions
        if isinstance(a.actions[0], Done):
            return out
    raise AssertionError("the oracle did not finish")


def test_noise_inserts_a_typo_and_corrects_it() -> None:
    task = templates("desktop-basics", ["terminal-create-file"])[0].variant(0)
    clean = _actions(task, 0.0, 1)
    noisy = _actions(task, 1.0, 1)
    assert any(isinstance(a, Press) and a.key == "backspace" for a in noisy)
    assert any(isinstance(a, MoveTo) for a in noisy)
    typed_clean = "".join(a.text for a in clean if isinstance(a, Typing))
    typed = ""
    for a in noisy:  # replay the keystrokes: the typo is erased by backspace
        if isinstance(a, Typing):
            typed += a.text
        elif isinstance(a, Press) and a.key == "backspace":
            typed = typed[:-1]
    assert typed == typed_clean


def test_noise_is_deterministic_per_seed_and_varies_across_seeds() -> None:
    task = templates("desktop-basics", ["editor-write-list"])[0].variant(3)
    runs = {s: _actions(task, 0.5, s) for s in range(6)}
    assert _actions(task, 0.5, 2) == runs[2]
    assert len({tuple(a.model_dump_json() for a in r) for r in runs.values()}) > 1


def test_ops_marked_noise_false_are_left_alone() -> None:
    task = templates("desktop-basics", ["files-rename"])[0].variant(0)
    noisy = _actions(task, 1.0, 0)
    name = task.oracle[0].args["text"]
    assert Typing(text=name) in noisy  # the type-ahead selection is typed verbatim


def test_noise_rate_must_be_a_probability() -> None:
    with pytest.raises(PolicyError, match="noise"):
        ScriptedPolicy(noise=1.5)
