"""The offline asset cache: files that task files name by http(s) URL, staged before a run.

Replicas are offline, and so is the worker at run time as far as tasks go: every remote URL a
setup step or a getter reads (``download``/``upload_file``'s ``files[].url``/``local_path``,
``cloud_file``'s ``path``; :mod:`osgym.tasks.asset_urls`) comes from this cache, filled beforehand by
``osgym tasks fetch-assets`` (:mod:`osgym.tasks.asset_fetch`) where there is a network. The
operator names the cache with ``OSGYM_ASSET_CACHE``: a local directory or ``s3://bucket/prefix``.

Layout, the same on both::

    <cache>/blobs/<sha256>     the bytes, named by their sha256 (content-addressed)
    <cache>/manifest.json      {"format": "osgym-asset-cache/1", "assets": {url: {sha256, size, content_type}}}

The files live in a store of :mod:`osgym.storage` (a :class:`~osgym.storage.local.LocalBackend`
or an :class:`~osgym.storage.s3.S3Backend`, rooted at the cache's location). A blob is written
before the manifest entry that names it, and each is written whole (a local file is written to a
unique temporary name, fsynced and renamed; an S3 object becomes visible only when its PUT
completes), so a reader never sees a manifest entry without its blob, nor half a manifest. Reads
verify the sha256: a blob changed after it was fetched is refused.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from pathlib import Path
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from osgym.errors import ConfigError, StoreError, TaskError
from osgym.settings import settings
from osgym.storage import LocalBackend, MissingFile, S3Backend, S3Options, parse_uri

log = logging.getLogger(__name__)

__all__ = ["MANIFEST", "MANIFEST_FORMAT", "REMOTE_SCHEMES", "AssetCache", "AssetEntry", "cache_from_settings",
           "is_remote", "local_copy", "read_asset"]

MANIFEST = "manifest.json"
MANIFEST_FORMAT = "osgym-asset-cache/1"
BLOBS = "blobs"
CACHE_VAR = "OSGYM_ASSET_CACHE"
_SHA256_RE = r"^[0-9a-f]{64}$"
# Readable by all: a compatibility replica's server, another uid, reads the cache through a read-only mount
# (ASSETS_MOUNT). The files are public downloads.
_FILE_MODE = 0o644
# What a transient S3 fault that outlasted the retries asks of the operator.
_S3_ADVICE = "try again (a fetch skips what it already cached)"

REMOTE_SCHEMES = frozenset({"http", "https"})
"""The URL schemes the cache holds (and :mod:`osgym.tasks.files` never reads from disk)."""


def is_remote(source: object) -> bool:
    """True for an http(s) URL (what the cache holds).

    >>> is_remote("https://example.org/a"), is_remote("/srv/a"), is_remote("file:///srv/a")
    (True, False, False)
    """
    return isinstance(source, str) and urlparse(source).scheme in REMOTE_SCHEMES


# -- the cache ------------------------------------------------------------------------------------------------


class AssetEntry(BaseModel):
    """What the manifest knows of one URL."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    sha256: str = Field(pattern=_SHA256_RE)
    size: int = Field(ge=0)
    content_type: str = "application/octet-stream"


class _Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    format: str = Field(MANIFEST_FORMAT, pattern=f"^{MANIFEST_FORMAT}$")
    assets: dict[str, AssetEntry] = Field(default_factory=dict)


def _open_store(location: str, s3: S3Options | None) -> LocalBackend | S3Backend:
    """The store at the cache's location itself (a dataset's store is a folder under its location).

    Raises:
        ConfigError: for a location that is neither a local directory nor ``s3://bucket/prefix``, or S3
            options for a local one.
    """
    try:
        where = parse_uri(location)
    except ValueError as exc:
        raise ConfigError(f"asset cache: {exc}") from exc
    if where.scheme == "s3":
        assert where.bucket is not None  # parse_uri requires one
        return S3Backend(where.bucket, where.path, s3, advice=_S3_ADVICE)
    if where.scheme != "file":
        raise ConfigError(f"asset cache: expected a local directory, file:///path or s3://bucket/prefix, "
                          f"actual {location!r}")
    if s3 is not None:
        raise ConfigError(f"asset cache: S3 options were given for a local cache {location!r}")
    return LocalBackend(Path(where.path), file_mode=_FILE_MODE)


