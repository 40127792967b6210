"""Storage backends: the :class:`Backend` protocol, and the one place a store URI picks its backend.

- :mod:`~osgym.dataset.backends.base`: the protocol every backend implements.
- :mod:`~osgym.dataset.backends.local`: local directories (plain paths and ``file://``).
- :mod:`~osgym.dataset.backends.s3`: ``s3://bucket/prefix``, with :class:`S3Options`.

A new backend is one module plus one :func:`register_backend` call for its URI scheme;
the writer, the reader, merges and sidecars then accept ``<scheme>://bucket/prefix``.

>>> sorted(object_schemes())
['s3']
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from osgym.dataset.backends.base import Backend
from osgym.dataset.backends.local import LocalBackend
from osgym.dataset.backends.s3 import S3Backend, S3Options
from osgym.dataset.uri import StoreURI, check_name, parse_uri

__all__ = ["Backend", "BackendFactory", "LocalBackend", "S3Backend", "S3Options", "object_schemes",
           "open_backend", "register_backend", "unregister_backend"]  # fmt: skip

BackendFactory = Callable[[StoreURI, str, Any], Backend]
"""Makes the backend of one dataset: ``factory(location, dataset, options)``; ``options`` is what the
caller passed as ``s3=`` (None for defaults). It raises ValueError for options it cannot use."""

_FACTORIES: dict[str, BackendFactory] = {"file": LocalBackend.from_uri, "s3": S3Backend.from_uri}


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
    if scheme not in ("file", "s3"):
        _FACTORIES.pop(scheme, None)


def object_schemes() -> frozenset[str]:
    """The URI schemes of object stores that have a backend (``s3`` and any registered)."""
    return frozenset(_FACTORIES) - {"file"}


def open_backend(uri: str | os.PathLike[str], dataset: str, options: Any = None) -> Backend:
    """The backend of ``dataset`` in the store at ``uri``.

    Raises:
        ValueError: for a malformed URI or dataset name, or options the backend cannot use.
    """
    location = parse_uri(uri)
    check_name("dataset", dataset)
    return _FACTORIES[location.scheme](location, dataset, options)
