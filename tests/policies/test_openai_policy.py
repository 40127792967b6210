"""Contract tests of OpenAIPolicy against a real OpenAI-compatible HTTP server on 127.0.0.1."""

from __future__ import annotations

import base64
import gc
import io
import json
import socket

import pytest
from PIL import Image

import osgym.agents.policies.openai
from osgym.agents.formats import get_format
from osgym.agents.policies.base import Decision, Policy
from osgym.agents.policies.openai import OpenAIPolicy, OpenAIPolicyConfig
from osgym.errors import ConfigError, PolicyError, error_class_of
from osgym.replicas.actions import Click, Done, Fail, Hotkey, Press, Typing

INSTRUCTION = "Save the file as notes.txt"


class Sleeps(list):
    """Records retry delays instead of sleeping."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def make_policy(fake_openai, sleeps):
    made: list[OpenAIPolicy] = []

    def make(**overrides) -> OpenAIPolicy:
        fields = {"base_url": fake_openai.base_url, "model": "ui-model", "api_key": "sk-test-123", **overrides}
        policy = OpenAIPolicy(OpenAIPolicyConfig(**fields), sleep=sleeps)
        made.append(policy)
        return policy

    yield make
    for policy in made:
        policy.close()


def images_in(request_body: dict) -> list[str]:
    return [
        part["image_url"]["url"]
        for message in request_body["messages"]
        if isinstance(message["content"], list)
        for part in message["content"]
        if part["type"] == "image_url"
    ]


def decode_data_url(url: str) -> Image.Image:
    header, data = url.split(",", 1)
    assert header.startswith("data:image/") and header.endswith(";base64")
    return Image.open(io.BytesIO(base64.b64decode(data)))


def test_is_a_policy(make_policy) -> None:
    policy = make_policy()
    assert isinstance(policy, Policy)
    assert policy.name == "openai"


def test_episode_of_replies_ending_in_done(fake_openai, make_policy, make_observation, make_task) -> None:
    fake_openai.chat("The editor is open; I click File.\n```python\nimport pyautogui\npyautogui.click(640, 360)\n```",
                     usage={"prompt_tokens": 1500, "completion_tokens": 30, "total_tokens": 1530})
    fake_openai.chat("```python\npyautogui.hotkey('ctrl', 's')\ntime.sleep(0.5)\npyautogui.write('notes.txt')\n```")
    fake_openai.chat("```python\npyautogui.press('enter')\n```")
    fake_openai.chat("The file is saved.\n```DONE```")
    policy = make_policy(history_length=2, max_side=1280)
    policy.reset(make_task(INSTRUCTION), seed=0)

    decisions = [policy.act(make_observation(step), []) for step in range(4)]

    assert all(isinstance(d, Decision) for d in decisions)
    # Coordinates came back in the 1280x720 image the model saw and were mapped onto the 1920x1080 screen.
    assert decisions[0].actions == [Click(x=960, y=540)]
    assert decisions[0].thought == "The editor is open; I click File."
    assert decisions[0].usage == {"prompt_tokens": 1500, "completion_tokens": 30, "total_tokens": 1530}
    assert decisions[0].raw is not None and "pyautogui.click(640, 360)" in decisions[0].raw
    assert decisions[0].extra["attempts"] == 1 and decisions[0].extra["image_size"] == [1280, 720]
    assert decisions[1].actions[0] == Hotkey(keys=["ctrl", "s"])
    assert decisions[1].actions[-1] == Typing(text="notes.txt")
    assert decisions[2].actions == [Press(key="enter")]
    assert decisions[3].actions == [Done()]
    assert decisions[3].thought == "The file is saved."

    bodies = fake_openai.completions()
    assert len(bodies) == 4
    first = bodies[0]
    assert first["model"] == "ui-model"
    assert first["temperature"] == 0.0 and first["max_tokens"] == 1024
    assert first["messages"][0]["role"] == "system"
    assert INSTRUCTION in first["messages"][0]["content"]
    assert "1280x720" in first["messages"][0]["content"]  # the prompt states the size the model sees
    # One image on the first turn: the screenshot, downscaled to max_side and still a PNG.
    (url,) = images_in(first)
    assert url.startswith("data:image/png;base64,")
    assert decode_data_url(url).size == (1280, 720)
    # The history window holds at most two earlier turns: 1, 2, 3, then 3 images.
    assert [len(images_in(b)) for b in bodies] == [1, 2, 3, 3]
    last = bodies[3]["messages"]
    assert [m["role"] for m in last] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert last[2]["content"] == decisions[1].raw and last[4]["content"] == decisions[2].raw
    assert images_in(bodies[3])[:2] == images_in(bodies[2])[1:]  # the window slid by one turn
    # The instruction opens the window of turns; the screenshot of the current step closes it.
    assert last[1]["content"][0] == {"type": "text", "text": osgym.agents.policies.openai.DEFAULT_USER_PROMPT}
    assert images_in(bodies[3])[-1] != images_in(bodies[2])[-1]

    request = fake_openai.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.headers["Authorization"] == "Bearer sk-test-123"


def test_history_length_zero_sends_only_the_current_screenshot(
    fake_openai, make_policy, make_observation, make_task
) -> None:
    for _ in range(3):
        fake_openai.chat("```python\npyautogui.press('tab')\n```")
    policy = make_policy(history_length=0)
    policy.reset(make_task(), seed=0)
    for step in range(3):
        policy.act(make_observation(step), [])
    for body in fake_openai.completions():
        assert len(images_in(body)) == 1
        assert [m["role"] for m in body["messages"]] == ["system", "user"]


def test_reset_forgets_the_previous_episode(fake_openai, make_policy, make_observation, make_task) -> None:
    for _ in range(3):
        fake_openai.chat("```python\npyautogui.press('tab')\n```")
    policy = make_policy(history_length=3)
    policy.reset(make_task("first task"), seed=0)
    policy.act(make_observation(0), [])
    policy.act(make_observation(1), [])
    policy.reset(make_task("second task"), seed=1)
    policy.act(make_observation(2), [])
    third = fake_openai.completions()[2]
    assert len(images_in(third)) == 1
    assert "second task" in third["messages"][0]["content"]
    assert "first task" not in json.dumps(third)


def test_429_with_retry_after_then_success(fake_openai, make_policy, make_observation, make_task, sleeps) -> None:
    fake_openai.error(429, "rate limited", headers={"Retry-After": "0"})
    fake_openai.chat("```python\npyautogui.click(10, 10)\n```")
    policy = make_policy(max_side=None)
    policy.reset(make_task(), seed=0)
    decision = policy.act(make_observation(), [])
    assert decision.actions == [Click(x=10, y=10)]
    assert decision.extra["attempts"] == 2
    assert sleeps == [0.0]  # Retry-After honoured rather than the backoff
    assert len(fake_openai.completions()) == 2
    assert fake_openai.completions()[0] == fake_openai.completions()[1]  # the same request, resent


def test_retry_after_is_capped_by_backoff_max(fake_openai, make_policy, make_observation, make_task, sleeps) -> None:
    fake_openai.error(429, headers={"Retry-After": "3600"})
    fake_openai.chat("DONE")
    policy = make_policy(backoff_max=0.5)
    policy.reset(make_task(), seed=0)
    assert policy.act(make_observation(), []).actions == [Done()]
    assert sleeps == [0.5]


def test_500_then_success(fake_openai, make_policy, make_observation, make_task, sleeps) -> None:
    fake_openai.error(500, "internal")
    fake_openai.error(503, "overloaded")
    fake_openai.chat("```python\npyautogui.click(10, 10)\n```")
    policy = make_policy(backoff_base=0.01, max_side=None)
    policy.reset(make_task(), seed=0)
    decision = policy.act(make_observation(), [])
    assert decision.actions == [Click(x=10, y=10)]
    assert decision.extra["attempts"] == 3
    # Exponential backoff with jitter in [0.5, 1] of 0.01 then 0.02 seconds.
    assert len(sleeps) == 2
    assert 0.005 <= sleeps[0] <= 0.01 and 0.01 <= sleeps[1] <= 0.02


def test_exhausted_retries_raise_with_status_and_body(
    fake_openai, make_policy, make_observation, make_task, sleeps
) -> None:
    for _ in range(3):
        fake_openai.error(502, "upstream model crashed")
    policy = make_policy(max_retries=2, backoff_base=0)
    policy.reset(make_task(), seed=0)
    with pytest.raises(PolicyError, match=r"actual 502 after 3 attempts: .*upstream model crashed") as info:
        policy.act(make_observation(), [])
    assert error_class_of(info.value) == "policy_error"
    assert len(fake_openai.completions()) == 3 and len(sleeps) == 2


@pytest.mark.parametrize("status", [400, 401, 404, 413, 422])
def test_client_errors_are_not_retried(fake_openai, make_policy, make_observation, make_task, status: int) -> None:
    fake_openai.error(status, "model 'ui-model' does not exist")
    policy = make_policy()
    policy.reset(make_task(), seed=0)
    with pytest.raises(PolicyError, match=rf"expected HTTP 200 from .*, actual {status}: .*does not exist"):
        policy.act(make_observation(), [])
    assert len(fake_openai.completions()) == 1


def test_unparseable_reply_is_a_policy_error(fake_openai, make_policy, make_observation, make_task) -> None:
    fake_openai.chat("I would click the Save button, then type the name.")
    fake_openai.chat("```python\npyautogui.click(1, 1)\n```")
    policy = make_policy()
    policy.reset(make_task(), seed=0)
    with pytest.raises(PolicyError, match="cannot parse the pyautogui reply .*I would click the Save button") as info:
        policy.act(make_observation(0), [])
    assert error_class_of(info.value) == "policy_error"
    # The failed turn is not kept as history.
    policy.act(make_observation(1), [])
    assert len(images_in(fake_openai.completions()[1])) == 1


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("```python\nimport os\nos.system('rm -rf /')\n```", "expected import of pyautogui or time"),
        ("```python\nimport pyautogui\n```", "expected at least one pyautogui action, actual none"),
    ],
)
def test_replies_without_usable_actions(
    fake_openai, make_policy, make_observation, make_task, reply: str, message: str
) -> None:
    fake_openai.chat(reply)
    policy = make_policy()
    policy.reset(make_task(), seed=0)
    with pytest.raises(PolicyError, match=message):
        policy.act(make_observation(), [])


@pytest.mark.parametrize(
    ("script", "message"),
    [
        (lambda f: f.chat(None), "expected reply text, actual None"),
        (lambda f: f.chat("   "), "expected reply text"),
        (lambda f: f.raw(200, b'{"choices": []}'), "expected a completion with choices"),
        (lambda f: f.raw(200, b'{"choices": [{"text": "hi"}]}'), r"expected choices\[0\].message"),
        (lambda f: f.raw(200, b"<html>proxy page</html>"), "expected a JSON body .*proxy page"),
        (lambda f: f.raw(200, b"[1, 2]"), "expected a JSON object"),
    ],
)
def test_malformed_completions(fake_openai, make_policy, make_observation, make_task, script, message: str) -> None:
    script(fake_openai)
    policy = make_policy()
    policy.reset(make_task(), seed=0)
    with pytest.raises(PolicyError, match=message):
        policy.act(make_observation(), [])


def test_content_parts_and_reasoning_content(fake_openai, make_policy, make_observation, make_task) -> None:
    fake_openai.chat([{"type": "text", "text": "```python\npyautogui.press('f5')\n```"}],  # type: ignore[arg-type]
                     reasoning_content="Refreshing shows the new file.")
    policy = make_policy()
    policy.reset(make_task(), seed=0)
    decision = policy.act(make_observation(), [])
    assert decision.actions == [Press(key="f5")]
    assert decision.thought == "Refreshing shows the new file."


def test_computer_13_format(fake_openai, make_policy, make_observation, make_task) -> None:
    fake_openai.chat('I click the button.\n```json\n{"action_type": "CLICK", "parameters": {"x": 640, "y": 360}}\n```')
    fake_openai.chat('[{"action_type": "TYPING", "text": "notes.txt"}, {"action_type": "PRESS", "key": "enter"}]')
    fake_openai.chat('```json\n{"action_type": "DONE"}\n```')
    policy = make_policy(action_format="computer_13")
    policy.reset(make_task(), seed=0)
    first, second, third = (policy.act(make_observation(step), []) for step in range(3))
    assert first.actions == [Click(x=960, y=540)] and first.thought == "I click the button."
    assert second.actions == [Typing(text="notes.txt"), Press(key="enter")]
    assert third.actions == [Done()]
    system = fake_openai.completions()[0]["messages"][0]["content"]
    assert '"action_type": "CLICK"' in system and INSTRUCTION in system


def test_uitars_format(fake_openai, make_policy, make_observation, make_task) -> None:
    fake_openai.chat(
        "Thought: The Save button is in the toolbar.\nAction: click(start_box='<|box_start|>(500,500)<|box_end|>')"
    )
    fake_openai.chat("Thought: Type the name.\nAction: type(content='notes.txt\\n')")
    fake_openai.chat("Thought: The task cannot be done.\nAction: call_user()")
    policy = make_policy(action_format="uitars")
    policy.reset(make_task(), seed=0)
    first, second, third = (policy.act(make_observation(step), []) for step in range(3))
    assert first.actions == [Click(x=960, y=540)]
    assert first.thought == "The Save button is in the toolbar."
    assert second.actions == [Typing(text="notes.txt"), Press(key="enter")]
    assert third.actions == [Fail()]
    system = fake_openai.completions()[0]["messages"][0]["content"]
    assert "## User Instruction\n" + INSTRUCTION in system


def test_uitars_absolute_coordinates_are_in_the_image_the_model_saw(
    fake_openai, make_policy, make_observation, make_task
) -> None:
    fake_openai.chat("Action: click(start_box='(640,360)')")
    policy = make_policy(action_format="uitars", uitars_coord_space="absolute", max_side=1280)
    policy.reset(make_task(), seed=0)
    assert policy.act(make_observation(), []).actions == [Click(x=960, y=540)]


def test_uitars_unparseable_reply(fake_openai, make_policy, make_observation, make_task) -> None:
    fake_openai.chat("Thought: hmm\nAction: teleport(start_box='(1,1)')")
    policy = make_policy(action_format="uitars")
    policy.reset(make_task(), seed=0)
    with pytest.raises(PolicyError, match="cannot parse the uitars reply .*actual teleport"):
        policy.act(make_observation(), [])


def test_small_jpeg_is_sent_as_it_is(fake_openai, make_policy, make_observation, make_task, make_jpeg) -> None:
    shot = make_jpeg(1280, 800)
    fake_openai.chat("DONE")
    policy = make_policy(max_side=1280)
    policy.reset(make_task(), seed=0)
    policy.act(make_observation(width=1280, height=800, shot=shot, fmt="jpeg"), [])
    (url,) = images_in(fake_openai.completions()[0])
    assert url == "data:image/jpeg;base64," + base64.b64encode(shot).decode()


def test_large_jpeg_is_downscaled_as_jpeg(fake_openai, make_policy, make_observation, make_task, make_jpeg) -> None:
    fake_openai.chat("DONE")
    policy = make_policy(max_side=640)
    policy.reset(make_task(), seed=0)
    policy.act(make_observation(width=1280, height=800, shot=make_jpeg(1280, 800), fmt="jpeg"), [])
    (url,) = images_in(fake_openai.completions()[0])
    image = decode_data_url(url)
    assert url.startswith("data:image/jpeg;base64,") and image.format == "JPEG" and image.size == (640, 400)


def test_screenshot_smaller_than_the_screen(fake_openai, make_policy, make_observation, make_task, make_png) -> None:
    # The replica sent a 960x540 screenshot of a 1920x1080 screen: coordinates still land on the screen.
    fake_openai.chat("```python\npyautogui.click(480, 270)\n```")
    policy = make_policy(max_side=None)
    policy.reset(make_task(), seed=0)
    obs = make_observation(width=1920, height=1080, shot=make_png(960, 540))
    assert policy.act(obs, []).actions == [Click(x=960, y=540)]


def test_undecodable_screenshot(fake_openai, make_policy, make_observation, make_task) -> None:
    policy = make_policy()
    policy.reset(make_task(), seed=0)
    with pytest.raises(PolicyError, match="expected a PNG or JPEG screenshot, actual 9 undecodable bytes"):
        policy.act(make_observation(shot=b"not a png"), [])
    assert fake_openai.completions() == []


def test_seed_and_extra_body(fake_openai, make_policy, make_observation, make_task) -> None:
    fake_openai.chat("```python\npyautogui.press('a')\n```")
    fake_openai.chat("DONE")
    policy = make_policy(send_seed=True, extra_body={"top_p": 0.9, "model": "ignored"}, temperature=0.7)
    policy.reset(make_task(), seed=100)
    policy.act(make_observation(0), [])
    policy.act(make_observation(1), [])
    first, second = fake_openai.completions()
    assert (first["seed"], second["seed"]) == (100, 101)
    assert first["top_p"] == 0.9 and first["model"] == "ui-model" and first["temperature"] == 0.7


def test_unreachable_endpoint(make_observation, make_task, sleeps, monkeypatch) -> None:
    with socket.socket() as s:  # a port that nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("OSGYM_MODEL_BASE_URLS", f"http://127.0.0.1:{port}/v1")
    policy = OpenAIPolicy(
        {"base_url": f"http://127.0.0.1:{port}/v1", "model": "m", "max_retries": 1, "backoff_base": 0},
        sleep=sleeps,
    )
    with policy:
        policy.reset(make_task(), seed=0)
        with pytest.raises(PolicyError, match=r"unreachable after 2 attempts: ConnectError"):
            policy.act(make_observation(), [])
    assert len(sleeps) == 1


def test_lifecycle(make_policy, make_observation, make_task) -> None:
    policy = make_policy()
    with pytest.raises(PolicyError, match="act\\(\\) called before reset\\(\\)"):
        policy.act(make_observation(), [])
    with pytest.raises(PolicyError, match="expected a task with a string instruction, actual NoneType"):
        policy.reset(object(), seed=0)
    policy.close()
    policy.close()  # idempotent
    policy.reset(make_task(), seed=0)
    with pytest.raises(PolicyError, match="closed"):
        policy.act(make_observation(), [])


def test_dropping_the_policy_closes_its_client(fake_openai) -> None:
    policy = OpenAIPolicy({"base_url": fake_openai.base_url, "model": "m"})
    client = policy._client
    del policy
    gc.collect()
    assert client.is_closed


class TestConfig:
    def test_key_is_masked_and_left_out_of_config(self, make_policy) -> None:
        policy = make_policy(api_key="sk-very-secret")
        assert "sk-very-secret" not in repr(policy)
        assert "sk-very-secret" not in repr(policy.settings)
        config = policy.config()
        assert "api_key" not in config
        assert "sk-very-secret" not in json.dumps(config)
        assert config["model"] == "ui-model" and config["action_format"] == "pyautogui"

    def test_key_defaults_to_the_environment(self, monkeypatch) -> None:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
        assert OpenAIPolicyConfig(model="m").api_key.get_secret_value() == "sk-from-env"
        monkeypatch.delenv("OPENAI_API_KEY")
        assert OpenAIPolicyConfig(model="m").api_key is None

    def test_no_key_sends_no_authorization(self, fake_openai, make_observation, make_task, monkeypatch) -> None:
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        fake_openai.chat("DONE")
        with OpenAIPolicy({"base_url": fake_openai.base_url, "model": "m"}) as policy:
            policy.reset(make_task(), seed=0)
            policy.act(make_observation(), [])
        assert "Authorization" not in fake_openai.requests[0].headers

    def test_defaults(self) -> None:
        config = OpenAIPolicyConfig(model="m", base_url="http://host:8000/v1/")
        assert config.base_url == "http://host:8000/v1"
        assert config.resolved_system_prompt == get_format("pyautogui").prompt
        assert config.timeout > 0 and config.max_retries >= 1

    def test_custom_prompts_with_braces(self, fake_openai, make_policy, make_observation, make_task) -> None:
        fake_openai.chat('{"action_type": "DONE"}')
        policy = make_policy(
            action_format="computer_13",
            system_prompt='Answer with JSON like {"action_type": "DONE"}.',
            user_prompt="Task: {instruction} on a {width}x{height} image.",
        )
        policy.reset(make_task(), seed=0)
        policy.act(make_observation(), [])
        messages = fake_openai.completions()[0]["messages"]
        assert messages[0]["content"] == 'Answer with JSON like {"action_type": "DONE"}.'
        assert messages[1]["content"][0]["text"] == f"Task: {INSTRUCTION} on a 1280x720 image."

    def test_empty_system_prompt_is_left_out(self, fake_openai, make_policy, make_observation, make_task) -> None:
        fake_openai.chat("DONE")
        policy = make_policy(system_prompt="", user_prompt="{instruction}")
        policy.reset(make_task(), seed=0)
        policy.act(make_observation(), [])
        assert [m["role"] for m in fake_openai.completions()[0]["messages"]] == ["user"]

    @pytest.mark.parametrize(
        ("fields", "message"),
        [
            ({}, "model: Field required"),
            ({"model": ""}, "model: String should have at least 1 character"),
            ({"model": "m", "base_url": "localhost:8000"}, "base_url: Value error, expected an http"),
            ({"model": "m", "system_prompt": "hi", "user_prompt": "look"}, "expected {instruction}"),
            ({"model": "m", "action_format": "xml"}, "action_format"),
            ({"model": "m", "history_length": -1}, "history_length"),
            ({"model": "m", "timeout": 0}, "timeout"),
            ({"model": "m", "max_side": 10}, "max_side"),
            ({"model": "m", "colour": "blue"}, "colour: Extra inputs are not permitted"),
        ],
    )
    def test_invalid_configs_raise_config_error(self, fields: dict, message: str) -> None:
        with pytest.raises(ConfigError, match=message):
            OpenAIPolicy(fields)

    def test_config_round_trips(self) -> None:
        config = OpenAIPolicyConfig(model="m", api_key="k", action_format="uitars", history_length=4)
        again = OpenAIPolicyConfig(**config.public())
        assert again.public() == config.public()
        assert config == OpenAIPolicyConfig(model="m", api_key="k", action_format="uitars", history_length=4)
