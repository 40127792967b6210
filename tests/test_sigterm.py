"""SIGTERM as a clean exit: ``finally`` blocks run and the process ends with status 143."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from osgym.sigterm import EXIT_STATUS

ROOT = Path(__file__).resolve().parents[1]


def _run(body: str, tmp_path: Path) -> subprocess.Popen[str]:
    head = ("import signal, sys, time\n"
            "from osgym.sigterm import exit_on_sigterm\n")
    tail = textwrap.dedent(f"""
        try:
            print("ready", flush=True)  # inside the try: a signal after "ready" always lands in it
            time.sleep(60)
        finally:
            open({str(tmp_path / "cleaned")!r}, "w").write("cleaned")
    """)
    script = head + body + "\n" + tail
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    return proc


def test_sigterm_runs_finally_and_exits_143(tmp_path: Path) -> None:
    proc = _run("assert exit_on_sigterm()", tmp_path)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == EXIT_STATUS == 143  # within 30 s of a 60 s sleep: the signal ended it
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


def test_signals_held_during_a_block_are_acted_on_after_it(tmp_path: Path) -> None:
    """A second signal during clean-up (a pool's close) waits for the block to end, then ends the process."""
    body = textwrap.dedent(f"""
        import os
        from osgym.sigterm import signals_held
        assert exit_on_sigterm()
        with signals_held():
            os.kill(os.getpid(), signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.2)
            open({str(tmp_path / "held")!r}, "w").write("held")  # the block ran to its end
        raise AssertionError("the held SIGTERM should have ended the process here")
    """)
    proc = subprocess.run([sys.executable, "-c", "import signal, sys, time\n"
                           "from osgym.sigterm import exit_on_sigterm\n" + body],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == EXIT_STATUS, proc.stderr
    assert (tmp_path / "held").read_text() == "held"
    assert "Traceback" not in proc.stderr


def test_signals_held_off_the_main_thread_is_a_plain_block() -> None:
    import threading

    from osgym.sigterm import signals_held

    before = signal.getsignal(signal.SIGTERM)
    seen: list[object] = []

    def run() -> None:
        with signals_held():
            seen.append(signal.getsignal(signal.SIGTERM))

    t = threading.Thread(target=run)
    t.start()
    t.join(timeout=10)
    assert seen == [before] and signal.getsignal(signal.SIGTERM) == before
