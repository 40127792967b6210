"""The dataset: episodes and steps as Parquet shards, committed by a manifest written last.

Files live in a store of :mod:`osgym.storage` (store URIs, the local and S3 backends,
``register_backend`` for more). One module per concern:

- :mod:`~osgym.dataset.schema`: the two tables' Arrow schemas.
- :mod:`~osgym.dataset.layout`: where each file of a dataset goes.
- :mod:`~osgym.dataset.manifest`: :class:`Manifest`, built once by :func:`build_manifest`.
- :mod:`~osgym.dataset.shards`: shard pairs being written, and the ones a resume keeps.
- :mod:`~osgym.dataset.writer`: :class:`DatasetWriter`.
- :mod:`~osgym.dataset.reader`: :func:`open_dataset` and :class:`DatasetView`.
- :mod:`~osgym.dataset.merge`: :func:`merge_parts`, committing a scale-out run.
- :mod:`~osgym.dataset.card`, :mod:`~osgym.dataset.export`, :mod:`~osgym.dataset.sidecars`:
  the dataset card, the JSONL export and sidecar tables.
- :mod:`~osgym.dataset.sft` (with :mod:`~osgym.dataset.sft_samples`, :mod:`~osgym.dataset.sft_card` and
  :mod:`~osgym.dataset.resize`): chat samples that SFT trainers load directly (``export_sft``).
"""

from osgym.dataset.card import write_dataset_card
from osgym.dataset.export import export_jsonl
from osgym.dataset.manifest import Manifest, ShardEntry, build_manifest
from osgym.dataset.merge import merge_parts
from osgym.dataset.reader import DatasetView, list_datasets, open_dataset
from osgym.dataset.sidecars import write_sidecar
from osgym.dataset.writer import DatasetWriter

__all__ = [
    "DatasetView",
    "DatasetWriter",
    "Manifest",
    "ShardEntry",
    "build_manifest",
    "export_jsonl",
    "merge_parts",
    "list_datasets",
    "open_dataset",
    "write_dataset_card",
    "write_sidecar",
]
