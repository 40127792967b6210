"""A private PostgreSQL cluster for tests, started the way the store tests start SeaweedFS.

``initdb`` writes a fresh cluster into a temporary directory, owned by an unprivileged
user (PostgreSQL refuses to run as root: as root the cluster belongs to Debian's
``postgres`` user). The server listens on 127.0.0.1 at a free port and on a Unix socket
in that directory, nowhere else; a login role and a database are made for Prefect, and
``stop`` shuts the server down and removes the directory. The binaries come from
Debian's ``postgresql`` package (``scripts/ensure-postgres.sh``), which keeps them in
``/usr/lib/postgresql/<version>/bin``, off the PATH.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

READY_TIMEOUT_S = 60.0


def postgres_bindir() -> Path:
    """Where ``initdb``, ``pg_ctl`` and ``psql`` are: Debian's newest version, else the PATH."""
    debian = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parent.parent.name))
    if debian:
        return debian[-1].parent
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    pytest.fail("PostgreSQL's initdb was not found: run `bash scripts/ensure-postgres.sh` "
                "(installs Debian's postgresql as root; `make test` does)")


def _unprivileged_owner() -> pwd.struct_passwd | None:
    """As root, the user ``postgres`` (PostgreSQL refuses to run as root); otherwise None, the current user."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam("postgres")
    except KeyError:
        pytest.fail("as root, the private PostgreSQL cluster runs as the user postgres, and there is none: "
                    "run `bash scripts/ensure-postgres.sh` (Debian's postgresql creates it)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PrivatePostgres:
    """One cluster in ``base``: superuser ``postgres`` over the socket (trust, only its owner can reach
    the 0700 directory), the role ``prefect`` with a random password over TCP (scram-sha-256)."""

    def __init__(self, base: Path, database: str = "prefect", user: str = "prefect"):
        self.base = base
        self.data = base / "data"
        self.bindir = postgres_bindir()
        self.port = _free_port()
        self.database = database
        self.user = user
        self.password = secrets.token_urlsafe(16)
        self.owner = _unprivileged_owner()

    @property
    def url(self) -> str:
        """The SQLAlchemy URL Prefect's server takes (``PREFECT_API_DATABASE_CONNECTION_URL``)."""
        return f"postgresql+asyncpg://{self.user}:{self.password}@127.0.0.1:{self.port}/{self.database}"

    def _run(self, name: str, *args: str, timeout: float = 120) -> str:
        user = self.owner.pw_name if self.owner else None
        p = subprocess.run([str(self.bindir / name), *args], capture_output=True, text=True, timeout=timeout,
                           user=user, cwd=self.base, env={"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"})
        if p.returncode != 0:
            raise RuntimeError(f"{name} {' '.join(args)} failed ({p.returncode}):\n"
                               f"{p.stdout[-2000:]}{p.stderr[-2000:]}")
        return p.stdout

    def start(self) -> None:
        self.base.mkdir(parents=True, exist_ok=True)
        self.base.chmod(0o700)
        if self.owner:
            os.chown(self.base, self.owner.pw_uid, self.owner.pw_gid)
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth-local=trust",
                  "--auth-host=scram-sha-256", "-E", "UTF8", "--no-instructions")
        options = (f"-c listen_addresses=127.0.0.1 -c port={self.port} -c unix_socket_directories={self.base} "
                   "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200")
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.base / "server.log"), "-o", options,
                  "-w", "-t", str(int(READY_TIMEOUT_S)), "start")
        self.sql(f"CREATE ROLE {self.user} LOGIN PASSWORD '{self.password}'")
        self.sql(f"CREATE DATABASE {self.database} OWNER {self.user}")

    def sql(self, statement: str, database: str = "postgres") -> str:
        """Run one statement as the superuser over the Unix socket; its rows, unaligned."""
        return self._run("psql", "-h", str(self.base), "-p", str(self.port), "-U", "postgres", "-d", database,
                         "-v", "ON_ERROR_STOP=1", "-At", "-c", statement)

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            try:
                self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "-t", "30", "stop", timeout=60)
            except (RuntimeError, subprocess.TimeoutExpired):
                self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop", timeout=30)
        shutil.rmtree(self.base, ignore_errors=True)


@contextmanager
def running_postgres(prefix: str = "osgym-pg-") -> Iterator[PrivatePostgres]:
    """A fresh cluster with Prefect's database, stopped and removed afterwards."""
    server = PrivatePostgres(Path(tempfile.mkdtemp(prefix=prefix)))
    try:
        server.start()
        yield server
    finally:
        server.stop()
