"""The writer: episodes stream into Parquet shards, and a run commits with its manifest.

Guarantees (layout in :mod:`osgym.dataset.layout`):

* **Shards come in pairs** (:mod:`osgym.dataset.shards`); a crash never leaves half an episode.
* **A shard is visible only when complete.** It is built at the backend's staging path
  (locally ``.part-N.parquet.incomplete`` beside its final name, renamed into place) or in a
  local temporary file that the backend uploads whole (S3). A killed writer's temporary files are
  removed by the next writer on the machine (:mod:`osgym.dataset.staging`).
* **Readers see committed runs only.** :func:`~osgym.dataset.reader.open_dataset` reads the
  files that run manifests list, and a manifest is written after all its shards.
* **Resume.** A new :class:`DatasetWriter` for an existing ``run_id`` keeps the
  run's complete shard pairs (deleting unpaired leftovers), reports their
  episodes through :meth:`DatasetWriter.committed_episode_ids`, numbers new
  shards after them and lists all of them in the final manifest.
* **No episode twice.** ``add()`` skips an episode_id the run already holds.
* **Bounded memory.** Each episode is written as one row group of ``steps``
  as soon as it is added; only the open shard's small ``episodes`` rows wait
  in memory (at most ``EPISODE_ROW_GROUP_ROWS``), plus the set of the run's
  episode ids. A Parquet writer keeps every row group's metadata (~15 KB
  here) until its file closes, so a shard is also committed after
  ``shard_max_episodes`` episodes. ``bench/bench_store_memory.py`` measures it.
* **Bounded loss.** A shard is also committed ``shard_max_age_s`` seconds after its first
  episode arrived, by a timer, even if no further episode comes: a crash (SIGKILL, OOM, power)
  loses at most that much finished work, and a resume finds the rest in complete shards
  without any manifest (:meth:`DatasetWriter.committed_episode_ids`).

One writer per run at a time: two writers on the same run_id would race.
The writer's methods hold one lock (the commit timer runs in its own thread); feeding it from
several threads is safe, though episodes are written one at a time.

Example:
    >>> import tempfile
    >>> from osgym.dataset.reader import open_dataset
    >>> with tempfile.TemporaryDirectory() as root:
    ...     with DatasetWriter(root, "demo", "run-1") as writer:
    ...         pass
    ...     open_dataset(root, "demo").episodes.count_rows()
    0
"""

from __future__ import annotations

import enum
import json
import logging
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

import pyarrow as pa

from osgym.dataset.card import write_card
from osgym.dataset.layout import PART_RE, manifest_path, run_dir, shard_name
from osgym.dataset.manifest import Manifest, ShardEntry, build_manifest
from osgym.dataset.schema import EPISODES, SCHEMA_VERSION, STEPS, TABLES
from osgym.dataset.shards import OpenShard, open_shard, parquet_options, scan_run
from osgym.dataset.staging import reclaim_orphans, staging_dir
from osgym.episodes.trajectory import EpisodeResult
from osgym.errors import StoreError
from osgym.storage import S3Options, check_name, open_backend
from osgym.storage.base import sha256_file

__all__ = ["DEFAULT_COMPRESSION", "DEFAULT_SHARD_MAX_AGE_S", "DEFAULT_SHARD_MAX_BYTES", "DEFAULT_SHARD_MAX_EPISODES",
           "DatasetWriter"]

log = logging.getLogger(__name__)

DEFAULT_SHARD_MAX_BYTES = 256 * 2**20
DEFAULT_SHARD_MAX_EPISODES = 1000
DEFAULT_SHARD_MAX_AGE_S = 300.0
"""A crash loses at most this many seconds of finished episodes. Five minutes keeps shards of a
busy run large (hundreds of episodes) while a slow run still commits several times an hour."""
DEFAULT_COMPRESSION = "zstd"


class _State(enum.Enum):
    OPEN = "open"
    FAILED = "failed"
    ABORTED = "aborted"
    FINALIZED = "finalized"


