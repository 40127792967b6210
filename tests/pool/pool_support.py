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


DOCKER_NET = {"ipv4.ip_unprivileged_port_start": ["0"], "ipv4.ping_group_range": ["0", "2147483647"],
              "ipv6.conf.all.disable_ipv6": ["1"]}
"""A replica's network namespace as a start leaves it: Docker's own sysctls for a container with a namespace of
its own (low ports and ping for every user) and the pool's (no IPv6)."""
LOOPBACK_ONLY = ("import socket\n"
                 "names = [l.split(':')[0].strip() for l in open('/proc/net/dev').readlines()[2:]]\n"
                 "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(1)\n"
                 "socket.create_connection(s.getsockname(), timeout=5).close()\n"
                 f"net = {{n: open('/proc/sys/net/' + n.replace('.', '/')).read().split()\n"
                 f"       for n in {tuple(DOCKER_NET)}}}\n"
                 "print(names, open('/proc/net/if_inet6').read().split(), socket.gethostbyname('localhost'), net)\n")


def assert_loopback_only(replica: Any) -> None:
    """A replica without a network, cold or a clone: no network sandbox of Docker's (no prestart hook to run on
    every start and restore; /etc/hosts is the pool's), and its namespace holds an IPv4 loopback that is up (a
    connection to 127.0.0.1 goes through) and nothing else, with the sysctls a start writes (:data:`DOCKER_NET`,
    which a restore writes with CRIU's action script, scripts/criu/restore-netns.c), and ``localhost`` resolves."""
    res = replica.execute(["python3", "-c", LOOPBACK_ONLY], timeout=20)
    assert res.output.strip() == f"['lo'] [] 127.0.0.1 {DOCKER_NET}", res
    config = replica.container.client.api.inspect_container(replica.container.id)["Config"]
    assert config.get("NetworkDisabled") is True, config.get("NetworkDisabled")
