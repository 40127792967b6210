"""Warm states: what a replica has done before it is checkpointed, for reset by restore (issue 41).

A restored replica starts where its template stood when it was frozen, so the template is brought to a state
that every task of the run would pass through anyway, and no further:

- ``desktop``: the desktop ready and settled (every tier, every task);
- ``libreoffice``: on the apps tier, LibreOffice loaded and resident with no window (``--quickstart --nodefault``):
  a task's ``libreoffice --calc`` (or ``--writer``, or a document) is handed to it and opens a new window, the
  window a cold replica shows (new, maximised, focused over the task's distractor), in a quarter of a second
  instead of seconds. Tried first and dropped: the Start Center, whose frame LibreOffice reuses for the document,
  so the window kept the Start Center's geometry and, not being new, did not take the focus from a distractor
  opened after it; ``--invisible``, which made the task's document invisible too.
  What a task could tell: ``soffice.bin``'s command line, and that it stays resident when its last window closes.

Other applications keep the ``desktop`` state: a second start of Chromium, Thunderbird, GIMP or VLC is handed to
the running instance, which ignores the task's own flags (Chromium's remote debugging port, a profile), so a
task's setup would not do what it does on a cold replica.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from osgym.errors import ConfigError, ReplicaError
from osgym.replicas.client import Replica

__all__ = ["DESKTOP", "LIBREOFFICE", "WARM_STATES", "check_warm_state", "describe", "tier_problem", "warm_state_for",
           "warm_up"]

DESKTOP = "desktop"
LIBREOFFICE = "libreoffice"
WARM_STATES = (DESKTOP, LIBREOFFICE)
LIBREOFFICE_APPS = frozenset({"libreoffice_calc", "libreoffice_writer", "libreoffice_impress"})
"""The ``related_apps`` of tasks that the ``libreoffice`` state serves (OSWorld's names, which osgym's use too)."""
RESIDENT = ["libreoffice", "--quickstart", "--nodefault", "--nologo"]
LISTENING = "test -n \"$(ls /tmp/OSL_PIPE_*_SingleOfficeIPC_* 2>/dev/null)\" && pgrep -x soffice.bin"
"""True once the resident LibreOffice takes requests: its single-instance pipe exists."""
SETTLE_S = 20.0


def warm_state_for(related_apps: Iterable[Iterable[str]], tier: str) -> str:
    """The warm state a run's tasks share: ``libreoffice`` if every task is about LibreOffice alone (on the apps
    tier), else ``desktop``: a resident LibreOffice would answer another app's task differently from a cold one.

    >>> warm_state_for([["libreoffice_calc"], ["libreoffice_writer"]], "apps")
    'libreoffice'
    >>> warm_state_for([["libreoffice_calc"], ["chrome"]], "apps"), warm_state_for([], "apps")
    ('desktop', 'desktop')
    """
    apps = [set(a) for a in related_apps]
    if tier == "apps" and apps and all(a and a <= LIBREOFFICE_APPS for a in apps):
        return LIBREOFFICE
    return DESKTOP


def describe(warm: str) -> str:
    """What :func:`warm_up` does for ``warm``, for a checkpoint's key: a changed procedure is another checkpoint."""
    return " ".join(RESIDENT) if warm == LIBREOFFICE else "settle"


def check_warm_state(warm: str) -> None:
    """Raise :class:`ConfigError` unless ``warm`` is one of :data:`WARM_STATES`."""
    if warm not in WARM_STATES:
        raise ConfigError(f"warm: expected one of {', '.join(WARM_STATES)}, actual {warm!r:.40}")


def tier_problem(warm: str, tier: str) -> str | None:
    """Why the warm state ``warm`` cannot be had on ``tier``, or None if it can (a recipe's and a server's check).

    >>> tier_problem("libreoffice", "desktop")
    "warm: libreoffice needs the apps tier (LibreOffice is there), actual tier 'desktop'"
    """
    if warm == LIBREOFFICE and tier != "apps":
        return f"warm: {LIBREOFFICE} needs the apps tier (LibreOffice is there), actual tier {tier!r}"
    return None


def warm_up(replica: Replica, warm: str) -> bytes:
    """Bring a ready replica to the warm state ``warm``, wait until its screen stops changing, and return its
    screenshot then (PNG): what a replica restored from it shows first, apart from the clock.

    Raises:
        ReplicaError: if the application does not come up within 60 s, or the screen does not settle within 20 s.
    """
    if warm == LIBREOFFICE:
        replica.launch(RESIDENT)
        deadline = time.monotonic() + 60
        while replica.execute(LISTENING, shell=True).returncode != 0:
            if time.monotonic() > deadline:
                raise ReplicaError("LibreOffice did not start resident (--quickstart) within 60 s")
            time.sleep(0.2)
    return _settle(replica)


def _settle(replica: Replica) -> bytes:
    """Wait until two screenshots half a second apart are the same: nothing left drawing, no animation."""
    last = replica.screenshot().data
    deadline = time.monotonic() + SETTLE_S
    while time.monotonic() < deadline:
        time.sleep(0.5)
        shot = replica.screenshot().data
        if shot == last:
            return shot
        last = shot
    raise ReplicaError(f"the replica's screen did not settle within {SETTLE_S:.0f} s")
