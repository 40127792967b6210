"""The replica's memory footprint, set up once at the entrypoint.

- **Shared pages (KSM).** Every replica runs the same desktop and apps, so much of their anonymous
  memory is identical page for page. ``PR_SET_MEMORY_MERGE`` (Linux 6.4+) marks all of a process's
  memory mergeable and is inherited across fork and exec, so setting it once here covers Xvfb, the
  session, the apps and the agent's commands. It needs no privilege and costs nothing while the
  host's ``ksmd`` is off; the operator turns that on (``osgym host tune --ksm``). ``OSGYM_KSM=0``
  leaves it unset.
- **Freed buffers go back.** A screenshot is a few MiB of pixels, allocated and freed per request.
  glibc raises its mmap threshold after the first such free, so later frames come from the heap and
  stay there once freed: the server held 8 MiB more after 30 screenshots. A fixed threshold
  (``mallopt``, this process only, not inherited) keeps large buffers in their own mappings, which
  ``free`` returns to the kernel.
"""

import ctypes
import os
import sys

PR_SET_MEMORY_MERGE = 67
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
LARGE = 128 * 1024  # glibc's initial mmap threshold, kept fixed
RETURN_FREED_TUNABLES = f"glibc.malloc.mmap_threshold={LARGE}:glibc.malloc.trim_threshold={LARGE}"
"""The same for Xvfb, through its environment: every GetImage for a screenshot, and every window-sized
pixmap an app paints through, is a few MiB that glibc would otherwise keep on Xvfb's heap (an apps
replica's Xvfb held 73-79 MiB after 30 screenshots with Chromium and Calc open, 59 MiB with this)."""

_libc = ctypes.CDLL("libc.so.6", use_errno=True)


def merge_pages():
    if os.environ.get("OSGYM_KSM", "1") == "0":
        return
    if _libc.prctl(PR_SET_MEMORY_MERGE, 1, 0, 0, 0) != 0:  # an older kernel: EINVAL; nothing lost
        print(f"KSM opt-in unavailable: {os.strerror(ctypes.get_errno())}", file=sys.stderr, flush=True)


def return_freed_buffers():
    _libc.mallopt(M_MMAP_THRESHOLD, LARGE)
    _libc.mallopt(M_TRIM_THRESHOLD, LARGE)
