"""``scripts/suite_check.py``: what counts as a failed episode, and (``--evidence``) what one leaves behind."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from osgym.episodes.trajectory import Step, Trajectory
from osgym.replicas.observation import Window
from scripts.suite_check import Episode, _keep


def test_a_kept_episode_has_each_steps_screenshot_and_what_it_did(tmp_path: Path) -> None:
    shots = [b"\x89PNG first", b"\x89PNG second"]
    windows = (Window(1, "notes.txt - Mousepad", 0, 0, 9, 9, True), Window(2, "Save As", 0, 0, 9, 9, False))
    t = Trajectory(steps=[Step(i, datetime.now(UTC), shot, "png", 8, 8, {"action_type": kind}, kind,
                               error="PolicyError: never" if i else None, windows=windows)
                          for i, (shot, kind) in enumerate(zip(shots, ["HOTKEY", "WAIT"], strict=True))],
                   termination="error", error_class="PolicyError", error_message="window 'Save' never appeared")
    _keep(tmp_path / "editor-save-seed1-quiet-oracle", t)
    folder = tmp_path / "editor-save-seed1-quiet-oracle"
    assert [(folder / f"{i:03d}.png").read_bytes() for i in range(2)] == shots
    lines = [json.loads(x) for x in (folder / "steps.jsonl").read_text().splitlines()]
    assert [x.get("action") for x in lines[:2]] == [{"action_type": "HOTKEY"}, {"action_type": "WAIT"}]
    assert lines[1]["error"] == "PolicyError: never"
    assert lines[0]["windows"] == [{"title": "notes.txt - Mousepad", "focused": True},
                                   {"title": "Save As", "focused": False}]
    assert lines[2] == {"termination": "error", "score": 0.0, "error_class": "PolicyError",
                        "error_message": "window 'Save' never appeared"}


def test_an_oracle_must_score_one_inside_the_app_and_noop_must_score_zero() -> None:
    assert Episode(1.0, 9, 1.0, None).problems("oracle") == []
    assert Episode(0.0, 3, 1.0, None).problems("noop") == []
    assert Episode(0.0, 3, 1.0, "PolicyError: x").problems("oracle") == ["oracle scored 0.0 (PolicyError: x)"]
    assert Episode(1.0, 9, 1.0, None, ["step 2 (HOTKEY): keys went to no window"]).problems("oracle") == [
        "oracle input off the app: step 2 (HOTKEY): keys went to no window"]
    assert Episode(1.0, 1, 1.0, None).problems("noop") == ["noop scored 1.0"]
    assert Episode(None, 0, 1.0, "ReplicaError (attempt 2): gone").problems("noop") == [
        "noop scored None (ReplicaError (attempt 2): gone)"]
