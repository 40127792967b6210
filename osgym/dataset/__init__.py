"""The dataset: episodes and steps as Parquet shards, committed by a manifest written last.

- :mod:`~osgym.dataset.schema`: the two tables' Arrow schemas.
- :mod:`~osgym.dataset.store`: :class:`DatasetWriter`, the manifest, the local backend, the reader
  (:func:`open_dataset`), the dataset card and exports.
- :mod:`~osgym.dataset.s3`: the S3 backend.
"""

from osgym.dataset.store import DatasetWriter, Manifest, open_dataset

__all__ = ["DatasetWriter", "Manifest", "open_dataset"]