class AssetCache:
    """A cache at a local directory or ``s3://bucket/prefix`` (see the module docstring for its layout).

    ``s3``: how to reach the endpoint; default the AWS chain (``AWS_ENDPOINT_URL``, keys in the
    environment or ``~/.aws``). The manifest is read once, and again when a URL is not in it.

    Raises:
        ConfigError: for a location that is neither.
    """

    def __init__(self, location: str | os.PathLike[str], *, s3: S3Options | None = None) -> None:
        self._store = _open_store(os.fspath(location), s3)
        self.location = self._store.uri("").rstrip("/")
        self._manifest: dict[str, AssetEntry] | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"AssetCache({self.location})"

    @property
    def local_dir(self) -> Path | None:
        """The cache's directory when it is a local one (what a compatibility replica mounts), else None."""
        return self._store.path if isinstance(self._store, LocalBackend) else None

    def manifest(self, *, reload: bool = False) -> dict[str, AssetEntry]:
        """URL -> entry, as the cache's manifest says (empty for a cache never filled).

        Raises:
            StoreError: if the manifest cannot be read or is not one.
        """
        with self._lock:
            if self._manifest is None or reload:
                self._manifest = self._read_manifest()
            return dict(self._manifest)

    def _read_manifest(self) -> dict[str, AssetEntry]:
        try:
            data = self._store.read(MANIFEST)
        except MissingFile:
            return {}
        try:
            return _Manifest.model_validate(json.loads(data)).assets
        except (ValueError, ValidationError) as exc:
            raise StoreError(f"asset cache manifest {self._store.uri(MANIFEST)} is not one "
                             f"({str(exc).splitlines()[0][:200]}); re-run osgym tasks fetch-assets into a fresh "
                             "cache") from exc

    def entry(self, url: str) -> AssetEntry | None:
        """The manifest's entry for ``url`` (the manifest re-read once if it is not there)."""
        found = self.manifest().get(url)
        return found if found is not None else self.manifest(reload=True).get(url)

    def blobs(self) -> dict[str, int]:
        """The blobs the cache holds: sha256 -> size (not a writer's ``.<sha256>.….incomplete`` file)."""
        return {name: size for name, size in self._store.list(BLOBS).items() if not name.startswith(".")}

    def read(self, url: str, *, where: str, error: type[TaskError]) -> bytes:
        """The cached bytes of ``url``, their sha256 checked against the manifest.

        Raises:
            TaskError: ``error``, naming ``where`` and the URL, if the URL is not in the cache, its blob
                is missing or does not match its sha256, or the cache cannot be read.
        """
        try:
            entry = self.entry(url)
            if entry is None:
                raise error(f"{where}: {url!r:.300} is not in the asset cache (replicas are offline; run "
                            "`osgym tasks fetch-assets` on the task files where there is a network)")
            try:
                data = self._store.read(f"{BLOBS}/{entry.sha256}")
            except MissingFile as exc:
                log.warning("asset cache %s lists %s but its blob %s is gone", self.location, url, entry.sha256)
                raise error(f"{where}: the asset cache lists {url!r:.300} but its blob {entry.sha256} is gone; "
                            "re-run `osgym tasks fetch-assets`") from exc
        except StoreError as exc:
            # the cache's location and paths stay in the operator's log: the message may reach a serve client
            log.warning("asset cache %s: cannot read %s: %s", self.location, url, exc)
            raise error(f"{where}: the asset cache cannot be read for {url!r:.300} (the server's log says why)") \
                from exc
        actual = hashlib.sha256(data).hexdigest()
        if actual != entry.sha256:
            raise error(f"{where}: the cached copy of {url!r:.300} is corrupt: blob {entry.sha256} has sha256 "
                        f"{actual}; delete it and re-run `osgym tasks fetch-assets`")
        return data

    def add(self, url: str, data: bytes, content_type: str = "application/octet-stream") -> AssetEntry:
        """Store ``data`` as the bytes of ``url``: its blob first, then the manifest (re-read and merged,
        so entries another fetch committed meanwhile stay), each written whole.

        Raises:
            StoreError: if the cache cannot be written.
        """
        entry = AssetEntry(sha256=hashlib.sha256(data).hexdigest(), size=len(data), content_type=content_type)
        self._store.put(f"{BLOBS}/{entry.sha256}", data, content_type)
        with self._lock:
            assets = self._read_manifest()
            assets[url] = entry
            body = _Manifest(assets=dict(sorted(assets.items()))).model_dump_json(indent=1).encode()
            self._store.put(MANIFEST, body, "application/json")
            self._manifest = assets
        return entry


def local_copy(cache: AssetCache, directory: Path | None = None) -> Path:
    """A local directory holding every asset of ``cache``: the cache's own directory when it is local,
    else a mirror (``directory``, default ``$XDG_CACHE_HOME/osgym/asset-mirrors/<hash of the location>``)
    filled with what it lacks, each blob's sha256 checked on the way. Compatibility replicas mount it
    (they cannot reach S3: they are offline).

    Raises:
        StoreError: if either side cannot be read or written, or a blob does not match its sha256.
    """
    if cache.local_dir is not None:
        return cache.local_dir
    if directory is None:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        directory = base / "osgym" / "asset-mirrors" / hashlib.sha256(cache.location.encode()).hexdigest()[:16]
    mirror = AssetCache(directory)
    have = mirror.manifest()
    for url, entry in cache.manifest(reload=True).items():
        if have.get(url) != entry:
            try:
                data = cache.read(url, where="asset mirror", error=TaskError)
            except TaskError as exc:
                raise StoreError(str(exc)) from exc
            mirror.add(url, data, entry.content_type)
    assert mirror.local_dir is not None
    return mirror.local_dir


_from_settings: dict[str, AssetCache] = {}
_from_settings_lock = threading.Lock()


def cache_from_settings() -> AssetCache | None:
    """The operator's cache (``OSGYM_ASSET_CACHE``), or None when it is unset; one object per location.

    Raises:
        ConfigError: if the setting is not a local directory or an ``s3://`` URI.
    """
    location = settings().asset_cache
    if not location:
        return None
    with _from_settings_lock:
        if location not in _from_settings:
            _from_settings[location] = AssetCache(location)
        return _from_settings[location]


def read_asset(url: str, *, where: str, error: type[TaskError]) -> bytes:
    """The bytes of a remote URL a task names, from the operator's cache only (never the network).

    Raises:
        TaskError: ``error``, naming ``where`` and the URL, when no cache is set, the URL is not in
            it, or its copy is missing or corrupt (see :meth:`AssetCache.read`).
    """
    try:
        cache = cache_from_settings()
    except ConfigError as exc:
        raise error(f"{where}: {url!r:.300}: {exc}") from exc
    if cache is None:
        raise error(f"{where}: remote URLs cannot be fetched here (replicas are offline) and the operator has not "
                    f"set {CACHE_VAR} (an asset cache filled by `osgym tasks fetch-assets`), actual {url!r:.300}")
    return cache.read(url, where=where, error=error)
