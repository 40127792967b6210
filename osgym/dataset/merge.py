"""Committing a run written by several part writers (scale-out): one manifest over every part."""

from __future__ import annotations

import logging
import os

import pyarrow as pa
import pyarrow.parquet as pq

from osgym.dataset.card import write_card
from osgym.dataset.layout import PARTS_DIR, manifest_path
from osgym.dataset.manifest import Manifest, ShardEntry, build_manifest, read_manifest
from osgym.dataset.schema import TABLES
from osgym.errors import StoreError
from osgym.storage import S3Options, check_name, open_backend

__all__ = ["merge_parts"]

log = logging.getLogger(__name__)


def merge_parts(
    uri: str | os.PathLike[str],
    dataset: str,
    run_id: str,
    *,
    expected_parts: int | None = None,
    s3: S3Options | None = None,
) -> Manifest:
    """Commit a run written by several part writers: one manifest listing every part's shards.

    Idempotent: merging an already merged run rewrites the same manifest.

    Raises:
        StoreError: if a part manifest is missing or damaged, parts disagree, or an episode
            appears in more than one part; nothing is committed then.
    """
    check_name("run_id", run_id)
    backend = open_backend(uri, dataset, s3)
    names = sorted(n for n in backend.list(f"{PARTS_DIR}/{run_id}") if n.endswith(".json"))
    if expected_parts is not None and len(names) != expected_parts:
        raise StoreError(f"run {run_id}: expected {expected_parts} part manifests, found {len(names)} ({names}); "
                         f"re-run the missing shards with the same run_id")
    if not names:
        raise StoreError(f"run {run_id} has no part manifests under {backend.uri(PARTS_DIR)}")
    parts = [read_manifest(backend, f"{PARTS_DIR}/{run_id}/{name}", remedy="re-run that shard", what="part manifest")
             for name in names]  # fmt: skip
    tables: dict[str, list[ShardEntry]] = {t: [e for m in parts for e in m.tables.get(t, [])] for t in TABLES}
    seen: set[str] = set()
    for entry in tables["episodes"]:
        ids = pq.ParquetFile(pa.BufferReader(backend.read(entry.path))).read(columns=["episode_id"])
        for eid in ids.column("episode_id").to_pylist():
            if eid in seen:
                raise StoreError(f"run {run_id}: episode {eid} is in more than one part; each episode belongs "
                                 f"to exactly one shard of the run")
            seen.add(eid)
    config = {**parts[0].config, "parts": [n[: -len(".json")] for n in names]}
    manifest = build_manifest(run_id, dataset, config, tables)
    backend.put(manifest_path(run_id), manifest.to_json().encode(), "application/json")
    try:
        write_card(backend, dataset)
    except StoreError as exc:
        log.error("run %s is committed but the dataset card was not written: %s", run_id, exc)
    return manifest
