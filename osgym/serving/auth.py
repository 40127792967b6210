"""Who may use the environment server: bearer tokens, or nobody-checked on loopback by the operator's choice.

Every request carries ``Authorization: Bearer <token>``; a token is one the operator configured
(``OSGYM_SERVE_TOKENS``) or, when none is, one made at start and printed once. The token's
fingerprint (not the token) names the client: its sessions are its own, capped per client, and
recorded in the dataset under that name. OSGym's own client sends no token, so
``open_loopback`` accepts tokenless requests, and only when the server listens on 127.0.0.1 and
the request comes from there.

>>> access = Access.with_tokens(["s3cret-token-0123456789"])
>>> access.owner("Bearer s3cret-token-0123456789", "10.0.0.2")
'token-706b9b78'
>>> access.owner(None, "127.0.0.1")
Traceback (most recent call last):
...
osgym.serving.auth.Unauthorized: expected an 'Authorization: Bearer <token>' header, actual none
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
from collections.abc import Sequence
from dataclasses import dataclass

from osgym.errors import ConfigError, OsgymError

__all__ = ["ANONYMOUS", "MIN_TOKEN_LENGTH", "Access", "Forbidden", "Unauthorized", "fingerprint", "new_token"]

ANONYMOUS = "anonymous"
"""The client name of tokenless requests (``open_loopback``)."""
MIN_TOKEN_LENGTH = 16
LOOPBACK_HOST = "127.0.0.1"


class Unauthorized(OsgymError):
    """Raised when a request has no valid bearer token (401)."""


class Forbidden(OsgymError):
    """Raised when a tokenless request comes from anywhere but loopback (403)."""


def fingerprint(token: str) -> str:
    """The name a token's client goes by: a short hash, so the token itself is never stored or logged."""
    return "token-" + hashlib.sha256(token.encode()).hexdigest()[:8]


def new_token() -> str:
    """A fresh random token (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


@dataclass(frozen=True)
class Access:
    """The tokens a server accepts, and whether tokenless loopback requests are let in."""

    _owners: tuple[tuple[bytes, str], ...]
    open_loopback: bool = False

    def __repr__(self) -> str:  # never the tokens
        return f"Access(tokens={len(self._owners)}, open_loopback={self.open_loopback})"

    @classmethod
    def with_tokens(cls, tokens: Sequence[str], *, open_loopback: bool = False, host: str = LOOPBACK_HOST) -> Access:
        """Accept ``tokens``; with ``open_loopback``, tokenless requests too (``host`` must be 127.0.0.1).

        Raises:
            ConfigError: if a token is shorter than ``MIN_TOKEN_LENGTH``, there is no token and no
                ``open_loopback``, or ``open_loopback`` is asked for on another address.
        """
        short = [fingerprint(t) for t in tokens if len(t) < MIN_TOKEN_LENGTH]
        if short:
            raise ConfigError(f"serve tokens: expected at least {MIN_TOKEN_LENGTH} characters, actual shorter: "
                              f"{', '.join(short)}")
        if open_loopback and host != LOOPBACK_HOST:
            raise ConfigError(f"tokenless access: expected the server on {LOOPBACK_HOST}, actual {host!r} (anyone "
                              "who reaches that address could drive the replicas)")
        if not tokens and not open_loopback:
            raise ConfigError("serve: expected at least one token (OSGYM_SERVE_TOKENS) or tokenless loopback access")
        return cls(tuple((t.encode(), fingerprint(t)) for t in tokens), open_loopback)

    def owner(self, authorization: str | None, client_host: str | None) -> str:
        """The client a request comes from.

        Raises:
            Unauthorized: no ``Bearer`` token, or an unknown one (unless tokenless loopback is open).
            Forbidden: a tokenless request from anywhere but loopback.
        """
        if authorization:
            scheme, _, token = authorization.partition(" ")
            if scheme.lower() != "bearer" or not token.strip():
                raise Unauthorized("expected an 'Authorization: Bearer <token>' header, actual another scheme")
            given = token.strip().encode()
            found = None
            for secret, name in self._owners:  # compare with every token, in constant time each
                if hmac.compare_digest(secret, given):
                    found = name
            if found is None:
                raise Unauthorized("the bearer token is not one this server accepts")
            return found
        if not self.open_loopback:
            raise Unauthorized("expected an 'Authorization: Bearer <token>' header, actual none")
        if not _loopback(client_host):
            raise Forbidden(f"tokenless requests are accepted from {LOOPBACK_HOST} only, actual {client_host}")
        return ANONYMOUS


def _loopback(host: str | None) -> bool:
    try:
        return host is not None and ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
