"""OSWorld's wire protocol: the routes its PythonController and SetupController call.

Enabled per replica with OSGYM_COMPAT=1, tokenless, and published on a loopback
address only (the pool's job). Request and response shapes follow OSWorld's
desktop_env server; where OSWorld answers plain text, so does this module. Commands are read as
OSWorld's server reads them (``commands.osworld_command_of``: ``"shell": "true"`` is true).
Files are confined to the user's home and /tmp, as in the native API.
"""

import email.parser
import email.policy
import os
import platform
import shutil
import time
from urllib.parse import parse_qs

import asset_cache
import commands
import dirtree
import procs
import wallpaper
import windows
from files import FILE_ROOTS, confine, read_file, write_file
from protocol import HttpError, bad, load_json, number

OSWORLD_EXEC_TIMEOUT = 120  # OSWorld's server runs every command with this timeout
OSWORLD_WINDOW_WAIT_S = windows.MAX_WAIT_S  # how long /setup/activate_window waits for its window to appear
WALLPAPER_ROOTS = tuple(root + "/" for root in FILE_ROOTS) + ("/usr/share/",)


def text(status, message):
    return status, message.encode(), {"Content-Type": "text/html; charset=utf-8"}


def form(body, headers):
    """Fields of a urlencoded or multipart/form-data body: {name: str | (filename, bytes)}."""
    ctype = headers.get("Content-Type", "") if headers is not None else ""
    if ctype.startswith("multipart/form-data"):
        msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            b"Content-Type: " + ctype.encode("latin-1", "replace") + b"\r\n\r\n" + body)
        if not msg.is_multipart():
            raise bad("multipart body could not be parsed")
        fields = {}
        for part in msg.iter_parts():
            name = part.get_param("name", header="content-disposition")
            if not name:
                continue
            payload = part.get_payload(decode=True) or b""
            filename = part.get_filename()
            fields[name] = (filename, payload) if filename is not None else payload.decode("utf-8", "replace")
        return fields
    try:
        pairs = parse_qs(body.decode("utf-8"), keep_blank_values=True, max_num_fields=100)
    except (UnicodeDecodeError, ValueError) as exc:
        raise bad(f"form body could not be parsed: {exc}") from None
    return {k: v[-1] for k, v in pairs.items()}


