"""Helpers for the pool tests: drive a Collector in a plain loop, and make replicas misbehave."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from osgym.collection.collector import Collector, EpisodeJob, collect_with_retries
from osgym.episodes.trajectory import EpisodeResult


def run_jobs(collector: Collector, jobs: list[EpisodeJob], workers: int, retries: int = 2) -> list[EpisodeResult]:
    """What the collect flow does, without Prefect; returns the results the collector's sink received."""
    results: list[EpisodeResult] = []
    collector.sink = results.append  # list.append is atomic under the GIL
    with ThreadPoolExecutor(max_workers=workers) as ex:
        list(ex.map(lambda job: collect_with_retries(collector, job, retries), jobs))
    return results


def host_pids(container: Any) -> list[int]:
    """Host PIDs of every process in a container (``docker top``)."""
    top = container.top(ps_args="-eo pid")
    col = top["Titles"].index("PID")
    return [int(p[col]) for p in top["Processes"]]


def sigstop(container: Any) -> None:
    """Hang a replica: SIGSTOP every process in it (``docker pause`` freezes cgroups instead)."""
    for pid in host_pids(container):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGSTOP)


def kernel_oom_kills(container_ids: set[str]) -> set[str] | None:
    """Which of these containers the kernel's OOM killer hit, from its log (``dmesg``); None if the log is
    not readable here (not root, or ``kernel.dmesg_restrict``)."""
    try:
        out = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    # "oom-kill:constraint=CONSTRAINT_MEMCG,...,task_memcg=/docker/<id>,task=python3,..." (cgroup v1 and v2,
    # cgroupfs or systemd drivers: the container id is the last path component, maybe as docker-<id>.scope)
    hit = set(re.findall(r"oom-kill:.*?task_memcg=\S*?([0-9a-f]{64})", out.stdout))
    return container_ids & hit


def push_past_memory_limit(container: Any) -> None:
    """Allocate more than the replica's memory limit inside it (the OOM killer answers)."""
    container.client.api.exec_start(
        container.client.api.exec_create(container.id, ["python3", "-c", "x = bytearray(2 * 10**9)"])["Id"],
        detach=True)


LOOPBACK_ONLY = ("import socket\n"
                 "names = [l.split(':')[0].strip() for l in open('/proc/net/dev').readlines()[2:]]\n"
                 "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(1)\n"
                 "socket.create_connection(s.getsockname(), timeout=5).close()\n"
                 "print(names, open('/proc/net/if_inet6').read().split(), socket.gethostbyname('localhost'))\n")


def assert_loopback_only(replica: Any, *, sandbox: bool) -> None:
    """A replica without a network: its namespace holds an IPv4 loopback that is up (a connection to
    127.0.0.1 goes through) and nothing else, and ``localhost`` resolves; Docker made a network sandbox for it
    (``sandbox``: a clone, whose loopback only the sandbox brings up) or none (a cold replica: no prestart hook
    to run on every start; /etc/hosts is the pool's)."""
    res = replica.execute(["python3", "-c", LOOPBACK_ONLY], timeout=20)
    assert res.output.strip() == "['lo'] [] 127.0.0.1", res
    config = replica.container.client.api.inspect_container(replica.container.id)["Config"]
    assert bool(config.get("NetworkDisabled")) is not sandbox, config.get("NetworkDisabled")
