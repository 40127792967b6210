"""OSWorld's ``/setup/download_file`` on a compatibility replica, served from the host's asset cache.

OSWorld's server downloads the URL itself; an osgym replica has no network, so the pool mounts the
operator's local cache read-only inside the server's own directory and the route reads the URL's
bytes from it, checked against the manifest's sha256. Requests are OSWorld's shape (JSON ``url`` and
``path``); the files are read back through OSWorld's ``/file``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from osgym.errors import ConfigError
from osgym.replicas.pool import ReplicaPool
from osgym.tasks.assets import AssetCache

pytestmark = [pytest.mark.docker, pytest.mark.slow]

URL = "https://assets.osgym.invalid/report.csv"
DATA = b"quarter,sales\nQ1,10\nQ2,12\n"


def _download(endpoint: str, url: str, path: str) -> httpx.Response:
    return httpx.post(f"{endpoint}/setup/download_file", json={"url": url, "path": path}, timeout=30)


def _file(endpoint: str, path: str) -> httpx.Response:
    return httpx.post(f"{endpoint}/file", data={"file_path": path}, timeout=30)


def test_download_file_reads_the_cache_only_and_checks_it(make_pool: Callable[..., ReplicaPool],
                                                          tmp_path: Path) -> None:
    cache = AssetCache(tmp_path / "cache")
    entry = cache.add(URL, DATA, "text/csv")
    tampered = cache.add("https://assets.osgym.invalid/tampered.bin", b"original bytes")
    pool = make_pool(1, compat=True, assets_dir=cache.local_dir)
    with pool.lease() as r:
        ep = r.api.endpoint
        ok = _download(ep, URL, "~/Downloads/report.csv")
        assert ok.status_code == 200, ok.text
        got = _file(ep, "/home/user/Downloads/report.csv")
        assert got.status_code == 200 and got.content == DATA
        assert hashlib.sha256(got.content).hexdigest() == entry.sha256
        # the file is the agent's, as if it had downloaded it
        owner = r.execute("stat -c %U /home/user/Downloads/report.csv", shell=True, timeout=20)
        assert owner.output.strip() == "user", owner

        missing = _download(ep, "https://assets.osgym.invalid/never-fetched.xlsx", "/home/user/a.xlsx")
        assert missing.status_code == 404 and "never-fetched.xlsx" in missing.text, missing.text
        assert "fetch-assets" in missing.text
        outside = _download(ep, URL, "/etc/cron.d/report")
        assert outside.status_code == 403, outside.text
        assert _download(ep, "", "/home/user/x").status_code == 400

        # a blob changed after it was fetched is refused, and nothing is written
        (cache.local_dir / "blobs" / tampered.sha256).write_bytes(b"changed bytes!")  # type: ignore[operator]
        bad = _download(ep, "https://assets.osgym.invalid/tampered.bin", "/home/user/tampered.bin")
        assert bad.status_code == 500 and "sha256" in bad.text, bad.text
        assert _file(ep, "/home/user/tampered.bin").status_code == 404

        # the cache sits in the server's own directory: the agent's account cannot read it
        peek = r.execute("ls /run/osgym/assets/blobs", shell=True, timeout=20)
        assert peek.returncode != 0 and "Permission denied" in peek.output + peek.error, peek
        # and it is read-only there, even with sudo (compatibility replicas allow sudo)
        write = r.execute("echo password | sudo -S -p '' touch /run/osgym/assets/x", shell=True, timeout=20)
        assert write.returncode != 0 and "Read-only file system" in write.output + write.error, write
    assert not (tmp_path / "cache" / "x").exists()


def test_without_a_cache_download_file_says_so(make_pool: Callable[..., ReplicaPool]) -> None:
    pool = make_pool(1, compat=True)
    with pool.lease() as r:
        res = _download(r.api.endpoint, URL, "/home/user/report.csv")
    assert res.status_code == 503 and "OSGYM_ASSET_CACHE" in res.text, res.text


def test_assets_dir_is_for_compat_replicas_only(image: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="compat"):
        ReplicaPool(image, 1, assets_dir=tmp_path)
    with pytest.raises(ConfigError, match="not a directory"):
        ReplicaPool(image, 1, compat=True, assets_dir=tmp_path / "nowhere")
