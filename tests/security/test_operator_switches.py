"""Privileged switches stay with the operator, and keys stay secret.

A recipe is untrusted input. These tests play a hostile recipe against a real
collection run, real replicas and real HTTP listeners on 127.0.0.1:

- ``compat``, ``egress: open``, ``force`` and ``hosts`` without the operator's consent
  fail with a ConfigError naming the field and the setting, and no container is created
  (Docker's event log, filtered by this process's owner label, is the witness);
- with consent the same recipe runs, on the operator's hosts;
- a recipe cannot send the operator's key to a URL the operator has not listed (a decoy
  listener must hear nothing), nor carry a key of its own;
- a run's store, dataset card and Prefect flow runs never hold the key;
- a TCP-transport replica's token is not in its container's environment.
"""

from __future__ import annotations

import json
import os
import secrets
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import docker
import httpx
import pyarrow.parquet as pq
import pytest

from osgym.agents.policies.openai import OpenAIPolicy
from osgym.collection import run_collection
from osgym.errors import ConfigError, PolicyError
from osgym.replicas.hosts import DockerHost
from osgym.replicas.observation import Observation
from osgym.replicas.pool import OWNER_LABEL, POOL_LABEL, PoolEvent, ReplicaPool, owner_id
from osgym.settings import settings

OPERATOR_VARS = ("OSGYM_ALLOW_COMPAT", "OSGYM_ALLOW_EGRESS", "OSGYM_ALLOW_FORCE", "OSGYM_HOSTS",
                 "OSGYM_MODEL_BASE_URLS", "OPENAI_API_KEY")
TASK = "terminal-create-file"


# ---- real listeners on 127.0.0.1 ----------------------------------------------------------------
@dataclass
class Heard:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Listener:
    """A stdlib HTTP server on 127.0.0.1 that records every request.

    ``answer`` is ``"model"`` (an OpenAI-style chat completion saying DONE), ``"decoy"`` (200, empty
    JSON) or a URL to redirect every request to (307).
    """

    answer: str
    heard: list[Heard] = field(default_factory=list)
    server: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    @property
    def port(self) -> int:
        assert self.server is not None
        return int(self.server.server_address[1])

    def authorizations(self) -> list[str]:
        return [h.headers.get("Authorization", "") for h in self.heard]


