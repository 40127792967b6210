"""The policy and action-format registries: a policy defined here runs through a recipe on a real replica,
and unknown names fail when the recipe or config loads, naming what is known."""

from __future__ import annotations

import importlib
import json
import pkgutil
from pathlib import Path
from typing import Any

import duckdb
import pytest

import osgym.agents.formats
from osgym.agents.formats import ReplyContext, format_names, get_format
from osgym.agents.policies import Decision, Policy, make_policy, policy_names, register_policy
from osgym.agents.policies.openai import OpenAIPolicy
from osgym.collection import EpisodeSummary, run_collection
from osgym.collection.recipe import load_recipe
from osgym.errors import ConfigError
from osgym.replicas.actions import Click, Done
from osgym.replicas.observation import Observation

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


def test_a_recipe_runs_a_registered_policy_on_a_replica(image: str, tmp_path: Path) -> None:
    recipe = load_recipe({"name": "registry", "episodes": 1, "tasks": ["terminal-create-file"], "max_steps": 5,
                          "settle_s": 0.3, "replicas": 1, "standby": 0, "image": image, "store": str(tmp_path),
                          "policy": {"name": NAME, "options": {"clicks": 2}}})
    summaries: list[EpisodeSummary] = []
    run = run_collection(recipe, run_id="run-registry", on_episode=summaries.append)

    assert run["episodes"] == 1 and run["manifest_episodes"] == 1
    [summary] = summaries
    episodes = duckdb.sql(f"select policy, policy_config, termination, error_class, num_steps, success "
                          f"from read_parquet('{tmp_path}/registry/episodes/*/*.parquet')").fetchall()
    policy, config, termination, error_class, num_steps, success = episodes[0]
    assert (policy, json.loads(config)) == (NAME, {"name": NAME, "clicks": 2})
    assert (termination, error_class, num_steps, success) == ("done", None, 3, False)  # no file gets created
    actions = duckdb.sql(f"select action_type from read_parquet('{tmp_path}/registry/steps/*/*.parquet') "
                         f"order by step").fetchall()
    assert [a for (a,) in actions] == ["CLICK", "CLICK", "DONE"] and summary.num_steps == 3


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
    modules = {m.name for m in pkgutil.iter_modules(osgym.agents.formats.__path__)} - {"_common", "base", "canonical",
                                                                                       "registry"}
    assert modules == {"anthropic", "computer13", "osgym_strings", "pyautogui", "uitars"}
    assert {importlib.import_module(f"osgym.agents.formats.{m}").FORMAT.name for m in modules} == {
        "anthropic", "computer_13", "osgym", "pyautogui", "uitars"}
    assert set(format_names()) >= {"anthropic", "computer_13", "osgym", "pyautogui", "uitars"}
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
        "osgym": "click(320,200)",
    }
    for name, reply in replies.items():
        _, actions = get_format(name).parse(reply, ctx)
        assert actions == [Click(x=640, y=400)], name
