"""``osgym tasks fetch-assets DIR --cache PATH|s3://...``: fill the asset cache where there is a network.

Every http(s) URL the task files under DIR make setup steps or getters fetch
(:func:`osgym.tasks.assets.urls_in_task_json`, on the JSON whether the task loads today or not) is
downloaded once, whole, and added to the cache (:meth:`AssetCache.add`: blob, then manifest).
A URL already in the manifest whose blob is present is not downloaded again, so a second run
fetches nothing. A URL that cannot be fetched (an HTTP error, a size over the cap, a host it may
not reach) is reported with its reason and leaves nothing in the cache.

Task files are untrusted, and this command runs where there is a network, so by default a URL
whose host resolves to a loopback, private, link-local or otherwise non-public address is refused
(cloud metadata endpoints and internal services stay out of datasets); every redirect is checked
the same way. ``allow_private_hosts`` lifts this, e.g. for assets served on the local network.

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
from osgym.tasks.assets import REMOTE_SCHEMES, AssetCache, urls_in_task_json
from osgym.tasks.taskdir import task_files

__all__ = ["DEFAULT_MAX_MIB", "FetchReport", "FetchResult", "collect_urls", "fetch_assets"]

DEFAULT_MAX_MIB = 512
"""Largest file fetched by default (OSWorld's largest assets are videos and datasets of tens of MiB)."""
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_ATTEMPTS = 4
_RETRY_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})


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


def _check_host(url: httpx.URL) -> None:
    host = url.host
    try:
        infos = socket.getaddrinfo(host, url.port or (443 if url.scheme == "https" else 80), type=socket.SOCK_STREAM)
    except OSError as exc:
        raise _Transient(f"cannot resolve {host!r}: {exc.strerror or exc}") from exc
    for info in infos:
        addr = ipaddress.ip_address(str(info[4][0]).split("%")[0])
        if not addr.is_global:
            raise FetchFailed(f"host {host!r} resolves to the non-public address {addr} (refused: task files are "
                              "untrusted; pass --allow-private-hosts to fetch from such hosts)")


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


def _download(client: httpx.Client, url: str, max_bytes: int) -> tuple[bytes, str]:
    try:
        with client.stream("GET", url) as resp:
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
            if drive_page(str(resp.url), ctype):
                raise FetchFailed("Google Drive answered a web page, not the file (a quota or virus-scan warning); "
                                  "try again later")
            return b"".join(chunks), ctype or "application/octet-stream"
    except httpx.TooManyRedirects as exc:
        raise FetchFailed(f"too many redirects: {exc}") from exc
    except httpx.TransportError as exc:
        raise _Transient(f"{type(exc).__name__}: {exc or 'no answer'}") from exc


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

    def check_request(request: httpx.Request) -> None:
        if request.url.scheme not in REMOTE_SCHEMES:
            raise FetchFailed(f"redirected to a non-http(s) URL {str(request.url)!r:.200}")
        if not allow_private_hosts:
            _check_host(request.url)

    timeout = httpx.Timeout(timeout_s, connect=min(timeout_s, 15.0))
    with httpx.Client(follow_redirects=True, timeout=timeout, trust_env=True, max_redirects=10,
                      headers={"User-Agent": "osgym-fetch-assets"},
                      event_hooks={"request": [check_request]}) as client:
        for url, fields in urls.items():
            entry = held.get(url)
            if entry is not None and blobs.get(entry.sha256) == entry.size:
                result = FetchResult(url, "cached", size=entry.size, fields=fields)
            else:
                result = _fetch_one(client, cache, url, fields, max_bytes=max_bytes, attempts=attempts,
                                    backoff_s=backoff_s)
            report.results.append(result)
            if on_result is not None:
                on_result(result)
    return report


def _fetch_one(client: httpx.Client, cache: AssetCache, url: str, fields: list[str], *, max_bytes: int,
               attempts: int, backoff_s: float) -> FetchResult:
    if urlparse(url).hostname is None:
        return FetchResult(url, "failed", reason="no host in the URL", fields=fields)
    try:
        for attempt in retrying(attempts=attempts, on=_Transient, backoff_s=backoff_s, backoff_max_s=30.0):
            with attempt:
                data, ctype = _download(client, url, max_bytes)
    except FetchFailed as exc:
        tries = f" (after {attempts} tries)" if isinstance(exc, _Transient) and attempts > 1 else ""
        return FetchResult(url, "failed", reason=f"{exc}{tries}", fields=fields)
    entry = cache.add(url, data, ctype)
    return FetchResult(url, "fetched", size=entry.size, fields=fields)
