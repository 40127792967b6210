"""The server under concurrent clients: no refusal or error, no lost episode, no leaked container.

The suite runs the issue's load for one minute: 32 clients cycling reset, steps and finish()/shutdown on 8
desktop replicas (``bench/bench_serve.py load``; about 3 minutes of wall time with the pool's start and
the resets still waiting at the deadline). ``OSGYM_SERVE_LOAD=clients,replicas,seconds`` rescales it;
``make bench`` runs the 5-minute one, with its figures in BENCHMARKS.md.

Four clients to a replica means most resets wait for one: the lease queue serves them in arrival order
(:mod:`osgym.replicas.lease_queue`), so no reset waits past the lease timeout while later ones go ahead.
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
    clients, replicas, seconds = (int(n) for n in os.environ.get("OSGYM_SERVE_LOAD", "32,8,60").split(","))
    out = run_load(image, docker_client, tmp_path, clients=clients, replicas=replicas, duration_s=seconds, steps=3,
                   pool_name=f"{SESSION}-load-{uuid.uuid4().hex[:6]}", log=lambda _m: None)
    out.pop("reset_times")
    assert out["errors"] == 0, out  # no reset refused (503 after the lease wait), no step or shutdown failed
    assert out["opened"] >= replicas, out  # every replica served at least one episode
    assert out["finished"] + out["shut_down"] == out["opened"], out
    assert out["episodes_in_dataset"] == out["episodes_ended"] == out["opened"], out
    assert out["distinct_episode_ids"] == out["episodes_in_dataset"] and not out["sink_errors"], out
    assert out["containers_left"] == 0, out
