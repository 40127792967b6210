"""A third backend is one class and one ``register_backend`` call: an in-memory store, taken
through a whole run (write, crash, resume, finalize, read back, merge, sidecar) without a
line of the writer or the reader knowing about it."""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
from store_synth import make_episode

from osgym.dataset import DatasetWriter, merge_parts, open_dataset, write_sidecar
from osgym.errors import StoreError
from osgym.storage import Backend, StoreURI, parse_uri, register_backend, unregister_backend
from osgym.storage.base import parquet_info

SMALL_SHARD = 24 * 1024


class _MemoryHandler(pafs.FileSystemHandler):
    """A read-only pyarrow filesystem over the objects dict, for the reader."""

    def __init__(self, objects: dict[str, bytes]) -> None:
        self.objects = objects

    def get_type_name(self) -> str:
        return "osgym-memory"

    def equals(self, other: Any) -> bool:
        return isinstance(other, _MemoryHandler) and other.objects is self.objects

    def normalize_path(self, path: str) -> str:
        return path

    def _info(self, path: str) -> pafs.FileInfo:
        if path in self.objects:
            return pafs.FileInfo(path, pafs.FileType.File, size=len(self.objects[path]))
        if any(k.startswith(path.rstrip("/") + "/") for k in self.objects):
            return pafs.FileInfo(path, pafs.FileType.Directory)
        return pafs.FileInfo(path, pafs.FileType.NotFound)

    def get_file_info(self, paths: list[str]) -> list[pafs.FileInfo]:
        return [self._info(p) for p in paths]

    def get_file_info_selector(self, selector: pafs.FileSelector) -> list[pafs.FileInfo]:
        base = selector.base_dir.rstrip("/") + "/"
        return [self._info(k) for k in sorted(self.objects) if k.startswith(base)]

    def open_input_stream(self, path: str) -> pa.NativeFile:
        return pa.BufferReader(self.objects[path])

    def open_input_file(self, path: str) -> pa.NativeFile:
        return pa.BufferReader(self.objects[path])

    def _read_only(self, *args: Any, **kwargs: Any) -> Any:
        raise OSError("the in-memory reader filesystem is read-only; write through the backend")

    create_dir = delete_dir = delete_dir_contents = delete_root_dir_contents = delete_file = _read_only
    move = copy_file = open_output_stream = open_append_stream = _read_only


class MemoryBackend:
    """Objects in a dict, keyed ``bucket/prefix/dataset/rel``: the whole Backend protocol."""

    def __init__(self, objects: dict[str, bytes], root: str) -> None:
        self.objects = objects
        self.root = root
        self.filesystem = pafs.PyFileSystem(_MemoryHandler(objects))
        self.calls: list[str] = []

    def _key(self, rel: str) -> str:
        return f"{self.root}/{rel.strip('/')}"

    def uri(self, rel: str) -> str:
        return f"mem://{self._key(rel)}"

    def check(self) -> None:
        self.calls.append("check")

    def list(self, rel_dir: str) -> dict[str, int]:
        prefix = self._key(rel_dir) + "/"
        names = {k[len(prefix) :]: len(v) for k, v in self.objects.items() if k.startswith(prefix)}
        return {n: size for n, size in names.items() if "/" not in n}

    def read(self, rel: str) -> bytes:
        try:
            return self.objects[self._key(rel)]
        except KeyError as exc:
            raise StoreError(f"{self.uri(rel)} does not exist") from exc

    def put(self, rel: str, data: bytes, content_type: str = "application/octet-stream") -> None:
        self.objects[self._key(rel)] = bytes(data)

    def staging_path(self, rel: str) -> Path | None:
        return None  # build in the writer's temporary directory

    def put_file(self, staged: Path, rel: str, *, sha256: str, rows: int) -> None:
        self.calls.append(f"put_file {rel}")
        self.put(rel, staged.read_bytes())

    def delete(self, rel: str) -> None:
        self.objects.pop(self._key(rel), None)

    def shard_info(self, rel: str) -> tuple[int, str]:
        return parquet_info(self.read(rel))


STORES: dict[str, dict[str, bytes]] = {}  # bucket -> objects
OPENED: list[MemoryBackend] = []


def open_memory(location: StoreURI, dataset: str, options: Any) -> MemoryBackend:
    assert options is None
    objects = STORES.setdefault(location.bucket or "", {})
    backend = MemoryBackend(objects, posixpath.join(location.bucket or "", location.key(dataset)))
    OPENED.append(backend)
    return backend


