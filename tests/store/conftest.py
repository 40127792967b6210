"""Fixtures for the store tests: a SeaweedFS S3 server and the two backends (see store_support)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from store_support import BUCKET, SeaweedS3, StoreTarget, running_seaweed


@pytest.fixture(scope="session")
def seaweed() -> Iterator[SeaweedS3]:
    """A SeaweedFS S3 endpoint for the whole session, with the test bucket created."""
    with running_seaweed() as server:
        yield server


@pytest.fixture
def fresh_seaweed() -> Iterator[SeaweedS3]:
    """A SeaweedFS endpoint of this test's own, for tests that stop and restart it."""
    with running_seaweed() as server:
        yield server


@pytest.fixture(params=["local", "s3"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> StoreTarget:
    """The same test against a local directory and against the S3 server."""
    if request.param == "local":
        return StoreTarget("local", str(tmp_path / "store"), local_root=tmp_path / "store")
    server: SeaweedS3 = request.getfixturevalue("seaweed")
    return StoreTarget("s3", f"s3://{BUCKET}/t-{uuid.uuid4().hex[:12]}", s3=server.options(), server=server)
