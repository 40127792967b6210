"""Child processes of the control server: commands, launches, the AT-SPI dumper and the screen recorder.

Every child gets a deadline; none can take the server down with it. Every child runs
as `user` (uids.AS_USER): the server itself runs as `osgym`, which the agent cannot touch,
and signals its children through ``kill`` run as `user` (it keeps no CAP_KILL).
"""

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.parse

import uids
from commands import HOME, command_of, expand_home  # noqa: F401 (the routes' names for them)
from protocol import HttpError, bad

HERE = os.path.dirname(os.path.abspath(__file__))
MAX_EXEC_TIMEOUT = 600
MAX_OUTPUT = 16 * 2**20
MAX_RECORDING = 256 * 2**20  # ffmpeg stops writing past it: the largest file files.read_file sends


def timeout_of(data, default=120.0, key="timeout", hi=MAX_EXEC_TIMEOUT):
    t = data.get(key, default)
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 < t <= hi:
        raise bad(f"{key}: expected seconds in (0, {hi}], actual {t!r:.40}")
    return float(t)


class SpawnError(Exception):
    """Raised by run(raise_spawn=True) when the program cannot be started at all."""


def run(cmd, shell, timeout, env, raise_spawn=False):
    """Run to completion: {status, output, error, returncode}. A timeout kills the whole process group."""
    try:
        p = subprocess.Popen(cmd, shell=shell, cwd=HOME, env=env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, **uids.AS_USER)
    except (FileNotFoundError, PermissionError, NotADirectoryError, OSError) as exc:
        if raise_spawn:
            raise SpawnError(str(exc)) from None
        return {"status": "error", "output": "", "error": str(exc), "returncode": 127}
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(p)
        out, err = p.communicate()
        return {"status": "timeout", "output": out[:MAX_OUTPUT].decode("utf-8", "replace"),
                "error": f"timed out after {timeout:g} s", "returncode": -1}
    return {"status": "success" if p.returncode == 0 else "error",
            "output": out[:MAX_OUTPUT].decode("utf-8", "replace"),
            "error": err[:MAX_OUTPUT].decode("utf-8", "replace"), "returncode": p.returncode}


def signal_as_user(pid, sig, group=False):
    """Send ``sig`` to ``pid`` (its process group with ``group``), a process of the server's or of `user`.

    The server cannot signal `user`'s processes itself (other uid, no CAP_KILL), so for
    those it runs ``kill`` as `user`: it can reach exactly what the agent could.
    """
    try:
        (os.killpg if group else os.kill)(pid, sig)
        return
    except ProcessLookupError:
        return
    except PermissionError:
        pass
    target = f"-{pid}" if group else str(pid)
    try:
        # procps' kill takes a process group (-PGID) only after "--", and then only with -SIGNAME.
        subprocess.run(["kill", f"-{signal.Signals(sig).name[3:]}", "--", target], stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10, cwd="/", **uids.AS_USER)
    except (OSError, subprocess.TimeoutExpired):
        pass


def kill_group(p):
    signal_as_user(p.pid, signal.SIGKILL, group=True)


def launch(cmd, shell, env):
    """Start a detached process; a thread reaps it when it exits. Returns its pid."""
    try:
        p = subprocess.Popen(cmd, shell=shell, cwd=HOME, env=env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                             **uids.AS_USER)
    except (FileNotFoundError, PermissionError, NotADirectoryError) as exc:
        raise bad(f"cannot launch {cmd!r:.100}: {exc}") from None
    threading.Thread(target=p.wait, daemon=True).start()
    return p.pid


OPENERS = (  # (extensions, candidate programs): the first program on PATH opens the file
    ((".doc", ".docx", ".odt", ".rtf"), ("libreoffice --writer", "mousepad")),
    ((".xls", ".xlsx", ".ods", ".csv"), ("libreoffice --calc", "mousepad")),
    ((".ppt", ".pptx", ".odp"), ("libreoffice --impress",)),
    ((".html", ".htm", ".pdf"), ("chromium", "mousepad")),
    ((".png", ".jpg", ".jpeg", ".gif", ".bmp", ".webp", ".svg", ".tif", ".tiff"), ("ristretto",)),
    ((".xcf",), ("gimp",)),
    ((".mp3", ".mp4", ".mkv", ".avi", ".mov", ".ogg", ".ogv", ".wav", ".webm", ".flac"), ("vlc",)),
    (("", ".txt", ".md", ".py", ".sh", ".json", ".xml", ".log", ".cfg", ".ini", ".yaml", ".yml"),
     ("mousepad", "gedit")),
)
FOLDER_OPENERS = ("pcmanfm", "thunar")  # the desktop tier's file manager, the apps tier's


def opener(path):
    """argv that opens ``path`` in the tier's matching application (gio's MIME defaults otherwise)."""
    ext = os.path.splitext(path)[1].lower()
    if os.path.isdir(path):
        candidates = FOLDER_OPENERS
    else:
        candidates = next((programs for exts, programs in OPENERS if ext in exts), ())
    for prog in candidates:
        argv = prog.split()
        if shutil.which(argv[0]):
            return [*argv, path]
    return ["gio", "open", path]


