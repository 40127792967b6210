"""Every computer_13 action against a real replica, observed by an input probe inside it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from osgym.errors import RequestRejected
from osgym.replicas.actions import (
    Click,
    Done,
    DoubleClick,
    DragTo,
    Fail,
    Hotkey,
    KeyDown,
    KeyUp,
    MouseDown,
    MouseUp,
    MoveTo,
    Press,
    RightClick,
    Scroll,
    Typing,
    Wait,
)
from osgym.replicas.client import Replica
from tests.replica.helpers import Probe


@pytest.fixture(scope="module")
def probe(shared_replica: Replica) -> Iterator[Probe]:
    p = Probe(shared_replica)
    cx, cy = p.window.center
    shared_replica.act([Click(x=cx, y=cy)])  # focus it
    p.wait_for(lambda e: e["kind"] == "up")
    yield p


@pytest.fixture
def fresh(probe: Probe) -> Probe:
    probe.clear()
    return probe


def test_move_to(fresh: Probe, shared_replica: Replica) -> None:
    shared_replica.act([MoveTo(x=300, y=200)])
    assert shared_replica.pointer() == (300, 200)
    fresh.wait_for(lambda e: e["kind"] == "motion" and (e["x"], e["y"]) == (300, 200))


def test_click_right_click_and_buttons(fresh: Probe, shared_replica: Replica) -> None:
    shared_replica.act([Click(x=400, y=300), RightClick(x=410, y=310), Click(x=420, y=320, button="middle")])
    events = fresh.wait_for(lambda e: e["kind"] == "up" and e["num"] == 2)
    downs = [(e["num"], e["x"], e["y"]) for e in events if e["kind"] == "down"]
    assert downs == [(1, 400, 300), (3, 410, 310), (2, 420, 320)]


def test_double_click(fresh: Probe, shared_replica: Replica) -> None:
    shared_replica.act([DoubleClick(x=500, y=300)])
    events = fresh.wait_for(lambda e: e["kind"] == "double")
    assert [e["x"] for e in events if e["kind"] == "double"] == [500]


def test_mouse_down_drag_and_mouse_up(fresh: Probe, shared_replica: Replica) -> None:
    shared_replica.act([MoveTo(x=200, y=200), MouseDown(), MoveTo(x=260, y=240), MouseUp()])
    events = fresh.wait_for(lambda e: e["kind"] == "up")
    assert any(e["kind"] == "drag" and (e["x"], e["y"]) == (260, 240) for e in events)
    assert [e["kind"] for e in events if e["kind"] in ("down", "up")] == ["down", "up"]


def test_drag_to(fresh: Probe, shared_replica: Replica) -> None:
    shared_replica.act([MoveTo(x=300, y=300), DragTo(x=500, y=400)])
    events = fresh.wait_for(lambda e: e["kind"] == "up")
    down = next(e for e in events if e["kind"] == "down")
    up = next(e for e in events if e["kind"] == "up")
    assert (down["x"], down["y"], up["x"], up["y"]) == (300, 300, 500, 400)
    assert any(e["kind"] == "drag" for e in events)  # Tk collapses motion events when it falls behind


def test_scroll(fresh: Probe, shared_replica: Replica) -> None:
    shared_replica.act([Scroll(x=600, y=300, dy=2), Scroll(dy=-3), Scroll(dx=1)])
    events = fresh.wait_for(lambda e: e["kind"] == "up" and e["state"] & 1)
    wheel = [(e["num"], bool(e["state"] & 1)) for e in events if e["kind"] == "down"]
    # X buttons 4 up, 5 down, 6 left, 7 right; Tk 8.6 reports 6/7 as Shift + 4/5.
    assert wheel == [(4, False), (4, False), (5, False), (5, False), (5, False), (5, True)]


def test_typing_press_hotkey_and_key_down_up(fresh: Probe, shared_replica: Replica) -> None:
    shared_replica.act([Typing(text="Hi 5!"), Press(key="enter"), Hotkey(keys=["ctrl", "a"]),
                        KeyDown(key="shift"), Press(key="b"), KeyUp(key="shift")])
    def shift_released_after_b(events: list[dict[str, Any]]) -> bool:
        kinds = [(e["kind"], e["keysym"]) for e in events]
        b = next((i for i, k in enumerate(kinds) if k[0] == "key_down" and k[1] in ("B", "b")), None)
        return b is not None and ("key_up", "Shift_L") in kinds[b:]

    events = fresh.wait_until(shift_released_after_b)
    chars = "".join(e["char"] for e in events if e["kind"] == "key_down" and e["char"] and e["char"].isprintable())
    assert chars.startswith("Hi 5!")
    downs = [e["keysym"] for e in events if e["kind"] == "key_down"]
    assert "Return" in downs
    ctrl_a = next(e for e in events if e["kind"] == "key_down" and e["keysym"] == "a")
    assert ctrl_a["state"] & 4  # ControlMask held
    b = next(e for e in events if e["kind"] == "key_down" and e["keysym"] in ("B", "b"))
    assert b["state"] & 1  # ShiftMask held by KEY_DOWN


def test_wait_done_and_fail(shared_replica: Replica) -> None:
    t0 = time.monotonic()
    out = shared_replica.act([Wait(seconds=0.3), Done(), Fail()])
    assert out["performed"] == 3
    assert time.monotonic() - t0 >= 0.3


def test_settle_reports_whether_the_screen_stopped_changing(shared_replica: Replica) -> None:
    out = shared_replica.act([MoveTo(x=10, y=10)], settle=2.0)
    assert out["settled"] is True
    assert out["pointer"] == [10, 10]


@pytest.mark.parametrize("rule, settled_before_the_clear", [
    ({"quiet": 0.05}, True), ({"quiet": 1.5}, False),
    # damage: the X server's reports of drawing, not screenshots; the echo is a change, so a long quiet
    # window still waits for the clear, and so does a minimum that outlasts the sleep
    ({"mode": "damage", "quiet": 0.05, "min": 0}, True), ({"mode": "damage", "quiet": 1.5, "min": 0}, False),
    ({"mode": "damage", "quiet": 0.05, "min": 1.5}, False),
])
def test_settle_waits_until_the_screen_has_been_quiet_that_long(
        replica: Replica, rule: dict[str, object], settled_before_the_clear: bool) -> None:
    # xterm echoes the command at once and clears the screen 1 s later: a quiet window shorter than that gap
    # settles in between (as two equal frames 50 ms apart did, before a loaded xterm had even echoed), a
    # longer one only once the clear has been drawn. The gap is a second: at load 10-16 a gap of 0.3 s was not
    # quiet for 50 ms anywhere (both short-window cases settled only after the clear).
    replica.launch(["xterm"])
    replica.wait_window("xterm", focused=True)
    replica.act([Typing(text="clear\n")], settle=3.0)
    replica.execute(["rm", "-f", "/tmp/cleared"])
    body = {"actions": [Typing(text="sleep 1; clear; touch /tmp/cleared\n").to_json()],
            "settle": {"timeout": 5.0, "interval": 0.05, **rule}}
    out = replica.api.request("POST", "/actions", json=body, timeout=15).json()
    assert out["settled"] is True
    assert out["settled_by"] == rule.get("mode", "frames")
    at_return = replica.screenshot().data
    # proof that the clear is over, not a guess of how long it takes: xterm ran it before the touch, and the
    # screen has been quiet since
    deadline = time.monotonic() + 60
    while replica.execute(["test", "-e", "/tmp/cleared"]).returncode != 0:
        assert time.monotonic() < deadline, "xterm never ran the command"
        time.sleep(0.1)
    assert replica.act([], settle=10.0, quiet=0.5)["settled"] is True
    assert (replica.screenshot().data != at_return) is settled_before_the_clear


@pytest.mark.parametrize("mode", ["frames", "damage"])
def test_settle_waits_its_minimum_on_a_still_screen(shared_replica: Replica, mode: str) -> None:
    shared_replica.act([], settle=3.0)  # nothing left to draw from earlier tests
    t0 = time.monotonic()
    out = shared_replica.act([], settle=3.0, mode=mode, minimum=0.5, quiet=0.05)
    took = time.monotonic() - t0
    # settled (not timed out) is the replica's own proof that it ended before the 3 s timeout
    assert out["settled"] is True and out["settled_by"] == mode
    assert took >= 0.5, took


def test_damage_settle_ends_quiet_after_the_last_drawing_not_at_its_timeout(shared_replica: Replica) -> None:
    shared_replica.act([], settle=3.0)
    out = shared_replica.act([MoveTo(x=30, y=30)], settle=5.0, mode="damage", minimum=0.0, quiet=0.1)
    # settled is the replica's word that the quiet window passed before the timeout: a settle that waited for
    # its timeout answers settled False, however loaded the machine
    assert out["settled"] is True and out["settled_by"] == "damage"


@pytest.mark.parametrize("rule, named", [({"mode": "pixels"}, "settle.mode"), ({"min": 9}, "min"),
                                          ({"mode": "damage", "quiet": -1}, "quiet")])
def test_a_bad_settle_rule_is_refused_before_any_input(shared_replica: Replica, rule: dict[str, object],
                                                        named: str) -> None:
    before = shared_replica.pointer()
    with pytest.raises(RequestRejected, match=named):
        shared_replica.api.request("POST", "/actions", json={
            "actions": [MoveTo(x=before[0] // 2 + 1, y=before[1] // 2 + 1).to_json()],
            "settle": {"timeout": 1.0, **rule}})
    assert shared_replica.pointer() == before
