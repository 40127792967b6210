"""The suites' one ``open_app`` on a real replica: its wait for the app's window is longer than the replica's
bound for one wait (60 s), so setup waits in turns; a window that never comes ends the setup as a replica
fault (retried elsewhere) once the whole wait is over, not after the first turn."""

from __future__ import annotations

import time

import pytest

from osgym.errors import ActionFailed
from osgym.replicas.client import Replica
from osgym.suites.apps_smoke.common import APP_START_S, open_app
from osgym.suites.generators import wait
from osgym.tasks.setup import WAIT_WINDOW_TURN_S, run_setup
from osgym.tasks.spec import SetupStep

pytestmark = [pytest.mark.docker]


def _steps(raw: list[dict[str, object]]) -> list[SetupStep]:
    return [SetupStep.model_validate(s) for s in raw]


def test_open_app_waits_longer_than_one_turn_and_leaves_the_app_focused(replica: Replica) -> None:
    steps = open_app(["xterm"], "xterm")  # its shell sets the title: the window is found by its class, XTerm
    assert steps[-1]["parameters"]["timeout"] == APP_START_S > WAIT_WINDOW_TURN_S
    run_setup(replica, _steps(steps), task_id="t")
    focused = [w.wm_class for w in replica.windows() if w.focused]
    assert focused == ["XTerm"], focused


@pytest.mark.slow
def test_a_window_that_never_comes_fails_after_the_whole_wait(replica: Replica) -> None:
    timeout = WAIT_WINDOW_TURN_S + 2
    start = time.monotonic()
    with pytest.raises(ActionFailed, match="'no such window' did not appear"):
        run_setup(replica, _steps([wait("no such window", timeout=timeout)]), task_id="t")
    assert time.monotonic() - start >= timeout
