"""SIGTERM as a clean exit: ``finally`` blocks run and the process ends with status 143."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from osgym.sigterm import EXIT_STATUS

ROOT = Path(__file__).resolve().parents[1]


def _run(body: str, tmp_path: Path) -> subprocess.Popen[str]:
    script = textwrap.dedent(f"""
        import signal, sys, time
        from pathlib import Path
        from osgym.sigterm import exit_on_sigterm
        marker = Path({str(tmp_path / "cleaned")!r})
        {{body}}
        try:
            print("ready", flush=True)  # inside the try: a signal after "ready" always lands in it
            time.sleep(60)
        finally:
            marker.write_text("cleaned")
    """).replace("{body}", body)
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    return proc


def test_sigterm_runs_finally_and_exits_143(tmp_path: Path) -> None:
    proc = _run("assert exit_on_sigterm()", tmp_path)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == EXIT_STATUS == 143
    assert time.monotonic() - t0 < 30
    assert (tmp_path / "cleaned").read_text() == "cleaned"


def test_a_handler_already_installed_is_kept(tmp_path: Path) -> None:
    body = ("signal.signal(signal.SIGTERM, lambda *_: sys.exit(7))\n"
            "assert not exit_on_sigterm()")
    proc = _run(body, tmp_path)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 7  # the program's own handler answered, not ours
    assert (tmp_path / "cleaned").exists()


def test_without_it_sigterm_skips_finally(tmp_path: Path) -> None:
    """The default this module exists to replace: the process dies and its clean-up never runs."""
    proc = _run("pass", tmp_path)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == -signal.SIGTERM
    assert not (tmp_path / "cleaned").exists()
