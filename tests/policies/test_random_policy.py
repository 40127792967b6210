"""RandomPolicy: seeded, bounded, never FAIL, DONE after its budget."""

from __future__ import annotations

import json

import pytest

from osgym.agents.policies.base import Decision, Policy
from osgym.agents.policies.random import DEFAULT_WEIGHTS, RandomPolicy
from osgym.errors import PolicyError
from osgym.replicas.actions import TERMINAL_TYPES, Done


def run(policy: RandomPolicy, obs, episode_seed: int, steps: int) -> list[dict]:
    policy.reset(None, seed=episode_seed)
    out = []
    for _ in range(steps):
        decision = policy.act(obs, [])
        assert isinstance(decision, Decision)
        out.extend(a.to_json() for a in decision.actions)
    return out


def test_is_a_policy() -> None:
    policy = RandomPolicy()
    assert isinstance(policy, Policy)
    assert policy.name == "random"


def test_same_seeds_replay_exactly(make_observation) -> None:
    obs = make_observation()
    first = run(RandomPolicy(seed=3, max_actions=50), obs, 11, 50)
    again = run(RandomPolicy(seed=3, max_actions=50), obs, 11, 50)
    assert first == again


def test_reset_restarts_the_sequence(make_observation) -> None:
    obs = make_observation()
    policy = RandomPolicy(seed=3, max_actions=30)
    assert run(policy, obs, 5, 30) == run(policy, obs, 5, 30)


def test_different_seeds_differ(make_observation) -> None:
    obs = make_observation()
    base = run(RandomPolicy(seed=1, max_actions=30), obs, 0, 30)
    assert run(RandomPolicy(seed=2, max_actions=30), obs, 0, 30) != base
    assert run(RandomPolicy(seed=1, max_actions=30), obs, 1, 30) != base


def test_done_after_max_actions_and_never_fail(make_observation) -> None:
    obs = make_observation()
    policy = RandomPolicy(seed=0, max_actions=200)
    policy.reset(None, seed=0)
    types = [a.action_type for _ in range(200) for a in policy.act(obs, []).actions]
    assert len(types) == 200
    assert not set(types) & TERMINAL_TYPES
    assert policy.act(obs, []).actions == [Done()]
    assert policy.act(obs, []).actions == [Done()]
    # All kinds show up over a long run.
    assert {"CLICK", "DOUBLE_CLICK", "RIGHT_CLICK", "MOVE_TO", "TYPING", "PRESS", "HOTKEY", "SCROLL"} <= set(types)


def test_zero_budget_is_done_at_once(make_observation) -> None:
    policy = RandomPolicy(max_actions=0)
    policy.reset(None, seed=0)
    assert policy.act(make_observation(), []).actions == [Done()]


def test_coordinates_stay_on_the_given_screen(make_observation) -> None:
    actions = run(RandomPolicy(seed=9, screen=(300, 200), max_actions=300), make_observation(), 0, 300)
    points = [(a["x"], a["y"]) for a in actions if "x" in a]
    assert points
    assert all(0 <= x < 300 and 0 <= y < 200 for x, y in points)


def test_screen_defaults_to_the_observation_size(make_observation) -> None:
    obs = make_observation(width=64, height=48, shot=b"not decoded")
    actions = run(RandomPolicy(seed=4, max_actions=100), obs, 0, 100)
    assert all(0 <= a["x"] < 64 and 0 <= a["y"] < 48 for a in actions if "x" in a)


def test_weights_choose_the_kinds(make_observation) -> None:
    actions = run(RandomPolicy(weights={"typing": 1.0}, max_actions=20), make_observation(), 0, 20)
    assert {a["action_type"] for a in actions} == {"TYPING"}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"screen": (0, 100)}, "screen: expected"),
        ({"max_actions": -1}, "max_actions: expected >= 0"),
        ({"weights": {"teleport": 1.0}}, "weights: expected keys among"),
        ({"weights": {"click": 0.0}}, "positive sum"),
        ({"weights": {"click": -1.0, "move": 2.0}}, "non-negative"),
    ],
)
def test_bad_settings(kwargs: dict, message: str) -> None:
    with pytest.raises(PolicyError, match=message):
        RandomPolicy(**kwargs)


def test_empty_observation_size_is_an_error(make_observation) -> None:
    policy = RandomPolicy()
    policy.reset(None, seed=0)
    with pytest.raises(PolicyError, match="expected a positive screen size, actual 0x0"):
        policy.act(make_observation(width=0, height=0, shot=b"x"), [])


def test_config_is_json_and_reproduces_the_policy(make_observation) -> None:
    policy = RandomPolicy(seed=5, screen=(640, 480), max_actions=7)
    config = json.loads(json.dumps(policy.config()))
    assert config == {"seed": 5, "screen": [640, 480], "max_actions": 7, "weights": dict(DEFAULT_WEIGHTS)}
    clone = RandomPolicy(seed=config["seed"], screen=tuple(config["screen"]), max_actions=config["max_actions"],
                         weights=config["weights"])
    obs = make_observation()
    assert run(policy, obs, 1, 8) == run(clone, obs, 1, 8)
    assert "seed=5" in repr(policy)
