"""Drive ``osgym serve`` with OpenEnv's own client (``openenv.core.GenericEnvClient``, unchanged), inside its venv
(tests/openenv_venv.py); not imported by osgym.

Reads one JSON request from stdin: ``{"url", "episodes": [{"reset": {...}, "calls": [{"step": {...}} |
{"state": {}}]}], "refused_url"}``. Runs every episode on one client (one WebSocket), through the client's
synchronous wrapper, as a trainer's rollout loop would; then tries to connect to ``refused_url``. Prints a JSON
object: ``{"episodes": [[result, ...], ...], "refused": "Type: message"}``, a result being ``{"observation",
"reward", "done"}`` (a reset's and a step's), the state, or ``{"error": "Type: message"}``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from openenv.core import GenericEnvClient


def _result(call: Any) -> dict[str, Any]:
    try:
        r = call()
    except Exception as exc:  # the client raises RuntimeError for a server's error message
        return {"error": f"{type(exc).__name__}: {exc}"}
    if isinstance(r, dict):
        return {"state": r}
    return {"observation": r.observation, "reward": r.reward, "done": r.done}


def main() -> None:
    request = json.load(sys.stdin)
    out: dict[str, Any] = {"episodes": []}
    with GenericEnvClient(base_url=request["url"]).sync() as env:
        for episode in request["episodes"]:
            results = [_result(lambda episode=episode: env.reset(**episode["reset"]))]
            for call in episode["calls"]:
                if "step" in call:
                    results.append(_result(lambda call=call: env.step(call["step"])))
                else:
                    results.append(_result(env.state))
            out["episodes"].append(results)
    refused = GenericEnvClient(base_url=request["refused_url"]).sync()
    try:
        refused.connect()
        out["refused"] = "connected"
    except Exception as exc:
        out["refused"] = f"{type(exc).__name__}: {exc}"
    finally:
        refused.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
