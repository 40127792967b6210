"""S3 settings and error rules shared by every S3 user: the dataset store and the asset cache.

:class:`S3Options` says how to reach an S3-compatible endpoint; :func:`is_transient` says which
faults another try may fix. They live here, below both :mod:`osgym.tasks` (the asset cache) and
:mod:`osgym.dataset` (the store), so that neither imports the other.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

if TYPE_CHECKING:
    import pyarrow.fs as pafs

__all__ = ["S3Options", "describe", "hint", "is_transient", "list_names"]

DEFAULT_REGION = "us-east-1"
DEFAULT_MAX_ATTEMPTS = 5
DEFAULT_RETRIES = 4
DEFAULT_BACKOFF_S = 1.0
DEFAULT_BACKOFF_MAX_S = 30.0
DEFAULT_CONNECT_TIMEOUT_S = 10.0
DEFAULT_READ_TIMEOUT_S = 60.0
DEFAULT_MULTIPART_THRESHOLD = 64 * 2**20
DEFAULT_MULTIPART_CHUNKSIZE = 16 * 2**20

# pyarrow's S3 filesystem raises OSError("AWS Error <KIND> ..."); these kinds are worth another try.
_PYARROW_TRANSIENT = ("NETWORK_CONNECTION", "INTERNAL_FAILURE", "SERVICE_UNAVAILABLE", "SLOW_DOWN", "THROTTLING",
                      "REQUEST_TIMEOUT", "REQUEST_TIME_TOO_SKEWED")  # fmt: skip

# Error codes that another try may fix, beyond any HTTP 5xx, 408 and 429.
_TRANSIENT_CODES = frozenset(
    {
        "RequestTimeout",
        "RequestTimeoutException",
        "PriorRequestNotComplete",
        "InternalError",
        "ServiceUnavailable",
        "SlowDown",
        "Throttling",
        "ThrottlingException",
        "RequestLimitExceeded",
    }
)


class S3Options(BaseModel):
    """How to reach an S3-compatible endpoint. A frozen value; the repr masks secrets.

    Fields left ``None`` fall back to the standard AWS chain: ``AWS_ENDPOINT_URL_S3``
    or ``AWS_ENDPOINT_URL`` for the endpoint, ``AWS_REGION`` or
    ``AWS_DEFAULT_REGION`` for the region (else ``us-east-1``), and environment
    variables, ``~/.aws`` files or instance roles for credentials.

    >>> S3Options(access_key="AK", secret_key="s3cr3t")
    S3Options(endpoint_url=None, region=None, access_key='AK', secret_key=SecretStr('**********'), ...)
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    endpoint_url: str | None = None
    region: str | None = None
    access_key: str | None = None
    secret_key: SecretStr | None = None
    session_token: SecretStr | None = None
    max_attempts: int = Field(DEFAULT_MAX_ATTEMPTS, ge=1, description="botocore attempts per request")
    retries: int = Field(DEFAULT_RETRIES, ge=0, description="osgym retries of a whole operation")
    backoff_s: float = Field(DEFAULT_BACKOFF_S, ge=0)
    backoff_max_s: float = Field(DEFAULT_BACKOFF_MAX_S, ge=0)
    connect_timeout_s: float = Field(DEFAULT_CONNECT_TIMEOUT_S, gt=0)
    read_timeout_s: float = Field(DEFAULT_READ_TIMEOUT_S, gt=0)
    multipart_threshold: int = Field(DEFAULT_MULTIPART_THRESHOLD, ge=5 * 2**20)
    multipart_chunksize: int = Field(DEFAULT_MULTIPART_CHUNKSIZE, ge=5 * 2**20)

    def __repr_args__(self) -> Any:
        # Keep the doctest repr short: the tuning fields follow as "...".
        shown = ("endpoint_url", "region", "access_key", "secret_key")
        yield from ((k, getattr(self, k)) for k in shown)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.__repr_args__())
        return f"S3Options({args}, ...)"

    @field_validator("endpoint_url")
    @classmethod
    def _check_endpoint(cls, v: str | None) -> str | None:
        if v is None:
            return v
        parts = urlsplit(v)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"endpoint_url: expected http(s)://host[:port], actual {v!r}")
        return v.rstrip("/")

    @model_validator(mode="after")
    def _check_keys(self) -> S3Options:
        if (self.access_key is None) != (self.secret_key is None):
            raise ValueError("access_key and secret_key go together: give both, or neither to use the AWS chain")
        return self

    # -- resolved settings -------------------------------------------------

    def resolved_endpoint(self) -> str | None:
        """The endpoint URL in use: the field, else the AWS environment variables, else AWS itself (None)."""
        return self.endpoint_url or os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")

    def resolved_region(self) -> str:
        """The region in use; always set, so no SDK ever asks instance metadata for it."""
        return self.region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or DEFAULT_REGION

    # -- clients -----------------------------------------------------------

    def boto3_client(self) -> Any:
        """A boto3 S3 client with these settings (path-style addressing on a custom endpoint)."""
        import boto3
        from botocore.config import Config

        endpoint = self.resolved_endpoint()
        config = Config(
            region_name=self.resolved_region(),
            connect_timeout=self.connect_timeout_s,
            read_timeout=self.read_timeout_s,
            retries={"max_attempts": self.max_attempts, "mode": "standard"},
            s3={"addressing_style": "path"} if endpoint else {},
        )
        return boto3.session.Session().client(
            "s3",
            endpoint_url=endpoint,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key.get_secret_value() if self.secret_key else None,
            aws_session_token=self.session_token.get_secret_value() if self.session_token else None,
            config=config,
        )

    def pyarrow_filesystem(self) -> pafs.S3FileSystem:
        """A ``pyarrow.fs.S3FileSystem`` with these settings, for readers (pyarrow, DuckDB)."""
        import pyarrow.fs as pafs

        kwargs: dict[str, Any] = {
            "region": self.resolved_region(),
            "connect_timeout": self.connect_timeout_s,
            "request_timeout": self.read_timeout_s,
            "retry_strategy": pafs.AwsStandardS3RetryStrategy(max_attempts=self.max_attempts),
        }
        endpoint = self.resolved_endpoint()
        if endpoint:
            parts = urlsplit(endpoint)
            kwargs["scheme"] = parts.scheme
            kwargs["endpoint_override"] = parts.netloc
        if self.access_key is not None and self.secret_key is not None:
            kwargs["access_key"] = self.access_key
            kwargs["secret_key"] = self.secret_key.get_secret_value()
            if self.session_token is not None:
                kwargs["session_token"] = self.session_token.get_secret_value()
        return pafs.S3FileSystem(**kwargs)


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        yield cur
        cur = cur.__cause__ or cur.__context__


