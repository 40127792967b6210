"""The server under concurrent clients: no errors, no lost episode, no leaked container.

The suite runs a bounded version (8 clients on 2 replicas for 20 s); ``OSGYM_SERVE_LOAD=clients,replicas,seconds``
scales it, and ``make bench`` runs the issue's full one (32 clients on 8 replicas for 5 minutes,
``bench/bench_serve.py load``), with its figures in BENCHMARKS.md.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import docker
import pytest

from bench.bench_serve import run_load
from tests.conftest import SESSION

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def test_concurrent_clients_lose_no_episode_and_leak_no_container(
        image: str, docker_client: docker.DockerClient, tmp_path: Path) -> None:
    clients, replicas, seconds = (int(n) for n in os.environ.get("OSGYM_SERVE_LOAD", "8,2,20").split(","))
    out = run_load(image, docker_client, tmp_path, clients=clients, replicas=replicas, duration_s=seconds, steps=2,
                   pool_name=f"{SESSION}-load-{uuid.uuid4().hex[:6]}", log=lambda _m: None)
    assert out["errors"] == 0, out["first_errors"]
    assert out["opened"] >= replicas, out  # every replica served at least one episode
    assert out["finished"] + out["shut_down"] == out["opened"], out
    assert out["episodes_in_dataset"] == out["episodes_ended"] == out["opened"], out
    assert out["distinct_episode_ids"] == out["episodes_in_dataset"] and not out["sink_errors"], out
    assert out["containers_left"] == 0, out
