"""Image inputs: the wheels the Dockerfile installs are built on demand and are part of the content hash."""

from __future__ import annotations

from pathlib import Path

import pytest

from osgym.collection.recipe import load_recipe
from osgym.errors import ConfigError, ImageError
from osgym.replicas import images
from osgym.replicas.pool import ReplicaLimits, limits_for


def _tree(root: Path, wheels: dict[str, bytes]) -> Path:
    (root / "desktop").mkdir(parents=True)
    (root / "server").mkdir()
    (root / "desktop" / "Dockerfile").write_text("FROM scratch\n")
    (root / "desktop" / "requirements-user.txt").write_text("# comment\nPyMsgBox==2.0.1\npyautogui==0.9.54  # x\n")
    (root / "server" / "app.py").write_text("print('hi')\n")
    (root / "wheels").mkdir()
    for name, data in wheels.items():
        (root / "wheels" / name).write_bytes(data)
    return root


def test_missing_wheels_reads_the_requirements(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"pyautogui-0.9.54-py3-none-any.whl": b"a"})
    assert images.missing_wheels(root) == ["PyMsgBox==2.0.1"]
    (root / "wheels" / "pymsgbox-2.0.1-py3-none-any.whl").write_bytes(b"b")
    assert images.missing_wheels(root) == []
    assert images.ensure_wheels(root, log=lambda _m: None) is False  # nothing to build


def test_content_hash_covers_wheels_tier_and_server(tmp_path: Path) -> None:
    wheels = {"pyautogui-0.9.54-py3-none-any.whl": b"a", "pymsgbox-2.0.1-py3-none-any.whl": b"b"}
    root = _tree(tmp_path, wheels)
    first = images.content_hash("desktop", root=root)
    assert images.content_hash("desktop", root=root) == first
    assert images.content_hash("apps", root=root) != first
    (root / "wheels" / "pymsgbox-2.0.1-py3-none-any.whl").write_bytes(b"changed")
    second = images.content_hash("desktop", root=root)
    assert second != first
    (root / "server" / "app.py").write_text("print('changed')\n")
    assert images.content_hash("desktop", root=root) != second


def test_a_failing_wheel_build_is_an_image_error(tmp_path: Path) -> None:
    root = _tree(tmp_path, {})
    (root / "desktop" / "requirements-user.txt").write_text("no-such-package-osgym-xyz==0.0.0\n")
    with pytest.raises(ImageError, match="pip wheel"):
        images.ensure_wheels(root, log=lambda _m: None)


def test_apps_tier_hash_covers_its_directory_and_leaves_desktop_tags_alone(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"pyautogui-0.9.54-py3-none-any.whl": b"a", "pymsgbox-2.0.1-py3-none-any.whl": b"b"})
    (root / "apps" / "rootfs").mkdir(parents=True)
    (root / "apps" / "Dockerfile").write_text("FROM scratch\n")
    (root / "apps" / "rootfs" / "vlcrc").write_text("qt-privacy-ask=0\n")
    desktop, apps = images.content_hash("desktop", root=root), images.content_hash("apps", root=root)
    assert apps != desktop
    (root / "apps" / "rootfs" / "vlcrc").write_text("qt-privacy-ask=1\n")
    assert images.content_hash("apps", root=root) != apps  # a file under apps/rootfs is an input
    assert images.content_hash("desktop", root=root) == desktop  # ...of the apps tier only
    changed = images.content_hash("apps", root=root)
    (root / "desktop" / "requirements-user.txt").write_text("PyMsgBox==2.0.1\n")  # apps installs these too
    assert images.content_hash("apps", root=root) != changed
    assert images.DOCKERFILES["apps"] == "apps/Dockerfile"


def test_an_unknown_tier_is_an_image_error(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"pyautogui-0.9.54-py3-none-any.whl": b"a", "pymsgbox-2.0.1-py3-none-any.whl": b"b"})
    with pytest.raises(ImageError, match=r"tier: expected one of .*'apps'.*actual 'office'"):
        images.content_hash("office", root=root)


def test_a_recipe_may_ask_for_the_apps_tier_and_gets_its_limits() -> None:
    assert load_recipe({"name": "x", "episodes": 1, "tier": "apps"}).tier == "apps"
    for retired in ("office", "desktop-full"):  # desktop-full: the apps tier replaced it
        with pytest.raises(ConfigError, match="tier"):
            load_recipe({"name": "x", "episodes": 1, "tier": retired})
    # Chromium + Calc alone take ~473 MiB and ~132 threads (bench/bench_apps_tier.py): past the desktop default.
    apps, desktop = limits_for("apps"), limits_for("desktop")
    assert desktop == ReplicaLimits()
    assert apps.mem_mib >= 1024 and apps.pids > desktop.pids
