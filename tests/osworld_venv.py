"""Throwaway venvs holding OSWorld's ``desktop-env`` installed without its dependencies (they include
torch and a browser stack), plus only the libraries a test needs, at the versions desktop-env's own
metadata pins where it pins them. Shared by the metric reference (tests/metrics/conftest.py) and
OSWorld's own client (tests/osworld_client/conftest.py). :func:`cached_venv` builds any such venv the
same way (OpenEnv's client: tests/openenv_venv.py).

A venv is built once per desktop-env version and library list under the temp dir
(``OSGYM_OSWORLD_REF`` overrides the place) and reused by later sessions; it is built into a
scratch folder and renamed into place, so an interrupted build is never reused.
"""

from __future__ import annotations

import email.parser
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

OSWORLD_VERSION = "1.0.2"
PIP_TIMEOUT_S = 900


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pins(venv: Path, needed: Sequence[str]) -> list[str]:
    """desktop-env's own requirement lines for the libraries in ``needed`` (markers dropped)."""
    meta = next(venv.glob(f"lib/python*/site-packages/desktop_env-{OSWORLD_VERSION}.dist-info/METADATA"))
    reqs = email.parser.Parser().parsestr(meta.read_text()).get_all("Requires-Dist") or []
    pins = {}
    for req in reqs:
        spec = req.split(";")[0].strip()
        name = re.split(r"[<>=!~\[ (]", spec, maxsplit=1)[0]
        if _norm(name) in {_norm(n) for n in needed}:
            pins[_norm(name)] = spec
    return [pins.get(_norm(n), n) for n in needed]


def _build(target: Path, install: Callable[[list[str]], None]) -> None:
    """A venv at ``target``, built in a scratch folder by ``install`` (given the venv's pip command) and renamed."""
    scratch = target.with_name(f"{target.name}.incomplete-{os.getpid()}")
    shutil.rmtree(scratch, ignore_errors=True)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(scratch)], check=True, timeout=120)
        install([str(scratch / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"])
        try:
            scratch.rename(target)
        except OSError:  # another session finished first: use its venv
            pass
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


_building: defaultdict[str, threading.Lock] = defaultdict(threading.Lock)
"""One build per venv in this process: a test that needs a venv the background is building waits for it."""


def cached_venv(name: str, install: Callable[[list[str]], None]) -> Path:
    """The venv ``name`` under the temp dir (``OSGYM_OSWORLD_REF`` overrides the place), built by ``install`` on
    first use, once across the processes of a test run; a name must change with what ``install`` puts in."""
    root = Path(os.environ.get("OSGYM_OSWORLD_REF", Path(tempfile.gettempdir()) / "osgym-osworld-ref"))
    venv = root / name
    with _building[venv.name]:
        if not (venv / "bin" / "python").exists():
            root.mkdir(parents=True, exist_ok=True)
            # and one build across processes (the workers of `pytest -n`): the others wait for it, then use it
            with open(root / f"{venv.name}.lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                if not (venv / "bin" / "python").exists():
                    start = time.monotonic()
                    _build(venv, install)
                    print(f"built the reference venv {venv.name} in {time.monotonic() - start:.0f} s", file=sys.stderr)
    return venv


def desktop_env_venv(needed: Sequence[str]) -> Path:
    """The venv of desktop-env plus ``needed``; built on first use (downloads included)."""

    def install(pip: list[str]) -> None:
        subprocess.run([*pip, "--no-deps", f"desktop-env=={OSWORLD_VERSION}"], check=True, timeout=PIP_TIMEOUT_S)
        subprocess.run([*pip, *_pins(Path(pip[0]).parents[1], needed)], check=True, timeout=PIP_TIMEOUT_S)

    # The name changes with the version and the library list, so a stale venv is never reused.
    key = hashlib.sha256(" ".join(needed).encode()).hexdigest()[:8]
    return cached_venv(f"desktop-env-{OSWORLD_VERSION}-{key}", install)


def build_in_background(needed: Sequence[str] | Callable[[], Path]) -> None:
    """Start building the venv of ``needed`` (or the one a function builds) while other tests run: on a clean
    machine it downloads and installs for minutes. A failure here is left for the test's own call to raise again."""

    def build() -> None:
        try:
            needed() if callable(needed) else desktop_env_venv(needed)
        except Exception as exc:  # the test that needs the venv builds it again and shows the error
            print(f"building a reference venv in the background failed: {exc}", file=sys.stderr)

    threading.Thread(target=build, name="reference-venv", daemon=True).start()