def is_transient(exc: BaseException) -> bool:
    """True when another try may succeed: connection faults, timeouts, 5xx, 408, 429, throttling.

    >>> is_transient(ConnectionRefusedError())
    True
    >>> is_transient(ValueError("bad"))
    False
    """
    from botocore.exceptions import ClientError, ConnectionError, HTTPClientError

    for e in _chain(exc):
        if isinstance(e, ClientError):
            status = int(e.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
            code = str(e.response.get("Error", {}).get("Code", ""))
            return status >= 500 or status in (408, 429) or code in _TRANSIENT_CODES
        if isinstance(e, ConnectionError | HTTPClientError | builtins.ConnectionError | TimeoutError):
            return True
        if isinstance(e, OSError) and "AWS Error" in str(e):
            return any(kind in str(e) for kind in _PYARROW_TRANSIENT)
    return False


_AUTH_CODES = frozenset({"403", "AccessDenied", "SignatureDoesNotMatch", "InvalidAccessKeyId", "InvalidToken"})
_MISSING_BUCKET_CODES = frozenset({"NoSuchBucket"})


def _client_error(exc: BaseException) -> tuple[int, str, str] | None:
    from botocore.exceptions import ClientError

    for e in _chain(exc):
        if isinstance(e, ClientError):
            err = e.response.get("Error", {})
            status = int(e.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
            return status, str(err.get("Code", "?")), str(err.get("Message", "") or e)
    return None


def describe(exc: BaseException) -> str:
    found = _client_error(exc)
    if found is None:
        return f"{type(exc).__name__}: {exc}"
    status, code, message = found
    return f"{code}: {message}" if code != str(status) else f"HTTP {status} {message}"


def hint(exc: BaseException, bucket: str) -> str:
    found = _client_error(exc)
    status, code = (found[0], found[1]) if found else (0, "")
    if code in _AUTH_CODES or status == 403:
        return (
            "the endpoint refused the credentials: check access_key/secret_key (or the AWS chain) and "
            "their permissions on the bucket"
        )
    if code in _MISSING_BUCKET_CODES or status == 404:
        return f"bucket {bucket!r} was not found: create it, or fix the URI"
    return "check the bucket, the credentials and their permissions"


def list_names(client: Any, bucket: str, prefix: str) -> dict[str, int]:
    """The objects directly under ``prefix`` (a key prefix ending in ``/``): name below it -> size in bytes."""
    out: dict[str, int] = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix, Delimiter="/"):
        for obj in page.get("Contents", []):
            name = obj["Key"][len(prefix):]
            if name and "/" not in name:
                out[name] = int(obj["Size"])
    return out