def routes(app):
    """The OSWorld routes bound to ``app`` (an ``api.App``)."""
    env = app.child_env

    def execute(q, body, headers=None):
        data = load_json(body)
        cmd, shell = commands.osworld_command_of(data)
        timeout = procs.timeout_of(data, default=OSWORLD_EXEC_TIMEOUT)
        try:
            result = procs.run(cmd, shell, timeout, env(), raise_spawn=True)
        except procs.SpawnError as exc:
            return 500, {"status": "error", "message": str(exc)}, None
        if result["status"] == "timeout":
            return 500, {"status": "error", "message": result["error"]}, None
        result["status"] = "success"  # OSWorld: it ran, so success; the exit code says the rest
        return 200, result, None

    def launch(q, body, headers=None):
        data = load_json(body)
        cmd, shell = commands.osworld_command_of(data)
        try:
            procs.launch(cmd, shell, env())
        except HttpError as exc:
            return 500, {"status": "error", "message": exc.message}, None
        return text(200, f"{cmd if shell else ' '.join(cmd)} launched successfully")

    def accessibility(q, body, headers=None):
        return 200, {"AT": app.a11y.tree(timeout=number(q, "timeout", 0.5, 60, default=20))}, None

    def terminal(q, body, headers=None):
        return 200, {"output": app.a11y.terminal(), "status": "success"}, None

    def change_wallpaper(q, body, headers=None):
        wallpaper.change(load_json(body).get("path"), env())
        return text(200, "Wallpaper changed successfully")

    def wallpaper_post(q, body, headers=None):
        # OSWorld's get_vm_wallpaper posts nothing and expects the image's bytes; osgym's client posts a
        # path to show. The path read back is the agent's to set (xfconf), so only the user's files and the
        # system's shared images are served, never e.g. the server's own files.
        if body and body.strip():
            return app.wallpaper_set(q, body)
        real = os.path.realpath(wallpaper.current(env()))
        if not real.startswith(WALLPAPER_ROOTS):
            raise HttpError(403, f"the wallpaper {real!r:.200} is outside {', '.join(WALLPAPER_ROOTS)}")
        if not os.path.isfile(real):
            raise HttpError(404, "Wallpaper file not found")
        return 200, read_file(real), {"Content-Type": "image/png"}

    def get_file(q, body, headers=None):
        fields = form(body, headers)
        raw = fields.get("file_path")
        if not isinstance(raw, str) or not raw:
            raise bad("file_path is required")
        path = confine(os.path.expandvars(raw))
        if not os.path.isfile(path):
            raise HttpError(404, "File not found")
        name = os.path.basename(path).replace('"', "")
        return 200, read_file(path), {"Content-Type": "application/octet-stream",
                                      "Content-Disposition": f'attachment; filename="{name}"'}

    def upload(q, body, headers=None):
        fields = form(body, headers)
        raw, data = fields.get("file_path"), fields.get("file_data")
        if not isinstance(raw, str) or not raw or not isinstance(data, tuple):
            raise bad("file_path and file_data are required")
        path = confine(os.path.expandvars(raw))
        write_file(path, data[1])
        return text(200, f"File Uploaded: {len(data[1])} bytes")

    def download_file(q, body, headers=None):
        # OSWorld's server fetches the URL itself; a replica is offline, so the bytes come from the
        # host's asset cache, mounted read-only (asset_cache).
        data = load_json(body)
        url, raw = data.get("url"), data.get("path")
        if not isinstance(url, str) or not url or not isinstance(raw, str) or not raw:
            return text(400, "Path or URL not supplied!")
        path = confine(os.path.expandvars(procs.expand_home(raw)))
        write_file(path, asset_cache.read(url))
        return text(200, "File downloaded successfully")

    def list_directory(q, body, headers=None):
        data = load_json(body)
        raw = data.get("path")
        if not isinstance(raw, str) or not raw:
            raise bad("Missing 'path' parameter")
        path = confine(raw)
        if not os.path.isdir(path):
            raise bad("The provided path is not a directory")
        return 200, {"directory_tree": dirtree.tree(path)}, None

    def find_window(data, timeout):
        # OSWorld's server on Linux: `wmctrl -{x}{F}a NAME` or `-c` (windows.py: wmctrl's rule), its flags taken
        # with Python's truth as there; wmctrl acts on the first match only. OSWorld answers 200 whether or not
        # wmctrl found a window; here a miss is a 404 with the reason, which OSWorld's SetupController logs and
        # passes over in the same way.
        name = data.get("window_name")
        if not isinstance(name, str) or not name:
            raise bad("window_name required")
        strict, by_class = bool(data.get("strict", False)), bool(data.get("by_class", False))
        found = windows.find(app.screen, lambda w: windows.wmctrl_match(w, name, strict, by_class), timeout)
        if not found:
            raise HttpError(404, f"Window {name} not found")
        return found[0]

    def activate_window(q, body, headers=None):
        # Waits for the window (OSWorld's VM maps an app's window within a second or two of its launch step;
        # VS Code's here takes 15-20 s): see windows.py. `timeout` (osgym's; OSWorld's client sends none)
        # shortens the wait.
        data = load_json(body)
        w = find_window(data, number(data, "timeout", 0, windows.MAX_WAIT_S, default=OSWORLD_WINDOW_WAIT_S))
        app.screen.activate(w["id"])
        return text(200, "Window activated successfully")

    def close_window(q, body, headers=None):
        app.screen.close(find_window(load_json(body), 0)["id"])
        return text(200, "Window closed successfully.")

    def open_file(q, body, headers=None):
        data = load_json(body)
        raw = data.get("path")
        if not isinstance(raw, str) or not raw:
            raise bad("Path not supplied!")
        timeout = number(data, "timeout_seconds", 0, 600, default=30)
        window_name = data.get("window_name")
        path = os.path.expandvars(procs.expand_home(raw))
        if os.path.exists(path):
            path = confine(path)
            argv = procs.opener(path)
            name = os.path.basename(path)
            candidates = [window_name] if window_name else [name, os.path.splitext(name)[0]]
        elif shutil.which(raw):
            argv = [raw]
            candidates = [window_name] if window_name else [raw]
        else:
            raise HttpError(404, f"Application/file not found: {raw}")
        procs.launch(argv, False, env())
        deadline = time.monotonic() + timeout
        while True:
            for w in app.screen.windows():
                if any(c and c in w["title"] for c in candidates):
                    app.screen.activate(w["id"])
                    return text(200, "File opened and window activated successfully")
            if time.monotonic() >= deadline:
                return text(500, f"Failed to find window for {candidates} within {timeout:g} seconds.")
            time.sleep(0.1)

    def screen_size(q, body, headers=None):
        w, h = app.screen.size
        return 200, {"width": w, "height": h}, None

    def window_size(q, body, headers=None):
        name = form(body, headers).get("app_class_name")
        if not isinstance(name, str) or not name:
            raise bad("app_class_name is required")
        for w in app.screen.windows():
            if name.lower() in (w["wm_class"].lower(), w.get("wm_instance", "").lower()):
                return 200, {"width": w["width"], "height": w["height"]}, None
        raise HttpError(404, f"no window of class {name!r:.100}")

    def desktop_path(q, body, headers=None):
        path = os.path.join(procs.HOME, "Desktop")
        if not os.path.isdir(path):
            raise HttpError(404, "desktop path not found")
        return 200, {"desktop_path": path}, None

    def platform_name(q, body, headers=None):
        return text(200, platform.system())

    def cursor_position(q, body, headers=None):
        x, y = app.input.pointer()
        return 200, [x, y], None

    def start_recording(q, body, headers=None):
        app.recorder.start(fps=10)
        return 200, {"status": "success", "message": "Started recording successfully."}, None

    def end_recording(q, body, headers=None):
        path = app.recorder.stop()
        return 200, read_file(path), {"Content-Type": "video/mp4",
                                      "Content-Disposition": 'attachment; filename="recording.mp4"'}

    def run_python(q, body, headers=None):
        data = load_json(body)
        code = data.get("code")
        if not isinstance(code, str) or not code:
            return 400, {"status": "error", "message": "Code not supplied!"}, None
        r = procs.run(["python3", "-c", code], False, 30, env())
        message = r["output"] + (("\n" if r["output"] else "") + r["error"] if r["error"] else "")
        status = "success" if r["returncode"] == 0 else "error"
        return 200, {"status": status, "message": message, "need_more": False, "output": r["output"],
                     "error": r["error"], "return_code": r["returncode"]}, None

    def run_bash_script(q, body, headers=None):
        data = load_json(body)
        script = data.get("script")
        if not isinstance(script, str) or not script:
            return 400, {"status": "error", "output": "Script not supplied!", "error": "", "returncode": -1}, None
        timeout = number(data, "timeout", 1, procs.MAX_EXEC_TIMEOUT, default=100)
        wd = data.get("working_dir")
        cmd = ["/bin/bash", "-c", script]
        if isinstance(wd, str) and wd:
            wd = confine(procs.expand_home(wd))
            cmd = ["/bin/bash", "-c", 'cd "$0" && eval "$1"', wd, script]
        r = procs.run(cmd, False, timeout, env())
        if r["status"] == "timeout":
            return 500, {"status": "error", "output": f"Script execution timed out after {timeout:g} seconds",
                         "error": "", "returncode": -1}, None
        return 200, {"status": "success" if r["returncode"] == 0 else "error",
                     "output": r["output"] + r["error"], "error": "", "returncode": r["returncode"]}, None

    table = {
        ("POST", "/execute"): execute,
        ("POST", "/setup/execute"): execute,
        ("POST", "/setup/launch"): launch,
        ("POST", "/setup/upload"): upload,
        ("POST", "/setup/download_file"): download_file,
        ("POST", "/setup/open_file"): open_file,
        ("POST", "/setup/activate_window"): activate_window,
        ("POST", "/setup/close_window"): close_window,
        ("POST", "/setup/change_wallpaper"): change_wallpaper,
        ("POST", "/wallpaper"): wallpaper_post,
        ("GET", "/accessibility"): accessibility,
        ("GET", "/terminal"): terminal,
        ("POST", "/file"): get_file,
        ("POST", "/list_directory"): list_directory,
        ("GET", "/platform"): platform_name,
        ("GET", "/cursor_position"): cursor_position,
        ("POST", "/screen_size"): screen_size,
        ("GET", "/screen_size"): screen_size,
        ("POST", "/window_size"): window_size,
        ("POST", "/desktop_path"): desktop_path,
        ("GET", "/desktop_path"): desktop_path,
        ("POST", "/start_recording"): start_recording,
        ("POST", "/end_recording"): end_recording,
        ("POST", "/run_python"): run_python,
        ("POST", "/run_bash_script"): run_bash_script,
    }
    for fn in table.values():
        fn.wants_headers = True  # App.handle passes the request headers (for form bodies)
    return table
