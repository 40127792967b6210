"""The live view: a view-only VNC server for the host, started on demand.

``POST /view/start`` listens on ``/run/osgym/ctl/vnc.sock``, in the host's run directory: the
host reaches it (osgym serve relays noVNC to it), `user` cannot (the directory sits in the
server's own 0700 one), and the replica still has no network. Each connection gets its own
``x11vnc -inetd -viewonly`` started as `user`, with the connection as its stdin and stdout: the
same account the recorder and every other child of the server run as, with no capability, and
no listening socket of its own. ``-viewonly`` makes x11vnc drop every pointer and key event a
viewer sends, whatever the page does; the clipboard is not exchanged (``-nosel``), and remote
control and commands are off. ``POST /view/stop`` closes the socket and ends every viewer; the
replica is discarded after its session anyway, with whatever still runs in it.
"""

import os
import signal
import socket
import subprocess
import sys
import threading

import procs
import uids
from protocol import HttpError, load_json

SOCKET = "/run/osgym/ctl/vnc.sock"
MAX_VIEWERS = 4
"""Concurrent viewers per replica: each is an x11vnc process (a few MiB), within the replica's limits."""
X11VNC = ("x11vnc", "-inetd", "-q", "-viewonly", "-shared", "-nopw", "-nosel", "-noremote", "-nocmds", "-nobell",
          "-norc", "-noipv6", "-rfbport", "0", "-noshm")
"""No password (the host admits viewers by token), no clipboard, no remote control or commands; file
transfer is off by default in Debian's 0.9.16 (which refuses ``-nofilexfer``, an obsolete option). No
MIT-SHM: Xvfb runs as `osgym` and cannot attach the segments x11vnc makes as `user` (BadAccess); frames
are read with XGetImage instead, which only a viewer pays for."""


class LiveView:
    """The listening socket and its viewers (x11vnc processes)."""

    def __init__(self, display, env):
        self.display = display
        self.env = env
        self.lock = threading.Lock()
        self.listener = None
        self.viewers = []

    def start(self):
        """Listen for the host (idempotent); returns the socket's name in the run directory."""
        with self.lock:
            if self.listener is None:
                # the run directory is the server's: its socket is created as the server, not as `user`
                with uids.fs_as_server():
                    listen = os.environ.get("OSGYM_LISTEN", "unix:" + SOCKET)
                    if not listen.startswith("unix:" + os.path.dirname(SOCKET) + "/"):
                        raise HttpError(409, "the live view needs the host's run directory (Unix socket "
                                             "transport); this replica is reached over TCP")
                    tmp = SOCKET + ".tmp"
                    for p in (tmp, SOCKET):
                        if os.path.lexists(p):
                            os.unlink(p)
                    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    try:
                        sock.bind(tmp)
                        os.chmod(tmp, 0o660)  # like control.sock: the server's, the run directory's group
                        sock.listen(8)
                        os.rename(tmp, SOCKET)
                    except BaseException:
                        sock.close()
                        raise
                sock.settimeout(0.5)
                self.listener = sock
                threading.Thread(target=self._accept, args=(sock,), name="liveview", daemon=True).start()
            return {"socket": os.path.basename(SOCKET), "viewers": self._live()}

    def _live(self):
        self.viewers = [p for p in self.viewers if p.poll() is None]
        return len(self.viewers)

    def _accept(self, sock):
        while True:
            with self.lock:
                if self.listener is not sock:
                    return
            try:
                conn, _ = sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn, self.lock:
                if self.listener is not sock or self._live() >= MAX_VIEWERS:
                    continue  # closing the connection refuses it
                conn.setblocking(True)  # it inherited the listener's timeout; x11vnc reads it blocking
                try:
                    p = subprocess.Popen([*X11VNC, "-display", self.display], env=self.env(), stdin=conn.fileno(),
                                         stdout=conn.fileno(), stderr=subprocess.DEVNULL, start_new_session=True,
                                         cwd="/", **uids.AS_USER)
                except OSError as exc:
                    print(f"live view: cannot start x11vnc: {exc}", file=sys.stderr, flush=True)
                    continue
                self.viewers.append(p)
                threading.Thread(target=p.wait, daemon=True).start()

    def stop(self):
        """Close the socket and end every viewer (idempotent)."""
        with self.lock:
            sock, self.listener = self.listener, None
            viewers, self.viewers = self.viewers, []
        if sock is not None:
            sock.close()
            with uids.fs_as_server():
                try:
                    os.unlink(SOCKET)
                except FileNotFoundError:
                    pass
        for p in viewers:
            if p.poll() is None:
                procs.signal_as_user(p.pid, signal.SIGKILL, group=True)
        return {"stopped": len(viewers)}

    def routes(self):
        def start(q, body):
            load_json(body)  # takes nothing, but a malformed body is still a 400
            return 200, self.start(), None

        def stop(q, body):
            load_json(body)
            return 200, self.stop(), None

        return {("POST", "/view/start"): start, ("POST", "/view/stop"): stop}
