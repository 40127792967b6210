"""Reads survive a control server that is briefly unreachable; actions are never sent twice.

The replica is real. "Briefly unreachable" is its control socket moved out of the
way for a moment (as when the server re-creates it): a new connection is refused
with ENOENT until the socket is back. Each check uses a fresh client, so the
request needs a new connection rather than the pooled keep-alive one.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from osgym.errors import ReplicaUnreachable
from osgym.replicas.client import READ_RETRY, ControlClient, ReadRetry, Replica


def _fresh_client(replica: Replica) -> ControlClient:
    token = replica.api.headers["Authorization"].removeprefix("Bearer ")
    return ControlClient(replica.api.endpoint, token, replica.api.timeouts)


@contextmanager
def _unreachable_for(replica: Replica, seconds: float) -> Iterator[None]:
    """Move the replica's control socket aside, and put it back after ``seconds`` (in a timer)."""
    sock = Path(replica.api.endpoint.removeprefix("unix:"))
    aside = sock.with_name("control.sock.aside")
    os.rename(sock, aside)
    back = threading.Timer(seconds, os.rename, args=(aside, sock))
    back.start()
    try:
        yield
    finally:
        back.cancel()
        back.join()
        if aside.exists():
            os.rename(aside, sock)


def test_reads_are_retried_until_the_server_is_back(replica: Replica) -> None:
    for path, check in [("/health", lambda r: r.json()["status"] == "ok"),
                        ("/screenshot", lambda r: r.content[:4] == b"\x89PNG"),
                        ("/windows", lambda r: "windows" in r.json())]:
        client = _fresh_client(replica)
        try:
            with _unreachable_for(replica, 0.3):
                t0 = time.monotonic()
                r = client.request("GET", path)
                elapsed = time.monotonic() - t0
        finally:
            client.close()
        # an answer at all proves the retries outlasted the gap; that it waited proves it was retried
        assert check(r), path
        assert elapsed >= 0.2, f"{path} answered after {elapsed:.2f} s: it should have waited for the socket"


def test_a_read_gives_up_within_its_bounded_backoff(replica: Replica) -> None:
    client = _fresh_client(replica)
    try:
        with _unreachable_for(replica, 10):
            t0 = time.monotonic()
            with pytest.raises(ReplicaUnreachable, match="GET /health failed"):
                client.request("GET", "/health")
            elapsed = time.monotonic() - t0
    finally:
        client.close()
    waits = sum(min(READ_RETRY.backoff_max_s, READ_RETRY.backoff_s * 2**i) for i in range(READ_RETRY.attempts - 1))
    # the socket stays away 10 s: giving up well before it returns is the bound (the backoff itself is 0.6 s)
    assert waits * 0.9 <= elapsed < 10, f"gave up after {elapsed:.2f} s; the backoff adds up to {waits} s"
    assert replica.health()["status"] == "ok", "the socket is back"


def test_an_action_is_not_retried(replica: Replica) -> None:
    before = replica.pointer()
    target = {"x": (before[0] + 97) % 1000 + 10, "y": (before[1] + 53) % 700 + 10}
    # a retry policy whose first backoff is 20 s: a retried request could not fail in less, however loaded the
    # machine, and the socket is back long before it would try again
    token = replica.api.headers["Authorization"].removeprefix("Bearer ")
    client = ControlClient(replica.api.endpoint, token, replica.api.timeouts,
                           read_retry=ReadRetry(attempts=3, backoff_s=20.0, backoff_max_s=20.0))
    try:
        with _unreachable_for(replica, 0.3):
            t0 = time.monotonic()
            with pytest.raises(ReplicaUnreachable, match="POST /actions failed"):
                client.request("POST", "/actions", json={"actions": [{"action_type": "MOVE_TO", **target}]})
            elapsed = time.monotonic() - t0
        assert elapsed < 20, f"the action failed after {elapsed:.2f} s: it was retried"
        # the socket is back: a request that the client held for a retry would reach the replica now
        assert client.request("GET", "/health").json()["status"] == "ok"
    finally:
        client.close()
    assert replica.pointer() == before, "the action reached the replica although its request failed"
