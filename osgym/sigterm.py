"""SIGTERM as a clean exit: how a scheduler, ``timeout``, ``docker stop`` or ``kill`` ends a run.

Python's default for SIGTERM ends the process on the spot: no ``finally`` or ``with`` exit runs, so
a collection's replicas stay up and its open shard is never discarded, and a server's live sessions
are never recorded nor its run committed. uvicorn makes it worse for ``osgym serve``: it answers
SIGTERM with a graceful stop and then raises the signal again under the previous handler, so the
process dies between the server stopping and the clean-up that follows it.

:func:`exit_on_sigterm` makes SIGTERM raise :class:`SystemExit` (status 143, the shell's 128 + 15) in
the main thread instead, so the same clean-up runs as on Ctrl-C.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType

__all__ = ["EXIT_STATUS", "exit_on_sigterm"]

EXIT_STATUS = 128 + signal.SIGTERM
"""The status a process ends with after :func:`exit_on_sigterm` turned a SIGTERM into an exit."""


def _exit(signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def exit_on_sigterm() -> bool:
    """Make SIGTERM raise ``SystemExit(143)`` in the main thread; True if it now does (installed by this
    call or an earlier one).

    Only Python's default is replaced: a handler that an embedding program (or Prefect's flow engine)
    installed is its own to keep. Signals reach only the main thread, so elsewhere this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        return False
    if signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, _exit):
        return False
    signal.signal(signal.SIGTERM, _exit)
    return True
