"""The one retry policy osgym uses, built on tenacity: capped exponential backoff; and how long a server's
``Retry-After`` asks to wait (:func:`retry_after_seconds`).

Call sites iterate it, so the code that is retried stays inline::

    for attempt in retrying(attempts=3, on=ConnectionError, backoff_s=0.5):
        with attempt:
            upload()

>>> calls = []
>>> def flaky():
...     calls.append(1)
...     if len(calls) < 3:
...         raise ConnectionError("not yet")
...     return "ok"
>>> waits = []
>>> for attempt in retrying(attempts=3, on=ConnectionError, backoff_s=1, backoff_max_s=1.5, sleep=waits.append):
...     with attempt:
...         result = flaky()
>>> result, len(calls), waits
('ok', 3, [1.0, 1.5])
"""

from __future__ import annotations

import time
from collections.abc import Callable
from email.utils import parsedate_to_datetime

import tenacity
from tenacity import RetryCallState

ErrorMatch = type[BaseException] | tuple[type[BaseException], ...] | Callable[[BaseException], bool]


def backoff(backoff_s: float, backoff_max_s: float, attempt: int) -> float:
    """Seconds to wait after failed attempt number ``attempt`` (1-based): doubling, capped.

    >>> [backoff(1, 5, n) for n in (1, 2, 3, 4)]
    [1.0, 2.0, 4.0, 5.0]
    """
    return float(min(backoff_max_s, backoff_s * 2 ** (attempt - 1)))


def retrying(
    *,
    attempts: int,
    on: ErrorMatch,
    backoff_s: float = 0.0,
    backoff_max_s: float = 60.0,
    wait_hint: Callable[[BaseException], float | None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    before_sleep: Callable[[RetryCallState], None] | None = None,
) -> tenacity.Retrying:
    """Up to ``attempts`` tries; errors matched by ``on`` are retried, anything else raises at once.

    Args:
        on: an exception class, a tuple of them, or a predicate on the exception.
        wait_hint: the error's own wait (an HTTP ``Retry-After``), used instead of the backoff
            when it gives one; still capped at ``backoff_max_s``.
        sleep: how to wait (tests pass a recorder).
        before_sleep: called before each wait, e.g. to log the retry.

    The last error is re-raised unchanged when the attempts run out.
    """
    if attempts < 1:
        raise ValueError(f"attempts: expected >= 1, actual {attempts}")
    if isinstance(on, type | tuple):
        kinds = on
        matches: Callable[[BaseException], bool] = lambda exc: isinstance(exc, kinds)  # noqa: E731
    else:
        matches = on

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        hinted = wait_hint(exc) if wait_hint is not None and exc is not None else None
        delay = hinted if hinted is not None else backoff(backoff_s, backoff_max_s, state.attempt_number)
        return float(min(delay, backoff_max_s))

    return tenacity.Retrying(
        stop=tenacity.stop_after_attempt(attempts),
        retry=tenacity.retry_if_exception(matches),
        wait=wait,
        sleep=sleep,
        before_sleep=before_sleep,
        reraise=True,
    )


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: delta-seconds or an HTTP date.

    >>> retry_after_seconds("2")
    2.0
    >>> retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0)
    10.0
    >>> retry_after_seconds("soon") is None
    True
    """
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value).timestamp()
        except (TypeError, ValueError, IndexError):
            return None
        seconds = when - (time.time() if now is None else now)
    if seconds != seconds:  # NaN
        return None
    return max(seconds, 0.0)
