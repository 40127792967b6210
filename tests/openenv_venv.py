"""A throwaway venv holding OpenEnv's client: ``openenv-core`` installed without its dependencies (they
include gradio, openai and huggingface_hub), plus only what importing its client needs, pinned.

``openenv.core``'s package import loads its environment server's module, which imports fastapi and
fastmcp; its client needs websockets, and its container providers requests. Built once under the temp
dir and reused, like OSWorld's reference venvs (:func:`tests.osworld_venv.cached_venv`).
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from tests.osworld_venv import PIP_TIMEOUT_S, cached_venv

OPENENV_VERSION = "0.3.0"
CLIENT_NEEDS = ("websockets==17.4", "fastapi==0.165.0", "fastmcp==4.2.3", "requests==2.34.2")
"""What ``from openenv.core import GenericEnvClient`` imports, at the versions current when this was written
(openenv-core 0.3.0 asks for websockets>=15.0.1, fastapi>=0.104.0, fastmcp>=3.0.0, requests>=2.25.0)."""


def openenv_venv() -> Path:
    """The venv of openenv-core's client; built on first use (downloads from PyPI included)."""

    def install(pip: list[str]) -> None:
        subprocess.run([*pip, "--no-deps", f"openenv-core=={OPENENV_VERSION}"], check=True, timeout=PIP_TIMEOUT_S)
        subprocess.run([*pip, *CLIENT_NEEDS], check=True, timeout=PIP_TIMEOUT_S)

    key = hashlib.sha256(" ".join(CLIENT_NEEDS).encode()).hexdigest()[:8]
    return cached_venv(f"openenv-core-{OPENENV_VERSION}-{key}", install)
