"""SIGTERM as a clean exit: how a scheduler, ``timeout``, ``docker stop`` or ``kill`` ends a run.

Python's default for SIGTERM ends the process on the spot: no ``finally`` or ``with`` exit runs, so
a collection's replicas stay up and its open shard is never discarded, and a server's live sessions
are never recorded nor its run committed. uvicorn makes it worse for ``osgym serve``: it answers
SIGTERM with a graceful stop and then raises the signal again under the previous handler, so the
process dies between the server stopping and the clean-up that follows it.

:func:`exit_on_sigterm` makes SIGTERM raise :class:`SystemExit` (status 143, the shell's 128 + 15) in
the main thread instead, so the same clean-up runs as on Ctrl-C.

A second signal must not cut that clean-up short where it frees what outlives the process (a pool's
containers): :func:`signals_held` holds SIGINT and SIGTERM over such a block and acts on them after it.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

__all__ = ["EXIT_STATUS", "exit_on_sigterm", "signals_held"]

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


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Hold SIGINT and SIGTERM that arrive during the block; after it, act on the first of them under the
    handlers found before (raising ``KeyboardInterrupt``, ``SystemExit``, ...).

    For clean-up that must not stop halfway: a second Ctrl-C or ``kill`` during it would otherwise raise in
    the middle and skip the rest. Signals reach Python's handlers in the main thread only, so elsewhere (and
    where a handler cannot be set) the block runs as it is. A hold inside a hold acts at the outer one's end.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    held = (signal.SIGINT, signal.SIGTERM)
    previous = {sig: signal.getsignal(sig) for sig in held}
    if any(h is None for h in previous.values()):  # installed outside Python: cannot be put back
        yield
        return
    for sig in held:
        signal.signal(sig, lambda signum, _frame: caught.append(signum))
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if caught:
            signal.raise_signal(caught[0])
