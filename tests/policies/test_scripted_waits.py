"""The scripted policy's waits: polls that cost no step, the tree asked for when needed, a clear error at timeout."""

from __future__ import annotations

import time

import pytest

from osgym.agents.policies.scripted import ScriptedPolicy
from osgym.errors import PolicyError
from osgym.replicas.actions import Press, Wait
from osgym.replicas.hollow.protocol import A11yFind
from osgym.replicas.observation import Observation, Window
from osgym.tasks.spec import load_task

STATE = "https://accessibility.ubuntu.example.org/ns/state"


def _tree(save: str) -> str:
    return (f'<desktop-frame xmlns:st="{STATE}"><application name="mousepad">'
            f'<frame name="notes.txt - Mousepad"><push-button name="Save" st:showing="true" st:sensitive="true"/>'
            f'</frame><file-chooser name="Save As"><push-button name="Save" st:showing="true" {save}/>'
            '</file-chooser></application></desktop-frame>')


def _obs(a11y: str | None = None, titles: tuple[str, ...] = ("Save As",)) -> Observation:
    windows = tuple(Window(i, t, 0, 0, 100, 100) for i, t in enumerate(titles))
    return Observation(b"", "png", 1280, 800, "x", 0, windows, a11y=a11y)


def _policy(*ops: dict) -> ScriptedPolicy:  # type: ignore[type-arg]
    task = load_task({"id": "t", "instruction": "x", "evaluator": {"func": "infeasible"}, "oracle": list(ops)})
    p = ScriptedPolicy()
    p.reset(task, seed=0)
    return p


SAVE_THEN_ENTER = ({"op": "type", "args": {"text": "/tmp/a.txt"}},
                   {"op": "wait_enabled", "args": {"window": "Save As", "control": "Save", "timeout": 0.3}},
                   {"op": "press", "args": {"key": "enter"}})


def test_the_step_before_a_wait_enabled_asks_for_the_tree_of_its_window_only() -> None:
    p = _policy(*SAVE_THEN_ENTER)
    typed = p.act(_obs(), [])
    assert typed.needs_a11y and not typed.waiting
    assert typed.a11y_window == "Save As"  # the replica leaves the editor's own window out
    assert p.act(_obs(None), []).a11y_window == "Save As"  # and so does every poll of the wait
    p.act(_obs(_tree('st:sensitive="true"')), [])
    assert p.act(_obs(), []).a11y_window is None  # the op after the press reads no tree


def test_each_tree_wait_asks_the_replica_for_the_one_element_its_check_reads() -> None:
    waits = {"wait_enabled": ({"control": "Save"}, A11yFind(name="Save", role="push-button")),
             "wait_focused": ({"role": "paragraph"}, A11yFind(role="paragraph", focused=True)),
             "wait_element": ({"name": "Header 1", "role": "header"}, A11yFind("Header 1", "header", sized=True)),
             "click_element": ({"name": "Inbox"}, A11yFind(name="Inbox", sized=True))}
    for op, (args, find) in waits.items():
        asked = _policy({"op": op, "args": {"window": "Save As", **args}}).act(_obs(), [])
        assert asked.needs_a11y and asked.a11y_window == "Save As" and asked.a11y_find == find, op
    # a role or name the replica would refuse: the window's tree, and the check says what it did not find
    for args in ({"control": "Save", "role": "Push Button"}, {"control": "a\nb"}):
        asked = _policy({"op": "wait_enabled", "args": {"window": "Save As", **args}}).act(_obs(), [])
        assert asked.a11y_window == "Save As" and asked.a11y_find is None, args


def test_a_window_the_replica_would_refuse_reads_the_whole_tree() -> None:
    for window in ("", "x" * 201, "a\nb", 7):
        p = _policy({"op": "wait_enabled", "args": {"window": window, "control": "Save"}})
        asked = p.act(_obs(), [])
        assert asked.needs_a11y and asked.a11y_window is None and asked.a11y_find is None, window


def test_enter_waits_until_the_dialogs_own_save_button_is_sensitive() -> None:
    p = _policy(*SAVE_THEN_ENTER)
    p.act(_obs(), [])
    asked = p.act(_obs(None), [])  # no tree yet: a waiting decision that asks for one, at once
    assert asked.waiting and asked.needs_a11y and asked.actions == [Wait(seconds=0.0)]
    greyed = p.act(_obs(_tree("")), [])  # the editor's own Save is sensitive; the dialog's is not
    assert greyed.waiting and greyed.needs_a11y
    ready = p.act(_obs(_tree('st:sensitive="true"')), [])
    assert not ready.waiting and ready.actions == [Press(key="enter")]


def test_a_control_that_never_becomes_sensitive_is_a_policy_error_naming_the_step() -> None:
    p = _policy(*SAVE_THEN_ENTER)
    p.act(_obs(), [])
    with pytest.raises(PolicyError, match=r"oracle for t, step 2/3 \(wait_enabled\).*never became enabled.*"
                                          r"windows on screen: \['Save As'\]"):
        for _ in range(200):  # bounded: 2 s of polls against a 0.3 s timeout
            p.act(_obs(_tree("")), [])
            time.sleep(0.01)


def test_a_focused_wait_window_holds_keys_until_the_dialog_has_the_focus() -> None:
    # A file chooser maps a moment before the window manager hands it the focus: keys sent then reach no window.
    p = _policy({"op": "wait_window", "args": {"title": "Save As", "focused": True, "timeout": 5}},
                {"op": "hotkey", "args": {"keys": ["ctrl", "a"]}})
    editor = Window(1, "notes.txt - Mousepad", 0, 0, 800, 600, focused=True)
    mapped = Window(2, "Save As", 100, 100, 600, 400)

    def obs(*ws: Window) -> Observation:
        return Observation(b"", "png", 1280, 800, "x", 0, ws)

    assert p.act(obs(editor), []).waiting
    assert p.act(obs(editor, mapped), []).waiting
    unfocused = Window(1, editor.title, 0, 0, 800, 600)
    assert p.act(obs(unfocused, mapped), []).waiting  # between the two: no window is active
    front = Window(2, "Save As", 100, 100, 600, 400, focused=True)
    keys = p.act(obs(unfocused, front), [])
    assert not keys.waiting and [a.action_type for a in keys.actions] == ["HOTKEY"]


def test_a_focused_wait_window_that_never_gets_the_focus_says_so() -> None:
    p = _policy({"op": "wait_window", "args": {"title": "Save As", "focused": True, "timeout": 0.2}})
    with pytest.raises(PolicyError, match=r"window 'Save As' never had the focus"):
        for _ in range(100):  # bounded: 1 s of polls against a 0.2 s timeout
            p.act(_obs(), [])
            time.sleep(0.01)