@pytest.fixture
def mem() -> Iterator[dict[str, bytes]]:
    register_backend("mem", open_memory)
    STORES.clear()
    OPENED.clear()
    try:
        yield STORES.setdefault("bucket", {})
    finally:
        unregister_backend("mem")


def test_the_memory_backend_satisfies_the_protocol(mem: dict[str, bytes]) -> None:
    assert isinstance(MemoryBackend({}, "b"), Backend)
    assert parse_uri("mem://bucket/pre") == StoreURI("mem", "pre", "bucket")


def test_a_whole_run_goes_through_a_registered_backend(mem: dict[str, bytes], tmp_path: Path) -> None:
    uri, n = "mem://bucket/pre", 30
    writer = DatasetWriter(uri, "ds", "r1", run_config={"seed": 1}, shard_max_bytes=SMALL_SHARD)
    with pytest.raises(RuntimeError, match="collector died"), writer:
        for i in range(n):
            writer.add(make_episode("r1", i))
            if i == 20:
                raise RuntimeError("collector died")
    assert writer.state == "aborted" and writer.bytes["steps"] > 0
    assert open_dataset(uri, "ds").manifests == [], "nothing is committed before a manifest"
    assert not any("_manifests" in k for k in mem)

    resumed = DatasetWriter(uri, "ds", "r1", run_config={"seed": 1}, shard_max_bytes=SMALL_SHARD)
    kept = resumed.committed_episode_ids()
    assert 0 < len(kept) <= 21
    for i in range(n):
        resumed.add(make_episode("r1", i))
    manifest = resumed.finalize()
    assert resumed.episodes_written == n - len(kept)
    assert resumed.finalize() is manifest, "finalize is idempotent"

    expected_steps = sum(len(make_episode("r1", i).trajectory.steps) for i in range(n))
    assert (manifest.episodes, manifest.steps, manifest.config) == (n, expected_steps, {"seed": 1})
    for entries in manifest.tables.values():
        for e in entries:
            data = mem[f"bucket/pre/ds/{e.path}"]
            assert (len(data), hashlib.sha256(data).hexdigest()) == (e.bytes, e.sha256)
    assert "bucket/pre/ds/_manifests/r1.json" in mem and "bucket/pre/ds/README.md" in mem
    writers = [b for b in OPENED if b.calls]
    assert all(b.calls[0] == "check" for b in writers), "a writer checks the store before anything else"
    assert any(c.startswith("put_file steps/run=r1/") for b in writers for c in b.calls)

    view = open_dataset(uri, "ds")
    assert view.runs == ["r1"] and view.uris["steps"][0].startswith("mem://bucket/pre/ds/steps/run=r1/")
    ids = view.episodes.to_table(columns=["episode_id", "run"]).to_pylist()
    assert sorted(r["episode_id"] for r in ids) == sorted(make_episode("r1", i).episode_id for i in range(n))
    assert {r["run"] for r in ids} == {"r1"}
    assert view.steps.count_rows() == expected_steps

    again = DatasetWriter(uri, "ds", "r1").finalize()  # a finished run resumes to the same shards
    assert again.tables == manifest.tables


def test_parts_merge_and_sidecars_go_through_it_too(mem: dict[str, bytes]) -> None:
    uri = "mem://bucket"
    for part, indices in (("a", range(0, 6)), ("b", range(6, 10))):
        with DatasetWriter(uri, "ds", "big", part=part, shard_max_bytes=SMALL_SHARD) as w:
            for i in indices:
                w.add(make_episode("big", i))
    assert open_dataset(uri, "ds").manifests == [], "parts alone commit nothing"
    manifest = merge_parts(uri, "ds", "big", expected_parts=2)
    assert manifest.episodes == 10 and manifest.config["parts"] == ["a", "b"]
    assert open_dataset(uri, "ds").episodes.count_rows() == 10

    where = write_sidecar(uri, "ds", "pool_events", "big", "events", pa.table({"x": [1, 2]}))
    assert where == "mem://bucket/ds/pool_events/run=big/events.parquet"
    table = pq.read_table(pa.BufferReader(mem["bucket/ds/pool_events/run=big/events.parquet"]))
    assert table.column("x").to_pylist() == [1, 2]
