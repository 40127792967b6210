"""Where a store lives: :class:`StoreURI`, its grammar, and the name rules of what goes in one.

A store is a local directory or ``<scheme>://bucket/prefix`` for an object store whose scheme has a
backend (``s3`` built in; :func:`osgym.storage.factory.register_backend` adds more). Which schemes
those are is the factory's to say: :func:`osgym.storage.factory.parse_uri` reads a URI with them, by
way of :meth:`StoreURI.from_text`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

__all__ = ["StoreURI", "check_name"]

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_SCHEME_RE = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://")


@dataclass(frozen=True)
class StoreURI:
    """Where a store lives: a local directory or a bucket and key prefix.

    >>> StoreURI.from_text("s3://bucket/some/prefix/", {"s3"})
    StoreURI(scheme='s3', path='some/prefix', bucket='bucket')
    >>> StoreURI.from_text("file:///data/osgym", {"s3"})
    StoreURI(scheme='file', path='/data/osgym', bucket=None)
    """

    scheme: str  # "file", "s3" or another registered object-store scheme
    path: str  # absolute local path, or the key prefix without slashes at either end
    bucket: str | None = None

    @classmethod
    def from_text(cls, uri: str | os.PathLike[str], object_schemes: Collection[str]) -> StoreURI:
        """Read ``./data``, ``/abs``, ``file:///abs`` or ``<scheme>://bucket/prefix`` for one of ``object_schemes``.

        Raises:
            ValueError: for another scheme, or an object-store URI without a bucket.
        """
        text = os.fspath(uri)
        found = _SCHEME_RE.match(text)
        scheme = found.group("scheme") if found else "file"
        if scheme in object_schemes:
            bucket, _, prefix = text[found.end() :].partition("/") if found else ("", "", "")
            if not bucket:
                raise ValueError(f"{scheme} URI: expected {scheme}://bucket[/prefix], actual {text!r}")
            return cls(scheme, prefix.strip("/"), bucket)
        if found and scheme != "file":
            known = ", ".join(f"{s}://" for s in sorted(object_schemes))
            raise ValueError(f"store URI: expected a local path, file:// or {known} URI, actual {text!r}")
        if found:
            text = text[found.end() :]
            if not text.startswith("/"):
                raise ValueError(f"file URI: expected file:///absolute/path, actual {os.fspath(uri)!r}")
        if not text:
            raise ValueError("store URI is empty: give a directory or s3://bucket/prefix")
        return cls("file", str(Path(text).expanduser().resolve()))

    def __str__(self) -> str:
        if self.scheme != "file":
            return f"{self.scheme}://{self.bucket}/{self.path}" if self.path else f"{self.scheme}://{self.bucket}"
        return self.path

    def key(self, rel: str) -> str:
        """``rel`` under the prefix (an object key), without slashes at either end.

        >>> StoreURI("s3", "pre", "b").key("ds/x.json"), StoreURI("s3", "", "b").key("/ds/")
        ('pre/ds/x.json', 'ds')
        """
        rel = rel.strip("/")
        return f"{self.path}/{rel}".strip("/") if self.path else rel


def check_name(kind: str, value: str) -> str:
    """Return ``value`` if it is a safe dataset, run, table or file name (it becomes a path segment).

    >>> check_name("run_id", "run-1")
    'run-1'

    Raises:
        ValueError: for anything that could escape the layout (``/``, ``..``, ``=``, empty).
    """
    if not isinstance(value, str) or not _NAME_RE.match(value):
        raise ValueError(
            f"{kind}: expected 1-128 characters of letters, digits, '.', '_' or '-' starting with a letter "
            f"or digit, actual {value!r}"
        )
    return value
