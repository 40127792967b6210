"""replica_images/apps/chrome-title.py, which makes Chromium's window titles read ``<page> - Google Chrome``
(OSWorld's tasks activate the browser's window by that name), on a locale pack built here in Chromium's
version 5 layout. The image build runs it on the real pack and fails if it finds no title there; the apps
tier's test (tests/apps/test_apps_osworld_vm.py) activates the window by that title."""

from __future__ import annotations

import importlib.util
import struct
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "replica_images" / "apps" / "chrome-title.py"


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("osgym_chrome_title", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pack(resources: list[tuple[int, bytes]], aliases: list[tuple[int, int]]) -> bytes:
    start = 12 + 6 * (len(resources) + 1) + 4 * len(aliases)
    head = [struct.pack("<IB3xHH", 5, 1, len(resources), len(aliases))]
    offset = start
    for rid, blob in resources:
        head.append(struct.pack("<HI", rid, offset))
        offset += len(blob)
    head.append(struct.pack("<HI", 0, offset))
    head += [struct.pack("<HH", rid, index) for rid, index in aliases]
    return b"".join(head) + b"".join(blob for _, blob in resources)


def unpack(data: bytes) -> tuple[dict[int, bytes], bytes]:
    version, _, count, aliases = struct.unpack_from("<IB3xHH", data, 0)
    assert version == 5
    entries = [struct.unpack_from("<HI", data, 12 + 6 * i) for i in range(count + 1)]
    table = data[12 + 6 * (count + 1):12 + 6 * (count + 1) + 4 * aliases]
    return {entries[i][0]: data[entries[i][1]:entries[i + 1][1]] for i in range(count)}, table


RESOURCES = [(800, b"About Chromium"), (956, b"$1 - Chromium"), (957, b"$1 - Network Sign-in - Chromium"),
             (958, "Caf\u00e9 \u2014 $1".encode())]


def test_the_title_formats_change_and_nothing_else(tmp_path: Path) -> None:
    path = tmp_path / "en-US.pak"
    path.write_bytes(pack(RESOURCES, [(1000, 1)]))
    path.chmod(0o644)
    run = subprocess.run([sys.executable, str(SCRIPT), str(path)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    got, aliases = unpack(path.read_bytes())
    assert got == {800: b"About Chromium", 956: b"$1 - Google Chrome", 957: b"$1 - Network Sign-in - Google Chrome",
                   958: "Caf\u00e9 \u2014 $1".encode()}
    assert aliases == struct.pack("<HH", 1000, 1)
    assert path.stat().st_mode & 0o777 == 0o644


def test_a_pack_without_the_titles_or_not_v5_is_refused_and_left_alone(tmp_path: Path) -> None:
    module = _module()
    done, _ = module.rewrite(pack(RESOURCES, []))
    for data, said in ((done, "no window title format"), (b"\x04" + pack(RESOURCES, [])[1:], "version 4"),
                       (b"\x05\x00", "")):
        path = tmp_path / "x.pak"
        path.write_bytes(data)
        run = subprocess.run([sys.executable, str(SCRIPT), str(path)], capture_output=True, text=True)
        assert run.returncode != 0 and said in run.stderr, run.stderr
        assert path.read_bytes() == data
    with pytest.raises(ValueError, match="no window title format"):
        module.rewrite(done)
