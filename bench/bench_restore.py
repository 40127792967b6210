"""Reset by restore (issue 41): checkpoint one warmed replica, restore clones of it, measure both.

Usage::

    python3 bench/bench_restore.py [--tier apps] [--warm calc|none] [--clones 5] [--screen 1920x1080]

Needs root, dockerd and `make criu`. It starts its own dockerd (tests/second_daemon.py: own socket, data-root
and bridge; experimental, with the runc-criu runtime), loads the tier's image into it, starts one replica
under that runtime, warms it (``calc``: LibreOffice Calc open with no document), checkpoints it and restores
``--clones`` clones one after another, all held at the end. The main daemon is not touched.

One JSON line per measurement:
  - ``template``: cold start to ready, warm-up, dump (Docker's checkpoint), commit, CRIU images' size;
  - ``clone``: create, restore (``start --checkpoint``), first /health and first screenshot after the start
    call, CPU-s of dockerd, containerd, the shim, runc and CRIU during the restore (their processes'
    own and waited-for children's time), CPU-s charged to the clone's cgroup by its first screenshot, its
    memory (cgroup v1 ``memory.usage_in_bytes`` and RSS), and whether its screenshot matches the
    template's apart from the clock;
  - ``held``: MemAvailable before the first clone and with all of them held, per clone.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import docker
from PIL import Image, ImageChops

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from osgym.replicas import images  # noqa: E402
from osgym.replicas.checkpoint import CRIU_RUNTIME, RUNC_CRIU, make_checkpoint, remove_checkpoint, restore  # noqa: E402
from osgym.replicas.client import Replica  # noqa: E402
from osgym.replicas.pool import ReplicaPool  # noqa: E402
from osgym.replicas.provision import SERVER_UID  # noqa: E402
from osgym.sigterm import exit_on_sigterm  # noqa: E402
from tests.second_daemon import SecondDaemon  # noqa: E402


def emit(**kw: Any) -> None:
    print(json.dumps(kw, default=lambda v: round(v, 3) if isinstance(v, float) else str(v)), flush=True)


def daemon_cpu(marker: bytes) -> float:
    """CPU-s (own and waited-for children) of the processes whose command line holds ``marker``."""
    total = 0
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if marker not in Path(f"/proc/{d}/cmdline").read_bytes():
                    continue
                fields = Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()
                total += sum(int(x) for x in fields[11:15])
            except OSError:
                pass
    return total / os.sysconf("SC_CLK_TCK")


def cgroup_value(controller: str, pid: int, name: str) -> int:
    """A value of the cgroup v1 ``controller`` holding ``pid`` (its path as /proc/PID/cgroup gives it)."""
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, ctls, path = line.split(":", 2)
        if controller in ctls.split(","):
            text = Path(f"/sys/fs/cgroup/{controller}{path}/{name}").read_text()
            if name == "memory.stat":
                return int(dict(ln.split() for ln in text.splitlines())["total_rss"])
            return int(text.split()[0])
    raise RuntimeError(f"pid {pid} is in no {controller} cgroup")


def mem_available() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no MemAvailable in /proc/meminfo")


def same_apart_from_clock(a: bytes, b: bytes) -> bool:
    box = ImageChops.difference(Image.open(io.BytesIO(a)).convert("RGB"),
                                Image.open(io.BytesIO(b)).convert("RGB")).getbbox()
    return box is None or (box[2] - box[0] <= 200 and box[3] - box[1] <= 60)


def run(args: argparse.Namespace, d: SecondDaemon, client: docker.DockerClient, work: Path) -> None:
    image = images.build(args.tier, client=docker.from_env(), log=lambda _m: None).tag
    t = time.monotonic()
    save = subprocess.Popen(["docker", "save", image], stdout=subprocess.PIPE)
    subprocess.run(["docker", "-H", d.url, "load", "-q"], stdin=save.stdout, check=True, capture_output=True)
    save.wait()
    emit(kind="load", image=image, s=time.monotonic() - t)
    width, height = (int(v) for v in args.screen.split("x"))
    pool = ReplicaPool(image, 1, standby=0, name=f"bench-restore-{uuid.uuid4().hex[:6]}", docker_client=client,
                       runtime=CRIU_RUNTIME, screen=(width, height), start_timeout=180, run_dir=work / "run")
    clones: list[Replica] = []
    cp = None
    try:
        pool.start()
        with pool.lease() as template:
            t = time.monotonic()
            if args.warm == "calc":
                template.launch(["libreoffice", "--calc"])
                template.wait_window("Calc", timeout=60)
                time.sleep(2)  # its first paint and idle tasks, as an episode's setup waits
            warm_s = time.monotonic() - t
            before = template.screenshot().data
            token = template.api.headers["Authorization"].split()[1]
            template.api.close()
            cp = make_checkpoint(client, template.container.id, work / "checkpoint", token)
        emit(kind="template", tier=args.tier, warm=args.warm, ready_s=pool.stats.start_s[0], warm_s=warm_s,
             dump_s=cp.dump_s, commit_s=cp.commit_s, images_mib=cp.size_bytes() / 2**20)
        avail0 = mem_available()
        for i in range(args.clones):
            rid = uuid.uuid4().hex[:10]
            rdir = work / "run" / rid
            rdir.mkdir(mode=0o700, parents=True)
            os.chown(rdir, SERVER_UID, SERVER_UID)
            cpu0, t0 = daemon_cpu(str(d.base).encode()), time.monotonic()
            res = restore(client, cp, name=f"bench-clone-{rid}", labels={"osgym.bench.clone": rid}, run_dir=rdir)
            cpu_daemon = daemon_cpu(str(d.base).encode()) - cpu0
            r = Replica(rid, f"unix:{rdir}/control.sock", cp.token, socket_owner=SERVER_UID,
                        container=client.containers.get(res.container_id))
            clones.append(r)
            r.health()
            t_health = time.monotonic() - t0
            shot = r.screenshot().data
            t_shot = time.monotonic() - t0
            r.replace_token(secrets.token_urlsafe(24))
            pid = client.api.inspect_container(res.container_id)["State"]["Pid"]
            emit(kind="clone", i=i, create_s=res.create_s, restore_s=res.restore_s, health_s=t_health,
                 screenshot_s=t_shot, cpu_daemon_s=cpu_daemon,
                 cpu_clone_s=cgroup_value("cpuacct", pid, "cpuacct.usage") / 1e9,
                 mem_mib=cgroup_value("memory", pid, "memory.usage_in_bytes") / 2**20,
                 rss_mib=cgroup_value("memory", pid, "memory.stat") / 2**20,
                 same_screenshot=same_apart_from_clock(before, shot))
        time.sleep(5)
        emit(kind="held", clones=len(clones), per_clone_mib=(avail0 - mem_available()) / max(1, len(clones)) / 2**20)
    finally:
        for r in clones:
            r.close()
            r.container.remove(force=True)
        pool.close()
        if cp is not None:
            remove_checkpoint(client, cp)


def main() -> None:
    exit_on_sigterm()
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tier", default="apps", choices=["desktop", "apps"])
    p.add_argument("--warm", default="calc", choices=["calc", "none"])
    p.add_argument("--clones", type=int, default=5)
    p.add_argument("--screen", default="1920x1080")
    args = p.parse_args()
    if args.warm == "calc" and args.tier != "apps":
        p.error("--warm calc needs --tier apps")
    if not RUNC_CRIU.exists():
        p.error(f"no {RUNC_CRIU}: run `make criu` first (as root)")
    work = Path(tempfile.mkdtemp(prefix="osgym-bench-restore-", dir="/var/tmp"))
    d = SecondDaemon(work / "daemon", extra_args=("--experimental", "--add-runtime", f"{CRIU_RUNTIME}={RUNC_CRIU}"))
    try:
        run(args, d, d.start(), work)
    finally:
        d.destroy()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
