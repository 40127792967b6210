"""The native API's request bodies (``/v1``), which OpenEnv's messages extend (:mod:`osgym.serving.openenv`)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from osgym.serving.limits import ObservationOptions

__all__ = ["NativeStep", "OpenRequest"]


class OpenRequest(BaseModel):
    """``POST /v1/sessions``: a task file (``task``), or a built-in ``suite`` variant drawn with ``seed``."""

    model_config = ConfigDict(extra="forbid")
    task: dict[str, Any] | None = None
    suite: str | None = None
    template: str | None = None
    seed: int = 0
    observation: ObservationOptions = ObservationOptions()
    idle_timeout_s: float | None = Field(None, gt=0)


class NativeStep(BaseModel):
    """``POST /v1/sessions/{id}/step``: typed ``actions``, or ``text`` in a registered action ``format``."""

    model_config = ConfigDict(extra="forbid")
    actions: list[dict[str, Any]] | None = Field(None, max_length=200)
    text: str | None = Field(None, max_length=20_000)
    format: str = "osgym"
