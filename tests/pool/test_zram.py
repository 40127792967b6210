"""zram: ``osgym host tune --zram SIZE`` turns on compressed swap in memory, ``--undo`` resets it, and a
replica given a swap share (``ReplicaLimits.swap_mib``) outgrows its memory limit into it, while one
without (the default) is held to its limit.

The tests set up this machine's ``/dev/zram0`` and swap; a fixture turns both off again, whatever
happens, and the state file is the test's own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from osgym.cli import app
from osgym.errors import ReplicaOomKilled
from osgym.replicas import ksm, zram
from osgym.replicas.pool import ReplicaLimits, ReplicaPool

pytestmark = [pytest.mark.docker]

# ~400 MiB of bytes the process really holds (a repeated pattern: it compresses, as heaps do); it prints
# their size and how much of itself is swapped out (VmSwap, kB) while it still holds them
ALLOCATE = ("import re; b = bytes(range(256)) * (400 * 4096); "
            "print(len(b) >> 20, re.search(r'VmSwap:\\s+(\\d+)', open('/proc/self/status').read()).group(1))")


def _swaps() -> str:
    return Path("/proc/swaps").read_text()


@pytest.fixture
def zram_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The device unused before the test (it is the machine's: the operator's own would be refused) and
    after it."""
    state = tmp_path / "zram-before.json"
    monkeypatch.setattr(zram, "STATE_FILE", state)
    found = zram.status()
    assert not found.active and found.disksize_bytes == 0, f"/dev/{zram.DEVICE} is in use on this machine: {found}"
    try:
        yield state
    finally:
        if not state.exists() and zram.status().disksize_bytes:  # a test failed between sizing and recording
            state.write_text("{}")
        zram.undo(state_file=state)
        assert f"/dev/{zram.DEVICE}" not in _swaps()


def test_tune_turns_compressed_swap_on_and_undo_resets_it(zram_state: Path) -> None:
    done = zram.tune(zram.parse_size("128M"), "lz4", state_file=zram_state)
    assert any("disksize: 128 MiB" in line for line in done) and any("swapon" in line for line in done), done
    st = zram.status()
    assert st.active and st.disksize_bytes == 128 * 2**20 and st.algorithm == "lz4"
    assert f"/dev/{zram.DEVICE}" in _swaps()
    assert zram.tune(256 * 2**20, state_file=zram_state) == []  # ours already: left as it is
    assert zram.status().disksize_bytes == 128 * 2**20
    undone = zram.undo(state_file=zram_state)
    assert undone[0] == f"swapoff /dev/{zram.DEVICE}" and not zram_state.exists()
    assert not zram.status().active and zram.status().disksize_bytes == 0
    assert zram.undo(state_file=zram_state) == []


def test_a_replica_outgrows_its_memory_limit_into_zram_only_with_a_swap_share(
        make_pool: Callable[..., ReplicaPool], zram_state: Path) -> None:
    zram.tune(zram.parse_size("1G"), "lz4", state_file=zram_state)
    held = make_pool(1, limits=ReplicaLimits(mem_mib=256))  # the default: no swap
    swapping = make_pool(1, limits=ReplicaLimits(mem_mib=256, swap_mib=512))
    # killed by the cgroup's OOM killer: the replica lives, and its lease ends as a replica fault
    with pytest.raises(ReplicaOomKilled), held.lease() as r:
        res = r.execute(["python3", "-c", ALLOCATE], timeout=60)
        assert res.returncode != 0 and not res.output.startswith("400"), res
        assert r.execute("echo alive", shell=True, timeout=20).output.strip() == "alive"
    with swapping.lease() as r:
        res = r.execute(["python3", "-c", ALLOCATE], timeout=60)
        assert res.returncode == 0 and res.output.split()[0] == "400", res
        assert int(res.output.split()[1]) > 100 * 1024, res  # over 100 MiB of it went to swap
    st = zram.status()
    assert st.active and st.stored_bytes > 0, st  # to the device (its pages there were freed as it exited)


def test_cli_tune_and_undo_and_bad_sizes(zram_state: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ksm, "STATE_FILE", tmp_path / "ksm-before.json")  # --undo undoes KSM too: never the operator's
    runner = CliRunner()
    bad = runner.invoke(app, ["host", "tune", "--zram", "lots"])
    assert bad.exit_code == 2 and "expected a size such as 16G" in bad.output, bad.output
    assert not zram.status().active
    huge = runner.invoke(app, ["host", "tune", "--zram", "100T"])
    assert huge.exit_code == 2 and "twice the memory" in huge.output, huge.output
    assert runner.invoke(app, ["host", "tune", "--zram", "1G", "--undo"]).exit_code == 2
    try:
        res = runner.invoke(app, ["host", "tune", "--zram", "256M"])
        assert res.exit_code == 0 and "swapon /dev/zram0" in res.output, res.output
        shown = runner.invoke(app, ["host", "status"])
        assert shown.exit_code == 0 and "zram swap on (0.2 GiB, lz4)" in shown.output, shown.output
    finally:
        res = runner.invoke(app, ["host", "tune", "--undo"])
    assert res.exit_code == 0 and "swapoff /dev/zram0" in res.output, res.output
    assert not zram.status().active and not zram_state.exists()
