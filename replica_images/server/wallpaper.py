"""The desktop's wallpaper: read and set through xfconf, where xfdesktop keeps it (apps tier).

xfdesktop keys a backdrop by screen, monitor and workspace (``/backdrop/screen0/monitorscreen/
workspace0/last-image``: Xvfb's one monitor is called "screen"). Setting every ``last-image``
property the channel has covers whichever key this xfdesktop build reads; xfdesktop watches
the channel and redraws by itself. The desktop tier (openbox over a bare root window) has no
wallpaper, and says so.
"""

import os
import shutil

import procs
from protocol import HttpError, bad

CHANNEL = "xfce4-desktop"
PRIMARY = "/backdrop/screen0/monitorscreen/workspace0/last-image"
TIMEOUT_S = 10.0


def _require_xfconf():
    # xfconf-query alone says nothing: the desktop tier has it (mousepad's settings), but no xfdesktop.
    if shutil.which("xfdesktop") is None or shutil.which("xfconf-query") is None:
        raise HttpError(409, "this replica's desktop has no wallpaper (openbox over a bare root window); "
                             "the apps tier (XFCE) has one")


def _xfconf(args, env):
    _require_xfconf()
    res = procs.run(["xfconf-query", "-c", CHANNEL, *args], False, TIMEOUT_S, env)
    if res["returncode"] != 0:
        raise HttpError(500, f"xfconf-query {' '.join(args)} failed: {(res['error'] or res['output']).strip()[:300]}")
    return res["output"]


def current(env):
    """The path of the wallpaper shown on the (one) monitor."""
    return _xfconf(["-p", PRIMARY], env).strip()


def change(path, env):
    """Show the image at ``path`` (``~`` and ``$VARS`` expanded) as the wallpaper; returns the path.

    Raises:
        HttpError: 400 without a path, 404 if no such file (as `user` sees it), 409 on a tier without one.
    """
    _require_xfconf()
    if not isinstance(path, str) or not path.strip():
        raise bad("path is required: the image file to show as the wallpaper")
    # The server's HOME is the user's (the image sets it), as OSWorld expands paths in its VM.
    path = os.path.abspath(os.path.expandvars(os.path.expanduser(path)))
    if not os.path.isfile(path):  # routes run with the user's file permissions (uids.fs_as_user)
        raise HttpError(404, f"file not found: {path}")
    props = [p for p in _xfconf(["-l"], env).split() if p.startswith("/backdrop/") and p.endswith("/last-image")]
    for prop in dict.fromkeys([PRIMARY, *props]):
        _xfconf(["-p", prop, "-n", "-t", "string", "-s", path], env)
    return path
