"""Which S3 faults another try may fix (:func:`is_transient`), and how to word one for the operator.

botocore raises ``ClientError`` (with an HTTP status and an error code) and its own connection errors;
pyarrow's S3 filesystem raises ``OSError("AWS Error <KIND> ...")``. Both are read here, through the
chain of causes, so a fault re-raised by another layer is still recognised.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator

__all__ = ["describe", "hint", "is_transient"]

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
    """A fault in one line: S3's error code and message, else the exception's type and text.

    >>> describe(TimeoutError("read timed out"))
    'TimeoutError: read timed out'
    """
    found = _client_error(exc)
    if found is None:
        return f"{type(exc).__name__}: {exc}"
    status, code, message = found
    return f"{code}: {message}" if code != str(status) else f"HTTP {status} {message}"


def hint(exc: BaseException, bucket: str) -> str:
    """What to check after a fault that another try cannot fix: the credentials, the bucket, their permissions.

    >>> hint(ValueError("?"), "b")
    'check the bucket, the credentials and their permissions'
    """
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
