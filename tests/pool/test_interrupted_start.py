"""Ctrl-C while a run's replicas start stops the run promptly and removes every container it created.

``osgym collect`` runs in its own process group; SIGINT goes to the process alone as soon as its first
container exists, while the others are still being created or are waiting to be ready.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import docker
import yaml

from osgym.replicas.pool import OWNER_LABEL, POOL_LABEL

ROOT = Path(__file__).resolve().parents[2]


def _owned_by(client: docker.DockerClient, pid: int) -> list[dict]:  # type: ignore[type-arg]
    return [c for c in client.api.containers(all=True, filters={"label": POOL_LABEL})
            if (c["Labels"].get(OWNER_LABEL) or "").split(":")[1:2] == [str(pid)]]


def _signal_lines(pid: int) -> list[str]:
    return [line for line in Path(f"/proc/{pid}/status").read_text().splitlines()
            if line.startswith(("SigBlk", "SigIgn", "SigCgt"))]


def _default_interrupts() -> None:
    for sig in (signal.SIGINT, signal.SIGQUIT):
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGQUIT})


def test_ctrl_c_while_replicas_start_stops_the_run_and_removes_them(docker_client, image, tmp_path) -> None:  # type: ignore[no-untyped-def]
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(yaml.safe_dump({"name": "interrupted", "episodes": 3, "replicas": 3, "standby": 0,
                                      "screen": [800, 600], "image": image, "store": str(tmp_path / "data")}))
    env = {**os.environ, "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1",
           "PREFECT_HOME": str(tmp_path / "prefect")}
    ours = _signal_lines(os.getpid())
    # A run started from a terminal: Ctrl-C's signals at their defaults. A child keeps the signals its parent
    # ignores, and this worker's may be ignored while the child starts (CI 2026-12-06, twice: the run began
    # with SIGINT and SIGQUIT ignored, finished its episodes and ended 0).
    proc = subprocess.Popen([sys.executable, "-m", "osgym", "collect", str(recipe), "--no-report"], cwd=ROOT,
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=_default_interrupts)
    try:
        started = time.monotonic()
        deadline = started + 120
        while not _owned_by(docker_client, proc.pid):
            assert proc.poll() is None, f"the run ended before its replicas started: {proc.stderr.read()[-2000:]!r}"
            assert time.monotonic() < deadline, "the collect run never created a replica"
            time.sleep(0.02)
        # how the run stood when it was sent the signal: CI 2026-12-06 saw a run end 0, with nothing on stderr
        signals = _signal_lines(proc.pid)
        sent_after_s = time.monotonic() - started
        proc.send_signal(signal.SIGINT)
        t0 = time.monotonic()
        _, stderr = proc.communicate(timeout=120)
        stopped_s = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    left = _owned_by(docker_client, proc.pid)
    assert not left, f"Ctrl-C during the pool's start left {len(left)} containers behind"
    committed = sorted(p.name for p in (tmp_path / "data").rglob("*.parquet"))
    assert proc.returncode == 130, (f"exit {proc.returncode} {stopped_s:.1f} s after SIGINT, sent {sent_after_s:.1f} s "
                                    f"after the start; the run's signals then {signals} (this worker's at its "
                                    f"start {ours}); parquet files written {committed[:5]}; stderr {stderr[-2000:]!r}")
    assert "Traceback" not in stderr, stderr[-2000:]
    # the starts under way are abandoned, not awaited (a replica takes up to start_timeout, 30 s, per try)
    assert stopped_s < 60, f"the run took {stopped_s:.0f} s to stop"
