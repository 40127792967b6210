"""The dataset store: episodes stream into Parquet shards, runs commit with a manifest.

Layout (design.md §6), under a local directory or ``s3://bucket/prefix``::

    <root>/<dataset>/episodes/run=<run_id>/part-<shard>.parquet
    <root>/<dataset>/steps/run=<run_id>/part-<shard>.parquet
    <root>/<dataset>/_manifests/<run_id>.json      written last: shards, rows, sha256, config
    <root>/<dataset>/README.md                     the dataset card

Guarantees:

* **Shards come in pairs.** ``episodes/…/part-N`` holds exactly the episodes
  whose steps are in ``steps/…/part-N``; a pair counts only when both files
  exist, so a crash never leaves half an episode.
* **A shard is visible only when complete.** Locally it is written to
  ``.part-N.parquet.incomplete`` in the same directory and renamed; on S3 it is
  written to a local temporary file and uploaded whole (see :mod:`osgym.dataset.s3`).
* **Readers see committed runs only.** :func:`open_dataset` reads the files
  that run manifests list, and a manifest is written after all its shards.
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

One writer per run at a time: two writers on the same run_id would race.
The writer is not thread-safe; feed it from one thread.

For DuckDB over S3 see :mod:`osgym.dataset.s3` (the pyarrow S3 filesystem route).

Example:
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as root:
    ...     with DatasetWriter(root, "demo", "run-1") as writer:
    ...         pass
    ...     open_dataset(root, "demo").episodes.count_rows()
    0
"""

from __future__ import annotations

import enum
import hashlib
import json
import logging
import os
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from pydantic import BaseModel, ConfigDict

from osgym.dataset.s3 import S3Backend, S3Options, duckdb_s3_route
from osgym.dataset.schema import EPISODES, IMAGE_TYPE, SCHEMA_VERSION, STEPS, TABLES
from osgym.episodes.trajectory import EpisodeResult
from osgym.errors import StoreError

__all__ = [
    "DatasetView",
    "DatasetWriter",
    "Manifest",
    "S3Options",
    "ShardEntry",
    "StoreURI",
    "duckdb_s3_route",
    "export_jsonl",
    "merge_parts",
    "write_sidecar",
    "open_dataset",
    "parse_uri",
    "write_dataset_card",
]

log = logging.getLogger(__name__)

DEFAULT_SHARD_MAX_BYTES = 256 * 2**20
DEFAULT_SHARD_MAX_EPISODES = 1000
DEFAULT_COMPRESSION = "zstd"
EPISODE_ROW_GROUP_ROWS = 1024
MANIFEST_DIR = "_manifests"
CARD_NAME = "README.md"
PARTITION_KEY = "run"
PARTITION_SCHEMA = pa.schema([(PARTITION_KEY, pa.string())])

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_SHARD_RE = re.compile(r"^part-(?:(?P<part>[a-z0-9]{1,16})-)?(?P<n>\d{5,})\.parquet$")
_STAGED_RE = re.compile(r"^\.part-(?:(?P<part>[a-z0-9]{1,16})-)?(?P<n>\d{5,})\.parquet\.incomplete$")
_PART_RE = re.compile(r"^[a-z0-9]{1,16}$")
PARTS_DIR = f"{MANIFEST_DIR}/_parts"
# Large, unique values: dictionary encoding and min/max statistics only cost space there.
_PLAIN_COLUMNS = frozenset({"screenshot.bytes", "screenshot.path", "screenshot_sha256", "a11y", "thought", "action"})


# --------------------------------------------------------------------------- URIs


@dataclass(frozen=True)
class StoreURI:
    """Where a store lives: a local directory or an S3 bucket and key prefix.

    >>> parse_uri("s3://bucket/some/prefix/")
    StoreURI(scheme='s3', path='some/prefix', bucket='bucket')
    >>> parse_uri("file:///data/osgym")
    StoreURI(scheme='file', path='/data/osgym', bucket=None)
    """

    scheme: str  # "file" or "s3"
    path: str  # absolute local path, or the key prefix without slashes at either end
    bucket: str | None = None

    def __str__(self) -> str:
        if self.scheme == "s3":
            return f"s3://{self.bucket}/{self.path}" if self.path else f"s3://{self.bucket}"
        return self.path


