"""The agent's home: a fresh, size-capped tmpfs in every replica, filled at start from the image's own.

The pool mounts a tmpfs on /home/user (``ReplicaLimits.home_mib``, owned by `user` through its
uid= and gid= options), so the agent's writes there stop at a cap, in the replica's memory, instead
of filling the host's disk: overlay2 over ext4 cannot bound a writable layer. The image keeps its home
as built (the apps' settings, GIMP's plug-in cache, the Thunderbird profile) in a root-owned archive
(replica_images/*/Dockerfile), which :func:`seed` unpacks there. It does so as `user`: the server's root
holds neither CAP_CHOWN nor CAP_DAC_OVERRIDE, and this way every file comes out the agent's, with the
image's modes.
"""

import os
import subprocess

import uids

HOME = "/home/user"
ARCHIVE = "/usr/local/share/osgym/home.tar"
SEED_TIMEOUT_S = 60


def seed():
    """Unpack the image's home into an empty home. A home that holds anything is left as it is: the
    image's own, when nothing is mounted there (``home_mib=None``, or a plain ``docker run``).

    Raises:
        SystemExit: unpacking failed (a cap smaller than the image's home, say): the replica would
            start without its apps' settings, so it does not start at all, and says why.
    """
    with uids.fs_as_user():
        if os.listdir(HOME):
            return
    try:
        done = subprocess.run(["tar", "-x", "--preserve-permissions", "--no-same-owner", "-f", ARCHIVE, "-C", HOME],
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, cwd="/",
                              env={"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"}, timeout=SEED_TIMEOUT_S,
                              **uids.AS_USER)
    except subprocess.TimeoutExpired:
        raise SystemExit(f"filling {HOME} from {ARCHIVE} took over {SEED_TIMEOUT_S} s") from None
    if done.returncode != 0:
        raise SystemExit(f"cannot fill {HOME} from {ARCHIVE}: {done.stderr.strip()[-1000:]}")
