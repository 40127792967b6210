"""The operator's settings: one object, read from ``OSGYM_*`` environment variables.

Recipes say what to collect; settings say how this machine runs it. Read them with :func:`settings`.

>>> Settings(host_name="worker-3").host_name
'worker-3'
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Every ``OSGYM_*`` variable osgym reads. The README lists them."""

    model_config = SettingsConfigDict(env_prefix="OSGYM_", extra="ignore")

    run_dir: Path | None = Field(None, description="host directory for replicas' control sockets "
                                                    "(default /run/osgym as root, else /tmp/osgym-<uid>); "
                                                    "created mode 0700, refused if another user owns it or "
                                                    "others may write it")
    images_dir: Path | None = Field(None, description="where replica_images/ lives (default: beside the package)")
    host_name: str = Field("local", description="this worker's name in pool events and episode rows")
    openai_api_key: SecretStr | None = Field(None, validation_alias="OPENAI_API_KEY",
                                             description="the openai policy's default key (the usual variable)")

    def resolved_run_dir(self) -> Path:
        if self.run_dir is not None:
            return self.run_dir
        return Path("/run/osgym") if os.geteuid() == 0 else Path(f"/tmp/osgym-{os.getuid()}")


def settings() -> Settings:
    """The settings as the environment says now (read at each call: they are read rarely, at a
    pool's start or a policy's creation, and a test or an operator may change the environment)."""
    return Settings()