def parse_uri(uri: str | os.PathLike[str]) -> StoreURI:
    """Parse a store location: ``./data``, ``/abs``, ``file:///abs`` or ``s3://bucket/prefix``.

    Raises:
        ValueError: for any other scheme, or an S3 URI without a bucket.
    """
    text = os.fspath(uri)
    if text.startswith("s3://"):
        bucket, _, prefix = text[len("s3://") :].partition("/")
        if not bucket:
            raise ValueError(f"S3 URI: expected s3://bucket[/prefix], actual {text!r}")
        return StoreURI("s3", prefix.strip("/"), bucket)
    if text.startswith("file://"):
        text = text[len("file://") :]
        if not text.startswith("/"):
            raise ValueError(f"file URI: expected file:///absolute/path, actual {os.fspath(uri)!r}")
    elif re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", text):
        raise ValueError(f"store URI: expected a local path, file:// or s3:// URI, actual {text!r}")
    if not text:
        raise ValueError("store URI is empty: give a directory or s3://bucket/prefix")
    return StoreURI("file", str(Path(text).expanduser().resolve()))


def _check_name(kind: str, value: str) -> str:
    if not isinstance(value, str) or not _NAME_RE.match(value):
        raise ValueError(
            f"{kind}: expected 1-128 characters of letters, digits, '.', '_' or '-' starting with a letter "
            f"or digit, actual {value!r}"
        )
    return value


# --------------------------------------------------------------------------- manifests


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


# --------------------------------------------------------------------------- backends


class _Backend(Protocol):
    root: str

    @property
    def filesystem(self) -> pafs.FileSystem: ...
    def check(self) -> None: ...
    def list(self, rel_dir: str) -> dict[str, int]: ...
    def put_bytes(self, rel: str, data: bytes, content_type: str = ...) -> None: ...
    def get_bytes(self, rel: str) -> bytes: ...
    def delete(self, rel: str) -> None: ...
    def shard_info(self, rel: str) -> tuple[int, str]: ...
    def uri(self, rel: str) -> str: ...


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(2**20), b""):
            h.update(chunk)
    return h.hexdigest()


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class _LocalBackend:
    """A dataset directory on a local filesystem; files become visible by ``os.replace``."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self.root = str(root)
        self.filesystem = pafs.LocalFileSystem()

    def __repr__(self) -> str:
        return f"_LocalBackend({self.root})"

    def _path(self, rel: str) -> Path:
        return self._root / rel

    def uri(self, rel: str) -> str:
        return str(self._path(rel))

    def check(self) -> None:
        try:
            self._root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the dataset directory {self._root}: {exc}; check the path") from exc

    def list(self, rel_dir: str) -> dict[str, int]:
        d = self._path(rel_dir)
        try:
            return {e.name: e.stat().st_size for e in os.scandir(d) if e.is_file()}
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise StoreError(f"cannot list {d}: {exc}") from exc

    def staged_path(self, rel: str) -> Path:
        final = self._path(rel)
        final.parent.mkdir(parents=True, exist_ok=True)
        return final.with_name(f".{final.name}.incomplete")

    def commit_file(self, staged: Path, rel: str) -> None:
        final = self._path(rel)
        try:
            fd = os.open(staged, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(staged, final)
            _fsync_dir(final.parent)
        except OSError as exc:
            raise StoreError(f"cannot move {staged} into place as {final}: {exc}") from exc

    def put_bytes(self, rel: str, data: bytes, content_type: str = "") -> None:
        staged = self.staged_path(rel)
        try:
            staged.write_bytes(data)
        except OSError as exc:
            raise StoreError(f"cannot write {staged}: {exc}") from exc
        self.commit_file(staged, rel)

    def get_bytes(self, rel: str) -> bytes:
        try:
            return self._path(rel).read_bytes()
        except OSError as exc:
            raise StoreError(f"cannot read {self._path(rel)}: {exc}") from exc

    def delete(self, rel: str) -> None:
        self._path(rel).unlink(missing_ok=True)

    def shard_info(self, rel: str) -> tuple[int, str]:
        """A committed shard's row count (from its footer) and sha256."""
        path = self._path(rel)
        try:
            rows = pq.read_metadata(path).num_rows
            return rows, _sha256_file(path)
        except (OSError, pa.ArrowException) as exc:
            raise StoreError(f"cannot read the existing shard {path}: {exc}.") from exc


def _open_backend(uri: str | os.PathLike[str], dataset: str, s3: S3Options | None) -> _Backend:
    loc = parse_uri(uri)
    _check_name("dataset", dataset)
    if loc.scheme == "s3":
        assert loc.bucket is not None
        prefix = f"{loc.path}/{dataset}" if loc.path else dataset
        return S3Backend(loc.bucket, prefix, s3)
    if s3 is not None:
        raise ValueError(f"s3 options were given for a local store {loc.path!r}; use an s3:// URI or drop them")
    return _LocalBackend(Path(loc.path) / dataset)


