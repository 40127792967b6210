"""An agent's tar archive that would unpack too far is refused while it is read: ``compare_archive`` scores 0
within seconds and bounded memory, whatever its headers declare and however far its stream would inflate.

The bombs are real files: a tar header, then tens of GiB (a TiB for bzip2) of zeros, written as one
compressed unit of 64 MiB of zeros repeated (gzip members, bzip2 and xz streams may follow one another),
so building one costs a second and a few MiB. A bomb is scored in a child process whose address space is
bounded, so a regression fails that child, not the machine, and whose peak memory is read from the kernel.
"""

from __future__ import annotations

import bz2
import functools
import gzip
import io
import json
import logging
import lzma
import subprocess
import sys
import tarfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from osgym.tasks import metrics
from osgym.tasks.metrics import archives
from osgym.tasks.metrics.archives import MAX_STREAM

ROOT = Path(__file__).resolve().parents[2]
UNIT = 64 * 2**20  # zeros in one compressed unit
COMPRESS: dict[str, Callable[[bytes], bytes]] = {
    "gz": lambda d: gzip.compress(d, 9, mtime=0), "bz2": lambda d: bz2.compress(d, 9),
    "xz": lambda d: lzma.compress(d, preset=9)}
# How far each bomb inflates: minutes of reading anywhere (these decompress at 250-400 MiB/s here), a few MiB
# on disk (one 64 MiB unit packs to 65 kB, 79 B and 10 kB).
INFLATES = {"gz": 32 * 2**30, "bz2": 2**40, "xz": 64 * 2**30}
SECONDS = 20.0  # reading stops at the cap: ~1 s on a quiet machine
# Reading holds at most the capped stream (tarfile reads a pax header whole) and a decoder's state (xz's
# dictionary: pages of it become resident only as output fills them); measured 270-330 MiB.
GROWTH = MAX_STREAM + 128 * 2**20
HEADROOM = 2 * 2**30  # the child's address space past what its imports took

CHILD = r"""
import json, logging, resource, sys, time
from osgym.tasks import metrics
logs = []
class Keep(logging.Handler):
    def emit(self, record):
        logs.append(record.getMessage())
logging.getLogger("osgym").addHandler(Keep())
def status(key):
    return int(next(l for l in open("/proc/self/status") if l.startswith(key + ":")).split()[1]) * 1024
limit = status("VmSize") + int(sys.argv[3])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
assert metrics.score("compare_archive", sys.argv[2], sys.argv[2], {"file_path": "notes"}) == 1.0  # loads what
# scoring loads on first use, so the peak below is the bomb's alone
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # the peak resident size (VmHWM) starts again from here
rss = status("VmRSS")
start = time.monotonic()
try:
    score, error = metrics.score("compare_archive", sys.argv[1], sys.argv[2], {"file_path": "notes"}), None
except BaseException as exc:
    score, error = None, f"{type(exc).__name__}: {exc}"
print("\n" + json.dumps({"score": score, "error": error, "seconds": time.monotonic() - start,
                         "grew": status("VmHWM") - rss, "logs": logs}))  # a line of its own
"""


@functools.cache
def _unit(comp: str) -> bytes:
    return COMPRESS[comp](b"\0" * UNIT)


def _bomb(path: Path, comp: str, typeflag: bytes) -> Path:
    """A tar stream: one header of ``typeflag`` whose size is all that follows (a regular file declares it to
    the archive's reader; a pax header's size is no member's), then ``INFLATES[comp]`` bytes of zeros."""
    info = tarfile.TarInfo("notes/a.txt")
    info.size, info.type = INFLATES[comp], typeflag
    with path.open("wb") as f:
        f.write(COMPRESS[comp](info.tobuf(format=tarfile.GNU_FORMAT)))  # base-256 sizes past 8 GiB
        for _ in range(INFLATES[comp] // UNIT):
            f.write(_unit(comp))
    return path


def _gold(tmp_path: Path) -> Path:
    gold = tmp_path / "gold.zip"
    with zipfile.ZipFile(gold, "w") as z:
        z.writestr("notes/a.txt", b"a")
    return gold


def _score_in_child(result: Path, expected: Path) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-c", CHILD, str(result), str(expected), str(HEADROOM)], cwd=ROOT,
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


@pytest.mark.slow
@pytest.mark.parametrize("comp", ["gz", "bz2", "xz"])
@pytest.mark.parametrize("typeflag, reason", [(tarfile.REGTYPE, "its files declare more than"),
                                              (tarfile.XHDTYPE, "it unpacks to more than")],
                         ids=["declared-by-a-file", "undeclared-pax-header"])
def test_a_tar_bomb_scores_0_within_seconds_and_bounded_memory(comp: str, typeflag: bytes, reason: str,
                                                               tmp_path: Path) -> None:
    bomb = _bomb(tmp_path / f"bomb.tar.{comp}", comp, typeflag)
    assert bomb.stat().st_size < 40 * 2**20  # ~INFLATES[comp] of zeros packed in a few MiB
    try:
        got = _score_in_child(bomb, _gold(tmp_path))
    finally:
        bomb.unlink()
    assert got["error"] is None and got["score"] == 0.0, got
    assert got["seconds"] < SECONDS, got
    assert got["grew"] < GROWTH, f"peak memory grew by {got['grew'] / 2**20:.0f} MiB"
    assert any(reason in line and "scores 0" in line for line in got["logs"]), got["logs"]


def test_an_archive_that_takes_too_long_to_read_scores_0(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    # A million empty gzip members inflate to nothing, so no byte cap trips, yet each costs Python's gzip
    # reader about 10 µs: 256 MiB of them would hold the evaluator for minutes.
    slow = tmp_path / "slow.tar.gz"
    slow.write_bytes(gzip.compress(b"", mtime=0) * 1_000_000)
    monkeypatch.setattr(archives, "ARCHIVE_TIMEOUT_S", 1.0)
    start = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="osgym"):
        assert metrics.score("compare_archive", str(slow), str(_gold(tmp_path)), {"file_path": "notes"}) == 0.0
    assert time.monotonic() - start < 8.0
    assert any("took longer than 1 s" in r.getMessage() for r in caplog.records), caplog.records


def test_an_archive_listing_too_many_members_scores_0(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for i in range(archives.MAX_MEMBERS + 1):
            t.addfile(tarfile.TarInfo(f"notes/{i}.txt"))
    many = tmp_path / "many.tar.gz"
    many.write_bytes(buf.getvalue())
    with caplog.at_level(logging.WARNING, logger="osgym"):
        assert metrics.score("compare_archive", str(many), str(_gold(tmp_path)), {"file_path": "notes"}) == 0.0
    assert any(f"lists more than {archives.MAX_MEMBERS} members" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("mode", ["w", "w:gz", "w:bz2", "w:xz"])
def test_archives_within_the_limits_still_compare(mode: str, tmp_path: Path) -> None:
    def make(name: str, text: bytes) -> str:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode=mode) as t:  # type: ignore[call-overload]
            for member, data in {"notes/a.txt": text, "notes/b.txt": b"beta\n", "other/c.txt": b"c"}.items():
                info = tarfile.TarInfo(member)
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
        (tmp_path / name).write_bytes(buf.getvalue())
        return str(tmp_path / name)

    same, gold = make("same.tar", b"alpha\n"), make("gold.tar", b"alpha\n")
    assert metrics.score("compare_archive", same, gold, {"file_path": "notes"}) == 1.0
    assert metrics.score("compare_archive", make("diff.tar", b"ALPHA\n"), gold, {"file_path": "notes"}) == 0.5
