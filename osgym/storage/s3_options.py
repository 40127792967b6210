"""How to reach an S3-compatible endpoint: :class:`S3Options`, shared by every S3 user (the dataset
store, its readers, the asset cache), with the boto3 client and the pyarrow filesystem it makes.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

if TYPE_CHECKING:
    import pyarrow.fs as pafs

__all__ = ["S3Options"]

DEFAULT_REGION = "us-east-1"
DEFAULT_MAX_ATTEMPTS = 5
DEFAULT_RETRIES = 4
DEFAULT_BACKOFF_S = 1.0
DEFAULT_BACKOFF_MAX_S = 30.0
DEFAULT_CONNECT_TIMEOUT_S = 10.0
DEFAULT_READ_TIMEOUT_S = 60.0
DEFAULT_MULTIPART_THRESHOLD = 64 * 2**20
DEFAULT_MULTIPART_CHUNKSIZE = 16 * 2**20


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
