"""The native ``/v1`` API: typed actions, registered action formats, observation options, its errors."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import docker
import httpx
import pytest
from serve_support import TOKEN, folder_task, infeasible_task, running

from osgym.serving.app import MAX_BODY_BYTES
from osgym.serving.server import Serving

pytestmark = [pytest.mark.docker]


@pytest.fixture(scope="module")
def server(image: str, docker_client: docker.DockerClient,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Serving, str]]:
    with running(image, docker_client, tmp_path_factory.mktemp("native"), replicas=1, standby=1) as s:
        yield s


@pytest.fixture
def http(server: tuple[Serving, str]) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server[1], headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120) as c:
        yield c
        for sid in c.get("/v1/sessions").json()["sessions"]:
            c.delete(f"/v1/sessions/{sid}")


def test_a_suite_episode_with_typed_actions_and_png_observations(http: httpx.Client) -> None:
    r = http.post("/v1/sessions", json={"suite": "desktop-basics", "seed": 4,
                                        "observation": {"format": "png", "max_side": 640}})
    assert r.status_code == 200, r.text
    body = r.json()
    obs = body["observation"]
    assert base64.b64decode(obs["screenshot"])[:4] == b"\x89PNG"
    assert (obs["width"], obs["height"], obs["screen"]) == (640, 400, [1280, 800])
    assert obs["instruction"] == body["instruction"] and body["task_id"]
    sid = body["session_id"]
    assert http.get("/v1/sessions").json() == {"sessions": [sid]}
    step = http.post(f"/v1/sessions/{sid}/step", json={"actions": [{"action_type": "MOVE_TO", "x": 5, "y": 5},
                                                                    {"action_type": "WAIT", "seconds": 0.1}]})
    assert step.status_code == 200, step.text
    assert step.json()["terminated"] is False and step.json()["observation"]["step"] == 1
    assert http.get(f"/v1/sessions/{sid}/observation").json()["width"] == 640
    assert http.delete(f"/v1/sessions/{sid}").status_code == 200
    assert http.get(f"/v1/sessions/{sid}/observation").status_code == 404


def test_text_in_any_registered_format(http: httpx.Client) -> None:
    assert "osgym" in http.get("/v1/formats").json()["formats"]
    sid = http.post("/v1/sessions", json={"task": folder_task("native")}).json()["session_id"]
    code = "pyautogui.write('mkdir ~/Desktop/native')\npyautogui.press('enter')"
    r = http.post(f"/v1/sessions/{sid}/step", json={"format": "pyautogui", "text": code})
    assert r.status_code == 200, r.text
    r = http.post(f"/v1/sessions/{sid}/step", json={"format": "uitars", "text": "Thought: done\nAction: finished()"})
    assert r.json()["terminated"] is True and r.json()["reward"] == 1.0 and r.json()["termination"] == "done"


@pytest.mark.parametrize(("body", "status", "named"), [
    ({"format": "klingon", "text": "x"}, 400, "klingon"),
    ({"actions": [{"action_type": "TELEPORT"}]}, 400, "TELEPORT"),
    ({"actions": [{"action_type": "CLICK", "x": -4, "y": 1}]}, 400, "CLICK"),
    ({"actions": [{"action_type": "WAIT", "seconds": 1}], "text": "wait()"}, 400, "either actions"),
    ({"format": "uitars", "text": "Action: click(start_box='(2000,1)')"}, 400, "0..1000"),
    ({"actions": []}, 400, "at least one action"),
    ({"nonsense": 1}, 422, "nonsense"),
])
def test_bad_steps_get_a_4xx_naming_the_problem(http: httpx.Client, body: dict[str, object], status: int,
                                                named: str) -> None:
    sid = http.post("/v1/sessions", json={"task": infeasible_task()}).json()["session_id"]
    r = http.post(f"/v1/sessions/{sid}/step", json=body)
    assert r.status_code == status, r.text
    assert named in r.json()["message"]


def test_bad_opens_and_bodies(server: tuple[Serving, str], http: httpx.Client) -> None:
    both = http.post("/v1/sessions", json={"task": infeasible_task(), "suite": "desktop-basics"})
    assert both.status_code == 400 and "both" in both.json()["message"]
    assert http.post("/v1/sessions", json={"suite": "no-such-suite"}).status_code == 400
    big = http.post("/v1/sessions", content=b"x" * (MAX_BODY_BYTES + 1), headers={"Content-Type": "application/json"})
    assert big.status_code == 413
    health = httpx.get(f"{server[1]}/v1/health")  # the one route without a token
    assert health.status_code == 200 and health.json()["status"] == "ok"
    assert httpx.get(f"{server[1]}/v1/formats").status_code == 401
    assert httpx.get(f"{server[1]}/v1/capacity").status_code == 401  # what a server holds is for its clients
