"""``execute``/``command`` setup steps on a real replica: a non-zero exit is tolerated, as OSWorld's
SetupController does (task files rely on it, e.g. ``pkill`` of an app that is not running), and logged;
osgym's own suites ask for a failing command to stop the setup (``check``)."""

from __future__ import annotations

import logging

import pytest

from osgym.errors import SetupError
from osgym.replicas.client import Replica
from osgym.suites.generators import execute
from osgym.tasks.setup import run_setup
from osgym.tasks.spec import SetupStep

pytestmark = [pytest.mark.docker]


def test_a_failing_command_is_tolerated_and_logged_unless_checked(replica: Replica,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    steps = [SetupStep(type="execute", parameters={"command": "echo nope >&2; exit 3", "shell": True}),
             SetupStep(type="command", parameters={"command": ["false"]}),
             SetupStep(type="execute", parameters={"command": ["sh", "-c", "echo after > /tmp/after"]})]
    with caplog.at_level(logging.WARNING, logger="osgym.tasks.setup"):
        run_setup(replica, steps, task_id="t")
    assert replica.read_file("/tmp/after") == b"after\n"  # the steps after the failures ran
    said = [r.getMessage() for r in caplog.records]
    assert any("task t: config[0]: execute" in m and "exited 3: nope" in m and "tolerated" in m for m in said), said
    assert any("task t: config[1]: command ['false']" in m and "exited 1" in m for m in said), said

    checked = SetupStep.model_validate(execute("echo broken >&2; exit 4"))
    with pytest.raises(SetupError, match=r"task t: config\[0\]: execute .* exited 4: broken"):
        run_setup(replica, [checked, steps[2]], task_id="t")
