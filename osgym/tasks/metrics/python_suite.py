"""``check_python_file_by_test_suite``: a task's test suite run against the agent's Python files.

OSWorld imports the agent's modules into the evaluating process. The agent wrote them, so here they
run where the agent's code already runs: inside the replica, as the agent's user, in a scratch folder
of their own, bounded in time. The suite and the agent's files are the copies the getters fetched.
"""

from __future__ import annotations

import shlex
import uuid
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from osgym.tasks.metrics import metric

SUITE_TIMEOUT_S = 120
MAX_FILE_BYTES = 16 * 2**20

# Runs inside the replica: python3 -c RUNNER DIR SUITE NAME MARK. The suite's folder is its working
# directory and first on sys.path, so it imports the agent's modules by name as OSWorld's suites do.
RUNNER = r"""
import importlib.util, os, sys
folder, suite, name, mark = sys.argv[1:5]
os.chdir(folder)
sys.path.insert(0, folder)
spec = importlib.util.spec_from_file_location("dynamic_module", os.path.join(folder, suite))
module = importlib.util.module_from_spec(spec)
sys.modules["dynamic_module"] = module
spec.loader.exec_module(module)
try:
    got = getattr(module, name)()
except Exception:
    got = False
if isinstance(got, (int, float)) and not isinstance(got, bool):
    score = min(1.0, max(0.0, float(got)))
else:
    score = 1.0 if got else 0.0
print(mark, score, flush=True)
"""


class SuiteOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    test_function_name: str = Field("test", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")


def _listed(value: Any) -> list[str]:
    items = value if isinstance(value, list) else [value]
    return [str(v) for v in items if v]


@metric("check_python_file_by_test_suite", SuiteOptions, files=True, in_replica=True)
def check_python_file_by_test_suite(result: Any, expected: Any, options: SuiteOptions, *, replica: Any) -> float:
    """What the suite's test function (``test_function_name``, default ``test``) returns with the agent's
    files beside it: a number clamped to [0, 1], else 1.0 for a true value and 0.0 for a false one. 0.0
    if it raises, the suite cannot be imported (the agent's module is broken or missing), or it runs past
    120 s. ``result``: the agent's files (one or a list); ``expected``: the suite."""
    files, suites = _listed(result), _listed(expected)
    if not files or len(suites) != 1 or not all(Path(p).is_file() for p in [*files, *suites]):
        return 0.0
    if any(Path(p).stat().st_size > MAX_FILE_BYTES for p in [*files, *suites]):
        return 0.0
    folder = f"/tmp/osgym-suite-{uuid.uuid4().hex[:12]}"
    suite = f"osgym_suite_{uuid.uuid4().hex[:8]}.py"  # never the name of one of the agent's modules
    mark = f"osgym-suite-{uuid.uuid4().hex}"
    if replica.execute(["mkdir", "-m", "700", folder]).returncode != 0:
        raise OSError(f"check_python_file_by_test_suite: cannot make {folder} in the replica")
    try:
        for path in files:
            replica.write_file(f"{folder}/{Path(path).name}", Path(path).read_bytes())
        replica.write_file(f"{folder}/{suite}", Path(suites[0]).read_bytes())
        command = ["timeout", "-k", "5", str(SUITE_TIMEOUT_S), "python3", "-c", RUNNER, folder, suite,
                   options.test_function_name, mark]
        res = replica.execute(command, timeout=SUITE_TIMEOUT_S + 15)
    finally:
        replica.execute(f"rm -rf -- {shlex.quote(folder)}", shell=True)
    scores = [line.split()[-1] for line in res.output.splitlines() if line.startswith(f"{mark} ")]
    try:
        return min(1.0, max(0.0, float(scores[-1]))) if scores else 0.0
    except ValueError:
        return 0.0
