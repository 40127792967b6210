"""The live view: watch a served session's screen in a browser, view-only, with a token.

An authenticated client asks for a view of its session (``POST /v1/sessions/{id}/view``) and gets
a per-view token and a URL. Then:

* the replica's control server starts listening on ``vnc.sock`` in the replica's run directory
  (``POST /view/start``); each connection there gets its own ``x11vnc -inetd -viewonly``, as the
  replica's unprivileged `user` (``replica_images/server/liveview.py``). The replica gets no
  network: the socket is a file in a directory only the host and the control server reach;
* the host runs one websockify (Debian's ``websockify``) for the whole server, on ``host`` and its
  own port. Its ``UnixDomainSocketDirectory`` token plugin maps the ``token`` of a websocket's URL
  to a file in a private directory (0700) of this process: a symlink named by the view's token to
  the replica's socket. An unknown token, or none, matches no file and the websocket is refused;
* the server itself serves Debian's noVNC (``/usr/share/novnc``) at ``/view/{token}/``, only
  under a live token (403 otherwise), set to connect view-only to websockify with that token.

The token is 256 random bits, issued to the session's owner only, and dies with the session: the
manager calls :meth:`LiveViews.end` as the session ends (the symlinks go, the replica's viewers
are stopped, then the replica is discarded). View-only is the replica's to enforce (x11vnc drops
every input event), not the page's.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from osgym.errors import ConfigError, OsgymError
from osgym.serving.auth import new_token
from osgym.serving.sessions import Session

__all__ = ["NOVNC_DIR", "LiveViews", "ViewUnavailable", "ViewTicket"]

NOVNC_DIR = Path("/usr/share/novnc")
WEBSOCKIFY = "websockify"
SETUP_HINT = "install Debian's websockify and novnc (scripts/ensure-novnc.sh, run by `make test`)"
START_TIMEOUT_S = 15.0


class ViewUnavailable(OsgymError):
    """Raised when the host lacks websockify or noVNC, or websockify cannot start (503)."""


@dataclass(frozen=True)
class ViewTicket:
    """What a client needs to open a view: the token, the page's path on the server, websockify's port."""

    token: str
    session_id: int
    page: str
    """The page's path on this server (``/view/{token}/vnc.html?...``)."""
    port: int
    """websockify's port, on the server's host."""

    @property
    def websocket_path(self) -> str:
        return f"/websockify?token={self.token}"


