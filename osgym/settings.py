"""The operator's settings: one object, read from ``OSGYM_*`` environment variables.

Recipes say what to collect; settings say how this machine runs it. Read them with
:func:`settings` (cached; :func:`settings.cache_clear` after changing the environment).

>>> Settings(host_name="worker-3").host_name
'worker-3'
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Every ``OSGYM_*`` variable osgym reads. The README lists them."""

    model_config = SettingsConfigDict(env_prefix="OSGYM_", extra="ignore")

    run_dir: Path | None = Field(None, description="host directory for replicas' control sockets "
                                                    "(default /run/osgym as root, else /tmp/osgym-<uid>)")
    images_dir: Path | None = Field(None, description="where replica_images/ lives (default: beside the package)")
    host_name: str = Field("local", description="this worker's name in pool events and episode rows")

    def resolved_run_dir(self) -> Path:
        if self.run_dir is not None:
            return self.run_dir
        return Path("/run/osgym") if os.geteuid() == 0 else Path(f"/tmp/osgym-{os.getuid()}")


@functools.cache
def settings() -> Settings:
    """The settings of this process, read once from the environment."""
    return Settings()
