"""Which backend a store URI opens: the one table of URI schemes, and :func:`open_backend`.

``file`` (local paths) and ``s3`` are built in; a new backend is one module plus one
:func:`register_backend` call for its URI scheme, and the dataset's writer, reader, merges and
sidecars then accept ``<scheme>://bucket/prefix``. :func:`parse_uri` reads a URI with the schemes
known here.

>>> sorted(object_schemes())
['s3']
>>> parse_uri("s3://bucket/some/prefix/")
StoreURI(scheme='s3', path='some/prefix', bucket='bucket')
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from osgym.storage.base import Backend
from osgym.storage.local import LocalBackend
from osgym.storage.s3 import S3Backend
from osgym.storage.s3_options import S3Options
from osgym.storage.uri import StoreURI, check_name

__all__ = ["BackendFactory", "object_schemes", "open_backend", "parse_uri", "register_backend",
           "unregister_backend"]  # fmt: skip

BackendFactory = Callable[[StoreURI, str, Any], Backend]
"""Makes the backend of one dataset: ``factory(location, dataset, options)``; ``options`` is what the
caller passed as ``s3=`` (None for defaults). It raises ValueError for options it cannot use."""


def _local_dataset(location: StoreURI, dataset: str, options: Any = None) -> LocalBackend:
    if options is not None:
        raise ValueError(f"s3 options were given for a local store {location.path!r}; use an s3:// URI or drop them")
    return LocalBackend(Path(location.path) / dataset)


def _s3_dataset(location: StoreURI, dataset: str, options: S3Options | None = None) -> S3Backend:
    assert location.bucket is not None  # parse_uri requires one
    return S3Backend(location.bucket, location.key(dataset), options, advice="re-run the same run_id to resume")


_BUILT_IN: dict[str, BackendFactory] = {"file": _local_dataset, "s3": _s3_dataset}
_FACTORIES: dict[str, BackendFactory] = dict(_BUILT_IN)


def register_backend(scheme: str, factory: BackendFactory) -> None:
    """Make ``<scheme>://bucket/prefix`` store URIs open with ``factory`` (replacing an earlier one).

    Raises:
        ValueError: for a malformed scheme, or ``file`` (local paths are built in).
    """
    if not scheme.isascii() or not scheme.isalnum() or not scheme[:1].isalpha() or scheme != scheme.lower():
        raise ValueError(f"scheme: expected lowercase letters and digits starting with a letter, actual {scheme!r}")
    if scheme == "file":
        raise ValueError("scheme: 'file' is the built-in local backend and cannot be replaced")
    _FACTORIES[scheme] = factory


def unregister_backend(scheme: str) -> None:
    """Forget a scheme added by :func:`register_backend` (the built-in ones stay)."""
    if scheme not in _BUILT_IN:
        _FACTORIES.pop(scheme, None)


def object_schemes() -> frozenset[str]:
    """The URI schemes of object stores that have a backend (``s3`` and any registered)."""
    return frozenset(_FACTORIES) - {"file"}


def parse_uri(uri: str | os.PathLike[str]) -> StoreURI:
    """Parse a store location: ``./data``, ``/abs``, ``file:///abs`` or ``<scheme>://bucket/prefix``.

    Raises:
        ValueError: for a scheme without a backend, or an object-store URI without a bucket.
    """
    return StoreURI.from_text(uri, object_schemes())


def open_backend(uri: str | os.PathLike[str], dataset: str, options: Any = None) -> Backend:
    """The backend of ``dataset`` in the store at ``uri``.

    Raises:
        ValueError: for a malformed URI or dataset name, or options the backend cannot use.
    """
    location = parse_uri(uri)
    check_name("dataset", dataset)
    return _FACTORIES[location.scheme](location, dataset, options)
