"""OpenEnv's protocol: OpenEnv's own client (openenv-core from PyPI, unchanged, in its venv) drives whole episodes
on a real desktop replica through ``/openenv/ws``; the rewards equal the native route's for the same actions; bad
messages get OpenEnv's error messages; a closed socket frees its replica; the token is checked."""

from __future__ import annotations

import base64
import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import httpx
import pytest
import websockets.exceptions
from serve_support import TOKEN, jpeg_size, plain_task, running
from websockets.sync.client import ClientConnection, connect

from osgym.serving.openenv import MAX_MESSAGE_BYTES
from osgym.serving.server import Serving
from osgym.suites import generate
from tests.openenv_venv import openenv_venv

pytestmark = [pytest.mark.docker]

SCREEN = (1280, 800)
MAX_STEPS = 4
SUITE, TEMPLATE, SEED = "desktop-basics", "terminal-create-file", 3
RUNNER = Path(__file__).with_name("openenv_runner.py")


@pytest.fixture(scope="module")
def server(image: str, docker_client: docker.DockerClient,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Serving, str]]:
    with running(image, docker_client, tmp_path_factory.mktemp("openenv"), replicas=1, standby=1,
                 max_steps=MAX_STEPS) as s:
        yield s


@pytest.fixture(scope="module")
def openenv_python() -> Path:
    return openenv_venv() / "bin" / "python"


def _solving_steps() -> list[dict[str, Any]]:
    """The oracle's typing (its click on the terminal left out: the setup leaves it focused), a wait in osgym's
    action text, and ``finish()``: a text step, a typed step, a text step."""
    task = generate(SUITE, 1, SEED, [TEMPLATE])[0]
    typed = next(op.args["text"] for op in task.oracle if op.op == "type")
    return [{"actions": [{"action_type": "TYPING", "text": typed}]}, {"text": "wait()"}, {"text": "finish()"}]


def _ws_url(url: str) -> str:
    return "ws" + url.removeprefix("http") + "/openenv/ws"


def test_openenv_client_drives_whole_episodes_and_its_rewards_equal_the_native_routes(
        server: tuple[Serving, str], openenv_python: Path) -> None:
    s, url = server
    reset = {"suite": SUITE, "template": TEMPLATE, "seed": SEED, "episode_id": "rollout-7"}
    solving = _solving_steps()
    request = {
        "url": url.replace("http://", f"http://osgym:{TOKEN}@") + "/openenv",  # the token as Basic's password
        "episodes": [
            # solved: typed, text and state calls, then finish() scores it
            {"reset": reset, "calls": [{"step": solving[0]}, {"state": {}}, {"step": {"text": "klingon(1)"}},
                                       *({"step": st} for st in solving[1:]), {"step": {"text": "wait()"}}]},
            # the same task again on the same socket, left unsolved: the step that reaches max_steps ends it
            {"reset": reset, "calls": [{"step": {"text": "wait()"}} for _ in range(MAX_STEPS)]},
        ],
        "refused_url": url + "/openenv",  # no token
    }
    ended = s.manager.episodes_ended
    proc = subprocess.run([str(openenv_python), str(RUNNER)], input=json.dumps(request), capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    solved, unsolved = out["episodes"]

    first = solved[0]
    assert first["done"] is False and first["reward"] is None
    obs = first["observation"]
    assert jpeg_size(obs["screenshot"]) == SCREEN and (obs["width"], obs["height"]) == SCREEN
    assert obs["instruction"] == generate(SUITE, 1, SEED, [TEMPLATE])[0].instruction and obs["step"] == 0
    typed = solved[1]
    assert (typed["done"], typed["reward"], typed["observation"]["step"]) == (False, 0.0, 1)
    assert jpeg_size(typed["observation"]["screenshot"]) == SCREEN
    assert typed["observation"]["screenshot"] != obs["screenshot"]  # the typed command shows in the terminal
    assert solved[2]["state"] == {"episode_id": "rollout-7", "step_count": 1, "session_id": obs["session_id"],
                                  "task_id": TEMPLATE, "instruction": obs["instruction"], "done": False}
    assert "klingon" in solved[3]["error"] and "VALIDATION_ERROR" in solved[3]["error"]  # the episode goes on
    assert (solved[4]["done"], solved[4]["observation"]["step"]) == (False, 2)
    end = solved[5]
    assert (end["done"], end["reward"]) == (True, 1.0)
    assert (end["observation"]["terminated"], end["observation"]["termination"]) == (True, "done")
    assert "send reset" in solved[6]["error"] and "SESSION_ERROR" in solved[6]["error"]

    assert [r["done"] for r in unsolved] == [False] * MAX_STEPS + [True]
    assert unsolved[-1]["reward"] == 0.0 and unsolved[-1]["observation"]["truncated"] is True
    assert unsolved[-1]["observation"]["session_id"] != obs["session_id"]
    assert "401" in out["refused"]

    # the socket closed: nothing of this client is left, and each episode was recorded
    assert len(s.manager) == 0 and s.manager.episodes_ended == ended + 2

    # the native route, the same task and actions: the same reward
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120) as http:
        r = http.post("/v1/sessions", json={"suite": SUITE, "template": TEMPLATE, "seed": SEED})
        assert r.status_code == 200, r.text
        sid = r.json()["session_id"]
        native = [http.post(f"/v1/sessions/{sid}/step", json=st).json() for st in solving]
    assert [n["terminated"] for n in native] == [False, False, True]
    assert native[-1]["reward"] == end["reward"] == 1.0


