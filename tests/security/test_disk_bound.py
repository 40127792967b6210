"""A replica's disk is bounded by default (issue 38, "a replica's writable layer is unbounded on overlay2
over ext4, so one agent can fill /var/lib/docker").

Docker cannot cap a writable layer on overlay2 over ext4 (``storage_opt size`` needs xfs with pquota),
so the agent's account, `user`, may write only to size-capped tmpfs mounts: its home, ``/tmp`` (with
``/var/tmp`` a link to it) and ``/dev/shm``. Their pages count against the replica's memory limit, so
an agent that fills them hurts only its own replica. The image's home is unpacked into the fresh home
at start, so the tiers' settings files are there.

- on both tiers, nothing `user` can write lies on the container's writable layer (or any mount but a
  size-capped tmpfs), and the home holds every file the image put there;
- the agent writes through ``/execute`` until refused: "No space left on device" at the cap, the
  writable layer (measured by :mod:`osgym.replicas.disk`) and the host's free space unchanged, the
  written pages charged to the replica's memory, and the replica still healthy.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Iterator

import docker
import pytest

from osgym.errors import ConfigError, ReplicaError
from osgym.replicas import images
from osgym.replicas.client import Replica
from osgym.replicas.disk import writable_layer_usage
from osgym.replicas.pool import ReplicaLimits, ReplicaPool, limits_for
from tests.conftest import TEST_SCREEN, held_replica

pytestmark = pytest.mark.docker

MIB = 2**20
HOME = "/home/user"
HOME_ARCHIVE = "/usr/local/share/osgym/home.tar"
"""Where the images keep their home directory as built (replica_images/*/Dockerfile)."""
LAYER_SLACK = 1 * MIB
"""How much the writable layer may grow while the agent fills its home. Nothing in an idle replica
writes to its layer (the server wrote its Xauthority before the first reading), so any growth of
the fill's size (hundreds of MiB) would be the fill itself; a MiB leaves room for a lock or cache file
the desktop might write meanwhile."""

WRITABLE = ["find", "/", "(", "-path", "/proc", "-o", "-path", "/sys", ")", "-prune", "-o",
            "-writable", "!", "-type", "l", "!", "-type", "c", "-print"]
"""Every path the agent's account may write (symlinks and character devices such as /dev/null aside)."""

SEEDED = {"desktop": [".bashrc", ".profile", "Desktop", "Documents", "Downloads"],
          "apps": [".config/GIMP/2.10/pluginrc", ".config/GIMP/2.10/gimprc", ".config/vlc/vlcrc",
                   ".config/libreoffice/4/user/registrymodifications.xcu", ".thunderbird/profiles.ini",
                   ".config/xfce4/panel/launcher-3", ".config/Code/User", "Desktop"]}
"""Files the images put in home that their apps need (the apps tier's settings: replica_images/README.md)."""

_COMPARE_HOME = r"""
import json, os, stat, sys, tarfile
home, archive = sys.argv[1], sys.argv[2]
missing, wrong, n = [], [], 0
with tarfile.open(archive) as tar:
    for m in tar.getmembers():
        n += 1
        path = os.path.normpath(os.path.join(home, m.name))
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            missing.append(m.name)
            continue
        same_type = (m.isdir(), m.isfile(), m.issym()) == (stat.S_ISDIR(st.st_mode), stat.S_ISREG(st.st_mode),
                                                           stat.S_ISLNK(st.st_mode))
        if not same_type or st.st_uid != os.getuid() or (not m.issym() and stat.S_IMODE(st.st_mode) != m.mode):
            wrong.append(m.name)
print(json.dumps({"members": n, "missing": missing, "wrong": wrong}))
"""


def _mounts(replica: Replica) -> dict[str, tuple[str, set[str]]]:
    """The replica's mounts as its agent sees them: mount point -> (filesystem type, options)."""
    out = replica.execute(["cat", "/proc/self/mounts"], timeout=10).output
    mounts = {}
    for line in out.splitlines():
        _dev, point, fstype, options, *_ = line.split()
        mounts[point.replace("\\040", " ")] = (fstype, set(options.split(",")))
    return mounts


def _mount_of(path: str, mounts: dict[str, tuple[str, set[str]]]) -> str:
    return max((m for m in mounts if path == m or path.startswith(m.rstrip("/") + "/")), key=len)


def _capped(fstype: str, options: set[str]) -> bool:
    """A tmpfs with a size (its pages count against the container's memory), or POSIX message queues
    (bounded by RLIMIT_MSGQUEUE, in memory)."""
    return (fstype == "tmpfs" and any(o.startswith("size=") for o in options)) or fstype == "mqueue"


def _used_and_size(replica: Replica, path: str) -> tuple[int, int]:
    out = replica.execute(["df", "-B1", "--output=used,size", path], timeout=10).output.split()
    return int(out[2]), int(out[3])


def _shmem(replica: Replica) -> int:
    """The container cgroup's tmpfs and shared-memory pages (cgroup v2's memory.stat, then v1's)."""
    for name in ("/sys/fs/cgroup/memory.stat", "/sys/fs/cgroup/memory/memory.stat"):
        res = replica.execute(["cat", name], timeout=10)
        if res.returncode == 0:
            stat = dict(line.split() for line in res.output.splitlines())
            return int(stat.get("shmem", stat.get("total_shmem", -1)))
    raise AssertionError("no memory.stat in the replica's cgroup")


def _host_free(docker_client: docker.DockerClient) -> int:
    st = os.statvfs(docker_client.info()["DockerRootDir"])
    return st.f_bavail * st.f_frsize


@pytest.fixture(scope="module", params=["desktop", "apps"])
def tier_replica(request: pytest.FixtureRequest, docker_client: docker.DockerClient) -> Iterator[tuple[str, Replica]]:
    """One replica of each tier, with the tier's default limits."""
    tier = request.param
    tag = images.build(tier, client=docker_client, log=lambda _m: None).tag
    with held_replica(tag, docker_client, f"disk-{tier}", screen=TEST_SCREEN, limits=limits_for(tier)) as r:
        yield tier, r


def test_the_agent_can_write_only_to_capped_tmpfs_mounts(tier_replica: tuple[str, Replica]) -> None:
    tier, r = tier_replica
    found = r.execute(WRITABLE, timeout=120)
    writable = found.output.splitlines()
    assert HOME in writable and "/tmp" in writable, found  # the probe sees what it must
    mounts = _mounts(r)
    outside = sorted(p for p in writable if not _capped(*mounts[_mount_of(p, mounts)]))
    assert outside == [], f"{tier}: `user` can write outside size-capped tmpfs mounts: {outside[:20]}"


def test_the_home_is_a_fresh_tmpfs_seeded_from_the_image(tier_replica: tuple[str, Replica]) -> None:
    tier, r = tier_replica
    mounts = _mounts(r)
    assert HOME in mounts, f"{tier}: the home directory is on the writable layer, not a mount of its own"
    fstype, options = mounts[HOME]
    assert fstype == "tmpfs", (fstype, options)
    cap_mib = limits_for(tier).home_mib
    assert cap_mib is not None, f"{tier}: no home cap by default"
    assert {f"size={cap_mib * 1024}k", "mode=755", "uid=1000", "gid=1000"} <= options, options
    for name in SEEDED[tier]:
        assert r.execute(["test", "-e", f"{HOME}/{name}"], timeout=10).returncode == 0, f"{tier}: no ~/{name}"
    res = r.execute(["python3", "-c", _COMPARE_HOME, HOME, HOME_ARCHIVE], timeout=60)
    assert res.returncode == 0, res
    seeded = json.loads(res.output)
    assert seeded["members"] > len(SEEDED[tier]) and seeded["missing"] == [] and seeded["wrong"] == [], seeded


def test_the_agent_fills_its_home_until_refused_and_the_hosts_disk_is_untouched(
        make_pool: Callable[..., ReplicaPool], docker_client: docker.DockerClient) -> None:
    pool = make_pool(1)  # the desktop tier's default limits
    with pool.lease() as r:
        used, size = _used_and_size(r, HOME)
        attempt = min(size, 512 * MIB) + 32 * MIB  # past the cap, but never more than a bounded amount
        assert pool.limits.home_mib is not None and size == pool.limits.home_mib * MIB, (size, pool.limits)
        layer, host, shmem = writable_layer_usage(r.container), _host_free(docker_client), _shmem(r)
        fill = r.execute(f"head -c {attempt} /dev/zero > {HOME}/fill", shell=True, timeout=120)
        host_after, layer_after, shmem_after = _host_free(docker_client), writable_layer_usage(r.container), _shmem(r)
        written = int(r.execute(["stat", "-c", "%s", f"{HOME}/fill"], timeout=10).output)
        assert fill.returncode != 0 and "No space left on device" in fill.error, (fill, written)
        assert size - MIB <= used + written <= size, (used, written, size)  # refused at the cap, not before
        assert layer.complete and layer_after.complete
        assert layer_after.bytes - layer.bytes <= LAYER_SLACK, (layer, layer_after)
        # Other tests may write to the host's disk meanwhile: half the fill tells "it went to disk" apart.
        assert host - host_after < written // 2, (host, host_after, written)
        assert shmem_after - shmem >= written * 9 // 10, (shmem, shmem_after)  # the replica's memory pays
        with pytest.raises(ReplicaError, match="507"):
            r.write_file(f"{HOME}/more", b"\0" * MIB)  # the file route says "full" clearly, too
        r.execute(["rm", f"{HOME}/fill"], timeout=10)
        r.write_file(f"{HOME}/more", b"\0" * MIB)
        assert r.health()["status"] == "ok"


def test_home_mib_none_keeps_the_images_home_on_the_writable_layer(make_pool: Callable[..., ReplicaPool]) -> None:
    # The operator's way back, for hosts where Docker bounds the layer itself (disk_mib): the image's own home.
    pool = make_pool(1, limits=dataclasses.replace(limits_for("desktop"), home_mib=None))
    with pool.lease() as r:
        assert HOME not in _mounts(r)
        assert r.execute(["test", "-f", f"{HOME}/.bashrc"], timeout=10).returncode == 0
        r.write_file(f"{HOME}/note", b"kept")
        assert r.read_file(f"{HOME}/note") == b"kept"


@pytest.mark.parametrize("field", ["home_mib", "tmp_mib"])
def test_a_zero_size_is_refused_because_tmpfs_reads_it_as_no_cap(field: str) -> None:
    with pytest.raises(ConfigError, match="at least 1 MiB"):
        ReplicaLimits(**{field: 0})
