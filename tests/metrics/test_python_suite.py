"""check_python_file_by_test_suite: a task's test suite run against the agent's Python files inside a replica
(the agent's code never runs on the evaluating host); OSWorld's function, run on the host, agrees."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import docker
import pytest

from osgym.replicas.client import Replica
from osgym.tasks import metrics
from osgym.tasks.metrics import python_suite
from tests.conftest import held_replica
from tests.metrics.conftest import Call, OSWorld
from tests.replica.helpers import SCREEN

# Both put the suite's folder first on sys.path, so it imports the agent's modules beside it by name.
SUITE = """from {module} import add

def {name}():
    return add(2, 3) == 5 and add(-1, 1) == 0
"""


@dataclass(frozen=True)
class SuiteCase:
    id: str
    code: str | None  # the agent's module; None: it never wrote it
    want: float
    suite: str = SUITE
    name: str = "test"


CASES = [
    SuiteCase("fixed", "def add(a, b):\n    return a + b\n", 1.0),
    SuiteCase("still-buggy", "def add(a, b):\n    return a - b\n", 0.0),
    SuiteCase("raises", "def add(a, b):\n    raise RuntimeError('boom')\n", 0.0),
    SuiteCase("other-test-function", "def add(a, b):\n    return a + b\n", 1.0, name="check_game"),
    SuiteCase("agent-module-broken", "def add(a, b)\n    return a + b\n", 0.0),
    SuiteCase("module-missing", None, 0.0),
    SuiteCase("partial-credit", "def add(a, b):\n    return a + b\n", 0.5,
              suite="from {module} import add\n\ndef {name}():\n    return 0.5 if add(2, 3) == 5 else 0\n"),
    SuiteCase("above-one-is-clamped", "def add(a, b):\n    return a + b\n", 1.0,
              suite="from {module} import add\n\ndef {name}():\n    return 7\n"),
    SuiteCase("no-such-test-function", "def add(a, b):\n    return a + b\n", 0.0,
              suite="from {module} import add\n"),
]


def _files(case: SuiteCase, root: Path) -> tuple[list[str], str]:
    """The agent's file(s) and the suite, each case in its own folder with its own module name (OSWorld's
    function runs every case in one process, where an imported module would stay cached)."""
    folder = root / case.id
    folder.mkdir(parents=True)
    module = f"game_{case.id.replace('-', '_')}"
    agent = folder / f"{module}.py"
    if case.code is not None:
        agent.write_text(case.code)
    else:
        agent = folder / "settings.py"
        agent.write_text("SPEED = 1\n")
    suite = folder / "test_suite.py"
    suite.write_text(case.suite.format(module=module, name=case.name))
    return [str(agent)], str(suite)


@pytest.fixture(scope="module")
def desktop(image: str, docker_client: docker.DockerClient) -> Iterator[Replica]:
    with held_replica(image, docker_client, "suite", screen=SCREEN) as replica:
        yield replica


def _ours(case: SuiteCase, tmp: Path, replica: Replica) -> float:
    result, expected = _files(case, tmp)
    return metrics.score("check_python_file_by_test_suite", result, expected,
                         {"test_function_name": case.name}, replica=replica)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_check_python_file_by_test_suite(case: SuiteCase, tmp_path: Path, desktop: Replica) -> None:
    assert _ours(case, tmp_path, desktop) == case.want
    left = desktop.execute("ls -d /tmp/osgym-suite-* 2>/dev/null | wc -l", shell=True).output.strip()
    assert left == "0", "the scratch folder in the replica is removed"


def test_check_python_file_by_test_suite_runs_as_the_agent_inside_the_replica(tmp_path: Path,
                                                                              desktop: Replica) -> None:
    """The suite sees the replica's user and file system, not the host's."""
    marker = f"/tmp/osgym-host-{uuid.uuid4().hex}"
    Path(marker).write_text("host")
    try:
        suite = ("import os, pwd\ndef test():\n"
                 f"    return pwd.getpwuid(os.getuid()).pw_name == 'user' and not os.path.exists({marker!r})\n")
        (tmp_path / "a.py").write_text("")
        (tmp_path / "s.py").write_text(suite)
        got = metrics.score("check_python_file_by_test_suite", [str(tmp_path / "a.py")], str(tmp_path / "s.py"),
                            {}, replica=desktop)
    finally:
        Path(marker).unlink()
    assert got == 1.0


def test_check_python_file_by_test_suite_is_bounded_in_time(tmp_path: Path, desktop: Replica,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(python_suite, "SUITE_TIMEOUT_S", 2)
    (tmp_path / "a.py").write_text("")
    (tmp_path / "s.py").write_text("def test():\n    while True:\n        pass\n")
    got = metrics.score("check_python_file_by_test_suite", [str(tmp_path / "a.py")], str(tmp_path / "s.py"),
                        {}, replica=desktop)
    assert got == 0.0


def test_check_python_file_by_test_suite_needs_the_replica(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="runs code in the replica"):
        metrics.score("check_python_file_by_test_suite", [str(tmp_path / "a.py")], str(tmp_path / "s.py"), {})
    with pytest.raises(ValueError, match="test_function_name"):
        metrics.get("check_python_file_by_test_suite").parse({"test_function_name": "os.system"})


def test_check_python_file_by_test_suite_parity(osworld: OSWorld, tmp_path: Path, desktop: Replica) -> None:
    calls, mine = [], []
    for case in CASES:
        result, expected = _files(case, tmp_path / "theirs")
        calls.append(Call("vscode", "check_python_file_by_test_suite", result, expected,
                          {"test_function_name": case.name}))
        mine.append(_ours(case, tmp_path / "ours", desktop))
    for case, got, own in zip(CASES, osworld.scores(calls), mine, strict=True):
        assert got == own == case.want, (case.id, got, own)
