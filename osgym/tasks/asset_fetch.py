"""``osgym tasks fetch-assets DIR --cache PATH|s3://...``: fill the asset cache where there is a network.

Every http(s) URL the task files under DIR make setup steps or getters fetch
(:func:`osgym.tasks.asset_urls.urls_in_task_json`, on the JSON whether the task loads today or not) is
downloaded once, whole, and added to the cache (:meth:`AssetCache.add`: blob, then manifest).
A URL already in the manifest whose blob is present is not downloaded again, so a second run
fetches nothing. A URL that cannot be fetched (an HTTP error, a size over the cap, a host it may
not reach) is reported with its reason and leaves nothing in the cache.

Task files are untrusted, and this command runs where there is a network, so by default a URL
whose host resolves to a loopback, private, link-local or otherwise non-public address is refused
(cloud metadata endpoints and internal services stay out of datasets). A host name is resolved
once, every address it gives is vetted, and the connection goes to a vetted address itself, with the
name kept for the Host header, TLS's server name and certificate check: a name that answers a public
address to the check and 127.0.0.1 to the connection (DNS rebinding) reaches nothing else. Redirects
are followed here, each hop resolved and vetted the same way. Proxy settings from the environment are
ignored (a proxy would resolve the name again, out of sight); ``SSL_CERT_FILE``/``SSL_CERT_DIR`` still
count. ``allow_private_hosts`` lifts the address check, e.g. for assets served on the local network.

>>> r = FetchReport([FetchResult("https://a.example/x", "fetched", size=3),
...                  FetchResult("https://a.example/y", "failed", reason="HTTP 404 Not Found")])
>>> print(r.render())
fetched 1 (3 B), already cached 0, failed 1
failed:
  https://a.example/y: HTTP 404 Not Found
"""

from __future__ import annotations

import ipaddress
import json
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import httpx

from osgym.errors import OsgymError, TaskLoadError
from osgym.retrying import retrying
from osgym.tasks.asset_urls import urls_in_task_json
from osgym.tasks.assets import REMOTE_SCHEMES, AssetCache
from osgym.tasks.taskdir import task_files

__all__ = ["DEFAULT_MAX_MIB", "FetchReport", "FetchResult", "collect_urls", "fetch_assets"]

DEFAULT_MAX_MIB = 512
"""Largest file fetched by default (OSWorld's largest assets are videos and datasets of tens of MiB)."""
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_ATTEMPTS = 4
_RETRY_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
MAX_REDIRECTS = 10


class FetchFailed(OsgymError):
    """One URL could not be fetched; the message is the reason shown in the summary."""


class _Transient(FetchFailed):
    """A failure another try may fix (a 5xx, 429, a timeout, a dropped connection)."""


@dataclass
class FetchResult:
    url: str
    status: str  # "fetched", "cached" or "failed"
    reason: str = ""
    size: int = 0
    fields: list[str] = field(default_factory=list)


@dataclass
class FetchReport:
    results: list[FetchResult] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)

    def count(self, status: str) -> int:
        return sum(r.status == status for r in self.results)

    @property
    def ok(self) -> bool:
        return self.count("failed") == 0

    def render(self) -> str:
        """A summary line, then each failed URL with its reason (and the task fields that name it)."""
        size = sum(r.size for r in self.results if r.status == "fetched")
        lines = [f"fetched {self.count('fetched')} ({_human(size)}), already cached {self.count('cached')}, "
                 f"failed {self.count('failed')}"]
        failed = [r for r in self.results if r.status == "failed"]
        if failed:
            lines.append("failed:")
            for r in failed:
                named = f"  [{'; '.join(r.fields[:3])}{' ...' if len(r.fields) > 3 else ''}]" if r.fields else ""
                lines.append(f"  {r.url}: {r.reason}{named}")
        if self.unreadable:
            lines.append(f"skipped {len(self.unreadable)} unreadable task file(s): {', '.join(self.unreadable[:5])}"
                         f"{' ...' if len(self.unreadable) > 5 else ''}")
        return "\n".join(lines)


def _human(n: int) -> str:
    """>>> _human(3), _human(5 * 2**20)
    ('3 B', '5.0 MiB')
    """
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} KiB" if n < 2**20 else f"{n / 2**20:.1f} MiB"


def collect_urls(root: Path, *, exclude: frozenset[str] = frozenset()) -> tuple[dict[str, list[str]], list[str]]:
    """Every remote URL the task files under ``root`` name (``tasks check``'s discovery and ``exclude``):
    URL -> the fields naming it (``"<file>: config[0].parameters.files[0].url"``), in file order;
    and the files that are not readable JSON.

    Raises:
        TaskLoadError: if ``root`` is not a directory.
    """
    urls: dict[str, list[str]] = {}
    unreadable: list[str] = []
    if not root.is_dir():
        raise TaskLoadError(f"tasks fetch-assets: {str(root)!r} is not a directory")
    for path, relpath in task_files(root, exclude):
        rel = str(relpath)
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            unreadable.append(rel)
            continue
        for where, url in urls_in_task_json(data):
            urls.setdefault(url, []).append(f"{rel}: {where}")
    return urls, unreadable