class LiveViews:
    """The live views of one server: websockify, started at the first view, and the tokens.

    Args:
        host: where websockify listens (the server's host).
        port: websockify's port; 0 picks a free one.
        novnc_dir: noVNC's files.
        websockify: the websockify program.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, novnc_dir: Path = NOVNC_DIR,
                 websockify: str = WEBSOCKIFY) -> None:
        self.host = host
        self.port = port
        self.novnc_dir = novnc_dir
        self.websockify = websockify
        self._lock = threading.Lock()
        self._dir: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._tokens: dict[str, int] = {}  # token -> session id

    def __repr__(self) -> str:  # never the tokens
        return f"LiveViews({self.host}:{self.port}, views={len(self._tokens)})"

    # ---- websockify ----------------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def token_dir(self) -> Path | None:
        """The private directory of the tokens (websockify's token source), once websockify started."""
        return self._dir

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def _ensure_started(self) -> Path:
        """websockify, listening; returns the token directory. Called with the lock held."""
        if self._dir is not None and self.running:
            return self._dir
        program = shutil.which(self.websockify)
        if program is None or not (self.novnc_dir / "vnc.html").is_file():
            raise ViewUnavailable(f"the live view needs websockify and noVNC on the host: {SETUP_HINT}")
        if self._dir is None:
            # 0700, ours: the tokens are files in it. websockify confines a token to its directory by a
            # prefix test, so that directory is a child of ours: no one else can make a sibling with its prefix
            self._dir = Path(tempfile.mkdtemp(prefix="osgym-views-")) / "tokens"
            self._dir.mkdir(mode=0o700)
        if self.port == 0:
            with socket.socket() as s:
                s.bind((self.host, 0))
                self.port = s.getsockname()[1]
        log = open(self._dir.parent / "websockify.log", "wb")  # noqa: SIM115 (handed to the child)
        try:
            self._proc = subprocess.Popen(
                [program, "--token-plugin", "UnixDomainSocketDirectory", "--token-source", str(self._dir),
                 f"{self.host}:{self.port}"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, cwd="/")
        finally:
            log.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if self._proc.poll() is not None:
                raise ViewUnavailable(f"websockify exited at start on {self.host}:{self.port}: {self._log_tail()}")
            with socket.socket() as probe:
                probe.settimeout(1.0)
                if probe.connect_ex((self.host, self.port)) == 0:
                    return self._dir
            if time.monotonic() > deadline:
                self._stop_websockify()
                raise ViewUnavailable(f"websockify did not listen on {self.host}:{self.port} within "
                                      f"{START_TIMEOUT_S:g} s")
            time.sleep(0.05)

    def _log_tail(self) -> str:
        if self._dir is None:
            return ""
        try:
            return (self._dir.parent / "websockify.log").read_bytes()[-300:].decode("utf-8", "replace")
        except OSError:
            return ""

    def _stop_websockify(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            try:  # the whole group: websockify forks a process per connection
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            except ProcessLookupError:
                pass
        try:  # a relay whose websocket was still open outlives its parent's SIGTERM
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    # ---- views ---------------------------------------------------------------------------------------
    def issue(self, session_id: int, vnc_socket: str) -> ViewTicket:
        """A new view token of session ``session_id``, whose replica listens on ``vnc_socket``.

        Raises:
            ViewUnavailable: if websockify or noVNC is missing, or websockify cannot start.
        """
        token = new_token()
        with self._lock:
            directory = self._ensure_started()
            os.symlink(vnc_socket, directory / token)
            self._tokens[token] = session_id
        return ViewTicket(token, session_id, self.page(token), self.port)

    def page(self, token: str) -> str:
        """The path of the page of view ``token``: noVNC, set to connect view-only to websockify with the token."""
        query = (f"autoconnect=1&view_only=1&shared=1&resize=scale&reconnect=0&port={self.port}"
                 f"&path={quote(f'websockify?token={token}', safe='')}")
        return f"/view/{token}/vnc.html?{query}"

    def valid(self, token: str) -> bool:
        with self._lock:
            return token in self._tokens

    def end(self, session_id: int) -> int:
        """Revoke every token of session ``session_id``; returns how many there were."""
        with self._lock:
            gone = [t for t, sid in self._tokens.items() if sid == session_id]
            for token in gone:
                del self._tokens[token]
                if self._dir is not None:
                    (self._dir / token).unlink(missing_ok=True)
        return len(gone)

    def session_ended(self, session: Session) -> None:
        """Revoke the session's views and stop its replica's viewers (a :attr:`SessionManager.end_hooks` hook)."""
        if self.end(session.id):
            session.replica.api.request("POST", "/view/stop", timeout=10)

    def file(self, token: str, path: str) -> Path:
        """noVNC's file ``path``, for a holder of the live token ``token``.

        Raises:
            PermissionError: if the token is not a live view's.
            FileNotFoundError: if noVNC has no such file.
        """
        if not self.valid(token):
            raise PermissionError("not a live view token (it was never issued, or its session ended)")
        root = self.novnc_dir.resolve()
        target = (root / (path or "vnc.html")).resolve()
        if not target.is_relative_to(root) or not target.is_file():
            raise FileNotFoundError(path)
        return target

    def close(self) -> None:
        """Stop websockify (and its relays) and forget every token. Idempotent."""
        with self._lock:
            self._stop_websockify()
            self._tokens.clear()
            if self._dir is not None:
                shutil.rmtree(self._dir.parent, ignore_errors=True)
                self._dir = None


def vnc_socket_of(endpoint: str) -> str:
    """The live view's socket next to a replica's control socket (``unix:DIR/control.sock``).

    Raises:
        ConfigError: for a replica reached over TCP (it has no run directory on this host).
    """
    if not endpoint.startswith("unix:"):
        raise ConfigError("the live view needs a replica reached through its Unix socket; this one is reached "
                          f"at {endpoint}")
    return str(Path(endpoint[len("unix:"):]).parent / "vnc.sock")
