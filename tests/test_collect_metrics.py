"""A collection run's Prometheus metrics (``osgym collect --metrics-port``), scraped while it runs and after, on real
desktop replicas; and the metrics endpoint's errors."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from osgym.collection import Collection
from osgym.collection.collector import EpisodeSummary
from osgym.episodes.trajectory import TERMINATIONS
from osgym.errors import INFRA_ERROR_CLASSES, ConfigError
from osgym.metrics import EPISODES, INFRA_ERRORS, NAMES, POOL_EVENTS, REPLICA_STATES, Metrics, exposition
from osgym.replicas.client import ReplicaState

ROOT = Path(__file__).resolve().parents[1]
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(url: str) -> Samples:
    r = httpx.get(url, timeout=10)
    assert r.status_code == 200, r.text
    families = list(text_string_to_metric_families(r.text))
    assert set(NAMES) <= {f.name for f in families}
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for f in families for s in f.samples}


def by(samples: Samples, name: str, label: str) -> dict[str, float]:
    return {dict(labels)[label]: v for (n, labels), v in samples.items() if n == name}


def _recipe(tmp_path: Path, image: str) -> dict[str, Any]:
    return {"name": "metered", "episodes": 3, "replicas": 1, "standby": 0, "screen": [800, 600], "image": image,
            "tasks": ["terminal-create-file"], "store": str(tmp_path / "data"), "max_steps": 15,
            "episode_timeout_s": 120}


@pytest.mark.docker
def test_a_runs_metrics_count_what_it_wrote(tmp_path: Path, image: str) -> None:
    metrics = Metrics()
    during: list[Samples] = []
    with exposition(metrics, 0) as where:
        assert where.url.startswith("http://127.0.0.1:")

        def on_episode(_summary: EpisodeSummary) -> None:  # while the pool is up
            during.append(scrape(where.url))

        run = Collection(_recipe(tmp_path, image), run_id="metered-run", on_episode=on_episode, metrics=metrics)
        summary = run.run()
        after = scrape(where.url)
    assert summary["manifest_episodes"] == summary["episodes"] == 3
    assert len(during) == 3
    assert [sum(by(s, "osgym_episodes_total", "outcome").values()) for s in during] == [1, 2, 3]
    # the run's one replica, or its replacement starting
    assert all(sum(by(s, "osgym_replicas", "state").values()) >= 1 for s in during)
    episodes = by(after, "osgym_episodes_total", "outcome")
    assert sum(episodes.values()) == summary["manifest_episodes"]
    assert set(episodes) == set(TERMINATIONS), episodes  # every outcome shows, at 0 until one happens
    assert after[("osgym_step_seconds_count", ())] == summary["steps"] > 0
    events = by(after, "osgym_pool_events_total", "kind")
    assert events["released"] + events.get("faulted", 0) >= events["leased"] >= 3  # faulted: a start cut by the close
    if summary["errors"] == summary["retried"] == 0:  # one lease per episode, each given back whole
        assert events["leased"] == events["released"] == 3
    assert events["created"] >= events["leased"] and events["removed"] >= 1
    assert after[("osgym_lease_wait_seconds_count", ())] == events["leased"]
    assert by(after, "osgym_infra_errors_total", "error") == {e: 0.0 for e in INFRA_ERROR_CLASSES}
    # the pool is gone: its gauges read zero
    assert set(by(after, "osgym_replicas", "state").values()) == {0.0}
    assert after[("osgym_sessions", ())] == 0 and after[("osgym_lease_queue", ())] == 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.mark.docker
def test_osgym_collect_serves_metrics_while_it_runs(tmp_path: Path, image: str) -> None:
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump({**_recipe(tmp_path, image), "episodes": 2}))
    port = _free_port()
    url = f"http://127.0.0.1:{port}/metrics"
    proc = subprocess.Popen([sys.executable, "-m", "osgym", "collect", str(path), "--no-report",
                             "--metrics-port", str(port)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "COLUMNS": "200"})
    seen: list[Samples] = []
    try:
        deadline = time.monotonic() + 240
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                seen.append(scrape(url))
            except httpx.TransportError:
                pass  # not listening yet, or the run has ended
            time.sleep(0.2)
        out, errs = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, errs[-2000:]
    assert f"metrics: {url}" in errs
    assert seen, "the endpoint never answered while the run lasted"
    assert max(sum(by(s, "osgym_replicas", "state").values()) for s in seen) >= 1
    assert max(s[("osgym_pool_events_total", (("kind", "ready"),))] for s in seen) >= 1
    with pytest.raises(httpx.TransportError):  # the endpoint ends with the run
        httpx.get(url, timeout=5)


def test_a_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError, match=f"cannot listen on 127.0.0.1:{port}"), exposition(Metrics(), port):
            pass
        path = tmp_path / "tiny.yaml"
        path.write_text(yaml.safe_dump({"name": "x", "episodes": 1, "store": str(tmp_path / "data")}))
        out = subprocess.run([sys.executable, "-m", "osgym", "collect", str(path), "--metrics-port", str(port)],
                             cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and f"127.0.0.1:{port}" in out.stderr and "Traceback" not in out.stderr
    with pytest.raises(ConfigError, match="0..65535"), exposition(Metrics(), 70000):
        pass


def test_the_readme_lists_every_metric_and_label_value() -> None:
    readme = (ROOT / "README.md").read_text()
    table = readme[readme.index("## Metrics"):readme.index("## Documentation")]
    for name in NAMES:
        family = name + ("_total" if name in (EPISODES, INFRA_ERRORS, POOL_EVENTS) else "")
        assert f"| `{family}` |" in table, family
    for value in (*REPLICA_STATES, *TERMINATIONS, *INFRA_ERROR_CLASSES):
        assert f"`{value}`" in table, value
    assert set(REPLICA_STATES) == {s.value for s in ReplicaState} | {"parked"}


def test_two_metrics_in_one_process_do_not_mix() -> None:
    a, b = Metrics(), Metrics()
    a.episode("timeout", "replica_fault", step_seconds=[0.1])
    assert a.value("osgym_episodes_total", outcome="timeout") == 1
    assert a.value("osgym_infra_errors_total", error="replica_fault") == 1
    assert b.value("osgym_episodes_total", outcome="timeout") is None
    assert b.value("osgym_step_seconds_count") == 0
    b.episode("fail", "policy_error")  # not the environment's fault
    assert b.value("osgym_infra_errors_total", error="replica_fault") == 0
    assert sum(b.value("osgym_infra_errors_total", error=e) or 0 for e in INFRA_ERROR_CLASSES) == 0
