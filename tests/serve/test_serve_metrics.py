"""``GET /metrics`` of a real server: a session stepped on a real desktop replica, scraped and parsed as Prometheus
parses it."""

from __future__ import annotations

from collections.abc import Iterator

import docker
import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from serve_support import TOKEN, plain_task, running

from osgym.errors import INFRA_ERROR_CLASSES
from osgym.metrics import NAMES, REPLICA_STATES
from osgym.replicas.events import EVENT_KINDS
from osgym.serving.server import Serving

pytestmark = [pytest.mark.docker]

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


@pytest.fixture(scope="module")
def server(image: str, docker_client: docker.DockerClient,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Serving, str]]:
    with running(image, docker_client, tmp_path_factory.mktemp("metrics"), replicas=1, standby=1) as s:
        yield s


def scrape(url: str) -> tuple[set[str], Samples]:
    """The families' names and every sample, keyed by sample name and sorted labels."""
    r = httpx.get(f"{url}/metrics", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain; version=")
    families = list(text_string_to_metric_families(r.text))
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value for f in families for s in f.samples}
    return {f.name for f in families}, samples


def test_metrics_need_a_token(server: tuple[Serving, str]) -> None:
    url = server[1]
    r = httpx.get(f"{url}/metrics", timeout=30)
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    assert "osgym_" not in r.text
    r = httpx.get(f"{url}/metrics", headers={"Authorization": "Bearer " + "x" * 35}, timeout=30)
    assert r.status_code == 401 and "osgym_" not in r.text


def test_a_stepped_session_shows_in_the_metrics(server: tuple[Serving, str]) -> None:
    url = server[1]
    names, before = scrape(url)
    assert set(NAMES) <= names
    # the replicas started before the server's app existed are counted (EventRecorder.chain)
    assert before[("osgym_pool_events_total", (("kind", "ready"),))] >= 2
    assert before[("osgym_sessions", ())] == 0 and before[("osgym_step_seconds_count", ())] == 0
    steps = 3
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120) as http:
        r = http.post("/v1/sessions", json={"task": plain_task()})
        assert r.status_code == 200, r.text
        sid = r.json()["session_id"]
        for i in range(steps):
            r = http.post(f"/v1/sessions/{sid}/step", json={"actions": [{"action_type": "MOVE_TO", "x": 10 + i,
                                                                          "y": 10}]})
            assert r.status_code == 200 and r.json()["terminated"] is False, r.text

        _, live = scrape(url)
        assert live[("osgym_sessions", ())] == 1
        assert live[("osgym_step_seconds_count", ())] == steps
        assert 0 < live[("osgym_step_seconds_sum", ())] < steps * 30
        assert live[("osgym_step_seconds_bucket", (("le", "+Inf"),))] == steps
        assert {s for (n, labels), _ in live.items() if n == "osgym_replicas" for _, s in labels} == set(REPLICA_STATES)
        assert live[("osgym_replicas", (("state", "leased"),))] == 1
        assert live[("osgym_lease_queue", ())] == 0
        assert live[("osgym_pool_events_total", (("kind", "leased"),))] == 1
        assert live[("osgym_lease_wait_seconds_count", ())] == 1
        assert live[("osgym_episodes_total", (("outcome", "done"),))] == 0

        r = http.post(f"/v1/sessions/{sid}/step", json={"actions": [{"action_type": "DONE"}]})
        assert r.status_code == 200 and r.json()["termination"] == "done", r.text

    _, after = scrape(url)
    assert after[("osgym_sessions", ())] == 0
    assert after[("osgym_step_seconds_count", ())] == steps + 1
    assert after[("osgym_episodes_total", (("outcome", "done"),))] == 1
    assert after[("osgym_replicas", (("state", "leased"),))] == 0
    assert after[("osgym_pool_events_total", (("kind", "released"),))] == 1
    assert {labels: v for (n, labels), v in after.items() if n == "osgym_infra_errors_total"} == {
        (("error", e),): 0.0 for e in INFRA_ERROR_CLASSES}
    kinds = {dict(labels)["kind"] for (n, labels), _ in after.items() if n == "osgym_pool_events_total"}
    assert kinds == set(EVENT_KINDS)