class DatasetWriter:
    """Streams :class:`~osgym.episodes.trajectory.EpisodeResult` records of one run into Parquet shards.

    A context manager: leaving the block normally calls :meth:`finalize`
    (which commits the run's manifest); leaving on an exception calls
    :meth:`abort` (which discards the open shard and commits nothing).
    Complete shards stay either way, so re-running the same ``run_id``
    resumes; see the module docstring for the guarantees.

    Attributes:
        rows: rows accepted by this writer so far, per table.
        bytes: bytes of the shards this writer has committed, per table.

    Args:
        uri: store root, a local path, ``file://``, ``s3://bucket/prefix`` or another registered
            scheme's URI (:func:`osgym.storage.register_backend`).
        dataset: dataset name, a directory under the root.
        run_id: the run; its shards go under ``run=<run_id>``.
        run_config: recorded in the manifest (JSON-serializable).
        shard_max_bytes: a shard pair is committed once its files reach this size.
        shard_max_episodes: ... or once it holds this many episodes (bounds the writer's
            Parquet metadata, which grows by one row group per episode).
        shard_max_age_s: ... or this many seconds after its first episode arrived (bounds what a
            crash loses); None commits only by size.
        compression: Parquet codec.
        s3: endpoint, credentials and retry settings for ``s3://`` URIs (a registered backend's
            own options for its scheme).
        part: for one of several writers of the same run (a scale-out shard): its shards are
            named ``part-<part>-<n>.parquet``, resume looks only at them, and :meth:`finalize`
            writes a part manifest under ``_manifests/_parts/<run_id>/`` instead of the run's
            manifest; :func:`~osgym.dataset.merge.merge_parts` then commits the run.

    Raises:
        ValueError: for a malformed dataset name, run_id or URI.
        StoreError: when the store cannot be reached or an existing shard cannot be read.
    """

    def __init__(
        self,
        uri: str | os.PathLike[str],
        dataset: str,
        run_id: str,
        *,
        run_config: dict[str, Any] | None = None,
        shard_max_bytes: int = DEFAULT_SHARD_MAX_BYTES,
        shard_max_episodes: int = DEFAULT_SHARD_MAX_EPISODES,
        shard_max_age_s: float | None = DEFAULT_SHARD_MAX_AGE_S,
        compression: str = DEFAULT_COMPRESSION,
        s3: S3Options | None = None,
        part: str | None = None,
    ) -> None:
        check_name("run_id", run_id)
        if part is not None and not PART_RE.match(part):
            raise ValueError(f"part: expected 1-16 lowercase letters or digits, actual {part!r}")
        self.part = part
        if shard_max_bytes <= 0:
            raise ValueError(f"shard_max_bytes: expected > 0, actual {shard_max_bytes}")
        if shard_max_episodes <= 0:
            raise ValueError(f"shard_max_episodes: expected > 0, actual {shard_max_episodes}")
        if shard_max_age_s is not None and not shard_max_age_s > 0:
            raise ValueError(f"shard_max_age_s: expected > 0 or None, actual {shard_max_age_s}")
        self.uri = str(uri)
        self.dataset = dataset
        self.run_id = run_id
        self.run_config: dict[str, Any] = json.loads(json.dumps(run_config or {}, default=str))
        self.shard_max_bytes = shard_max_bytes
        self.shard_max_episodes = shard_max_episodes
        self.shard_max_age_s = shard_max_age_s
        self.compression = compression
        self.rows: dict[str, int] = {"episodes": 0, "steps": 0}
        self.bytes: dict[str, int] = {"episodes": 0, "steps": 0}
        self._backend = open_backend(uri, dataset, s3)
        self._options = {t: parquet_options(s, compression) for t, s in TABLES.items()}
        self._shard: OpenShard | None = None
        self._manifest: Manifest | None = None
        self._state = _State.OPEN
        self._tmpdir: tempfile.TemporaryDirectory[str] | None = None
        # Public methods take it; the private ones they call (and the commit timer's) do not.
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        reclaim_orphans()  # what killed writers left in the temporary directory (S3 stores' open shards)
        self._backend.check()
        committed = scan_run(self._backend, run_id, part)
        self._committed = committed.entries
        self._committed_ids = committed.episode_ids
        self._next_shard = committed.next_number
        self._seen: set[str] = set(self._committed_ids)

    def __repr__(self) -> str:
        return (
            f"DatasetWriter({self._backend.uri('')!r}, run_id={self.run_id!r}, state={self._state.value}, "
            f"episodes={self.episodes_written})"
        )

    def __enter__(self) -> DatasetWriter:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self.finalize()
        else:
            self.abort()

    @property
    def episodes_written(self) -> int:
        """Episodes this writer accepted (not counting skipped duplicates or earlier attempts)."""
        return self.rows["episodes"]

    @property
    def state(self) -> str:
        return self._state.value

    def committed_episode_ids(self) -> set[str]:
        """Episode ids of this run already in complete shards: the ones a resumed run skips."""
        with self._lock:
            return set(self._committed_ids)

    # -- writing -------------------------------------------------------------

    def _require_open(self, action: str) -> None:
        if self._state is not _State.OPEN:
            raise StoreError(
                f"cannot {action}: the writer for run {self.run_id} is {self._state.value}; open a new "
                "DatasetWriter with the same run_id to resume"
            )

    def _staged_path(self, table: str, name: str) -> Path:
        staged = self._backend.staging_path(f"{run_dir(table, self.run_id)}/{name}")
        if staged is not None:
            return staged
        if self._tmpdir is None:
            self._tmpdir = staging_dir()
        return Path(self._tmpdir.name) / f"{table}-{name}"

    def _open_shard(self) -> OpenShard:
        number = self._next_shard
        self._next_shard += 1
        name = shard_name(number, self.part)
        try:
            staged = {table: self._staged_path(table, name) for table in TABLES}
        except OSError as exc:
            raise StoreError(f"cannot open shard {name} for writing: {exc}; check free disk space") from exc
        return open_shard(number, name, staged, self._options)

    def add(self, result: EpisodeResult) -> None:
        """Append one finished episode: one ``episodes`` row and one ``steps`` row group.

        An episode_id the run already holds is skipped (logged, not an error).

        Raises:
            ValueError: the record breaks the dataset contract; the message names the field.
            StoreError: the shard could not be written or uploaded; the writer then refuses more
                episodes, and a new writer with the same run_id resumes.
        """
        with self._lock:
            self._add(result)

    def _add(self, result: EpisodeResult) -> None:
        self._require_open("add an episode")
        if result.episode_id in self._seen:
            log.info("run %s already holds episode %s; skipping the duplicate", self.run_id, result.episode_id)
            return
        result.validate()
        if result.run_id != self.run_id:
            raise ValueError(f"run_id: expected {self.run_id!r} (this writer's run), actual {result.run_id!r}")
        try:
            episode = pa.RecordBatch.from_pylist([result.episode_row() | {"schema_version": SCHEMA_VERSION}],
                                                 schema=EPISODES)
            steps = pa.Table.from_pylist(result.step_rows(), schema=STEPS)
        except (pa.ArrowException, TypeError, OverflowError) as exc:
            raise ValueError(f"episode {result.episode_id} does not fit the dataset schema: {exc}") from exc
        try:
            if self._shard is None:
                self._shard = self._open_shard()
                self._arm_timer(self._shard)
            shard = self._shard
            if steps.num_rows:
                shard.writers["steps"].write_table(steps, row_group_size=steps.num_rows)
            shard.add_episode_row(episode)
        except (OSError, pa.ArrowException) as exc:
            self._state = _State.FAILED
            raise StoreError(f"cannot write episode {result.episode_id}: {exc}; check free disk space") from exc
        shard.episode_ids.append(result.episode_id)
        shard.rows["episodes"] += 1
        shard.rows["steps"] += steps.num_rows
        self.rows["episodes"] += 1
        self.rows["steps"] += steps.num_rows
        self._seen.add(result.episode_id)
        if shard.size() >= self.shard_max_bytes or len(shard.episode_ids) >= self.shard_max_episodes:
            self._commit_shard()

    def _arm_timer(self, shard: OpenShard) -> None:
        """Commit ``shard`` ``shard_max_age_s`` from now if it is still open then.

        A timer rather than a check in :meth:`add`: when episodes stop arriving (replicas
        starting, a slow policy, a stalled run), the finished ones must still reach the store.
        """
        self._cancel_timer()
        if self.shard_max_age_s is None:
            return
        timer = threading.Timer(self.shard_max_age_s, self._commit_aged, args=(shard,))
        timer.name = f"shard-age-{self.run_id}"
        timer.daemon = True  # a writer nobody finalizes must not keep the process alive
        self._timer = timer
        timer.start()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _commit_aged(self, shard: OpenShard) -> None:
        """The timer's callback: commit ``shard`` unless it was committed or discarded meanwhile."""
        with self._lock:
            if self._state is not _State.OPEN or self._shard is not shard:
                return
            try:
                self._commit_shard()
            except StoreError as exc:  # the writer is FAILED now: the next add() or finalize() raises
                log.error("run %s: committing shard %s on its age bound failed: %s", self.run_id, shard.name, exc)

    def _commit_shard(self) -> None:
        self._cancel_timer()
        shard, self._shard = self._shard, None
        if shard is None:
            return
        if not shard.episode_ids:
            shard.discard()
            return
        try:
            shard.flush_episodes()
            shard.close()
            # steps first: a crash between the two leaves an unpaired steps file, which resume deletes
            for table in ("steps", "episodes"):
                staged = shard.staged[table]
                rel = f"{run_dir(table, self.run_id)}/{shard.name}"
                size = staged.stat().st_size
                sha = sha256_file(staged)
                try:
                    self._backend.put_file(staged, rel, sha256=sha, rows=shard.rows[table])
                finally:
                    staged.unlink(missing_ok=True)
                self._committed[table].append(ShardEntry(path=rel, rows=shard.rows[table], bytes=size, sha256=sha))
                self.bytes[table] += size
        except (OSError, pa.ArrowException, StoreError) as exc:
            self._state = _State.FAILED
            shard.discard()
            if isinstance(exc, StoreError):
                raise
            raise StoreError(f"cannot finish shard {shard.name}: {exc}; check free disk space") from exc
        self._committed_ids.update(shard.episode_ids)
        log.info(
            "run %s: committed shard %s (%d episodes, %d steps)",
            self.run_id,
            shard.name,
            shard.rows["episodes"],
            shard.rows["steps"],
        )

    # -- ending --------------------------------------------------------------

    def _cleanup(self) -> None:
        if self._tmpdir is not None:
            self._tmpdir.cleanup()
            self._tmpdir = None

    def finalize(self) -> Manifest:
        """Commit the open shard, then the run's manifest (last), then refresh the dataset card.

        Idempotent: a second call returns the same manifest.

        Raises:
            StoreError: a shard or the manifest could not be written, or the writer was aborted;
                nothing of the run is committed, and re-running the same run_id resumes.
        """
        with self._lock:
            return self._finalize()

    def _finalize(self) -> Manifest:
        if self._state is _State.FINALIZED:
            assert self._manifest is not None
            return self._manifest
        self._require_open("finalize")
        try:
            self._commit_shard()
            manifest = build_manifest(self.run_id, self.dataset, self.run_config, self._committed)
            target = manifest_path(self.run_id, self.part)
            self._backend.put(target, manifest.to_json().encode(), "application/json")
        except StoreError:
            self._state = _State.FAILED
            self._cleanup()
            raise
        self._manifest = manifest
        self._state = _State.FINALIZED
        self._cleanup()
        if self.part is not None:  # the run is committed by merge_parts, which also writes the card
            return manifest
        try:
            write_card(self._backend, self.dataset)
        except StoreError as exc:  # the run is committed; the card is derived and can be rewritten
            log.error(
                "run %s is committed but the dataset card was not written: %s; run "
                "osgym.dataset.write_dataset_card to retry",
                self.run_id,
                exc,
            )
        return manifest

    def abort(self) -> None:
        """Discard the open shard and commit no manifest. Complete shards stay for a resume.

        Idempotent, and a no-op after :meth:`finalize`.
        """
        with self._lock:
            self._abort()

    def _abort(self) -> None:
        self._cancel_timer()
        if self._state in (_State.FINALIZED, _State.ABORTED):
            return
        if self._shard is not None:
            self._shard.discard()
            self._shard = None
        self._state = _State.ABORTED
        self._cleanup()
