"""KSM: replicas opt their processes in (inherited from the entrypoint), and ``osgym host tune --ksm``
runs the host's ksmd with the scan-time advisor, reports what it changed, and ``--undo`` puts it back.

The tests change machine-wide settings in /sys/kernel/mm/ksm; a fixture restores every value it found,
whatever happens, and the state file is the test's own (the CLI test uses the real one only when the
operator has none).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import docker
import pytest
from typer.testing import CliRunner

from osgym.cli import app
from osgym.replicas import ksm
from osgym.replicas.pool import POOL_LABEL, ReplicaPool

pytestmark = [pytest.mark.docker]


@pytest.fixture
def ksm_restored() -> Iterator[dict[str, str]]:
    found = ksm.read_knobs()  # these machines' kernel has KSM and its advisor (a ConfigError says otherwise)
    try:
        yield found
    finally:
        for knob in reversed(ksm.KNOBS):  # run first
            if ksm.read_knobs()[knob] != found[knob]:
                (ksm.KSM_DIR / knob).write_text(found[knob])


def _merge_any(pool: ReplicaPool) -> str:
    with pool.lease() as r:
        res = r.execute("sed -n 's/^ksm_merge_any: //p' /proc/self/ksm_stat", shell=True, timeout=20)
    return res.output.strip()


def test_replica_processes_opt_in_unless_told_not_to(make_pool: Callable[..., ReplicaPool]) -> None:
    # the agent's command is a grandchild of the entrypoint: it inherited the flag through fork and exec
    assert _merge_any(make_pool(1)) == "yes"
    assert _merge_any(make_pool(1, memory_merge=False)) == "no"


def _merging_pages(docker_client: docker.DockerClient, pool: ReplicaPool) -> int:
    """Pages of the pool's own processes that ksmd merged (the kernel's per-process count).

    The machine-wide pages_sharing is no measure here: other tests' replicas come and go while this one
    runs, and their merged pages leave that count as they are removed.
    """
    total = 0
    for c in docker_client.containers.list(filters={"label": f"{POOL_LABEL}={pool.name}"}):
        top = c.top(ps_args="-o pid")
        for row in top["Processes"] or []:
            try:
                stat = Path(f"/proc/{row[0]}/ksm_stat").read_text()
            except OSError:  # the process ended between ps and the read
                continue
            total += int(dict(line.split(maxsplit=1) for line in stat.splitlines())["ksm_merging_pages"])
    return total


def test_tune_merges_replica_pages_and_undo_restores(make_pool: Callable[..., ReplicaPool],
                                                     docker_client: docker.DockerClient,
                                                     ksm_restored: dict[str, str], tmp_path: Path) -> None:
    state = tmp_path / "ksm-before.json"
    pool = make_pool(2)  # two idle replicas: the same desktop twice
    changes = ksm.tune(max_cpu=50, target_scan_time=5, state_file=state)
    assert {c.knob: c.after for c in changes}.items() <= {"run": "1", "advisor_mode": "scan-time",
                                                         "advisor_max_cpu": "50",
                                                         "advisor_target_scan_time": "5"}.items()
    assert ksm.read_knobs() == {"run": "1", "advisor_mode": "scan-time", "advisor_max_cpu": "50",
                                "advisor_target_scan_time": "5"}
    # tuning again keeps the first record: undo returns to the machine's own values
    ksm.tune(max_cpu=30, target_scan_time=5, state_file=state)
    deadline = time.monotonic() + 60
    while _merging_pages(docker_client, pool) <= 256 and time.monotonic() < deadline:  # 1 MiB merged, at least
        time.sleep(1)
    merged = _merging_pages(docker_client, pool)
    assert ksm.status().run and merged > 256, (merged, ksm.status())
    assert ksm.ksmd_cpu_seconds() is not None
    undone = ksm.undo(state_file=state)
    assert ksm.read_knobs() == ksm_restored
    assert {c.knob for c in undone} >= {"run"} and not state.exists()
    assert ksm.undo(state_file=state) == []  # nothing left to undo


def test_cli_tune_reports_changes_and_undo_puts_them_back(ksm_restored: dict[str, str], tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ksm, "STATE_FILE", tmp_path / "ksm-before.json")  # never the operator's own record
    runner = CliRunner()
    try:
        res = runner.invoke(app, ["host", "tune", "--ksm", "--max-cpu", "10"])
        assert res.exit_code == 0, res.output
        assert "/sys/kernel/mm/ksm/advisor_max_cpu:" in res.output and "-> 10" in res.output
        assert "osgym host tune --undo" in res.output and ksm.STATE_FILE.exists()
        shown = runner.invoke(app, ["host", "status"])
        assert shown.exit_code == 0 and "ksmd running (advisor scan-time)" in shown.output, shown.output
    finally:
        res = runner.invoke(app, ["host", "tune", "--undo"])
    assert res.exit_code == 0 and "-> " in res.output, res.output
    assert ksm.read_knobs() == ksm_restored and not ksm.STATE_FILE.exists()
    again = runner.invoke(app, ["host", "tune", "--undo"])
    assert again.exit_code == 0 and "nothing to undo" in again.output


def test_bad_values_are_refused_before_anything_changes(ksm_restored: dict[str, str], tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["host", "tune", "--ksm", "--max-cpu", "0"])
    assert res.exit_code == 2 and "max_cpu: expected a percentage of one core" in res.output
    assert CliRunner().invoke(app, ["host", "tune"]).exit_code == 2  # neither --ksm nor --undo
    assert ksm.read_knobs() == ksm_restored
