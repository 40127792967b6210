"""A flow run that a worker took but never started (the worker died) does not stay Pending: automations.yaml marks
it Crashed, as collect-scaleout expects of a shard whose host died, on a real Prefect server."""

from __future__ import annotations

import time
from pathlib import Path

import yaml
from prefect import flow
from prefect.client.orchestration import get_client
from prefect.states import Pending, Running, Scheduled

from tests.deploy.conftest import ROOT, PrefectServer

WITHIN_S = 10
"""The automation's wait, shortened from the file's for the test; its events, match and action are the file's."""


@flow(name="never-started")
def never_started() -> None:
    """Only a name for the flow runs below: no process ever runs it."""


def test_a_run_taken_but_never_started_is_marked_crashed(prefect_server: PrefectServer, tmp_path: Path) -> None:
    spec = yaml.safe_load((ROOT / "automations.yaml").read_text())
    (pending,) = [a for a in spec["automations"] if a["trigger"]["after"] == ["prefect.flow-run.Pending"]]
    assert pending["trigger"]["within"] == 120 and pending["actions"][0]["state"] == "CRASHED"
    pending["trigger"]["within"] = WITHIN_S
    (path := tmp_path / "automations.yaml").write_text(yaml.safe_dump(spec))
    prefect_server.cli("automation", "create", "--from-file", str(path))
    time.sleep(2)  # the triggers service loads automations on a change

    with prefect_server.settings(), get_client(sync_client=True) as client:
        lost = client.create_flow_run(never_started, state=Scheduled())
        healthy = client.create_flow_run(never_started, state=Scheduled())
        for run in (lost, healthy):  # what a worker does when it takes a run, before it starts its process
            assert client.set_flow_run_state(run.id, Pending()).status.value == "ACCEPT"
        assert client.set_flow_run_state(healthy.id, Running()).status.value == "ACCEPT"  # its process started
        deadline = time.monotonic() + WITHIN_S + 60
        while True:
            state = client.read_flow_run(lost.id).state
            assert state is not None
            if state.is_crashed() or time.monotonic() > deadline:
                break
            time.sleep(1)
        assert state.is_crashed(), f"still {state.type.value} {WITHIN_S + 60} s after it was taken"
        assert "never started" in (state.message or ""), state.message
        other = client.read_flow_run(healthy.id).state
        assert other is not None and other.is_running(), other  # a run that started is left alone