class Accessibility:
    """Runs ``a11y.py`` with a deadline and a bound on what it may print."""

    def __init__(self, env):
        self.env = env
        self.lock = threading.Lock()  # one walk at a time: a walk is CPU-heavy for every app

    def _run(self, mode, timeout, max_nodes, max_bytes, showing_only=False, window=None, find=None):
        argv = [sys.executable, os.path.join(HERE, "a11y.py"), mode, "--max-nodes", str(max_nodes)]
        if showing_only:
            argv.append("--showing-only")
        if window:
            argv.append(f"--window={window}")  # one argument: a name that starts with "-" stays a value
        if find is not None:  # its query parameters, read back in a11y.py by the protocol's own reader
            argv.append("--find=" + urllib.parse.urlencode(find.params()))
        with self.lock:
            # As `user`: the session and AT-SPI buses admit their owner only. The tree is
            # therefore as trustworthy as the agent's apps are: it serves the a11y observation only.
            p = subprocess.Popen(argv, env=self.env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, start_new_session=True, cwd="/", **uids.AS_USER)
            try:
                out, err = p.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                kill_group(p)
                p.communicate()
                raise HttpError(504, f"accessibility tree not read within {timeout:g} s") from None
        if p.returncode != 0:
            tail = err.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
            raise HttpError(500, f"reading the accessibility tree failed: {tail[0][:300]}")
        if len(out) > max_bytes:
            raise HttpError(413, f"accessibility tree of {len(out)} bytes exceeds max_bytes={max_bytes}")
        return out.decode("utf-8", "replace")

    def tree(self, timeout=10.0, max_nodes=20_000, max_bytes=32 * 2**20, showing_only=False, window=None,
             find=None):
        return self._run("tree", timeout, max_nodes, max_bytes, showing_only, window, find)

    def terminal(self, timeout=10.0):
        out = self._run("terminal", timeout, 20_000, MAX_OUTPUT)
        return out[1:] if out.startswith("\x00") else None


class Recorder:
    """One ffmpeg x11grab recording at a time, to an mp4 under /tmp."""

    PATH = "/tmp/osgym-recording.mp4"

    def __init__(self, display, env, size):
        self.display = display
        self.env = env
        self.size = size
        self.proc = None
        self.lock = threading.Lock()
        self.path = None

    @property
    def recording(self):
        return self.proc is not None and self.proc.poll() is None

    def start(self, fps=10, path=None):
        path = path or self.PATH
        with self.lock:
            if self.recording:
                raise HttpError(409, "a recording is already in progress")
            for p in (path, path + ".log"):
                if os.path.exists(p):
                    os.unlink(p)
            w, h = self.size()
            argv = ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y",
                    "-f", "x11grab", "-draw_mouse", "1", "-framerate", str(fps), "-video_size", f"{w}x{h}",
                    "-i", self.display, "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p",
                    "-movflags", "+faststart", "-fs", str(MAX_RECORDING), path]
            log = open(path + ".log", "wb")
            try:
                self.proc = subprocess.Popen(argv, env=self.env(), stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                             start_new_session=True, cwd="/", **uids.AS_USER)
            except FileNotFoundError as exc:
                raise HttpError(500, f"cannot start ffmpeg: {exc}") from None
            finally:
                log.close()
            self.path = path
            # Started = ffmpeg still runs once it has opened the display (polled, at most 5 s).
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    err = self._log_tail()
                    self.proc = None
                    raise HttpError(500, f"ffmpeg exited at start: {err}")
                if os.path.exists(path):
                    break
                time.sleep(0.05)
            return {"status": "success", "path": path, "fps": fps, "size": [w, h]}

    def _log_tail(self):
        try:
            with open((self.path or self.PATH) + ".log", "rb") as f:
                return f.read()[-500:].decode("utf-8", "replace").strip()
        except OSError:
            return ""

    def stop(self):
        """Stop gracefully (SIGINT lets ffmpeg write the index); returns the mp4's path."""
        with self.lock:
            if not self.recording:
                self.proc = None
                raise HttpError(409, "no recording in progress")
            p, self.proc = self.proc, None
            signal_as_user(p.pid, signal.SIGINT)
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                kill_group(p)
                p.wait()
                raise HttpError(500, "ffmpeg did not stop within 15 s and was killed") from None
            if not os.path.exists(self.path) or os.path.getsize(self.path) == 0:
                raise HttpError(500, f"recording is empty: {self._log_tail()}")
            return self.path

    def close(self):
        if self.recording:
            kill_group(self.proc)


def a11y_bus_owned(env):
    """Whether a process owns org.a11y.Bus, AT-SPI's name on the session bus (ours, or one D-Bus started)."""
    try:
        res = subprocess.run(["dbus-send", "--session", "--print-reply", "--dest=org.freedesktop.DBus",
                              "/org/freedesktop/DBus", "org.freedesktop.DBus.NameHasOwner", "string:org.a11y.Bus"],
                             env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=5, cwd="/", **uids.AS_USER)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return res.returncode == 0 and b"boolean true" in res.stdout
