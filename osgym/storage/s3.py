"""The S3 backend (``s3://bucket/prefix`` URIs): a dataset's store, and the asset cache's.

:class:`~osgym.storage.s3_options.S3Options` says how to reach the endpoint; :class:`S3Backend`
implements the storage protocol (:class:`~osgym.storage.base.Backend`) over S3 objects, each
operation retried on transient faults (:func:`~osgym.storage.s3_faults.is_transient`) and mapped
to :class:`~osgym.errors.StoreError` when it still fails.

Retries happen on two levels. botocore retries each request
(``S3Options.max_attempts``, "standard" mode). When botocore gives up on a
transient fault (connection refused, timeout, 5xx, throttling), the whole
operation is retried ``S3Options.retries`` more times by
:func:`osgym.retrying.retrying`, with exponential backoff (``backoff_s``
doubling up to ``backoff_max_s``). Faults that another try cannot fix (bad
credentials, a missing bucket, access denied) fail at once.

Shards are uploaded whole from a local temporary file with boto3's
``upload_file``, which switches to a multipart upload above
``S3Options.multipart_threshold``. S3 makes an object visible only when its
PUT or multipart upload completes, so readers never see half a shard. An
interrupted multipart upload leaves invisible parts behind; a bucket
lifecycle rule ("abort incomplete multipart uploads after N days") reclaims
them.

**DuckDB over S3.** DuckDB reads S3 through its ``httpfs`` extension only
when the extension binary for the exact installed DuckDB version is present:
DuckDB cannot fetch it without internet access, and PyPI's
``duckdb-extension-httpfs`` packages stop at DuckDB 1.5.x while osgym runs
DuckDB 2.0. osgym therefore reads S3 through **pyarrow's S3 filesystem**:
:func:`osgym.dataset.reader.open_dataset` returns pyarrow datasets built on
:meth:`S3Options.pyarrow_filesystem`, and DuckDB scans them after
``con.register("steps", view.steps)``, with projection and filter pushdown.
:func:`duckdb_s3_route` reports which route a given connection can take.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from osgym.errors import StoreError
from osgym.retrying import retrying
from osgym.storage.base import MissingFile, probe_name
from osgym.storage.s3_faults import describe, hint, is_transient
from osgym.storage.s3_options import S3Options

if TYPE_CHECKING:
    import duckdb
    import pyarrow.fs as pafs
    from tenacity import RetryCallState

__all__ = ["S3Backend", "duckdb_s3_route"]

log = logging.getLogger(__name__)

T = TypeVar("T")

CHECK_ATTEMPTS = 2
"""Tries of :meth:`S3Backend.check`'s requests (botocore's and osgym's each): a store that is down
when a run starts fails it in seconds; the minutes of backoff are for faults in the middle of a run."""

# Recorded on every shard as x-amz-meta-sha256 and x-amz-meta-rows, so a resume needs one HEAD per file.
SHA256_METADATA_KEY = "sha256"
ROWS_METADATA_KEY = "rows"

# botocore's codes for a GET of a key that does not exist (a HEAD has no body, so only its status)
_MISSING_KEY_CODES = ("NoSuchKey", "404")


class S3Backend:
    """Objects under ``s3://bucket/prefix``, addressed by paths relative to that prefix.

    Implements :class:`~osgym.storage.base.Backend`. Every operation retries
    transient faults (see the module docstring) and raises
    :class:`~osgym.errors.StoreError` when it gives up; ``advice`` ends the message
    of one that gave up on a transient fault ("Check that the endpoint ... is up, then <advice>.").
    """

    def __init__(self, bucket: str, prefix: str, options: S3Options | None = None, *,
                 advice: str = "try again") -> None:
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.options = options or S3Options()
        self.advice = advice
        self._client = self.options.boto3_client()
        self._check_client: Any = None
        self._filesystem: pafs.S3FileSystem | None = None

    def __repr__(self) -> str:
        return f"S3Backend(s3://{self.bucket}/{self.prefix}, endpoint={self.options.resolved_endpoint()!r})"

    @property
    def root(self) -> str:
        """The prefix as a path inside :attr:`filesystem` (``bucket/prefix``)."""
        return f"{self.bucket}/{self.prefix}" if self.prefix else self.bucket

    @property
    def filesystem(self) -> pafs.S3FileSystem:
        if self._filesystem is None:
            self._filesystem = self.options.pyarrow_filesystem()
        return self._filesystem

    def uri(self, rel: str) -> str:
        return f"s3://{self.bucket}/{self._key(rel)}"

    def _key(self, rel: str) -> str:
        rel = rel.strip("/")
        return f"{self.prefix}/{rel}" if self.prefix else rel

    def _retrying(self, what: str, fn: Callable[[], T], attempts: int | None = None) -> T:
        """Call ``fn``, retrying transient faults with backoff (``attempts`` tries in all, default
        ``options.retries + 1``); raise StoreError when it gives up."""
        attempts = attempts or self.options.retries + 1

        def log_retry(state: RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome is not None else None
            delay = state.next_action.sleep if state.next_action is not None else 0.0
            log.warning(
                "S3 %s failed (%s); retry %d/%d in %.2fs",
                what,
                describe(exc) if exc is not None else "?",
                state.attempt_number,
                attempts - 1,
                delay,
            )

        try:
            for attempt in retrying(
                attempts=attempts,
                on=lambda exc: not isinstance(exc, StoreError) and is_transient(exc),
                backoff_s=self.options.backoff_s,
                backoff_max_s=self.options.backoff_max_s,
                before_sleep=log_retry,
            ):
                with attempt:
                    return fn()
        except StoreError:
            raise
        except Exception as exc:
            if not is_transient(exc):
                raise StoreError(self._refused(what, exc)) from exc
            raise StoreError(
                f"S3 {what} failed after {attempts} attempts: {describe(exc)}. Check that the "
                f"endpoint {self.options.resolved_endpoint() or 'AWS'} is up, then {self.advice}."
            ) from exc
        raise AssertionError("unreachable: retrying returns or raises")

    def _refused(self, what: str, exc: BaseException) -> str:
        """The message of a fault another try cannot fix: what failed, why, and what to check."""
        return f"S3 {what} failed ({describe(exc)}): {hint(exc, self.bucket)}."

    # -- operations --------------------------------------------------------

    def check(self) -> None:
        """Fail early, with a clear message, when the endpoint is down, the bucket is missing, or the
        credentials are refused or may not write: HeadBucket, then PUT a probe object and DELETE it.

        Each request gets :data:`CHECK_ATTEMPTS` tries (botocore's and osgym's), so an endpoint
        that refuses connections fails in seconds; the message is the one a later write would give.

        Raises:
            StoreError: naming the request, the cause and what to check.
        """
        if self._check_client is None:
            quick = self.options.model_copy(update={"max_attempts": min(self.options.max_attempts, CHECK_ATTEMPTS)})
            self._check_client = quick.boto3_client()
        client, key = self._check_client, self._key(probe_name())
        attempts = min(self.options.retries + 1, CHECK_ATTEMPTS)
        # HeadBucket first: some servers (SeaweedFS) create a missing bucket on the first PUT.
        self._retrying(f"HeadBucket {self.bucket}", lambda: client.head_bucket(Bucket=self.bucket), attempts=attempts)
        self._retrying(f"PUT s3://{self.bucket}/{key}",
                       lambda: client.put_object(Bucket=self.bucket, Key=key, Body=b"osgym store probe"),
                       attempts=attempts)
        self._retrying(f"DELETE s3://{self.bucket}/{key}", lambda: client.delete_object(Bucket=self.bucket, Key=key),
                       attempts=attempts)

    def list(self, rel_dir: str) -> dict[str, int]:
        """Object names (relative to ``rel_dir``) and sizes directly under ``rel_dir``."""
        prefix = self._key(rel_dir) + "/"
        return self._retrying(f"list s3://{self.bucket}/{prefix}",
                              lambda: _list_names(self._client, self.bucket, prefix))

    def staging_path(self, rel: str) -> None:
        """Shards are built in the writer's temporary directory and uploaded whole."""
        return None

    def put_file(self, staged: Path, rel: str, *, sha256: str, rows: int) -> None:
        """Upload a finished shard; it becomes visible at ``rel`` only when the upload completes.

        Its sha256 and row count go along as object metadata, so a resume needs one HEAD per shard.
        """
        from boto3.s3.transfer import TransferConfig

        transfer = TransferConfig(
            multipart_threshold=self.options.multipart_threshold,
            multipart_chunksize=self.options.multipart_chunksize,
            max_concurrency=4,
        )
        key = self._key(rel)
        metadata = {SHA256_METADATA_KEY: sha256, ROWS_METADATA_KEY: str(rows)}
        self._retrying(
            f"upload of {staged.name} to s3://{self.bucket}/{key}",
            lambda: self._client.upload_file(
                str(staged), self.bucket, key, ExtraArgs={"Metadata": metadata}, Config=transfer
            ),
        )

    def put(self, rel: str, data: bytes, content_type: str = "application/octet-stream") -> None:
        key = self._key(rel)
        self._retrying(
            f"PUT s3://{self.bucket}/{key}",
            lambda: self._client.put_object(Bucket=self.bucket, Key=key, Body=data, ContentType=content_type),
        )

    def read(self, rel: str) -> bytes:
        """The whole object; :class:`~osgym.storage.base.MissingFile` when there is none.

        Raises:
            MissingFile: when there is no object at ``rel``.
            StoreError: when S3 fails (after retries, for a transient fault).
        """
        from botocore.exceptions import ClientError

        key = self._key(rel)
        what = f"GET s3://{self.bucket}/{key}"

        def get() -> bytes:
            try:
                return bytes(self._client.get_object(Bucket=self.bucket, Key=key)["Body"].read())
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") in _MISSING_KEY_CODES:
                    raise MissingFile(self._refused(what, exc)) from exc  # a StoreError: not retried
                raise

        return self._retrying(what, get)

    def delete(self, rel: str) -> None:
        key = self._key(rel)
        self._retrying(
            f"DELETE s3://{self.bucket}/{key}",
            lambda: self._client.delete_object(Bucket=self.bucket, Key=key),
        )

    def shard_info(self, rel: str) -> tuple[int, str]:
        """A committed shard's row count and sha256: from its upload metadata, else by reading it."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        key = self._key(rel)
        head = self._retrying(
            f"HEAD s3://{self.bucket}/{key}", lambda: self._client.head_object(Bucket=self.bucket, Key=key)
        )
        meta = head.get("Metadata", {})
        if SHA256_METADATA_KEY in meta and str(meta.get(ROWS_METADATA_KEY, "")).isdigit():
            return int(meta[ROWS_METADATA_KEY]), str(meta[SHA256_METADATA_KEY])

        def read() -> tuple[int, str]:
            with self.filesystem.open_input_file(f"{self.bucket}/{key}") as f:
                try:
                    rows = pq.ParquetFile(f).metadata.num_rows
                except pa.ArrowInvalid as exc:
                    raise StoreError(f"s3://{self.bucket}/{key} is not a readable Parquet file: {exc}") from exc
            h = hashlib.sha256()
            body = self._client.get_object(Bucket=self.bucket, Key=key)["Body"]
            for chunk in iter(lambda: body.read(2**20), b""):
                h.update(chunk)
            return rows, h.hexdigest()

        return self._retrying(f"read of s3://{self.bucket}/{key}", read)


def _list_names(client: Any, bucket: str, prefix: str) -> dict[str, int]:
    """The objects directly under ``prefix`` (a key prefix ending in ``/``): name below it -> size in bytes."""
    out: dict[str, int] = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix, Delimiter="/"):
        for obj in page.get("Contents", []):
            name = obj["Key"][len(prefix):]
            if name and "/" not in name:
                out[name] = int(obj["Size"])
    return out


def duckdb_s3_route(con: duckdb.DuckDBPyConnection) -> str:
    """Which route DuckDB can take to S3 on this machine: ``"httpfs"`` or ``"pyarrow"``.

    ``"httpfs"`` only when the extension is already installed for this DuckDB
    version and loads; nothing is downloaded.
    """
    try:
        con.execute("LOAD httpfs")
    except Exception:  # duckdb raises IOException/InvalidInputException by version
        return "pyarrow"
    return "httpfs"
