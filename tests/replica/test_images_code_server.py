"""The apps tier's VS Code: code-server is fetched with npm on the host (images.ensure_code_server),
once per pin, and a missing npm or an unreachable registry is a clear ImageError.

No traffic leaves the machine: the registry these tests point npm at is a closed loopback port.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest

from osgym.errors import ImageError
from osgym.replicas import images

REAL = Path(__file__).resolve().parents[2] / "replica_images"


def _root(tmp_path: Path) -> Path:
    """A replica_images tree with the real pin and fetch script (what the stamp hashes)."""
    for rel in (images.CODE_SERVER_PIN, images.CODE_SERVER_FETCH):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REAL / rel, tmp_path / rel)
    return tmp_path


def _path_without_npm(tmp_path: Path) -> str:
    """A PATH with the tools fetch.sh uses but no npm or node."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "sed", "mktemp", "rm", "tar", "gzip", "openssl", "base64", "mkdir", "mv", "ln"):
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    return str(bin_dir)


def test_a_second_call_with_the_same_pin_is_a_no_op(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _root(tmp_path)
    monkeypatch.setenv("PATH", _path_without_npm(tmp_path))  # a fetch would fail: npm is absent
    # Stale or absent stamp: it must fetch, and says what to install.
    with pytest.raises(ImageError, match=r"apt-get install nodejs npm"):
        images.ensure_code_server(root, log=lambda _m: None)
    # The archive and the stamp a fetch of this pin leaves: nothing to do, npm never asked.
    cache = root / images.CODE_SERVER_CACHE
    cache.mkdir()
    (cache / "code-server.tar.gz").write_bytes(b"archive")
    pin, script = root / images.CODE_SERVER_PIN, root / images.CODE_SERVER_FETCH
    (cache / "stamp").write_text(hashlib.sha256(pin.read_bytes() + b"\0" + script.read_bytes()).hexdigest())
    assert images.ensure_code_server(root, log=lambda _m: None) is False
    # A new pin invalidates it.
    pin.write_text(pin.read_text().replace("version=", "version=0"))
    with pytest.raises(ImageError, match="npm is not installed"):
        images.ensure_code_server(root, log=lambda _m: None)


def test_an_unreachable_registry_is_an_image_error_that_says_so(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    if shutil.which("npm") is None:
        pytest.fail("npm is not installed on this host: the apps tier needs it (apt-get install nodejs npm)")
    root = _root(tmp_path)
    # Port 9 on loopback: nothing listens, so npm gets ECONNREFUSED at once, without leaving the machine.
    monkeypatch.setenv("npm_config_registry", "http://127.0.0.1:9/")
    monkeypatch.setenv("npm_config_cache", str(tmp_path / "npm-cache"))  # nothing cached: npm must ask
    monkeypatch.setenv("npm_config_fetch_retries", "0")
    with pytest.raises(ImageError, match="not reachable from this host") as err:
        images.ensure_code_server(root, log=lambda _m: None)
    assert "code-server" in str(err.value)
    assert not (root / images.CODE_SERVER_CACHE / "stamp").exists()


def test_the_content_hash_covers_the_pin_not_the_archive(tmp_path: Path) -> None:
    root = _root(tmp_path)
    for sub in ("desktop", "server"):
        (root / sub).mkdir()
    (root / "desktop" / "Dockerfile").write_text("FROM scratch\n")
    (root / "apps" / "Dockerfile").write_text("FROM scratch\n")
    first = images.content_hash("apps", root=root)
    (root / images.CODE_SERVER_CACHE).mkdir()
    (root / images.CODE_SERVER_CACHE / "code-server.tar.gz").write_bytes(os.urandom(64))
    assert images.content_hash("apps", root=root) == first  # the 27 MB archive is not read
    pin = root / images.CODE_SERVER_PIN
    pin.write_text(pin.read_text() + "\n")
    assert images.content_hash("apps", root=root) != first
