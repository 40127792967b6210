"""The policy and action-format registries: a policy defined here runs through a recipe on a real replica,
and unknown names fail when the recipe or config loads, naming what is known."""

from __future__ import annotations

import pkgutil
from collections.abc import Callable
from typing import Any

import pytest

import osgym.agents.parsers
from osgym.agents.parsers import ReplyContext, format_names, get_format
from osgym.agents.policies import Decision, Policy, make_policy, policy_names, register_policy
from osgym.agents.policies.openai import OpenAIPolicy
from osgym.collection.collector import Collector, plan_jobs
from osgym.collection.recipe import load_recipe
from osgym.episodes.trajectory import EpisodeResult
from osgym.errors import ConfigError
from osgym.replicas.actions import Click, Done
from osgym.replicas.observation import Observation
from osgym.replicas.pool import ReplicaPool

NAME = "tests.centre-clicker"


@register_policy(NAME)
class CentreClicker:
    """Clicks the middle of the screen ``clicks`` times, then declares DONE."""

    name = NAME

    def __init__(self, clicks: int = 1) -> None:
        self.clicks = clicks
        self._left = clicks

    def config(self) -> dict[str, Any]:
        return {"clicks": self.clicks}

    def reset(self, task: Any, *, seed: int) -> None:
        self._left = self.clicks

    def act(self, observation: Observation, history: list[Any]) -> Decision:
        if self._left:
            self._left -= 1
            width, height = observation.screen
            return Decision([Click(x=width // 2, y=height // 2)], thought="click the centre")
        return Decision([Done()], thought="done clicking")


def test_a_policy_defined_outside_the_package_is_listed_and_built() -> None:
    assert NAME in policy_names() and {"noop", "openai", "random", "scripted"} <= set(policy_names())
    policy = make_policy(NAME, {"clicks": 3})
    assert isinstance(policy, CentreClicker) and isinstance(policy, Policy) and policy.clicks == 3


def test_a_recipe_runs_a_registered_policy_on_a_replica(make_pool: Callable[..., ReplicaPool], image: str) -> None:
    recipe = load_recipe({"name": "registry", "episodes": 1, "tasks": ["terminal-create-file"], "max_steps": 5,
                          "settle_s": 0.3, "policy": {"name": NAME, "options": {"clicks": 2}}})
    recorded: list[EpisodeResult] = []
    [job] = plan_jobs(recipe, "run-registry")
    collector = Collector(recipe, make_pool(1), image, jobs=[job], sink=recorded.append)

    summary = collector.collect(job)

    [result] = recorded
    assert summary.episode_id == result.episode_id == job.episode_id
    assert result.policy == NAME and result.policy_config == {"name": NAME, "clicks": 2}
    traj = result.trajectory
    assert traj.termination == "done" and traj.error_class is None, traj.error_message
    assert [s.action_type for s in traj.steps] == ["CLICK", "CLICK", "DONE"]
    assert summary.num_steps == 3 and not summary.success  # clicking the centre creates no file


def test_an_unknown_policy_fails_at_recipe_load_naming_the_known_ones() -> None:
    with pytest.raises(ConfigError, match=r"field 'policy.name': .*unknown policy 'telepathy'") as info:
        load_recipe({"name": "x", "episodes": 1, "policy": {"name": "telepathy"}})
    for name in policy_names():
        assert name in str(info.value)


def test_options_a_policy_does_not_take_fail_with_its_name() -> None:
    with pytest.raises(ConfigError, match=r"policy 'scripted': options \['colour'\] rejected"):
        make_policy("scripted", {"colour": "blue"})


def test_a_name_taken_by_another_class_cannot_be_registered() -> None:
    with pytest.raises(ValueError, match="already registered"):
        register_policy("noop")(type("Impostor", (), {}))
    with pytest.raises(ValueError, match="policy name"):
        register_policy("no spaces")


def test_every_format_module_registers_a_format_and_all_are_listed() -> None:
    modules = {m.name for m in pkgutil.iter_modules(osgym.agents.parsers.__path__)} - {"_common", "registry"}
    assert modules == {"anthropic", "computer13", "pyautogui", "uitars"}
    assert set(format_names()) >= {"anthropic", "computer_13", "pyautogui", "uitars"}
    with pytest.raises(ConfigError, match="unknown action format 'xml'") as info:
        get_format("xml")
    for name in format_names():
        assert name in str(info.value)


def test_an_unknown_action_format_fails_at_config_load_naming_the_known_ones() -> None:
    with pytest.raises(ConfigError, match=r"action_format: .*actual 'xml'") as info:
        OpenAIPolicy({"model": "m", "api_key": "k", "action_format": "xml"})
    for name in format_names():
        assert name in str(info.value)
    with pytest.raises(ConfigError, match=r"field 'policy': .*openai policy config: action_format: .*'xml'"):
        load_recipe({"name": "x", "episodes": 1,
                     "policy": {"name": "openai", "options": {"model": "m", "action_format": "xml"}}})


def test_a_format_without_a_prompt_needs_a_system_prompt() -> None:
    with pytest.raises(ConfigError, match="'anthropic' has no default prompt: expected a system_prompt"):
        OpenAIPolicy({"model": "m", "api_key": "k", "action_format": "anthropic"})
    policy = OpenAIPolicy({"model": "m", "api_key": "k", "action_format": "anthropic",
                           "system_prompt": "Do {instruction} with computer-use JSON."})
    policy.close()


def test_each_builtin_format_parses_a_reply_onto_the_screen() -> None:
    ctx = ReplyContext(image_size=(640, 400), screen=(1280, 800))
    replies = {
        "pyautogui": "```python\npyautogui.click(320, 200)\n```",
        "computer_13": '{"action_type": "CLICK", "x": 320, "y": 200}',
        "uitars": "Thought: centre\nAction: click(start_box='(500,500)')",
        "anthropic": 'Centre.\n```json\n{"action": "left_click", "coordinate": [320, 200]}\n```',
    }
    for name, reply in replies.items():
        _, actions = get_format(name).parse(reply, ctx)
        assert actions == [Click(x=640, y=400)], name
