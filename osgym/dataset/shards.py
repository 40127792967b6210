"""Shard pairs: the open pair a writer fills, and the complete pairs a resumed run keeps.

``episodes/…/part-N`` holds exactly the episodes whose steps are in ``steps/…/part-N``;
a pair counts only when both files exist, so a crash never leaves half an episode.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from osgym.dataset.layout import SHARD_RE, STAGED_RE, run_dir, shard_name
from osgym.dataset.manifest import ShardEntry
from osgym.dataset.schema import EPISODES, TABLES, file_schema
from osgym.errors import StoreError
from osgym.storage import Backend

__all__ = ["EPISODE_ROW_GROUP_ROWS", "CommittedShards", "OpenShard", "open_shard", "parquet_options", "scan_run"]

log = logging.getLogger(__name__)

EPISODE_ROW_GROUP_ROWS = 1024
# Large, unique values: dictionary encoding and min/max statistics only cost space there.
_PLAIN_COLUMNS = frozenset({"screenshot.bytes", "screenshot.path", "screenshot_sha256", "a11y", "thought", "action"})


def parquet_options(schema: pa.Schema, compression: str) -> dict[str, Any]:
    """``pq.ParquetWriter`` options: dictionaries and statistics only where they pay."""
    leaves = []
    for f in schema:
        if pa.types.is_struct(f.type):
            leaves += [f"{f.name}.{sub.name}" for sub in f.type]
        else:
            leaves.append(f.name)
    plain = [c for c in leaves if c not in _PLAIN_COLUMNS]
    return {
        "compression": compression,
        "use_dictionary": plain,
        "write_statistics": plain,
        "store_schema": True,
    }


@dataclass
class OpenShard:
    """A shard pair being written to staged files."""

    number: int
    name: str
    staged: dict[str, Path]
    sinks: dict[str, pa.NativeFile]
    writers: dict[str, pq.ParquetWriter]
    episode_batches: list[pa.RecordBatch] = field(default_factory=list)
    pending_bytes: int = 0
    episode_ids: list[str] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=lambda: {"episodes": 0, "steps": 0})

    def size(self) -> int:
        """Bytes in the staged files so far, plus the episode rows still waiting in memory."""
        return int(sum(s.tell() for s in self.sinks.values())) + self.pending_bytes

    def add_episode_row(self, batch: pa.RecordBatch) -> None:
        self.episode_batches.append(batch)
        self.pending_bytes += batch.get_total_buffer_size()
        if len(self.episode_batches) >= EPISODE_ROW_GROUP_ROWS:
            self.flush_episodes()

    def flush_episodes(self) -> None:
        if self.episode_batches:
            table = pa.Table.from_batches(self.episode_batches, schema=EPISODES)
            self.writers["episodes"].write_table(table, row_group_size=table.num_rows)
            self.episode_batches.clear()
            self.pending_bytes = 0

    def close(self) -> None:
        for table in ("steps", "episodes"):
            self.writers[table].close()
            self.sinks[table].close()

    def discard(self) -> None:
        for table in ("steps", "episodes"):
            try:
                self.writers[table].close()
            except Exception:  # the shard is being thrown away; its writer's state does not matter
                log.debug("closing a discarded %s writer failed", table, exc_info=True)
            try:
                self.sinks[table].close()
            except Exception:
                log.debug("closing a discarded %s sink failed", table, exc_info=True)
            self.staged[table].unlink(missing_ok=True)


def open_shard(number: int, name: str, staged: dict[str, Path], options: dict[str, dict[str, Any]]) -> OpenShard:
    """Open Parquet writers on the staged paths of both tables.

    Raises:
        StoreError: when a file cannot be created.
    """
    sinks: dict[str, pa.NativeFile] = {}
    writers: dict[str, pq.ParquetWriter] = {}
    try:
        for table, schema in TABLES.items():
            sinks[table] = pa.OSFile(str(staged[table]), "wb")
            writers[table] = pq.ParquetWriter(sinks[table], file_schema(schema), **options[table])
    except (OSError, pa.ArrowException) as exc:
        for sink in sinks.values():
            sink.close()
        for path in staged.values():
            path.unlink(missing_ok=True)
        raise StoreError(f"cannot open shard {name} for writing: {exc}; check free disk space") from exc
    return OpenShard(number, name, staged, sinks, writers)


@dataclass
class CommittedShards:
    """What a run already holds in complete shard pairs (one writer's part of it, for a part writer)."""

    next_number: int = 0
    entries: dict[str, list[ShardEntry]] = field(default_factory=lambda: {"episodes": [], "steps": []})
    episode_ids: set[str] = field(default_factory=set)


def scan_run(backend: Backend, run_id: str, part: str | None) -> CommittedShards:
    """Find a run's complete shard pairs, deleting unfinished and unpaired files of ``part``.

    Raises:
        StoreError: when a kept shard cannot be read, or an episode is in two shards.
    """
    listed = {t: backend.list(run_dir(t, run_id)) for t in TABLES}
    numbers: dict[str, set[int]] = {}
    for table, names in listed.items():
        numbers[table] = set()
        for name in names:
            m = SHARD_RE.match(name) or STAGED_RE.match(name)
            if m is None or m.group("part") != part:  # another writer's shards are not ours to touch
                continue
            if not name.startswith("."):
                numbers[table].add(int(m.group("n")))
            else:  # a shard a crashed writer never finished
                log.info("removing unfinished shard %s", name)
                backend.delete(f"{run_dir(table, run_id)}/{name}")
    complete = sorted(numbers["episodes"] & numbers["steps"])
    for table in TABLES:
        for n in sorted(numbers[table] - set(complete)):
            rel = f"{run_dir(table, run_id)}/{shard_name(n, part)}"
            log.warning("removing %s: its pair in the other table is missing (an interrupted commit)", rel)
            backend.delete(rel)
    everything = numbers["episodes"] | numbers["steps"]
    found = CommittedShards(next_number=max(everything) + 1 if everything else 0)
    for n in complete:
        ids = _adopt_shard(backend, run_id, shard_name(n, part), listed["steps"], found.entries)
        dup = found.episode_ids.intersection(ids)
        if dup:
            raise StoreError(
                f"run {run_id}: episode {sorted(dup)[0]} is in more than one shard (was the run "
                f"written by two writers at once?); delete {shard_name(n, part)} from both tables, re-run"
            )
        found.episode_ids.update(ids)
    if complete:
        log.info("resuming run %s: %d complete shards with %d episodes", run_id, len(complete), len(found.episode_ids))
    return found


def _adopt_shard(
    backend: Backend, run_id: str, name: str, step_sizes: dict[str, int], entries: dict[str, list[ShardEntry]]
) -> list[str]:
    damaged = f"If it is damaged, delete {name} from both episodes/ and steps/ of run={run_id} and re-run"
    rel = f"{run_dir('episodes', run_id)}/{name}"
    data = backend.read(rel)  # an episodes shard is small: one row per episode
    try:
        pf = pq.ParquetFile(pa.BufferReader(data))
        ids: list[str] = pf.read(columns=["episode_id"]).column("episode_id").to_pylist()
    except (OSError, pa.ArrowException) as exc:
        raise StoreError(f"cannot read the existing shard {backend.uri(rel)}: {exc}. {damaged}") from exc
    sha = hashlib.sha256(data).hexdigest()
    entries["episodes"].append(ShardEntry(path=rel, rows=len(ids), bytes=len(data), sha256=sha))
    rel = f"{run_dir('steps', run_id)}/{name}"
    try:
        rows, sha = backend.shard_info(rel)
    except StoreError as exc:
        raise StoreError(f"{exc} {damaged}") from exc
    entries["steps"].append(ShardEntry(path=rel, rows=rows, bytes=step_sizes[name], sha256=sha))
    return ids
