"""Image inputs: the wheels the Dockerfile installs are built on demand and are part of the content hash."""

from __future__ import annotations

from pathlib import Path

import pytest

from osgym.errors import ImageError
from osgym.replicas import images


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
    assert images.content_hash("desktop-full", root=root) != first
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
