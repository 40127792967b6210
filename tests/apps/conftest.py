"""The apps tier's fixtures: the ``image`` fixture here builds ``osgym/apps`` (so ``make_pool``
from tests/conftest.py starts apps replicas), with the tier's limits and a 1920x1080 screen.

``make test`` builds the image first (``make images-apps``), so the build's time shows there,
not inside a test; ``make test-apps`` runs only these.
"""

from __future__ import annotations

import docker
import pytest

from osgym.replicas import images


@pytest.fixture(scope="session")
def image(docker_client: docker.DockerClient) -> str:
    """The apps image for the current inputs, built once if missing."""
    return images.build("apps", client=docker_client, log=lambda _m: None).tag
