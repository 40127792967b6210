"""Store URIs and names."""

from __future__ import annotations

from pathlib import Path

import pytest

from osgym.dataset import DatasetWriter
from osgym.storage import StoreURI, parse_uri


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("s3://bucket", StoreURI("s3", "", "bucket")),
        ("s3://bucket/a/b/", StoreURI("s3", "a/b", "bucket")),
        ("file:///data/x", StoreURI("file", "/data/x")),
        ("/abs/path", StoreURI("file", "/abs/path")),
    ],
)
def test_parse_uri(uri: str, expected: StoreURI) -> None:
    assert parse_uri(uri) == expected


def test_relative_paths_resolve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert parse_uri("./data") == StoreURI("file", str(tmp_path / "data"))
    assert str(parse_uri("s3://b/p")) == "s3://b/p"


@pytest.mark.parametrize("uri", ["gs://bucket/x", "s3:///nobucket", "file://relative", ""])
def test_bad_uris_say_what_was_expected(uri: str) -> None:
    with pytest.raises(ValueError, match="expected|empty"):
        parse_uri(uri)


@pytest.mark.parametrize(("dataset", "run_id"), [("ds", "a/b"), ("../up", "r"), ("ds", ""), ("ds", "run=1")])
def test_names_that_would_escape_the_layout_are_refused(tmp_path: Path, dataset: str, run_id: str) -> None:
    with pytest.raises(ValueError, match="expected 1-128 characters"):
        DatasetWriter(tmp_path, dataset, run_id)
