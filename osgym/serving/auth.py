"""Who may use the environment server: bearer tokens, or nobody-checked on loopback by the operator's choice.

Every request carries ``Authorization: Bearer <token>``; a token is one the operator configured
(``OSGYM_SERVE_TOKENS``) or, when none is, one made at start and printed once. The token's
fingerprint (not the token) names the client: its sessions are its own, capped per client, and
recorded in the dataset under that name. OSGym's own client sends no token, so
``open_loopback`` accepts tokenless requests, and only when the server listens on 127.0.0.1 and
the request comes from there, names the server by a loopback name (``Host``: a page that reached it
through DNS rebinding names its own domain), comes from no other web origin (``Origin``: a page of
another local site), and comes from a process of the server's own user (or root): another local user
shares the loopback interface, so the peer's socket is looked up in the kernel's table (:func:`peer_uid`).

>>> access = Access.with_tokens(["s3cret-token-0123456789"])
>>> access.owner("Bearer s3cret-token-0123456789", Caller("10.0.0.2"))
'token-706b9b78'
>>> access.owner(None, Caller("127.0.0.1"))
Traceback (most recent call last):
...
osgym.serving.auth.Unauthorized: expected an 'Authorization: Bearer <token>' header, actual none
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import secrets
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from osgym.errors import ConfigError, OsgymError

__all__ = ["ANONYMOUS", "MIN_TOKEN_LENGTH", "Access", "Caller", "Forbidden", "Unauthorized", "fingerprint", "new_token",
           "peer_uid", "same_origin"]

ANONYMOUS = "anonymous"
"""The client name of tokenless requests (``open_loopback``)."""
MIN_TOKEN_LENGTH = 16
LOOPBACK_HOST = "127.0.0.1"
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]"})
"""What a tokenless request's ``Host`` may name: a rebinding page's request names the page's own domain."""


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
class Caller:
    """Where a request comes from, as the server saw it.

    Attributes:
        client_host: the peer's address.
        client_port: the peer's port (with ``server``, finds the peer's socket: :func:`peer_uid`).
        host_header: the ``Host`` header.
        origin: the ``Origin`` header, which browsers send with cross-origin requests and websockets.
        server: the server's own address and port for this connection.
    """

    client_host: str | None
    client_port: int | None = None
    host_header: str | None = None
    origin: str | None = None
    server: tuple[str, int] | None = None


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

    def owner(self, authorization: str | None, caller: Caller) -> str:
        """The client a request comes from.

        Raises:
            Unauthorized: no ``Bearer`` token, or an unknown one (unless tokenless loopback is open).
            Forbidden: a tokenless request from anywhere but loopback, naming the server by another name,
                from another web origin, or from another local user's process.
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
        if not _loopback(caller.client_host):
            raise Forbidden(f"tokenless requests are accepted from {LOOPBACK_HOST} only, actual {caller.client_host}")
        host = _host_name(caller.host_header)
        if host not in LOOPBACK_NAMES:
            names = ", ".join(sorted(LOOPBACK_NAMES))
            raise Forbidden(f"tokenless requests must name the server by a loopback name ({names}), actual Host "
                            f"{caller.host_header!r:.100}")
        if caller.origin is not None and not same_origin(caller.origin, caller.host_header):
            raise Forbidden(f"tokenless requests from a web page of another origin are refused, actual Origin "
                            f"{caller.origin!r:.100}")
        uid = peer_uid(caller)
        if uid is None or uid not in (os.geteuid(), 0):
            raise Forbidden(f"tokenless requests are accepted from this server's user (uid {os.geteuid()}) only, "
                            f"actual {'an unknown user' if uid is None else f'uid {uid}'}")
        return ANONYMOUS


def _host_name(host_header: str | None) -> str:
    """The name part of a ``Host`` header, lower-cased (``[::1]:8000`` -> ``[::1]``)."""
    host = (host_header or "").strip().lower()
    if host.startswith("["):
        return host[:host.find("]") + 1]
    return host.partition(":")[0]


def same_origin(origin: str, host_header: str | None) -> bool:
    """True if ``origin`` (an ``Origin`` header) is the origin of the server named by ``host_header``.

    >>> same_origin("http://127.0.0.1:8000", "127.0.0.1:8000"), same_origin("http://evil.example", "127.0.0.1:8000")
    (True, False)
    >>> same_origin("null", "127.0.0.1:8000")
    False
    """
    parts = urlsplit(origin.strip())
    return parts.scheme in ("http", "https") and bool(host_header) and parts.netloc.lower() == str(host_header).lower()


def _proc_net_address(text: str) -> tuple[str, int]:
    """An ``address:port`` of /proc/net/tcp{,6} (hex, the address in host byte order per 32-bit word)."""
    addr, _, port = text.partition(":")
    raw = bytes.fromhex(addr)
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    family = socket.AF_INET if len(raw) == 4 else socket.AF_INET6
    return socket.inet_ntop(family, words), int(port, 16)


def _canonical(host: str) -> str:
    ip = ipaddress.ip_address(host.strip("[]"))
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return str(ip)


def peer_uid(caller: Caller) -> int | None:
    """The uid of the local process whose socket is the peer of this connection, from the kernel's TCP
    tables (/proc/net/tcp and tcp6 of this network namespace); None if it is not found there.
    """
    if caller.client_host is None or caller.client_port is None or caller.server is None:
        return None
    try:
        want = ((_canonical(caller.client_host), caller.client_port),
                (_canonical(caller.server[0]), int(caller.server[1])))
    except ValueError:
        return None
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 8:
                continue
            local, remote = _proc_net_address(fields[1]), _proc_net_address(fields[2])
            if ((_canonical(local[0]), local[1]), (_canonical(remote[0]), remote[1])) == want:
                return int(fields[7])
    return None


def _loopback(host: str | None) -> bool:
    try:
        return host is not None and ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
