"""Opt the replica's processes into the host's kernel samepage merging (KSM).

Every replica runs the same desktop and apps, so much of their anonymous memory is identical
page for page. ``PR_SET_MEMORY_MERGE`` (Linux 6.4+) marks all of a process's memory mergeable and
is inherited across fork and exec, so setting it once here covers Xvfb, the session, the apps and
the agent's commands. It needs no privilege and costs nothing while the host's ``ksmd`` is off;
the operator turns that on (``osgym host tune --ksm``). ``OSGYM_KSM=0`` leaves it unset.
"""

import ctypes
import os
import sys

PR_SET_MEMORY_MERGE = 67


def opt_in():
    if os.environ.get("OSGYM_KSM", "1") == "0":
        return
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    if libc.prctl(PR_SET_MEMORY_MERGE, 1, 0, 0, 0) != 0:  # an older kernel: EINVAL; nothing lost
        print(f"KSM opt-in unavailable: {os.strerror(ctypes.get_errno())}", file=sys.stderr, flush=True)