def _run_dir(table: str, run_id: str) -> str:
    return f"{table}/{PARTITION_KEY}={run_id}"


# --------------------------------------------------------------------------- writer


class _State(enum.Enum):
    OPEN = "open"
    FAILED = "failed"
    ABORTED = "aborted"
    FINALIZED = "finalized"


def _hf_feature(t: pa.DataType) -> dict[str, Any]:
    if t == IMAGE_TYPE:
        return {"_type": "Image"}
    return {"dtype": str(t), "_type": "Value"}


def _file_schema(schema: pa.Schema) -> pa.Schema:
    """The table schema plus the ``huggingface`` features key, so ``datasets`` decodes screenshots as images."""
    features = {f.name: _hf_feature(f.type) for f in schema}
    hf = json.dumps({"info": {"features": features}})
    return schema.with_metadata({**(schema.metadata or {}), b"huggingface": hf.encode()})


def _parquet_options(schema: pa.Schema, compression: str) -> dict[str, Any]:
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
class _OpenShard:
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
        return sum(s.tell() for s in self.sinks.values()) + self.pending_bytes

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
        uri: store root, a local path, ``file://`` or ``s3://bucket/prefix`` URI.
        dataset: dataset name, a directory under the root.
        run_id: the run; its shards go under ``run=<run_id>``.
        run_config: recorded in the manifest (JSON-serializable).
        shard_max_bytes: a shard pair is committed once its files reach this size.
        shard_max_episodes: ... or once it holds this many episodes (bounds the writer's
            Parquet metadata, which grows by one row group per episode).
        compression: Parquet codec.
        s3: endpoint, credentials and retry settings for ``s3://`` URIs.
        part: for one of several writers of the same run (a scale-out shard): its shards are
            named ``part-<part>-<n>.parquet``, resume looks only at them, and :meth:`finalize`
            writes a part manifest under ``_manifests/_parts/<run_id>/`` instead of the run's
            manifest; :func:`merge_parts` then commits the run.

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
        compression: str = DEFAULT_COMPRESSION,
        s3: S3Options | None = None,
        part: str | None = None,
    ) -> None:
        _check_name("run_id", run_id)
        if part is not None and not _PART_RE.match(part):
            raise ValueError(f"part: expected 1-16 lowercase letters or digits, actual {part!r}")
        self.part = part
        if shard_max_bytes <= 0:
            raise ValueError(f"shard_max_bytes: expected > 0, actual {shard_max_bytes}")
        if shard_max_episodes <= 0:
            raise ValueError(f"shard_max_episodes: expected > 0, actual {shard_max_episodes}")
        self.uri = str(uri)
        self.dataset = dataset
        self.run_id = run_id
        self.run_config: dict[str, Any] = json.loads(json.dumps(run_config or {}, default=str))
        self.shard_max_bytes = shard_max_bytes
        self.shard_max_episodes = shard_max_episodes
        self.compression = compression
        self.rows: dict[str, int] = {"episodes": 0, "steps": 0}
        self.bytes: dict[str, int] = {"episodes": 0, "steps": 0}
        self._backend = _open_backend(uri, dataset, s3)
        self._options = {t: _parquet_options(s, compression) for t, s in TABLES.items()}
        self._committed: dict[str, list[ShardEntry]] = {"episodes": [], "steps": []}
        self._committed_ids: set[str] = set()
        self._seen: set[str] = set()
        self._next_shard = 0
        self._shard: _OpenShard | None = None
        self._manifest: Manifest | None = None
        self._state = _State.OPEN
        self._tmpdir: tempfile.TemporaryDirectory[str] | None = None
        self._backend.check()
        self._resume()

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

    def _shard_name(self, number: int) -> str:
        return f"part-{number:05d}.parquet" if self.part is None else f"part-{self.part}-{number:05d}.parquet"

    def committed_episode_ids(self) -> set[str]:
        """Episode ids of this run already in complete shards: the ones a resumed run skips."""
        return set(self._committed_ids)

    # -- resume --------------------------------------------------------------

    def _resume(self) -> None:
        listed = {t: self._backend.list(_run_dir(t, self.run_id)) for t in TABLES}
        numbers: dict[str, set[int]] = {}
        for table, names in listed.items():
            numbers[table] = set()
            for name in names:
                m = _SHARD_RE.match(name) or _STAGED_RE.match(name)
                if m is None or m.group("part") != self.part:  # another writer's shards are not ours to touch
                    continue
                if not name.startswith("."):
                    numbers[table].add(int(m.group("n")))
                else:  # a shard a crashed writer never finished
                    log.info("removing unfinished shard %s", name)
                    self._backend.delete(f"{_run_dir(table, self.run_id)}/{name}")
        complete = sorted(numbers["episodes"] & numbers["steps"])
        for table in TABLES:
            for n in sorted(numbers[table] - set(complete)):
                rel = f"{_run_dir(table, self.run_id)}/{self._shard_name(n)}"
                log.warning("removing %s: its pair in the other table is missing (an interrupted commit)", rel)
                self._backend.delete(rel)
        everything = numbers["episodes"] | numbers["steps"]
        self._next_shard = max(everything) + 1 if everything else 0
        for n in complete:
            ids = self._adopt_shard(n, listed)
            dup = self._committed_ids.intersection(ids)
            if dup:
                raise StoreError(
                    f"run {self.run_id}: episode {sorted(dup)[0]} is in more than one shard (was the run "
                    f"written by two writers at once?); delete {self._shard_name(n)} from both tables, re-run"
                )
            self._committed_ids.update(ids)
        self._seen = set(self._committed_ids)
        if complete:
            log.info(
                "resuming run %s: %d complete shards with %d episodes",
                self.run_id,
                len(complete),
                len(self._committed_ids),
            )

    def _adopt_shard(self, number: int, listed: dict[str, dict[str, int]]) -> list[str]:
        name = self._shard_name(number)
        damaged = f"If it is damaged, delete {name} from both episodes/ and steps/ of run={self.run_id} and re-run"
        rel = f"{_run_dir('episodes', self.run_id)}/{name}"
        data = self._backend.get_bytes(rel)  # an episodes shard is small: one row per episode
        try:
            pf = pq.ParquetFile(pa.BufferReader(data))
            ids = pf.read(columns=["episode_id"]).column("episode_id").to_pylist()
        except (OSError, pa.ArrowException) as exc:
            raise StoreError(f"cannot read the existing shard {self._backend.uri(rel)}: {exc}. {damaged}") from exc
        sha = hashlib.sha256(data).hexdigest()
        self._committed["episodes"].append(ShardEntry(path=rel, rows=len(ids), bytes=len(data), sha256=sha))
        rel = f"{_run_dir('steps', self.run_id)}/{name}"
        try:
            rows, sha = self._backend.shard_info(rel)
        except StoreError as exc:
            raise StoreError(f"{exc} {damaged}") from exc
        self._committed["steps"].append(ShardEntry(path=rel, rows=rows, bytes=listed["steps"][name], sha256=sha))
        return ids

    # -- writing -------------------------------------------------------------

    def _require_open(self, action: str) -> None:
        if self._state is not _State.OPEN:
            raise StoreError(
                f"cannot {action}: the writer for run {self.run_id} is {self._state.value}; open a new "
                "DatasetWriter with the same run_id to resume"
            )

    def _staged_path(self, table: str, name: str) -> Path:
        if isinstance(self._backend, _LocalBackend):
            return self._backend.staged_path(f"{_run_dir(table, self.run_id)}/{name}")
        if self._tmpdir is None:
            self._tmpdir = tempfile.TemporaryDirectory(prefix="osgym-shards-")
        return Path(self._tmpdir.name) / f"{table}-{name}"

    def _open_shard(self) -> _OpenShard:
        number = self._next_shard
        self._next_shard += 1
        name = self._shard_name(number)
        staged: dict[str, Path] = {}
        sinks: dict[str, pa.NativeFile] = {}
        writers: dict[str, pq.ParquetWriter] = {}
        try:
            for table, schema in TABLES.items():
                staged[table] = self._staged_path(table, name)
                sinks[table] = pa.OSFile(str(staged[table]), "wb")
                writers[table] = pq.ParquetWriter(sinks[table], _file_schema(schema), **self._options[table])
        except (OSError, pa.ArrowException) as exc:
            for sink in sinks.values():
                sink.close()
            for path in staged.values():
                path.unlink(missing_ok=True)
            raise StoreError(f"cannot open shard {name} for writing: {exc}; check free disk space") from exc
        return _OpenShard(number, name, staged, sinks, writers)

    def add(self, result: EpisodeResult) -> None:
        """Append one finished episode: one ``episodes`` row and one ``steps`` row group.

        An episode_id the run already holds is skipped (logged, not an error).

        Raises:
            ValueError: the record breaks the dataset contract; the message names the field.
            StoreError: the shard could not be written or uploaded; the writer then refuses more
                episodes, and a new writer with the same run_id resumes.
        """
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
            shard = self._shard = self._shard or self._open_shard()
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

    def _commit_shard(self) -> None:
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
                rel = f"{_run_dir(table, self.run_id)}/{shard.name}"
                size = staged.stat().st_size
                sha = _sha256_file(staged)
                self._commit_file(staged, rel, sha, shard.rows[table])
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

    def _commit_file(self, staged: Path, rel: str, sha: str, rows: int) -> None:
        if isinstance(self._backend, _LocalBackend):
            self._backend.commit_file(staged, rel)
            return
        assert isinstance(self._backend, S3Backend)
        try:
            self._backend.upload(staged, rel, sha256=sha, rows=rows)
        finally:
            staged.unlink(missing_ok=True)

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
        if self._state is _State.FINALIZED:
            assert self._manifest is not None
            return self._manifest
        self._require_open("finalize")
        try:
            self._commit_shard()
            tables = {t: sorted(entries, key=lambda e: (len(e.path), e.path)) for t, entries in self._committed.items()}
            manifest = Manifest(
                run_id=self.run_id,
                dataset=self.dataset,
                created_at=datetime.now(UTC).isoformat(),
                schema_version=SCHEMA_VERSION,
                config=self.run_config,
                tables=tables,
                episodes=sum(e.rows for e in tables["episodes"]),
                steps=sum(e.rows for e in tables["steps"]),
            )
            target = (f"{MANIFEST_DIR}/{self.run_id}.json" if self.part is None
                      else f"{PARTS_DIR}/{self.run_id}/{self.part}.json")
            self._backend.put_bytes(target, manifest.to_json().encode(), "application/json")
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
            _write_card(self._backend, self.dataset)
        except StoreError as exc:  # the run is committed; the card is derived and can be rewritten
            log.error(
                "run %s is committed but the dataset card was not written: %s; run "
                "osgym.dataset.store.write_dataset_card to retry",
                self.run_id,
                exc,
            )
        return manifest

    def abort(self) -> None:
        """Discard the open shard and commit no manifest. Complete shards stay for a resume.

        Idempotent, and a no-op after :meth:`finalize`.
        """
        if self._state in (_State.FINALIZED, _State.ABORTED):
            return
        if self._shard is not None:
            self._shard.discard()
            self._shard = None
        self._state = _State.ABORTED
        self._cleanup()


