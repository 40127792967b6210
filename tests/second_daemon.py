"""A second Docker daemon that stands in for a second host (pool and scale-out tests).

The second ``dockerd`` runs on this machine with its own socket, data-root,
exec-root, pidfile, containerd namespace, cgroup parent and no bridge, so it
shares nothing with the main daemon but the kernel. :class:`SecondDaemon.kill`
simulates the host dying: dockerd, its containerd, the shims and every container
process are SIGKILLed. The fixture removes everything afterwards (processes,
mounts, cgroups, directories).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
import uuid
from pathlib import Path

import docker

MAIN_CONFIG = Path("/etc/docker/daemon.json")


class SecondDaemon:
    """A throwaway dockerd with its own state under ``base``."""

    def __init__(self, base: Path, extra_args: tuple[str, ...] = ()):
        self.base = base
        self.extra_args = extra_args  # more dockerd flags, e.g. --experimental and a runtime
        self.name = f"osgym-d2-{uuid.uuid4().hex[:6]}"
        self.sock = base / "docker.sock"
        self.url = f"unix://{self.sock}"
        self.exec_root = base / "exec"
        self.data_root = base / "data"
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = base / "dockerd.log"
        # its own bridge: a dockerd started with --bridge=none deletes docker0, the main daemon's bridge
        self.bridge = f"od2{self.name[-6:]}"

    def start(self, timeout: float = 60) -> docker.DockerClient:
        self.base.mkdir(parents=True, exist_ok=True)
        if not Path(f"/sys/class/net/{self.bridge}").exists():
            subprocess.run(["ip", "link", "add", self.bridge, "type", "bridge"], check=True, capture_output=True)
            subprocess.run(["ip", "addr", "add", "172.31.251.1/24", "dev", self.bridge], check=True,
                           capture_output=True)
        # Its own configuration: the main daemon's (the crun runtime), less what extra_args may give as flags,
        # which dockerd refuses to find in both places (scripts/ensure-criu.sh puts them in the main one's).
        cfg = json.loads(MAIN_CONFIG.read_text()) if MAIN_CONFIG.exists() else {}
        cfg.pop("experimental", None)
        cfg.get("runtimes", {}).pop("runc-criu", None)
        (self.base / "daemon.json").write_text(json.dumps(cfg))
        args = [
            "dockerd", "--config-file", str(self.base / "daemon.json"), "--host", self.url,
            "--data-root", str(self.data_root), "--exec-root", str(self.exec_root),
            "--pidfile", str(self.base / "docker.pid"), f"--bridge={self.bridge}", "--iptables=false",
            "--ip-masq=false",
            "--ip-forward=false", "--cgroup-parent", f"/{self.name}", "--containerd-namespace", self.name,
            "--containerd-plugins-namespace", f"{self.name}-plugins", "--storage-driver", "overlay2",
            *self.extra_args,
        ]
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while True:
            try:
                client = docker.DockerClient(base_url=self.url, max_pool_size=32, timeout=60)
                client.ping()
                return client
            except docker.errors.DockerException:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"second dockerd did not start: {self.log.read_text()[-2000:]}") from None
                time.sleep(0.1)

    def _pids(self) -> set[int]:
        """dockerd, its containerd and shims (by their exec-root in argv) and the container processes."""
        pids: set[int] = set()
        marker = str(self.base).encode()
        for d in Path("/proc").iterdir():
            if d.name.isdigit():
                with contextlib.suppress(OSError):
                    if marker in (d / "cmdline").read_bytes():
                        pids.add(int(d.name))
        for procs in Path("/sys/fs/cgroup/pids", self.name).glob("*/cgroup.procs"):
            with contextlib.suppress(OSError):
                pids.update(int(p) for p in procs.read_text().split())
        return pids - {os.getpid()}

    def kill(self) -> None:
        """The host dies: SIGKILL the daemon, containerd, shims and every container process."""
        for _ in range(3):
            pids = self._pids()
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.2)
        if self.proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5)

    def destroy(self) -> None:
        self.kill()
        mounts = []
        with open("/proc/mounts") as f:
            for line in f:
                target = line.split()[1]
                if target.startswith(str(self.base)):
                    mounts.append(target)
        for target in sorted(mounts, key=len, reverse=True):
            subprocess.run(["umount", "-l", target], check=False, capture_output=True)
        for ctl in Path("/sys/fs/cgroup").iterdir():
            root = ctl / self.name
            if root.is_dir():
                for sub in sorted(root.glob("**/"), key=lambda p: len(str(p)), reverse=True):
                    with contextlib.suppress(OSError):
                        sub.rmdir()
        subprocess.run(["ip", "link", "delete", self.bridge], check=False, capture_output=True)
        shutil.rmtree(self.base, ignore_errors=True)