@contextmanager
def listening(answer: str) -> Iterator[Listener]:
    listener = Listener(answer)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _any(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0") or 0))
            with lock:
                listener.heard.append(Heard(self.path, dict(self.headers.items()), body))
            if listener.answer == "model":
                status, payload = 200, json.dumps({
                    "id": "c", "object": "chat.completion", "model": "sw-model",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": "DONE"},
                                 "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}}).encode()
                extra = {}
            elif listener.answer == "decoy":
                status, payload, extra = 200, b"{}", {}
            else:
                status, payload, extra = 307, b"", {"Location": listener.answer + self.path}
            self.send_response(status)
            for k, v in {"Content-Type": "application/json", "Content-Length": str(len(payload)), **extra}.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = _any

        def log_message(self, format: str, *args: Any) -> None:
            pass

    listener.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    listener.server.daemon_threads = True
    thread = threading.Thread(target=listener.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield listener
    finally:
        listener.server.shutdown()
        listener.server.server_close()
        thread.join(timeout=5)


# ---- fixtures (distinctively named: other security modules share this folder) ---------------------
@pytest.fixture
def operator_key(monkeypatch: pytest.MonkeyPatch) -> str:
    """A clean operator environment (no switch allowed) whose OPENAI_API_KEY is a fresh, unique key."""
    for var in OPERATOR_VARS:
        monkeypatch.delenv(var, raising=False)
    key = f"sk-osgym-switches-{secrets.token_hex(16)}"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    return key


@pytest.fixture
def switches_recipe(image: str, tmp_path: Path) -> Callable[..., dict[str, Any]]:
    """A small real recipe (one episode, one replica) with ``fields`` on top."""

    def make(**fields: Any) -> dict[str, Any]:
        return {"name": "switches", "episodes": 1, "replicas": 1, "standby": 0, "screen": [1280, 800],
                "tasks": [TASK], "image": image, "store": str(tmp_path / "data"), "max_steps": 4,
                "episode_timeout_s": 120, "settle_s": 0.5, **fields}

    return make


def containers_created_since(client: docker.DockerClient, since: float) -> list[str]:
    """Pool labels of every container this process created since ``since`` (removed ones included)."""
    events = client.events(since=f"{since:.3f}", until=int(time.time()) + 1, decode=True,
                           filters={"type": "container", "event": "create", "label": f"{OWNER_LABEL}={owner_id()}"})
    return [e["Actor"]["Attributes"].get(POOL_LABEL, "?") for e in events]


def refused(recipe: Any, client: docker.DockerClient, *, match: str) -> ConfigError:
    """Run ``recipe``; assert it fails with a ConfigError matching ``match`` and that no replica was created."""
    t0 = time.time()
    seen: list[PoolEvent] = []
    with pytest.raises(ConfigError, match=match) as info:
        run_collection(recipe, on_event=seen.append)
    assert seen == [], f"pool events from a refused run: {seen[:3]}"
    assert containers_created_since(client, t0) == [], "a refused run created containers"
    return info.value


# ---- privileged switches ----------------------------------------------------------------------------
@pytest.mark.docker
@pytest.mark.parametrize(("fields", "allowed", "field_", "setting"), [
    ({"compat": True}, {}, "compat", "OSGYM_ALLOW_COMPAT"),
    ({"compat": True, "egress": "open"}, {"OSGYM_ALLOW_COMPAT": "1"}, "egress", "OSGYM_ALLOW_EGRESS"),
    ({"egress": "open"}, {}, "egress", "OSGYM_ALLOW_EGRESS"),
    ({"force": True}, {}, "force", "OSGYM_ALLOW_FORCE"),
    ({"hosts": ["tcp://127.0.0.1:9"]}, {"OSGYM_HOSTS": "unix:///var/run/docker.sock"}, "hosts", "OSGYM_HOSTS"),
], ids=["compat", "compat-with-egress-needs-egress-consent", "egress", "force", "hosts"])
def test_a_switch_without_the_operators_consent_is_refused_before_any_replica(
        operator_key: str, switches_recipe: Callable[..., dict[str, Any]], docker_client: docker.DockerClient,
        monkeypatch: pytest.MonkeyPatch, fields: dict[str, Any], allowed: dict[str, str], field_: str,
        setting: str) -> None:
    for var, value in allowed.items():
        monkeypatch.setenv(var, value)
    err = refused(switches_recipe(**fields), docker_client, match=f"field '{field_}'")
    assert setting in str(err)


@pytest.mark.docker
def test_compat_and_tcp_pools_do_not_turn_egress_on(image: str, docker_client: docker.DockerClient) -> None:
    """A published control port used to mean Docker's default bridge, a route out; now such replicas
    sit on the fenced ``osgym-isolated`` network unless egress is asked for explicitly."""
    for kw in ({"transport": "tcp"}, {"compat": True}):
        pool = ReplicaPool(image, 1, docker_client=docker_client, **kw)  # type: ignore[arg-type]
        assert (pool.egress, pool.network_name) == (False, "osgym-isolated"), kw


@pytest.mark.docker
@pytest.mark.slow
def test_with_consent_the_switches_work_on_the_operators_hosts(
        operator_key: str, switches_recipe: Callable[..., dict[str, Any]], docker_client: docker.DockerClient,
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    sock = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock").removeprefix("unix://")
    # The same daemon under a URL of its own, so episode rows show that OSGYM_HOSTS placed the replicas.
    url = f"unix://{os.path.dirname(sock)}/./{os.path.basename(sock)}"
    for var in ("OSGYM_ALLOW_COMPAT", "OSGYM_ALLOW_EGRESS", "OSGYM_ALLOW_FORCE"):
        monkeypatch.setenv(var, "true")
    monkeypatch.setenv("OSGYM_HOSTS", url)
    monkeypatch.setenv("OSGYM_HOST_NAME", "not-this-one")
    inspected: list[dict[str, Any]] = []

    def on_event(ev: PoolEvent) -> None:
        if ev.event == "leased":
            inspected.append(docker_client.api.inspect_container(f"{ev.pool}-{ev.replica_id}"))

    t0 = time.time()
    summary = run_collection(switches_recipe(compat=True, egress="open", force=True), on_event=on_event)
    assert summary["episodes"] == 1 and summary["errors"] == 0, summary
    created = containers_created_since(docker_client, t0)
    assert created and len(set(created)) == 1
    [info] = inspected
    assert info["HostConfig"]["NetworkMode"] == "osgym-egress" and "OSGYM_COMPAT=1" in info["Config"]["Env"]
    assert info["Config"]["Labels"][POOL_LABEL] == created[0]
    rows = pq.read_table(tmp_path / "data" / "switches" / "episodes").to_pylist()
    assert [r["host"] for r in rows] == [DockerHost(url).name]


# ---- where the key may go -----------------------------------------------------------------------------
@pytest.mark.docker
@pytest.mark.parametrize("variant", ["other-port", "other-host-name", "sibling-path", "userinfo"])
def test_a_recipe_cannot_send_the_key_to_an_unlisted_url(
        operator_key: str, switches_recipe: Callable[..., dict[str, Any]], docker_client: docker.DockerClient,
        monkeypatch: pytest.MonkeyPatch, variant: str) -> None:
    with listening("model") as allowed, listening("decoy") as decoy:
        monkeypatch.setenv("OSGYM_MODEL_BASE_URLS", f"{allowed.base_url},http://127.0.0.1:{decoy.port}/allowed/v1")
        base_url = {
            "other-port": decoy.base_url,
            "other-host-name": f"http://localhost:{decoy.port}/allowed/v1",
            "sibling-path": f"http://127.0.0.1:{decoy.port}/allowed/v10",
            "userinfo": f"http://127.0.0.1:{allowed.port}@127.0.0.1:{decoy.port}/v1",
        }[variant]
        recipe = switches_recipe(policy={"name": "openai", "options": {"base_url": base_url, "model": "m"}})
        err = refused(recipe, docker_client, match="base_url")
        assert "OSGYM_MODEL_BASE_URLS" in str(err) and operator_key not in str(err)
        # A policy built directly (not from a recipe) is held to the same list.
        with pytest.raises(ConfigError, match="OSGYM_MODEL_BASE_URLS"):
            OpenAIPolicy({"base_url": base_url, "model": "m"})
        assert decoy.heard == [] and allowed.heard == []


def test_the_default_list_holds_only_openais_api(operator_key: str) -> None:
    assert settings().model_base_urls == ["https://api.openai.com/v1"]
    for url in ("http://127.0.0.1:8000/v1", "http://api.openai.com/v1", "https://api.openai.com.example/v1"):
        with pytest.raises(ConfigError, match="not an endpoint this worker's operator allows"):
            OpenAIPolicy({"base_url": url, "model": "m"})
    assert OpenAIPolicy({"model": "m"}).settings.base_url == "https://api.openai.com/v1"


def test_an_allowed_endpoint_cannot_redirect_the_key_elsewhere(
        operator_key: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with listening("decoy") as decoy, listening(f"http://127.0.0.1:{decoy.port}") as redirector:
        monkeypatch.setenv("OSGYM_MODEL_BASE_URLS", redirector.base_url)
        with OpenAIPolicy({"base_url": redirector.base_url, "model": "m", "max_retries": 0}) as policy:
            policy.reset(SimpleNamespace(instruction="do it"), seed=0)
            with pytest.raises(PolicyError, match="actual 307"):
                policy.act(Observation(_png(), "png", 64, 48, "do it", 0), [])
        assert redirector.authorizations() == [f"Bearer {operator_key}"]
        assert decoy.heard == []


def test_a_bad_setting_is_a_config_error_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OSGYM_MODEL_BASE_URLS", "https://key@api.openai.com/v1")
    with pytest.raises(ConfigError, match="OSGYM_MODEL_BASE_URLS.*without user"):
        settings()
    monkeypatch.setenv("OSGYM_MODEL_BASE_URLS", "https://api.openai.com/v1")
    monkeypatch.setenv("OSGYM_ALLOW_EGRESS", "perhaps")
    with pytest.raises(ConfigError, match="OSGYM_ALLOW_EGRESS"):
        settings()


# ---- recipes carry no secrets -----------------------------------------------------------------------
@pytest.mark.docker
@pytest.mark.parametrize("fields", [
    {"policy": {"name": "openai", "options": {"model": "m", "api_key": "INLINE"}}},
    {"policy": {"name": "openai", "options": {"model": "m", "extra_body": {"auth": {"token": "INLINE"}}}}},
    {"api_key": "INLINE"},
], ids=["policy-api_key", "nested-token", "top-level"])
def test_a_recipe_with_an_inline_key_is_refused_without_echoing_it(
        operator_key: str, switches_recipe: Callable[..., dict[str, Any]], docker_client: docker.DockerClient,
        tmp_path: Path, fields: dict[str, Any]) -> None:
    inline = f"sk-inline-{secrets.token_hex(12)}"
    path = tmp_path / "inline.yaml"
    path.write_text(json.dumps(switches_recipe(**fields)).replace("INLINE", inline))  # JSON is YAML
    err = refused(str(path), docker_client, match="may not carry secrets|field 'api_key'")
    assert str(path) in str(err)
    if "policy" in fields:
        assert "OPENAI_API_KEY" in str(err)
    # Not in the message, nor in the chained errors a traceback (or Prefect's log of one) would print.
    assert inline not in "".join(traceback.format_exception(err))
    assert not (tmp_path / "data").exists()


@pytest.mark.docker
@pytest.mark.slow
def test_no_key_in_the_store_the_card_or_prefects_records(
        operator_key: str, switches_recipe: Callable[..., dict[str, Any]], monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    from prefect.client.orchestration import get_client
    from prefect.logging.handlers import APILogWorker

    from flows.collect import collect

    with listening("model") as model:
        monkeypatch.setenv("OSGYM_MODEL_BASE_URLS", model.base_url)
        recipe = switches_recipe(name="switches-secret", policy={
            "name": "openai", "options": {"base_url": model.base_url, "model": "sw-model", "max_retries": 1}})
        summary = collect(recipe)
    assert summary["episodes"] == 1 and summary["errors"] == 0, summary
    # The key was in use: the operator's endpoint received it on every request.
    assert model.heard and set(model.authorizations()) == {f"Bearer {operator_key}"}

    key = operator_key.encode()
    files = [p for p in (tmp_path / "data").rglob("*") if p.is_file()]
    names = {p.name for p in files}
    assert "README.md" in names and any(p.suffix == ".json" for p in files), names  # card and manifest
    for p in files:
        assert key not in p.read_bytes(), f"the key is in {p}"
        if p.suffix == ".parquet":  # compressed pages: look at the decoded values too
            assert operator_key not in json.dumps(pq.read_table(p).to_pylist(), default=str), p
    manifest = json.loads(next(p for p in files if p.parent.name == "_manifests").read_text())
    assert manifest["config"]["recipe"]["policy"]["options"]["base_url"] == model.base_url

    APILogWorker.drain_all(timeout=5)
    with get_client(sync_client=True) as client:
        records = [*client.read_flow_runs(limit=200), *client.read_task_runs(limit=200),
                   *client.read_artifacts(limit=200), *client.read_logs(limit=200)]
    assert any(getattr(r, "parameters", {}).get("recipe") == recipe for r in records)
    for r in records:
        assert operator_key not in r.model_dump_json(), f"the key is in Prefect's {type(r).__name__}"


# ---- the replica's own token ------------------------------------------------------------------------
@pytest.mark.docker
def test_a_tcp_replicas_token_is_not_in_its_environment(make_pool: Callable[..., ReplicaPool]) -> None:
    pool = make_pool(1, transport="tcp")
    with pool.lease() as r:
        token = str(r.api.headers["Authorization"]).removeprefix("Bearer ")
        assert len(token) > 20
        info = r.container.client.api.inspect_container(r.container.id)
        assert token not in json.dumps(info) and not any(e.startswith("OSGYM_TOKEN=") for e in info["Config"]["Env"])
        # Inside, no process's environment holds it, and the file it came in is gone once read.
        res = r.execute("cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c '^OSGYM_TOKEN=';"
                        " ls -A /run/osgym", shell=True, timeout=20)
        assert res.output.split() == ["0"], res
        assert r.health()["status"] == "ok"
        assert httpx.get(f"{r.api.endpoint}/health").status_code == 401


def _png() -> bytes:
    import io

    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (64, 48), (10, 20, 30)).save(out, format="PNG")
    return out.getvalue()
