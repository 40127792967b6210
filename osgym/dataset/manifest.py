"""Run manifests: what a committed run holds. A run counts once its manifest exists.

:func:`build_manifest` is the one place a manifest is assembled, for
:meth:`DatasetWriter.finalize <osgym.dataset.writer.DatasetWriter.finalize>` and for
:func:`~osgym.dataset.merge.merge_parts` alike.

>>> m = build_manifest("r1", "demo", {}, {"episodes": [ShardEntry(path="e/p1", rows=2, bytes=9, sha256="x")]})
>>> m.episodes, m.steps, sorted(m.tables)
(2, 0, ['episodes', 'steps'])
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from osgym.dataset.layout import MANIFEST_DIR
from osgym.dataset.schema import SCHEMA_VERSION, TABLES
from osgym.errors import StoreError
from osgym.storage import Backend

__all__ = ["Manifest", "ShardEntry", "build_manifest", "read_manifest", "read_manifests"]


class ShardEntry(BaseModel):
    """One committed Parquet file of a run."""

    model_config = ConfigDict(frozen=True)

    path: str  # relative to the dataset root
    rows: int
    bytes: int
    sha256: str


class Manifest(BaseModel):
    """A committed run: its shards per table, row counts and configuration."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    dataset: str
    created_at: str
    schema_version: int
    config: dict[str, Any]
    tables: dict[str, list[ShardEntry]]
    episodes: int
    steps: int

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), indent=2, sort_keys=False, default=str)


def build_manifest(
    run_id: str, dataset: str, config: dict[str, Any], tables: Mapping[str, Iterable[ShardEntry]]
) -> Manifest:
    """A run's manifest: every table of the schema, shards in order (``part-2`` before ``part-10``),
    row counts summed, stamped now."""
    ordered = {t: sorted(tables.get(t, ()), key=lambda e: (len(e.path), e.path)) for t in TABLES}
    return Manifest(
        run_id=run_id,
        dataset=dataset,
        created_at=datetime.now(UTC).isoformat(),
        schema_version=SCHEMA_VERSION,
        config=config,
        tables=ordered,
        episodes=sum(e.rows for e in ordered["episodes"]),
        steps=sum(e.rows for e in ordered["steps"]),
    )


def read_manifest(backend: Backend, rel: str, *, remedy: str, what: str = "manifest") -> Manifest:
    """The manifest at ``rel``.

    Raises:
        StoreError: when it cannot be read or is not valid; the message ends with ``remedy``.
    """
    try:
        return Manifest.model_validate_json(backend.read(rel))
    except ValueError as exc:
        raise StoreError(f"{what} {backend.uri(rel)} is not valid: {exc}; {remedy}") from exc


def read_manifests(backend: Backend) -> list[dict[str, Any]]:
    """Every committed run's manifest, as JSON-ready dicts, oldest first."""
    manifests = []
    for name in sorted(backend.list(MANIFEST_DIR)):
        if not name.endswith(".json") or name.startswith("."):
            continue
        manifest = read_manifest(backend, f"{MANIFEST_DIR}/{name}", remedy="restore it or re-run its run")
        manifests.append(manifest.model_dump(mode="json"))
    manifests.sort(key=lambda m: (m["created_at"], m["run_id"]))
    return manifests
