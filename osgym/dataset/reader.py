"""The reader: :func:`open_dataset` gives pyarrow datasets of the committed runs.

Only runs with a manifest are read, and only the files their manifests list, so a
run being written (or one that crashed) is invisible.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.fs as pafs

from osgym.dataset.layout import MANIFEST_DIR, PARTITION_KEY, PARTITION_SCHEMA
from osgym.dataset.manifest import read_manifests
from osgym.dataset.schema import TABLES
from osgym.storage import Backend, S3Options, open_backend, parse_uri

__all__ = ["DatasetView", "open_dataset", "view_of"]


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


def view_of(backend: Backend) -> DatasetView:
    """The committed part of the dataset ``backend`` holds.

    Raises:
        StoreError: when the store cannot be listed or a manifest is damaged.
    """
    manifests = read_manifests(backend)
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
    return view_of(open_backend(uri, dataset, s3))


def list_datasets(uri: str | os.PathLike[str], *, s3: S3Options | None = None) -> list[str]:
    """The names of the datasets in a store: its folders that hold at least one committed run's manifest.

    Raises:
        ValueError: for a malformed URI.
        StoreError: when the store cannot be listed.
    """
    location = parse_uri(uri)
    if location.scheme == "file":
        root = Path(location.path)
        candidates = sorted(e.name for e in os.scandir(root) if e.is_dir()) if root.is_dir() else []
    else:
        # any valid name opens a backend of this store; its filesystem lists the store's folders
        fs = open_backend(uri, "x", s3).filesystem
        base = f"{location.bucket}/{location.path}".rstrip("/")
        infos = fs.get_file_info(pafs.FileSelector(base, allow_not_found=True))
        candidates = sorted(i.base_name for i in infos if i.type == pafs.FileType.Directory)
    names = []
    for name in candidates:
        try:
            backend = open_backend(uri, name, s3)
        except ValueError:  # a folder whose name no dataset may have
            continue
        if any(n.endswith(".json") and not n.startswith(".") for n in backend.list(MANIFEST_DIR)):
            names.append(name)
    return names
