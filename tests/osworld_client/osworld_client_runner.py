"""Call OSWorld's own ``PythonController`` and ``SetupController`` against a replica, inside the client
venv (tests/osworld_client/conftest.py); not imported by osgym.

Reads one JSON request from stdin: ``{"host", "port", "cache_dir", "screen": [w, h], "calls": [{"controller":
"python"|"setup", "method", "args", "kwargs"}]}``, makes the calls in order and prints a JSON list of
``{"value": ...}`` (bytes as ``{"bytes": base64}``) or ``{"error": "Type: message"}``.

``desktop_env/controllers/python.py`` needs only requests, and loads unchanged. ``setup.py`` imports at
its top, besides requests, requests-toolbelt, python-dotenv and Playwright (in the venv; Playwright drives
Chromium over CDP for ``chrome_open_tabs``), PyDrive (Google Drive) and OSWorld's metric utilities
(formulas, openpyxl, tldextract, ..., for ``compare_urls`` when closing tabs). The runner compiles
setup.py's own source without those two imports (``DROPPED``) and, before running ``setup(config)``,
checks that neither ``setup`` nor any step function the config names refers to what they would have
bound: the code that runs is OSWorld's, unchanged, and could not have used them.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared loader
from osworld_reference import load_without, names  # noqa: E402

DROPPED = {"pydrive.auth", "pydrive.drive", "desktop_env.evaluators.metrics.utils"}
UNBOUND = {"GoogleAuth", "GoogleDrive", "GoogleDriveFile", "GoogleDriveFileList", "compare_urls"}


def _encode(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return {"bytes": base64.b64encode(value).decode()}
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_encode(v) for v in value]
    return value


def _check_setup(cls: Any, config: list[dict[str, Any]]) -> None:
    for func in ["setup", *(f"_{step['type']}_setup" for step in config)]:
        used = names(getattr(cls, func).__code__) & UNBOUND
        assert not used, f"SetupController.{func} uses {used}, left out here: cannot run it"


def main() -> None:
    request = json.load(sys.stdin)
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(name)s %(levelname)s %(message)s")
    from desktop_env.controllers.python import PythonController
    setup_module = load_without("desktop_env.controllers.setup", DROPPED)
    host, port = request["host"], request["port"]
    width, height = request["screen"]
    controllers = {
        "python": PythonController(vm_ip=host, server_port=port),
        "setup": setup_module.SetupController(vm_ip=host, server_port=port, cache_dir=request["cache_dir"],
                                              client_password="password", screen_width=width, screen_height=height),
    }
    out = []
    # keep stdout for the answer: OSWorld's code prints as it goes
    with contextlib.redirect_stdout(sys.stderr):
        for call in request["calls"]:
            try:
                controller = controllers[call["controller"]]
                if call["controller"] == "setup" and call["method"] == "setup":
                    _check_setup(type(controller), call["args"][0])
                value = getattr(controller, call["method"])(*call.get("args", []), **call.get("kwargs", {}))
                out.append({"value": _encode(value)})
            except Exception as exc:  # reported to the test, which decides what a failure means
                out.append({"error": f"{type(exc).__name__}: {exc}"})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