def _send(ws: ClientConnection, message: object) -> dict[str, Any]:
    ws.send(message if isinstance(message, (str, bytes)) else json.dumps(message))
    reply: dict[str, Any] = json.loads(ws.recv(timeout=120))
    return reply


@pytest.mark.parametrize(("message", "code", "named"), [
    ("{not json", "INVALID_JSON", "invalid JSON"),
    (b"\x00\x01", "INVALID_JSON", "binary"),
    ([1, 2], "INVALID_JSON", "JSON object"),
    ({"type": "teleport"}, "UNKNOWN_TYPE", "teleport"),
    ({"type": "step", "data": {"text": "wait()"}}, "SESSION_ERROR", "send reset"),
    ({"type": "reset", "data": {}}, "VALIDATION_ERROR", "neither"),
    ({"type": "reset", "data": {"suite": "no-such-suite"}}, "VALIDATION_ERROR", "no-such-suite"),
    ({"type": "reset", "data": {"suite": SUITE, "observation": {"format": "gif"}}}, "VALIDATION_ERROR", "format"),
    ({"type": "reset", "data": {"suite": SUITE, "colour": "blue"}}, "VALIDATION_ERROR", "colour"),
    ({"type": "reset", "data": {"task": {"id": "x"}}}, "VALIDATION_ERROR", "task"),
    ({"type": "reset", "data": "suite"}, "VALIDATION_ERROR", "data"),
    ({"type": "state", "extra": 1}, "VALIDATION_ERROR", "extra"),
    (" " * (MAX_MESSAGE_BYTES + 1), "VALIDATION_ERROR", "at most"),
])
def test_bad_messages_get_openenvs_error_and_the_socket_stays_open(server: tuple[Serving, str], message: object,
                                                                   code: str, named: str) -> None:
    with connect(_ws_url(server[1]), additional_headers={"Authorization": f"Bearer {TOKEN}"}) as ws:
        reply = _send(ws, message)
        assert reply["type"] == "error" and reply["data"]["code"] == code, reply
        assert named in reply["data"]["message"], reply
        assert _send(ws, {"type": "state"})["type"] == "state"
    assert len(server[0].manager) == 0


def test_a_closed_socket_ends_its_episode_and_frees_its_replica(server: tuple[Serving, str]) -> None:
    s, url = server
    ended = s.manager.episodes_ended
    with connect(_ws_url(url), additional_headers={"Authorization": f"Bearer {TOKEN}"}) as ws:
        reply = _send(ws, {"type": "reset", "data": {"task": plain_task(), "observation": {"format": "png"}}})
        assert reply["type"] == "observation", reply
        assert base64.b64decode(reply["data"]["observation"]["screenshot"])[:4] == b"\x89PNG"
        assert len(s.manager) == 1
        step = _send(ws, {"type": "step", "data": {"actions": [{"action_type": "MOVE_TO", "x": 9, "y": 9}]}})
        assert step["type"] == "observation" and step["data"]["done"] is False
    # closed without a close message, mid-episode
    _wait_until_ended(s, ended + 1)
    # closed while its reset waits for a replica and sets it up: the reset's session ends when it is ready
    ws = connect(_ws_url(url), additional_headers={"Authorization": f"Bearer {TOKEN}"})
    ws.send(json.dumps({"type": "reset", "data": {"task": plain_task()}}))
    ws.close()
    _wait_until_ended(s, ended + 2)


def _wait_until_ended(s: Serving, episodes: int) -> None:
    deadline = time.monotonic() + 90  # a replacement replica boots first (one replica and one standby)
    while len(s.manager) or s.manager.episodes_ended < episodes:
        assert time.monotonic() < deadline, "a session outlived its socket"
        time.sleep(0.05)
    assert s.manager.episodes_ended == episodes


def test_access_is_the_servers_token(server: tuple[Serving, str]) -> None:
    url = server[1]
    basic = "Basic " + base64.b64encode(f"osgym:{TOKEN}".encode()).decode()
    for headers, status in [({}, 401), ({"Authorization": "Bearer " + "z" * 40}, 401),
                            ({"Authorization": f"Bearer {TOKEN}", "Origin": "http://evil.example"}, 403)]:
        with pytest.raises(websockets.exceptions.InvalidStatus) as refused:
            connect(_ws_url(url), additional_headers=headers)
        assert refused.value.response.status_code == status
        assert json.loads(refused.value.response.body)["message"]
    with connect(_ws_url(url), additional_headers={"Authorization": basic}) as ws:
        assert _send(ws, {"type": "state"})["data"]["session_id"] is None
    with httpx.Client(base_url=url, timeout=30) as http:
        assert http.get("/openenv/health").status_code == 401
        assert http.get("/openenv/health", headers={"Authorization": basic}).json()["status"] == "healthy"
        assert http.get("/v1/sessions", headers={"Authorization": basic}).status_code == 401  # Basic: /openenv only
        schema = http.get("/openenv/schema", headers={"Authorization": basic}).json()
        assert set(schema) == {"action", "observation", "state"} and "text" in schema["action"]["properties"]
        r = http.post("/openenv/step", headers={"Authorization": basic}, json={"action": {}})
        assert r.status_code == 400 and "/openenv/ws" in r.json()["message"]