# --------------------------------------------------------------------------- reader


@dataclass
class DatasetView:
    """The committed part of a dataset: the shards that its run manifests list.

    ``files`` holds paths inside ``filesystem`` (``/abs/...`` locally,
    ``bucket/key`` on S3), ready for ``pyarrow.dataset.dataset(files,
    filesystem=filesystem)``; ``uris`` gives the same files as URIs. The
    ``episodes`` and ``steps`` datasets add the Hive partition column ``run``.

    DuckDB scans them in place::

        con = duckdb.connect()
        con.register("steps", view.steps)
        con.sql("SELECT count(*) FROM steps")
    """

    root: str
    filesystem: pafs.FileSystem
    manifests: list[dict[str, Any]]
    files: dict[str, list[str]]
    uris: dict[str, list[str]]

    @property
    def runs(self) -> list[str]:
        return [m["run_id"] for m in self.manifests]

    def _dataset(self, table: str) -> pads.Dataset:
        schema = TABLES[table].append(pa.field(PARTITION_KEY, pa.string()))
        return pads.dataset(
            self.files[table],
            schema=schema,
            format="parquet",
            filesystem=self.filesystem,
            partitioning=pads.partitioning(PARTITION_SCHEMA, flavor="hive"),
            partition_base_dir=f"{self.root}/{table}",
        )

    @cached_property
    def episodes(self) -> pads.Dataset:
        return self._dataset("episodes")

    @cached_property
    def steps(self) -> pads.Dataset:
        return self._dataset("steps")


