"""The one error type routes raise, and request-body helpers. Every error becomes JSON ``{"error": message}``."""

import json


class HttpError(Exception):
    """Raised by a route to answer ``status`` with ``{"error": message}``."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.message = message


def bad(message):
    return HttpError(400, message)


def load_json(body):
    """The request body as a JSON object ({} when empty)."""
    if not body:
        return {}
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise bad(f"body is not JSON: {str(exc)[:200]}") from None
    if not isinstance(data, dict):
        raise bad(f"expected a JSON object, actual {type(data).__name__}")
    return data


def number(data, key, lo, hi, default=None, kind=float):
    """``data[key]`` as a number in [lo, hi] (``default`` when absent)."""
    v = data.get(key, default)
    if isinstance(v, str):
        try:
            v = float(v)
        except ValueError:
            raise bad(f"{key}: expected a number, actual {v!r:.40}") from None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or not lo <= v <= hi:
        raise bad(f"{key}: expected a number in {lo}..{hi}, actual {v!r:.40}")
    return kind(v)
