"""Fixtures for the getter tests: one desktop replica per module, an evaluation context on it, and
OSWorld's own getters run against the same replica (``osworld_get``), for parity.

OSWorld's getters come from desktop-env in the reference venv of tests/metrics/conftest.py (imported
here as the ``osworld`` fixture); ``osworld_getter_runner.py`` runs them with an adapter ``env``.
"""

from __future__ import annotations

import base64
import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import docker
import pytest

from osgym.replicas.client import Replica
from osgym.tasks.getters import Context
from tests.conftest import held_replica
from tests.metrics.conftest import OSWorld, osworld  # noqa: F401  (a fixture, for parity tests)
from tests.replica.helpers import SCREEN

RUNNER = Path(__file__).with_name("osworld_getter_runner.py")


@pytest.fixture(scope="module")
def desktop(image: str, docker_client: docker.DockerClient) -> Iterator[Replica]:
    """One desktop replica for a module's getter tests; each test uses its own files."""
    with held_replica(image, docker_client, "getters", screen=SCREEN) as replica:
        yield replica


@pytest.fixture
def ctx(desktop: Replica) -> Iterator[Context]:
    c = Context(desktop)
    try:
        yield c
    finally:
        c.close()


def decode(value: Any) -> Any:
    """The runner's JSON back to Python: ``{"bytes"|"file": base64}`` to bytes."""
    if isinstance(value, dict) and len(value) == 1 and set(value) <= {"bytes", "file"}:
        return base64.b64decode(next(iter(value.values())))
    if isinstance(value, list):
        return [decode(v) for v in value]
    if isinstance(value, dict):
        return {k: decode(v) for k, v in value.items()}
    return value


def run_osworld_getters(ref: OSWorld, replica: Replica, calls: list[tuple[str, str, dict[str, Any]]], *,
                        active_url: str | None = None, refused: list[str] | None = None) -> list[Any]:
    """Each call's value from OSWorld's getter ``(module, func, config)`` run against ``replica``;
    ``active_url``: what OSWorld's address-bar reader returns (it reads Google Chrome's accessibility tree);
    ``refused`` gets the requests the replica answered with other than 200 (a getter's None, explained)."""
    assert replica.api.endpoint.startswith("unix:"), replica.api.endpoint
    request = {"socket": replica.api.endpoint[len("unix:"):],
               "token": replica.api.headers.get("Authorization", ""),
               "calls": [{"module": m, "func": f, "config": c, **({"active_url": active_url} if active_url else {})}
                         for m, f, c in calls]}
    proc = subprocess.run([str(ref.python), str(RUNNER)], input=json.dumps(request), capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    answers = json.loads(proc.stdout)
    errors = [a["error"] for a in answers if "error" in a]
    assert not errors, errors
    if refused is not None:
        refused.extend(r for a in answers for r in a.get("refused", []))
    return [decode(a["value"]) for a in answers]


@pytest.fixture
def osworld_get(osworld: OSWorld) -> Callable[..., list[Any]]:  # noqa: F811
    def get(replica: Replica, *calls: tuple[str, str, dict[str, Any]]) -> list[Any]:
        return run_osworld_getters(osworld, replica, list(calls))
    return get
