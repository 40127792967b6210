"""restore-netns (scripts/criu/restore-netns.c), CRIU's action script on a replica's restore: it sets up a clone's
new network namespace as runc sets up a started container's (the container's net sysctls, then `lo` up), and
nothing else. Run here against a process in a namespace of its own, as a clone's root task is when CRIU calls
it; tests/apps/test_restore.py checks a real clone's namespace."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from osgym.replicas import checkpoint
from osgym.replicas.checkpoint import NETNS_SCRIPT, RESTORE_CONF, RUNC_CRIU, CheckpointError, check_daemon

HELPER = RUNC_CRIU.parent / NETNS_SCRIPT
SYSCTLS = "\n".join(["net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1",
                     "net.ipv4.ping_group_range=0 2147483647"])  # as runc-criu passes them: a line each


@pytest.fixture(autouse=True)
def installed() -> None:
    if not os.access(HELPER, os.X_OK):  # a failure, not a skip: a skipped test would prove nothing
        pytest.fail(f"needs {HELPER}: run `make criu` as root (make test does)")


@pytest.fixture
def clone_pid() -> Iterator[int]:
    proc = subprocess.Popen(["unshare", "--net", "sleep", "120"])
    try:
        ours = os.stat("/proc/self/ns/net").st_ino
        deadline = time.monotonic() + 10
        while os.stat(f"/proc/{proc.pid}/ns/net").st_ino == ours:  # until unshare has made the namespace
            assert time.monotonic() < deadline, "unshare made no network namespace in 10 s"
            time.sleep(0.01)
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


def script(pid: int | str, action: str = "setup-namespaces", sysctls: str = SYSCTLS) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "CRTOOLS_SCRIPT_ACTION": action, "CRTOOLS_INIT_PID": str(pid),
           "OSGYM_RESTORE_SYSCTLS": sysctls}
    return subprocess.run([str(HELPER)], env=env, capture_output=True, text=True, timeout=10)


def inside(pid: int, *command: str) -> str:
    return subprocess.run(["nsenter", "-t", str(pid), "-n", *command], capture_output=True, text=True,
                          timeout=10, check=True).stdout


def lo(pid: int) -> tuple[bool, list[str]]:
    """Whether ``lo`` is up in ``pid``'s namespace, and its addresses."""
    flags = inside(pid, "ip", "-o", "link", "show", "lo").split("<", 1)[1].split(">", 1)[0].split(",")
    addresses = [line.split()[3] for line in inside(pid, "ip", "-o", "addr", "show", "lo").splitlines()]
    return "UP" in flags, addresses


def test_it_writes_the_sysctls_then_brings_the_loopback_up(clone_pid: int) -> None:
    assert lo(clone_pid) == (False, [])
    done = script(clone_pid)
    assert done.returncode == 0, done.stderr
    assert lo(clone_pid) == (True, ["127.0.0.1/8"])  # no ::1: IPv6 was off before lo came up
    assert inside(clone_pid, "cat", "/proc/sys/net/ipv4/ping_group_range").split() == ["0", "2147483647"]
    assert inside(clone_pid, "cat", "/proc/sys/net/ipv6/conf/lo/disable_ipv6").strip() == "1"
    assert script(clone_pid).returncode == 0  # again: lo is up already, the sysctls hold the same values


def test_every_other_action_is_a_no_op(clone_pid: int) -> None:
    for action in ("pre-restore", "post-setup-namespaces", "post-restore", "network-unlock", "post-resume"):
        assert script(clone_pid, action).returncode == 0
    assert lo(clone_pid) == (False, [])


@pytest.mark.parametrize("sysctls", ["kernel.domainname=x", "net.ipv4..ping_group_range=0", "net/ipv4/ip_forward=1",
                                     "net.ipv4.ping_group_range=0;1", "net.ipv4.ping_group_range", "net.nonexistent=1"])
def test_a_sysctl_it_cannot_write_fails_the_restore_before_lo_is_up(clone_pid: int, sysctls: str) -> None:
    done = script(clone_pid, sysctls=sysctls)
    assert done.returncode == 1 and done.stderr.strip(), done
    assert lo(clone_pid) == (False, [])


def test_the_hosts_namespace_is_left_alone() -> None:
    before = Path("/proc/sys/net/ipv4/ping_group_range").read_text()
    done = script(os.getpid(), sysctls="net.ipv4.ping_group_range=7 7")
    assert done.returncode == 0, done.stderr
    assert Path("/proc/sys/net/ipv4/ping_group_range").read_text() == before


@pytest.mark.parametrize("pid", ["", "1; true", "-1", "99999999999"])
def test_a_root_task_that_is_not_a_process_id_fails(pid: str) -> None:
    done = script(pid)
    assert done.returncode == 1 and done.stderr.strip(), done


def test_a_daemon_whose_restore_options_lack_the_script_cannot_restore(  # type: ignore[no-untyped-def]
    docker_client, tmp_path, monkeypatch
) -> None:
    check_daemon(docker_client)  # as `make criu` installed it
    older = tmp_path / "restore.conf"  # what a `make criu` before the script installed
    older.write_text("".join(line for line in RESTORE_CONF.read_text().splitlines(keepends=True)
                             if NETNS_SCRIPT not in line))
    monkeypatch.setattr(checkpoint, "RESTORE_CONF", older)
    with pytest.raises(CheckpointError, match=f"action script {NETNS_SCRIPT} in {older}.*run it again"):
        check_daemon(docker_client)