def _read_manifests(backend: _Backend) -> list[dict[str, Any]]:
    manifests = []
    for name in sorted(backend.list(MANIFEST_DIR)):
        if not name.endswith(".json") or name.startswith("."):
            continue
        rel = f"{MANIFEST_DIR}/{name}"
        try:
            manifest = Manifest.model_validate_json(backend.get_bytes(rel))
        except ValueError as exc:
            raise StoreError(f"manifest {backend.uri(rel)} is not valid: {exc}; restore it or re-run its run") from exc
        manifests.append(manifest.model_dump(mode="json"))
    manifests.sort(key=lambda m: (m["created_at"], m["run_id"]))
    return manifests


def _view(backend: _Backend) -> DatasetView:
    manifests = _read_manifests(backend)
    rels = {t: [e["path"] for m in manifests for e in m["tables"].get(t, [])] for t in TABLES}
    return DatasetView(
        root=backend.root,
        filesystem=backend.filesystem,
        manifests=manifests,
        files={t: [f"{backend.root}/{p}" for p in paths] for t, paths in rels.items()},
        uris={t: [backend.uri(p) for p in paths] for t, paths in rels.items()},
    )


def open_dataset(uri: str | os.PathLike[str], dataset: str, *, s3: S3Options | None = None) -> DatasetView:
    """Open the committed runs of a dataset for reading.

    A trainer iterates ``view.steps.to_batches()`` (or ``datasets``, or DuckDB)
    without loading everything; runs without a manifest are not included.

    Raises:
        ValueError: for a malformed URI or dataset name.
        StoreError: when the store cannot be listed or a manifest is damaged.
    """
    return _view(_open_backend(uri, dataset, s3))


