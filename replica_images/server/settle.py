"""When the screen has settled after input: two ways to tell.

``frames`` compares screenshots ``interval`` apart until none changed for ``quiet`` seconds. Each look
reads the whole screen from the X server and hashes it (8 MB at 1920x1080), so a look costs CPU, and a
change is seen up to one interval late.

``damage`` asks the X server instead: the Damage extension reports every drawing to the root window (and
so to every window on it) the moment it happens, and the settle waits on those reports. It costs no
screenshots, sees a change when it is drawn rather than at the next look, and so can end as soon as the
screen has been quiet for ``quiet`` seconds. Its ``minimum`` is the time it waits after the input in any
case: an application answers a key or a click by drawing, but only once it has read the event, and a
dialog a click opens maps a little later; a settle that ended before either would show the screen as it
was. Damage counts a redraw with the same pixels as a change, which frames would not: a window that
redraws without end keeps the settle waiting until its timeout, as an animation does with frames.
"""

import threading
import time

from Xlib import display
from Xlib.ext import damage

# The modes, and the default quiet and minimum times, are the protocol's (protocol.py: SETTLE_MODES and the _S constants).


def by_frames(screen, timeout, interval, quiet):
    """Wait until the screen has not changed for ``quiet`` seconds (frames ``interval`` apart), at most
    ``timeout`` seconds; ``quiet`` is at least one interval. True if it did, False at the timeout.

    Input reaches the X server before this starts, but an application draws its answer later: xterm's
    echo goes through the shell and the pty first. Two equal frames 50 ms apart were taken, on a loaded
    machine, before xterm had drawn a typed command, and the next observation showed the screen as it
    was before the step.
    """
    deadline = time.monotonic() + timeout
    last, since = screen.frame_hash(), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(interval)
        now, at = screen.frame_hash(), time.monotonic()
        if now != last:
            last, since = now, at
        elif at - since >= max(quiet, interval):
            return True
    return False


class Damage:
    """The time of the screen's last change, kept by a thread that reads the X server's damage reports
    on a connection of its own (python-xlib's connections are not shared across threads)."""

    def __init__(self, display_name):
        self.d = display.Display(display_name)
        if not self.d.has_extension(damage.extname):
            self.d.close()
            raise RuntimeError("the X server has no DAMAGE extension")
        self.d.damage_query_version()
        # NonEmpty: one report when the root's damage goes from none to some; subtracting it re-arms the
        # report, so a burst of drawing costs one report per round trip rather than one per rectangle.
        self.handle = self.d.screen().root.damage_create(damage.DamageReportNonEmpty)
        self.d.flush()
        self.changed_at = time.monotonic()
        self.failed = None  # why the reader stopped: settles go back to frames then
        self._event = self.d.extension_event.DamageNotify
        self._cond = threading.Condition()
        threading.Thread(target=self._read, name="damage", daemon=True).start()

    def _read(self):
        try:
            while True:
                ev = self.d.next_event()
                if ev.type != self._event:
                    continue
                self.d.damage_subtract(self.handle)
                self.d.flush()
                with self._cond:
                    self.changed_at = time.monotonic()
                    self._cond.notify_all()
        except Exception as exc:  # the X connection is gone: no report will come, so none may be waited for
            self.failed = f"{type(exc).__name__}: {exc}"

    def settle(self, start, timeout, quiet, minimum):
        """Wait until ``minimum`` seconds after ``start`` (the end of the input) and ``quiet`` seconds after
        the last change, at most until ``timeout`` seconds after ``start``. True if settled."""
        deadline = start + timeout
        with self._cond:
            while True:
                ready_at = max(start + minimum, self.changed_at + quiet)
                now = time.monotonic()
                if now >= ready_at:
                    return True
                if now >= deadline:
                    return False
                self._cond.wait(min(ready_at, deadline) - now)
