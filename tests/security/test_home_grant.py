"""The home grant of root steps (osgym/replicas/home_grant.py) on the host, without a replica: root with no
capability (as a confined root step runs) cannot write a 0755 folder of uid 1000; during the grant it can, and
after it the folder refuses it again with every mode as it was. The passes run as uid 1000 (setpriv), as the
worker runs them in a replica. Needs root on the host (to play both uids) and a filesystem with POSIX ACLs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from osgym.replicas.home_grant import pass_argv

AS_USER = ["setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", "--"]
CAPLESS_ROOT = ["setpriv", "--bounding-set=-all", "--inh-caps=-all", "--"]
"""uid 0 without any capability: a confined root step (osgym.replicas.execution.CONFINED)."""


@pytest.fixture(autouse=True)
def _root_and_setpriv() -> None:
    # a failure, not a skip: a skipped test would let the grant pass unproven (CI runs as root, as make test does)
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.fail("these tests play uid 0 without capabilities and uid 1000: run them as root with setpriv "
                    "(util-linux) installed")


def _pass(home: Path, which: str, limit: int = 1000) -> tuple[int, dict[str, object]]:
    done = subprocess.run([*AS_USER, *pass_argv(which, str(home), limit)], capture_output=True, text=True,
                          timeout=60, check=False)
    return done.returncode, json.loads(done.stdout.strip().splitlines()[-1])


def _root(command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CAPLESS_ROOT, "sh", "-c", command], capture_output=True, text=True, timeout=30,
                          check=False)


def _state(home: Path) -> dict[str, tuple[int, int, bool]]:
    """Each entry's mode, owner and whether it holds an access ACL."""
    out = {}
    for top, dirs, files in os.walk(home):
        for path in [top, *(os.path.join(top, n) for n in dirs + files)]:
            st = os.lstat(path)
            acl = not os.path.islink(path) and "system.posix_acl_access" in os.listxattr(path)
            out[path] = (st.st_mode, st.st_uid, acl)
    return out


@pytest.fixture
def home() -> Iterator[Path]:
    """A small home of uid 1000: 0755 folders, a 0600 file, an executable, a symlink out, a file with its own ACL.
    Under /tmp itself: uid 1000 cannot pass pytest's 0700 temporary folders."""
    base = Path(tempfile.mkdtemp(prefix="osgym-home-grant-"))
    base.chmod(0o755)
    try:
        yield _fill(base / "home")
    finally:
        shutil.rmtree(base)


def _fill(home: Path) -> Path:
    (home / "Desktop" / "private").mkdir(parents=True)
    (home / "Desktop" / "private").chmod(0o700)
    (home / "Desktop" / "notes.txt").write_text("mine\n")
    (home / "Desktop" / "notes.txt").chmod(0o600)
    (home / "run.sh").write_text("#!/bin/sh\necho ran\n")
    (home / "run.sh").chmod(0o744)
    (home / "own-acl.txt").write_text("acl\n")
    (home / "link").symlink_to("/etc/hostname")
    for path in [home, *home.rglob("*")]:
        os.chown(path, 1000, 1000, follow_symlinks=False)
    try:  # an ACL of the file's own (user:2000:r--): the grant leaves it, and the revoke too
        os.setxattr(home / "own-acl.txt", "system.posix_acl_access",
                    bytes.fromhex("02000000" "0100" "0600" "ffffffff" "0200" "0400" "d0070000"
                                  "0400" "0400" "ffffffff" "1000" "0400" "ffffffff" "2000" "0400" "ffffffff"))
    except OSError as exc:
        pytest.fail(f"no POSIX ACLs on {home} ({exc}): replicas' homes need them for root steps; run the tests "
                    "on a filesystem with ACLs (ext4, tmpfs, overlay2 all have them)")
    return home


def test_root_writes_the_home_only_while_granted_and_the_modes_come_back(home: Path) -> None:
    before = _state(home)
    assert _root(f"mkdir {home}/Desktop/by_root").returncode != 0  # capless root is "other" to a 0755 folder

    code, summary = _pass(home, "grant")
    assert code == 0 and summary["changed"] == 5 and summary["failed"] == 0, summary  # not the link, not own-acl
    done = _root(f"mkdir {home}/Desktop/by_root && touch {home}/Desktop/private/by_root && "
                 f"echo more >> {home}/Desktop/notes.txt && {home}/run.sh")
    assert done.returncode == 0 and done.stdout == "ran\n", done
    assert _root(f"echo x >> {home}/own-acl.txt").returncode != 0  # its own ACL: no entry for root

    code, summary = _pass(home, "revoke")
    assert code == 0 and summary["changed"] == 5 and summary["failed"] == 0, summary
    after = _state(home)
    made = {str(home / "Desktop" / "by_root"), str(home / "Desktop" / "private" / "by_root")}
    assert {p: v for p, v in after.items() if p not in made} == before
    assert {after[p][1] for p in made} == {0}  # what root made is root's, as with sudo on Ubuntu
    assert (home / "Desktop" / "notes.txt").read_text() == "mine\nmore\n"
    assert _root(f"mkdir {home}/Desktop/again").returncode != 0


def test_a_pass_stops_past_its_limit_and_the_revoke_still_clears_what_it_granted(home: Path) -> None:
    code, summary = _pass(home, "grant", limit=3)
    assert code == 3 and summary["stopped"] is True and summary["seen"] == 4, summary
    assert _pass(home, "revoke")[0] == 0
    assert not any(acl for path, (_, _, acl) in _state(home).items() if not path.endswith("own-acl.txt"))