# --------------------------------------------------------------------------- dataset card


def _yaml_str(s: str) -> str:
    return json.dumps(s)  # a JSON string is a valid YAML flow scalar


def _card_text(dataset: str, view: DatasetView) -> str:
    cols = ["run_id", "policy", "success", "num_steps"]
    ep = view.episodes.to_table(columns=cols)
    n_ep = ep.num_rows
    n_ok = int(pc.sum(ep["success"]).as_py() or 0) if n_ep else 0
    n_steps = sum(m["steps"] for m in view.manifests)

    def by(key: str) -> dict[str, tuple[int, int]]:
        if not n_ep:
            return {}
        g = ep.group_by(key).aggregate([("success", "count"), ("success", "sum")]).to_pylist()
        return {str(r[key]): (int(r["success_count"]), int(r["success_sum"] or 0)) for r in g}

    per_run, per_policy = by("run_id"), by("policy")

    def pct(a: int, b: int) -> str:
        return f"{100 * a / b:.1f}%" if b else "n/a"

    lines = [
        "---",
        f"pretty_name: {_yaml_str(dataset)}",
        "tags:",
        "- computer-use",
        "- agent-trajectories",
        "- osgym",
        "configs:",
    ]
    for table in ("episodes", "steps"):
        rels = [p[len(view.root) + 1 :] for p in view.files[table]]
        lines += [f"- config_name: {table}", "  data_files:", "  - split: train"]
        if rels:
            lines += ["    path:"] + [f"    - {_yaml_str(r)}" for r in rels]
        else:
            lines += [f"    path: {_yaml_str(f'{table}/*/*.parquet')}"]
    lines += ["dataset_info:"]
    for table, schema in TABLES.items():
        lines += [f"- config_name: {table}", "  features:"]
        for f in schema:
            feat = _hf_feature(f.type)
            kind = "image" if feat["_type"] == "Image" else feat["dtype"]
            lines += [f"  - name: {f.name}", f"    dtype: {_yaml_str(kind)}"]
    lines += ["---", "", f"# {dataset}", ""]
    lines += [
        f"Computer-use agent episodes collected by osgym: **{len(view.manifests)} runs, {n_ep} episodes, "
        f"{n_steps} steps, success rate {pct(n_ok, n_ep)}**. Only committed runs (those with a manifest in "
        f"`{MANIFEST_DIR}/`) are counted.",
        "",
        "## Runs",
        "",
        "| run_id | created | episodes | steps | shards | success rate |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for m in view.manifests:
        _, ok = per_run.get(m["run_id"], (0, 0))
        lines.append(
            f"| {m['run_id']} | {m['created_at'][:19]}Z | {m['episodes']} | {m['steps']} | "
            f"{len(m['tables']['steps'])} | {pct(ok, m['episodes'])} |"
        )
    lines += ["", "## Policy mix", "", "| policy | episodes | share | success rate |", "|---|---:|---:|---:|"]
    for policy, (count, ok) in sorted(per_policy.items(), key=lambda kv: -kv[1][0]):
        lines.append(f"| {policy} | {count} | {pct(count, n_ep)} | {pct(ok, count)} |")
    for table, schema in TABLES.items():
        lines += [
            "",
            f"## Schema: `{table}` (schema version {SCHEMA_VERSION})",
            "",
            "| column | type |",
            "|---|---|",
        ]
        lines += [f"| {f.name} | `{f.type}` |" for f in schema]
    lines += [
        "",
        "## Layout and loading",
        "",
        "```",
        "episodes/run=<run_id>/part-<shard>.parquet   one row per episode",
        "steps/run=<run_id>/part-<shard>.parquet      one row per step; one row group per episode",
        f"{MANIFEST_DIR}/<run_id>.json                  a run's shards, row counts and sha256 sums",
        "```",
        "",
        "Screenshots are stored as the replica encoded them (PNG or JPEG) in the `screenshot` struct "
        "`{bytes, path}`, the Hugging Face `Image` layout.",
        "",
        "```python",
        "from osgym.dataset.store import open_dataset",
        f"view = open_dataset(URI, {dataset!r})",
        "for batch in view.steps.to_batches(columns=['episode_id', 'step', 'screenshot', 'action']):",
        "    ...",
        "```",
        "",
    ]
    return "\n".join(lines)


def _write_card(backend: _Backend, dataset: str) -> None:
    view = _view(backend)
    try:
        text = _card_text(dataset, view)
    except (OSError, pa.ArrowException) as exc:
        raise StoreError(f"cannot read the episodes of {backend.uri('')} for the dataset card: {exc}") from exc
    backend.put_bytes(CARD_NAME, text.encode(), "text/markdown; charset=utf-8")


def write_dataset_card(uri: str | os.PathLike[str], dataset: str, s3: S3Options | None = None) -> None:
    """Write ``<root>/<dataset>/README.md``: schema, runs, counts, success rate and policy mix.

    :meth:`DatasetWriter.finalize` calls it after every committed run.

    Raises:
        StoreError: when the dataset cannot be read or the card cannot be written.
    """
    _write_card(_open_backend(uri, dataset, s3), dataset)


# --------------------------------------------------------------------------- export

_IMAGE_MAGIC = ((b"\x89PNG\r\n\x1a\n", "png"), (b"\xff\xd8\xff", "jpg"), (b"GIF8", "gif"))


def _image_ext(data: bytes, path: str | None) -> str:
    for magic, ext in _IMAGE_MAGIC:
        if data.startswith(magic):
            return ext
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    suffix = Path(path or "").suffix.lstrip(".").lower()
    return suffix if re.fullmatch(r"[a-z0-9]{1,5}", suffix) else "bin"


def _safe_name(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", s)


def _steps_by_episode(view: DatasetView) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """Steps grouped by episode, one row group at a time (the writer keeps an episode's steps together)."""
    cols = [
        "episode_id",
        "step",
        "screenshot",
        "width",
        "height",
        "action",
        "action_type",
        "thought",
        "reward",
        "done",
        "error",
    ]
    current: str | None = None
    rows: list[dict[str, Any]] = []
    for fragment in view.steps.get_fragments():
        for batch in fragment.to_batches(columns=cols, use_threads=False):
            for row in batch.to_pylist():
                if row["episode_id"] != current:
                    if current is not None:
                        yield current, rows
                    current, rows = row["episode_id"], []
                rows.append(row)
    if current is not None:
        yield current, rows


def export_jsonl(
    uri: str | os.PathLike[str], dataset: str, out_dir: str | os.PathLike[str], *, s3: S3Options | None = None
) -> Path:
    """Export committed episodes as AgentNet-style JSONL, with the screenshots as files beside it.

    Writes ``out_dir/episodes.jsonl`` (one line per episode) and
    ``out_dir/images/<episode_id>_<step>.<png|jpg>``; each line is::

        {"task_id": <episode_id>, "instruction": ..., "task_completed": <success>,
         "traj": [{"index": 0, "image": "<file in images/>", "width": ..., "height": ...,
                   "value": {"thought": ..., "action": <action JSON>, "action_type": ...,
                             "reward": ..., "done": ..., "error": ...}}, ...],
         "osgym": {"run_id", "task_id", "variant", "domain", "policy", "score", "termination", ...}}

    Returns:
        The path of the JSONL file.

    Raises:
        StoreError: when the dataset cannot be read or the files cannot be written.
    """
    view = open_dataset(uri, dataset, s3=s3)
    out = Path(out_dir)
    images = out / "images"
    meta_cols = [
        "episode_id",
        "run_id",
        "task_id",
        "variant",
        "domain",
        "instruction",
        "policy",
        "success",
        "score",
        "termination",
        "error_class",
        "num_steps",
    ]
    episodes = {r["episode_id"]: r for r in view.episodes.to_table(columns=meta_cols).to_pylist()}
    target = out / "episodes.jsonl"
    staged = out / ".episodes.jsonl.incomplete"

    def line(meta: dict[str, Any], traj: list[dict[str, Any]]) -> str:
        extra = {k: meta[k] for k in meta_cols if k not in ("episode_id", "instruction", "success")}
        return json.dumps(
            {
                "task_id": meta["episode_id"],
                "instruction": meta["instruction"],
                "task_completed": bool(meta["success"]),
                "traj": traj,
                "osgym": extra,
            },
            ensure_ascii=False,
        )

    try:
        images.mkdir(parents=True, exist_ok=True)
        with open(staged, "w", encoding="utf-8") as f:
            done: set[str] = set()
            for episode_id, steps in _steps_by_episode(view):
                meta = episodes.get(episode_id)
                if meta is None or episode_id in done:
                    continue
                traj = []
                for s in sorted(steps, key=lambda r: r["step"]):
                    shot = s["screenshot"] or {}
                    data = shot.get("bytes") or b""
                    name = f"{_safe_name(episode_id)}_{s['step']:04d}.{_image_ext(data, shot.get('path'))}"
                    (images / name).write_bytes(data)
                    value = {k: s[k] for k in ("thought", "action", "action_type", "reward", "done", "error")}
                    traj.append(
                        {
                            "index": s["step"],
                            "image": name,
                            "width": s["width"],
                            "height": s["height"],
                            "value": value,
                        }
                    )
                f.write(line(meta, traj) + "\n")
                done.add(episode_id)
            for episode_id, meta in episodes.items():  # episodes that ended before their first step
                if episode_id not in done:
                    f.write(line(meta, []) + "\n")
        os.replace(staged, target)
    except (OSError, pa.ArrowException) as exc:
        raise StoreError(
            f"export of {dataset} to {out} failed: {exc}; check the store, the directory and free space"
        ) from exc
    finally:
        staged.unlink(missing_ok=True)
    return target


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
    _check_name("run_id", run_id)
    backend = _open_backend(uri, dataset, s3)
    names = sorted(n for n in backend.list(f"{PARTS_DIR}/{run_id}") if n.endswith(".json"))
    if expected_parts is not None and len(names) != expected_parts:
        raise StoreError(f"run {run_id}: expected {expected_parts} part manifests, found {len(names)} ({names}); "
                         f"re-run the missing shards with the same run_id")
    if not names:
        raise StoreError(f"run {run_id} has no part manifests under {backend.uri(PARTS_DIR)}")
    parts = []
    for name in names:
        rel = f"{PARTS_DIR}/{run_id}/{name}"
        try:
            parts.append(Manifest.model_validate_json(backend.get_bytes(rel)))
        except ValueError as exc:
            raise StoreError(f"part manifest {backend.uri(rel)} is not valid: {exc}; re-run that shard") from exc
    tables: dict[str, list[ShardEntry]] = {t: [] for t in TABLES}
    for m in parts:
        for t in TABLES:
            tables[t].extend(m.tables.get(t, []))
    seen: set[str] = set()
    for entry in tables["episodes"]:
        ids = pq.ParquetFile(pa.BufferReader(backend.get_bytes(entry.path))).read(columns=["episode_id"])
        for eid in ids.column("episode_id").to_pylist():
            if eid in seen:
                raise StoreError(f"run {run_id}: episode {eid} is in more than one part; each episode belongs "
                                 f"to exactly one shard of the run")
            seen.add(eid)
    manifest = Manifest(
        run_id=run_id,
        dataset=dataset,
        created_at=datetime.now(UTC).isoformat(),
        schema_version=SCHEMA_VERSION,
        config={**parts[0].config, "parts": [n[:-5] for n in names]},
        tables={t: sorted(e, key=lambda x: (len(x.path), x.path)) for t, e in tables.items()},
        episodes=sum(e.rows for e in tables["episodes"]),
        steps=sum(e.rows for e in tables["steps"]),
    )
    backend.put_bytes(f"{MANIFEST_DIR}/{run_id}.json", manifest.to_json().encode(), "application/json")
    try:
        _write_card(backend, dataset)
    except StoreError as exc:
        log.error("run %s is committed but the dataset card was not written: %s", run_id, exc)
    return manifest


def write_sidecar(
    uri: str | os.PathLike[str], dataset: str, table: str, run_id: str, name: str, data: pa.Table,
    *, s3: S3Options | None = None,
) -> str:
    """Write a small auxiliary table (e.g. ``pool_events``) as ``<table>/run=<run_id>/<name>.parquet``.

    Sidecar tables are not listed in manifests; they are written whole (rename or PUT),
    so a reader never sees half of one. Returns the file's URI.
    """
    _check_name("table", table)
    _check_name("run_id", run_id)
    _check_name("name", name)
    backend = _open_backend(uri, dataset, s3)
    backend.check()
    sink = pa.BufferOutputStream()
    pq.write_table(data, sink, compression=DEFAULT_COMPRESSION)
    rel = f"{table}/{PARTITION_KEY}={run_id}/{name}.parquet"
    backend.put_bytes(rel, sink.getvalue().to_pybytes(), "application/vnd.apache.parquet")
    return backend.uri(rel)
