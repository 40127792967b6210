"""The openai policy driving whole episodes on a real replica, against a scripted OpenAI-compatible server."""

from __future__ import annotations

import json
import shlex

from osgym.agents.policies.openai import OpenAIPolicy
from osgym.episodes import EpisodeLimits, run_episode
from osgym.suites import load_suite

TASK = next(t for t in load_suite("desktop-basics") if t.id == "terminal-create-file")
LIMITS = EpisodeLimits(max_steps=5, deadline_s=120, settle_s=0.5)


def _policy(fake) -> OpenAIPolicy:  # type: ignore[no-untyped-def]
    return OpenAIPolicy({"base_url": fake.base_url, "model": "fake-model", "api_key": "k",
                         "action_format": "pyautogui", "backoff_base": 0, "max_retries": 3})


def test_successful_episode_after_a_429(replica, fake_openai) -> None:  # type: ignore[no-untyped-def]
    expected = TASK.evaluator.expected.options["rules"]["expected"]  # type: ignore[union-attr]
    path = TASK.evaluator.result.options["command"].split()[-1]  # type: ignore[union-attr]
    command = f"printf '%s\\n' {shlex.quote(expected.rstrip())} > {path}\n"
    fake_openai.error(429, "slow down", headers={"Retry-After": "0"})
    fake_openai.chat(f"I will type the command.\n```python\npyautogui.write({command!r})\n```")
    fake_openai.chat("DONE")
    traj = run_episode(replica, TASK, _policy(fake_openai), limits=LIMITS)
    assert traj.termination == "done" and traj.error_class is None, traj.error_message
    assert traj.score == 1.0 and traj.success
    assert [s.action_type for s in traj.steps] == ["TYPING", "DONE"]
    sent = fake_openai.completions()
    assert len(sent) == 3  # the 429, its retry, and the DONE turn
    assert TASK.instruction in str(sent[-1]["messages"])


def test_unparseable_reply_is_recorded_as_policy_error(replica, fake_openai) -> None:  # type: ignore[no-untyped-def]
    fake_openai.chat("I think I should look around first, but I will not say how.")
    traj = run_episode(replica, TASK, _policy(fake_openai), limits=LIMITS)
    assert traj.termination == "error" and traj.error_class == "policy_error"
    assert traj.score == 0.0 and not traj.success


def test_replies_tokens_and_the_requested_tree_are_recorded(replica, fake_openai) -> None:  # type: ignore[no-untyped-def]
    fake_openai.chat("```python\npyautogui.click(10, 10)\n```", usage={"prompt_tokens": 1200, "completion_tokens": 15,
                                                                        "total_tokens": 1215})
    fake_openai.chat("DONE", usage={"prompt_tokens": 2400, "completion_tokens": 3, "total_tokens": 2403})
    traj = run_episode(replica, TASK, _policy(fake_openai),
                       limits=EpisodeLimits(max_steps=5, deadline_s=120, settle_s=0.5, a11y=True))
    assert [s.action_type for s in traj.steps] == ["CLICK", "DONE"]
    rows = [s.row("e") for s in traj.steps]
    assert [r["raw"] for r in rows] == ["```python\npyautogui.click(10, 10)\n```", "DONE"]
    assert [(r["input_tokens"], r["output_tokens"]) for r in rows] == [(1200, 15), (2400, 3)]
    assert json.loads(rows[0]["usage"])["total_tokens"] == 1215
    assert all(r["a11y"] and "<" in r["a11y"] for r in rows)  # the recipe asked for the tree at every step


def test_without_a_request_the_tree_column_stays_null(replica, fake_openai) -> None:  # type: ignore[no-untyped-def]
    fake_openai.chat("DONE")
    traj = run_episode(replica, TASK, _policy(fake_openai), limits=LIMITS)
    assert [s.a11y for s in traj.steps] == [None]
