"""Storage: where files live, below everything that writes or reads them (the dataset, the asset cache).

One module per concern, each importing only those above it in this list:

- :mod:`~osgym.storage.base`: the protocol every backend implements (:class:`Backend`), and
  :class:`MissingFile`.
- :mod:`~osgym.storage.uri`: :class:`StoreURI`, its grammar, and the name rules (:func:`check_name`).
- :mod:`~osgym.storage.s3_options`: :class:`S3Options`, how to reach an S3-compatible endpoint.
- :mod:`~osgym.storage.s3_faults`: which S3 faults another try may fix, and their messages.
- :mod:`~osgym.storage.local`: :class:`LocalBackend`, a local directory.
- :mod:`~osgym.storage.s3`: :class:`S3Backend`, ``s3://bucket/prefix``.
- :mod:`~osgym.storage.factory`: the table of URI schemes: :func:`parse_uri`, :func:`open_backend`,
  :func:`register_backend`.
"""

from __future__ import annotations

from osgym.storage.base import Backend, MissingFile
from osgym.storage.factory import (
    BackendFactory,
    object_schemes,
    open_backend,
    parse_uri,
    register_backend,
    unregister_backend,
)
from osgym.storage.local import LocalBackend
from osgym.storage.s3 import S3Backend
from osgym.storage.s3_options import S3Options
from osgym.storage.uri import StoreURI, check_name

__all__ = [
    "Backend",
    "BackendFactory",
    "LocalBackend",
    "MissingFile",
    "S3Backend",
    "S3Options",
    "StoreURI",
    "check_name",
    "object_schemes",
    "open_backend",
    "parse_uri",
    "register_backend",
    "unregister_backend",
]
