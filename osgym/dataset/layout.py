"""Where each file of a dataset goes (design.md §6), as paths relative to the dataset root::

    episodes/run=<run_id>/part-<shard>.parquet
    steps/run=<run_id>/part-<shard>.parquet
    _manifests/<run_id>.json                  written last: shards, rows, sha256, config
    _manifests/_parts/<run_id>/<part>.json    a scale-out part's manifest, until merged
    <table>/run=<run_id>/<name>.parquet       sidecar tables (pool_events)
    README.md                                 the dataset card

>>> run_dir("steps", "r1"), shard_name(3), shard_name(3, "a")
('steps/run=r1', 'part-00003.parquet', 'part-a-00003.parquet')
>>> manifest_path("r1"), manifest_path("r1", part="a")
('_manifests/r1.json', '_manifests/_parts/r1/a.json')
"""

from __future__ import annotations

import re

import pyarrow as pa

MANIFEST_DIR = "_manifests"
PARTS_DIR = f"{MANIFEST_DIR}/_parts"
CARD_NAME = "README.md"
PARTITION_KEY = "run"
PARTITION_SCHEMA = pa.schema([(PARTITION_KEY, pa.string())])

SHARD_RE = re.compile(r"^part-(?:(?P<part>[a-z0-9]{1,16})-)?(?P<n>\d{5,})\.parquet$")
STAGED_RE = re.compile(r"^\.part-(?:(?P<part>[a-z0-9]{1,16})-)?(?P<n>\d{5,})\.parquet\.incomplete$")
PART_RE = re.compile(r"^[a-z0-9]{1,16}$")


def run_dir(table: str, run_id: str) -> str:
    """A run's directory of one table (a Hive partition)."""
    return f"{table}/{PARTITION_KEY}={run_id}"


def shard_name(number: int, part: str | None = None) -> str:
    """The file name of shard ``number``, of one scale-out ``part`` if given."""
    return f"part-{number:05d}.parquet" if part is None else f"part-{part}-{number:05d}.parquet"


def manifest_path(run_id: str, part: str | None = None) -> str:
    """Where a run's manifest goes, or a part's manifest before :func:`~osgym.dataset.merge.merge_parts`."""
    return f"{MANIFEST_DIR}/{run_id}.json" if part is None else f"{PARTS_DIR}/{run_id}/{part}.json"
