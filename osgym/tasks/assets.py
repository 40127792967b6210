"""The offline asset cache: files that task files name by http(s) URL, staged before a run.

Replicas are offline, and so is the worker at run time as far as tasks go: every remote URL a
setup step or a getter reads (``download``/``upload_file``'s ``files[].url``/``local_path``,
``cloud_file``'s ``path``; :func:`asset_urls`) comes from this cache, filled beforehand by
``osgym tasks fetch-assets`` (:mod:`osgym.tasks.asset_fetch`) where there is a network. The
operator names the cache with ``OSGYM_ASSET_CACHE``: a local directory or ``s3://bucket/prefix``.

Layout, the same on both::

    <cache>/blobs/<sha256>     the bytes, named by their sha256 (content-addressed)
    <cache>/manifest.json      {"format": "osgym-asset-cache/1", "assets": {url: {sha256, size, content_type}}}

A blob is written before the manifest entry that names it, and each is written whole (a local
file is written to a unique temporary name, fsynced and renamed; an S3 object becomes visible only
when its PUT completes), so a reader never sees a manifest entry without its blob, nor half a
manifest. Reads verify the sha256: a blob changed after it was fetched is refused.

>>> from types import SimpleNamespace as NS
>>> task = NS(config=[NS(type="download", parameters={"files": [
...     {"url": "https://example.org/a.xlsx", "path": "/home/user/a.xlsx"}]})],
...     evaluator=NS(postconfig=[], result=None, expected=NS(type="cloud_file", path="https://example.org/b.xlsx")))
>>> [url for _, url in asset_urls(task)]
['https://example.org/a.xlsx', 'https://example.org/b.xlsx']
>>> missing_assets(task, None)
['https://example.org/a.xlsx', 'https://example.org/b.xlsx']
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from osgym.errors import ConfigError, StoreError, TaskError
from osgym.retrying import retrying
from osgym.s3 import S3Options, describe, hint, is_transient, list_names
from osgym.settings import settings

if TYPE_CHECKING:
    from osgym.tasks.spec import TaskSpec

__all__ = ["MANIFEST", "MANIFEST_FORMAT", "REMOTE_SCHEMES", "AssetCache", "AssetEntry", "asset_urls",
           "cache_from_settings", "local_copy", "missing_assets", "read_asset", "urls_in_task_json"]

MANIFEST = "manifest.json"
MANIFEST_FORMAT = "osgym-asset-cache/1"
BLOBS = "blobs"
CACHE_VAR = "OSGYM_ASSET_CACHE"
_FILE_STEPS = ("download", "upload_file")
_SHA256_RE = r"^[0-9a-f]{64}$"

T = TypeVar("T")
REMOTE_SCHEMES = frozenset({"http", "https"})
"""The URL schemes the cache holds (and :mod:`osgym.tasks.files` never reads from disk)."""


def is_remote(source: object) -> bool:
    """True for an http(s) URL (what the cache holds).

    >>> is_remote("https://example.org/a"), is_remote("/srv/a"), is_remote("file:///srv/a")
    (True, False, False)
    """
    return isinstance(source, str) and urlparse(source).scheme in REMOTE_SCHEMES


# -- which URLs a task reads ----------------------------------------------------------------------------------


def _get(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def _getter_field(getter: Any, name: str) -> Any:
    value = _get(getter, name)
    if value is None and not isinstance(getter, dict):  # a Getter model keeps its options as extras
        value = (getattr(getter, "model_extra", None) or {}).get(name)
    return value


def _walk(data: Any) -> Iterator[tuple[str, str]]:
    ev = _get(data, "evaluator")
    for field, steps in (("config", _get(data, "config")), ("evaluator.postconfig", _get(ev, "postconfig"))):
        for i, step in enumerate(steps if isinstance(steps, list) else []):
            if _get(step, "type") not in _FILE_STEPS:
                continue
            params = _get(step, "parameters")
            files = params.get("files") if isinstance(params, dict) else None
            for j, f in enumerate(files if isinstance(files, list) else [files]):
                for key in ("url", "local_path"):
                    if isinstance(f, dict) and is_remote(f.get(key)):
                        yield f"{field}[{i}].parameters.files[{j}].{key}", f[key]
    for key in ("result", "expected"):
        value = _get(ev, key)
        listed = isinstance(value, list)
        for i, g in enumerate(value if listed else [value]):
            if g is None or _get(g, "type") != "cloud_file":
                continue
            paths = _getter_field(g, "path")
            at = f"evaluator.{key}{f'[{i}]' if listed else ''}.path"
            for k, p in enumerate(paths if isinstance(paths, list) else [paths]):
                if is_remote(p):
                    yield (f"{at}[{k}]" if isinstance(paths, list) else at), p


def urls_in_task_json(data: Any) -> list[tuple[str, str]]:
    """The (field, URL) pairs of a task's JSON (a dict, loaded or not) that setup steps or getters fetch.

    >>> urls_in_task_json({"config": [{"type": "download", "parameters": {"files": [
    ...     {"url": "https://x.example/a.docx", "path": "/home/user/a.docx"}]}}],
    ...     "evaluator": {"func": ["f", "g"], "result": [{"type": "vm_file", "path": "/a"},
    ...     {"type": "cloud_file", "multi": True, "path": ["file:///srv/b", "https://x.example/c"]}]}})
    [('config[0].parameters.files[0].url', 'https://x.example/a.docx'), \
('evaluator.result[1].path[1]', 'https://x.example/c')]
    """
    return list(_walk(data)) if isinstance(data, dict) else []


def asset_urls(task: TaskSpec) -> list[tuple[str, str]]:
    """The (field, URL) pairs of a loaded task that setup steps or getters fetch, in task order."""
    return list(_walk(task))


def missing_assets(task: TaskSpec, cache: AssetCache | None) -> list[str]:
    """The URLs ``task`` needs that ``cache`` lacks (each once, in task order); without a cache, all of them.

    Pure apart from reading the cache's manifest (once per :class:`AssetCache`): the run planner
    calls it for every task before any replica starts and refuses those with a URL here. A URL counts as
    cached when the manifest lists it (a blob is always written before its entry).

    Raises:
        StoreError: if the cache's manifest cannot be read.
    """
    needed = list(dict.fromkeys(url for _, url in asset_urls(task)))
    if cache is None:
        return needed
    held = cache.manifest()
    return [url for url in needed if url not in held]


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


class _Store(Protocol):
    def where(self, rel: str) -> str: ...
    def names(self, rel_dir: str) -> dict[str, int]: ...
    def read(self, rel: str) -> bytes | None: ...
    def put(self, rel: str, data: bytes, content_type: str) -> None: ...


class _LocalStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    def where(self, rel: str) -> str:
        return str(self.root / rel)

    def names(self, rel_dir: str) -> dict[str, int]:
        try:
            return {e.name: e.stat().st_size for e in os.scandir(self.root / rel_dir)
                    if e.is_file(follow_symlinks=False) and not e.name.startswith(".")}
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise StoreError(f"cannot list {self.root / rel_dir}: {exc}") from exc

    def read(self, rel: str) -> bytes | None:
        try:
            return (self.root / rel).read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StoreError(f"cannot read {self.root / rel}: {exc}") from exc

    def put(self, rel: str, data: bytes, content_type: str) -> None:
        final = self.root / rel
        try:
            final.parent.mkdir(parents=True, exist_ok=True)
            # A unique temporary name: two fetches of the same blob never write one file together.
            fd, tmp = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".incomplete", dir=final.parent)
            try:
                # Readable by all (mkstemp makes 0600): a compatibility replica's server, another uid,
                # reads the cache through a read-only mount (ASSETS_MOUNT). The files are public downloads.
                os.fchmod(fd, 0o644)
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, final)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
            dir_fd = os.open(final.parent, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        except OSError as exc:
            raise StoreError(f"cannot write {final}: {exc}; check the cache directory's permissions and "
                             "free space") from exc


class _S3Store:
    def __init__(self, bucket: str, prefix: str, options: S3Options) -> None:
        self.bucket, self.prefix, self.options = bucket, prefix.strip("/"), options
        self._client = options.boto3_client()

    def where(self, rel: str) -> str:
        return f"s3://{self.bucket}/{self._key(rel)}"

    def _key(self, rel: str) -> str:
        return f"{self.prefix}/{rel}" if self.prefix else rel

    def _retrying(self, what: str, fn: Callable[[], T]) -> T:
        try:
            for attempt in retrying(attempts=self.options.retries + 1, on=is_transient,
                                    backoff_s=self.options.backoff_s, backoff_max_s=self.options.backoff_max_s):
                with attempt:
                    return fn()
        except Exception as exc:
            raise StoreError(f"S3 {what} failed ({describe(exc)}): {hint(exc, self.bucket)}.") from exc
        raise AssertionError("unreachable: retrying returns or raises")

    def names(self, rel_dir: str) -> dict[str, int]:
        prefix = self._key(rel_dir) + "/"

        return self._retrying(f"list of {self.where(rel_dir)}/", lambda: list_names(self._client, self.bucket, prefix))

    def read(self, rel: str) -> bytes | None:
        from botocore.exceptions import ClientError

        key = self._key(rel)

        def run() -> bytes | None:
            try:
                return bytes(self._client.get_object(Bucket=self.bucket, Key=key)["Body"].read())
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                    return None
                raise

        return self._retrying(f"GET {self.where(rel)}", run)

    def put(self, rel: str, data: bytes, content_type: str) -> None:
        key = self._key(rel)
        self._retrying(f"PUT {self.where(rel)}", lambda: self._client.put_object(
            Bucket=self.bucket, Key=key, Body=data, ContentType=content_type))


def _open_store(location: str, s3: S3Options | None) -> _Store:
    parsed = urlparse(location)
    if parsed.scheme == "s3":
        if not parsed.netloc:
            raise ConfigError(f"asset cache: expected s3://bucket[/prefix], actual {location!r}")
        return _S3Store(parsed.netloc, parsed.path, s3 or S3Options())
    if parsed.scheme not in ("", "file") or (parsed.scheme == "file" and parsed.netloc not in ("", "localhost")):
        raise ConfigError(f"asset cache: expected a local directory, file:///path or s3://bucket/prefix, "
                          f"actual {location!r}")
    if s3 is not None:
        raise ConfigError(f"asset cache: S3 options were given for a local cache {location!r}")
    path = parsed.path if parsed.scheme == "file" else location
    return _LocalStore(Path(path).expanduser().resolve())


class AssetCache:
    """A cache at a local directory or ``s3://bucket/prefix`` (see the module docstring for its layout).

    ``s3``: how to reach the endpoint; default the AWS chain (``AWS_ENDPOINT_URL``, keys in the
    environment or ``~/.aws``). The manifest is read once, and again when a URL is not in it.

    Raises:
        ConfigError: for a location that is neither.
    """

    def __init__(self, location: str | os.PathLike[str], *, s3: S3Options | None = None) -> None:
        self._store = _open_store(os.fspath(location), s3)
        self.location = self._store.where("").rstrip("/")
        self._manifest: dict[str, AssetEntry] | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"AssetCache({self.location})"

    @property
    def local_dir(self) -> Path | None:
        """The cache's directory when it is a local one (what a compatibility replica mounts), else None."""
        return self._store.root if isinstance(self._store, _LocalStore) else None

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
        data = self._store.read(MANIFEST)
        if data is None:
            return {}
        try:
            return _Manifest.model_validate(json.loads(data)).assets
        except (ValueError, ValidationError) as exc:
            raise StoreError(f"asset cache manifest {self._store.where(MANIFEST)} is not one "
                             f"({str(exc).splitlines()[0][:200]}); re-run osgym tasks fetch-assets into a fresh "
                             "cache") from exc

    def entry(self, url: str) -> AssetEntry | None:
        """The manifest's entry for ``url`` (the manifest re-read once if it is not there)."""
        found = self.manifest().get(url)
        return found if found is not None else self.manifest(reload=True).get(url)

    def blobs(self) -> dict[str, int]:
        """The blobs the cache holds: sha256 -> size."""
        return self._store.names(BLOBS)

    def read(self, url: str, *, where: str, error: type[TaskError]) -> bytes:
        """The cached bytes of ``url``, their sha256 checked against the manifest.

        Raises:
            TaskError: ``error``, naming ``where`` and the URL, if the URL is not in the cache, its blob
                is missing or does not match its sha256, or the cache cannot be read.
        """
        try:
            entry = self.entry(url)
            if entry is None:
                raise error(f"{where}: {url!r:.300} is not in the asset cache {self.location} (replicas are "
                            "offline; run `osgym tasks fetch-assets` on the task files where there is a network)")
            data = self._store.read(f"{BLOBS}/{entry.sha256}")
        except StoreError as exc:
            raise error(f"{where}: the asset cache {self.location} cannot be read for {url!r:.300}: {exc}") from exc
        if data is None:
            raise error(f"{where}: the asset cache {self.location} lists {url!r:.300} but its blob {entry.sha256} "
                        "is gone; re-run `osgym tasks fetch-assets`")
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
