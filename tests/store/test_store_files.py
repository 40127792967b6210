"""What the dataset and the asset cache both need of a store's small files: a missing one told apart from
a failed read, and a put that is whole or absent even when several writers put the same name at once."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from store_support import StoreTarget

from osgym.errors import StoreError
from osgym.storage import LocalBackend, MissingFile, open_backend


def test_a_missing_file_is_missing_file_and_still_a_store_error(target: StoreTarget) -> None:
    backend = open_backend(target.uri, "ds", target.s3)
    with pytest.raises(MissingFile, match="ds/_manifests/none.json") as missing:
        backend.read("_manifests/none.json")
    assert isinstance(missing.value, StoreError)  # the dataset's callers catch StoreError as before
    backend.put("_manifests/r1.json", b"{}", "application/json")
    assert backend.read("_manifests/r1.json") == b"{}"


def test_concurrent_puts_of_one_name_leave_one_whole_file_and_no_temporary_one(target: StoreTarget) -> None:
    backend = open_backend(target.uri, "ds", target.s3)
    bodies = [bytes([65 + i]) * (200_000 + 10_000 * i) for i in range(6)]
    start = threading.Barrier(len(bodies))
    failures: list[BaseException] = []

    def put(body: bytes) -> None:
        start.wait()
        try:
            for _ in range(5):
                backend.put("blobs/one", body)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            failures.append(exc)

    threads = [threading.Thread(target=put, args=(b,)) for b in bodies]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert backend.read("blobs/one") in bodies
    assert backend.list("blobs") == {"one": len(backend.read("blobs/one"))}


@pytest.fixture
def strict_umask() -> Iterator[None]:
    old = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(old)


def test_local_put_keeps_the_umask_unless_a_file_mode_is_asked_for(tmp_path: Path, strict_umask: None) -> None:
    LocalBackend(tmp_path / "ds").put("a.json", b"{}")
    assert oct((tmp_path / "ds" / "a.json").stat().st_mode & 0o777) == "0o600"
    # the asset cache's: readable by the compatibility replica's server, another uid
    LocalBackend(tmp_path / "cache", file_mode=0o644).put("blobs/b", b"x")
    assert oct((tmp_path / "cache" / "blobs" / "b").stat().st_mode & 0o777) == "0o644"