_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def _is_public(addr: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """True for a public address, judging an IPv6 one also by the IPv4 address it carries (mapped, 6to4,
    NAT64), which a gateway on the way would deliver to.

    >>> [_is_public(ipaddress.ip_address(a)) for a in ("93.184.215.14", "127.0.0.1", "169.254.169.254")]
    [True, False, False]
    >>> [_is_public(ipaddress.ip_address(a)) for a in ("::ffff:127.0.0.1", "2002:7f00:1::", "64:ff9b::a9fe:a9fe")]
    [False, False, False]
    """
    if not addr.is_global:
        return False
    if isinstance(addr, ipaddress.IPv6Address):
        nat64 = ipaddress.IPv4Address(int(addr) & 0xFFFFFFFF) if addr in _NAT64 else None
        return all(v4 is None or v4.is_global for v4 in (addr.ipv4_mapped, addr.sixtofour, nat64))
    return True


def _is_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _addresses(url: httpx.URL, allow_private_hosts: bool) -> list[str]:
    """The addresses to connect to for ``url``: its host resolved once (an IP literal as it is), every one vetted.

    Raises:
        FetchFailed: if the URL has no host, or (unless ``allow_private_hosts``) any address is not public.
        _Transient: if the name does not resolve.
    """
    host = url.raw_host.decode("ascii")
    if not host:
        raise FetchFailed(f"no host in the URL {str(url)!r:.200}")
    if _is_literal(host):
        addrs = [ipaddress.ip_address(host)]
    else:
        try:
            infos = socket.getaddrinfo(host, url.port or (443 if url.scheme == "https" else 80),
                                       type=socket.SOCK_STREAM)
        except OSError as exc:
            raise _Transient(f"cannot resolve {host!r}: {exc.strerror or exc}") from exc
        addrs = list(dict.fromkeys(ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos))
    if not allow_private_hosts:
        for addr in addrs:
            if not _is_public(addr):
                raise FetchFailed(f"host {host!r} resolves to the non-public address {addr} (refused: task files "
                                  "are untrusted; pass --allow-private-hosts to fetch from such hosts)")
    return [str(a) for a in addrs]


def _send(client: httpx.Client, cookies: httpx.Cookies, url: httpx.URL, allow_private_hosts: bool) -> httpx.Response:
    """GET ``url`` (not following a redirect) from the first vetted address of its host that accepts a connection.

    Raises:
        FetchFailed, _Transient: as :func:`_addresses` does.
        httpx.TransportError: if no address could be reached, or the exchange failed.
    """
    host = url.raw_host.decode("ascii")
    addrs = _addresses(url, allow_private_hosts)
    named = httpx.Request("GET", url, cookies=cookies)  # cookies are matched by name, never by address
    # The address stands in the URL only for the connection: the server sees the name (Host, SNI) and the
    # certificate is checked against it. Connection: close, since the pool keys connections by address and
    # another name on the same address must not reuse one whose certificate was checked for this name.
    headers = {"Host": url.netloc.decode("ascii"), "Connection": "close"}
    if "Cookie" in named.headers:
        headers["Cookie"] = named.headers["Cookie"]
    extensions = {"sni_hostname": host} if url.scheme == "https" and not _is_literal(host) else {}
    for i, addr in enumerate(addrs):
        request = client.build_request("GET", url.copy_with(host=addr), headers=headers, extensions=extensions)
        try:
            resp = client.send(request, stream=True)
        except httpx.ConnectError:
            if i == len(addrs) - 1:
                raise
            continue
        client.cookies.clear()  # the client filed them under the address; keep them under the name instead
        cookies.extract_cookies(httpx.Response(resp.status_code, headers=resp.headers, request=named))
        return resp
    raise FetchFailed(f"{host!r} resolves to no address")


_DRIVE_HOSTS = frozenset({"drive.google.com", "drive.usercontent.google.com", "docs.google.com"})


def drive_page(final_url: str, content_type: str) -> bool:
    """True when Google Drive answered a web page instead of the file (a virus-scan or quota warning):
    caching it would hand the task an HTML page under the file's name.

    >>> drive_page("https://drive.usercontent.google.com/download?id=x", "text/html")
    True
    >>> drive_page("https://drive.usercontent.google.com/download?id=x", "application/octet-stream")
    False
    >>> drive_page("https://example.org/page.html", "text/html")
    False
    """
    return urlparse(final_url).hostname in _DRIVE_HOSTS and content_type == "text/html"


def _download(client: httpx.Client, cookies: httpx.Cookies, url: str, max_bytes: int,
              allow_private_hosts: bool) -> tuple[bytes, str]:
    current = httpx.URL(url)
    try:
        for _ in range(MAX_REDIRECTS + 1):
            if current.scheme not in REMOTE_SCHEMES:
                raise FetchFailed(f"redirected to a non-http(s) URL {str(current)!r:.200}")
            resp = _send(client, cookies, current, allow_private_hosts)
            try:
                if resp.has_redirect_location:
                    current = current.join(resp.headers["Location"])
                    continue
                return _body(resp, current, max_bytes)
            finally:
                resp.close()
        raise FetchFailed(f"more than {MAX_REDIRECTS} redirects")
    except httpx.InvalidURL as exc:
        raise FetchFailed(f"an invalid URL: {exc}") from exc
    except httpx.TransportError as exc:
        raise _Transient(f"{type(exc).__name__}: {exc or 'no answer'}") from exc


def _body(resp: httpx.Response, url: httpx.URL, max_bytes: int) -> tuple[bytes, str]:
    """The body of the final answer and its content type, read up to ``max_bytes``.

    Raises:
        FetchFailed, _Transient: for an HTTP error, a body over the cap, or a Google Drive warning page.
    """
    if resp.status_code >= 400:
        reason = f"HTTP {resp.status_code} {resp.reason_phrase}".strip()
        raise (_Transient if resp.status_code in _RETRY_STATUS else FetchFailed)(reason)
    declared = resp.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise FetchFailed(f"{_human(int(declared))} is over the size cap of {_human(max_bytes)} "
                          "(raise it with --max-mib)")
    chunks, size = [], 0
    for chunk in resp.iter_bytes():
        size += len(chunk)
        if size > max_bytes:
            raise FetchFailed(f"more than the size cap of {_human(max_bytes)} (raise it with --max-mib)")
        chunks.append(chunk)
    ctype = resp.headers.get("Content-Type", "application/octet-stream").split(";")[0].strip().lower()
    if drive_page(str(url), ctype):
        raise FetchFailed("Google Drive answered a web page, not the file (a quota or virus-scan warning); "
                          "try again later")
    return b"".join(chunks), ctype or "application/octet-stream"


def fetch_assets(root: Path, cache: AssetCache, *, exclude: frozenset[str] = frozenset(),
                 max_bytes: int = DEFAULT_MAX_MIB * 2**20, timeout_s: float = DEFAULT_TIMEOUT_S,
                 attempts: int = DEFAULT_ATTEMPTS, backoff_s: float = 1.0, allow_private_hosts: bool = False,
                 on_start: Callable[[int], None] | None = None,
                 on_result: Callable[[FetchResult], None] | None = None) -> FetchReport:
    """Download every URL the task files under ``root`` name that ``cache`` lacks, and add it to ``cache``.

    ``on_start(n)`` is called with the number of URLs, ``on_result`` after each one (for progress).

    Raises:
        TaskLoadError: if ``root`` is not a directory.
        StoreError: if the cache cannot be read or written (a failed download is a result instead).
    """
    urls, unreadable = collect_urls(root, exclude=exclude)
    report = FetchReport(unreadable=unreadable)
    if on_start is not None:
        on_start(len(urls))
    held, blobs = cache.manifest(reload=True), cache.blobs()

    timeout = httpx.Timeout(timeout_s, connect=min(timeout_s, 15.0))
    cookies = httpx.Cookies()
    # trust_env=False: no proxy from the environment (it would resolve names again, unvetted); the operator's
    # SSL_CERT_FILE/SSL_CERT_DIR still choose the trusted CAs.
    with httpx.Client(follow_redirects=False, timeout=timeout, trust_env=False,
                      verify=httpx.create_ssl_context(trust_env=True),
                      headers={"User-Agent": "osgym-fetch-assets"}) as client:
        for url, fields in urls.items():
            entry = held.get(url)
            if entry is not None and blobs.get(entry.sha256) == entry.size:
                result = FetchResult(url, "cached", size=entry.size, fields=fields)
            else:
                result = _fetch_one(client, cookies, cache, url, fields, max_bytes=max_bytes, attempts=attempts,
                                    backoff_s=backoff_s, allow_private_hosts=allow_private_hosts)
            report.results.append(result)
            if on_result is not None:
                on_result(result)
    return report


def _fetch_one(client: httpx.Client, cookies: httpx.Cookies, cache: AssetCache, url: str, fields: list[str], *,
               max_bytes: int, attempts: int, backoff_s: float, allow_private_hosts: bool) -> FetchResult:
    if urlparse(url).hostname is None:
        return FetchResult(url, "failed", reason="no host in the URL", fields=fields)
    try:
        for attempt in retrying(attempts=attempts, on=_Transient, backoff_s=backoff_s, backoff_max_s=30.0):
            with attempt:
                data, ctype = _download(client, cookies, url, max_bytes, allow_private_hosts)
    except FetchFailed as exc:
        tries = f" (after {attempts} tries)" if isinstance(exc, _Transient) and attempts > 1 else ""
        return FetchResult(url, "failed", reason=f"{exc}{tries}", fields=fields)
    entry = cache.add(url, data, ctype)
    return FetchResult(url, "fetched", size=entry.size, fields=fields)
