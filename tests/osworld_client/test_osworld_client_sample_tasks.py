"""OSWorld's own client runs tasks of osgym's apps-tier sample (``osgym tasks sample --tier apps``, the
tasks tests/apps/test_osworld_apps_e2e.py runs through osgym's pool) on a fresh compatibility replica each.

For each task, OSWorld's ``SetupController.setup`` runs the task file's setup steps unchanged: its
``download`` steps fetch from the local HTTP server the test starts, as OSWorld's client does, and
upload through ``/setup/upload``. The one step OSWorld does not know, osgym's ``wait_window`` (wait
for the app's window to take the focus), is done here by polling OSWorld's ``get_accessibility_tree``.
The task's oracle is then played with ``PythonController.execute_python_command`` (pyautogui keys
only; its ``wait_*`` ops poll the same tree), and osgym's evaluator scores the replica before
(0.0) and after (1.0), its ``cloud_file`` getters reading a cache filled by ``fetch_assets``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import pytest

from osgym.agents.policies.scripted import _control_enabled
from osgym.replicas.pool import limits_for
from osgym.suites.sample_apps import task_id, write_apps_sample
from osgym.tasks.asset_fetch import fetch_assets
from osgym.tasks.assets import AssetCache
from tests.osworld_client.conftest import SCREEN, AssetServer, OSWorldClient
from tests.osworld_client.test_osworld_controllers import _pyautogui, _score, _setup, _titles, _until, _wait_focus
from tests.replica.helpers import compat_replica

pytestmark = [pytest.mark.docker, pytest.mark.slow]

CLIENT_TASKS = ["chrome-form", "calc-total", "writer-append", "impress-title", "os-extract"]
"""Chromium, Calc, Writer, Impress and a terminal: tasks whose oracles use keys only (pyautogui has no
access to osgym's window geometry, which ``click_window`` needs)."""
KEY_OPS = {"type", "press", "hotkey"}


@dataclass
class Sample:
    tasks: dict[str, dict[str, Any]]
    cache: Path


@pytest.fixture(scope="module")
def sample(assets: AssetServer, tmp_path_factory: pytest.TempPathFactory) -> Sample:
    """The sample's task files by name, their URLs on ``assets``, and an osgym cache filled from it."""
    root = tmp_path_factory.mktemp("client-sample")
    paths = write_apps_sample(root, assets.url("/"))
    for f in (root / "assets").iterdir():
        assets.files[f"/{f.name}"] = f.read_bytes()
    report = fetch_assets(root / "examples", AssetCache(root / "cache"), allow_private_hosts=True)
    assert report.ok, report.render()
    by_id = {t["id"]: t for t in (json.loads(p.read_text()) for p in paths)}
    return Sample({name: by_id[task_id(name)] for name in CLIENT_TASKS}, root / "cache")


@pytest.fixture
def osworld_fresh(image: str, docker_client: docker.DockerClient, client_python: Path,
                  tmp_path: Path) -> Iterator[OSWorldClient]:
    """OSWorld's client on a compatibility replica of its own (a task's apps do not outlive it)."""
    limits = limits_for("apps")
    with compat_replica(docker_client, image, SCREEN, mem_limit=f"{limits.mem_mib}m", pids_limit=limits.pids,
                        ready_timeout=120) as url:
        (tmp_path / "client-cache").mkdir()
        yield OSWorldClient(client_python, url.removeprefix("http://").split(":")[0], tmp_path / "client-cache")


def _run_setup(osworld: OSWorldClient, config: list[dict[str, Any]]) -> None:
    """OSWorld's setup() over each run of its own steps; osgym's ``wait_window`` steps polled in between."""
    pending: list[dict[str, Any]] = []
    for step in [*config, None]:
        if step is not None and step["type"] != "wait_window":
            pending.append(step)
            continue
        if pending:
            _setup(osworld, pending)
            pending = []
        if step is not None:
            p = step["parameters"]
            if p.get("focused", True):
                _wait_focus(osworld, p["title"])
            else:
                _until(f"a window titled {p['title']!r}", lambda: osworld.call("python", "get_accessibility_tree"),
                       lambda tree, t=p["title"]: any(t in title for title in _titles(tree)))


def _key(name: str) -> str:
    return repr(name.lower())  # pyautogui's key names are lower case


def _pyautogui_of(op: str, a: dict[str, Any]) -> str:
    if op == "type":
        return f"pyautogui.typewrite({a['text']!r})"
    if op == "press":
        return f"pyautogui.press({_key(a['key'])})"
    return f"pyautogui.hotkey({', '.join(_key(k) for k in a['keys'])})"


def _tree(osworld: OSWorldClient) -> Any:
    return osworld.call("python", "get_accessibility_tree")


def _run_oracle(osworld: OSWorldClient, oracle: list[dict[str, Any]]) -> None:
    """The oracle's keys through execute_python_command (consecutive ones in one batch), its waits on
    OSWorld's accessibility tree."""
    keys: list[str] = []
    for step in [*oracle, {"op": "done"}]:
        op, a = step["op"], step.get("args", {})
        if op in KEY_OPS:
            keys.append(_pyautogui_of(op, a))
            continue
        if keys:
            _pyautogui(osworld, *keys)
            keys = []
        timeout = a.get("timeout", 10)
        if op == "wait_focused":
            _wait_focus(osworld, a["window"], a.get("role", ""))
        elif op == "wait_enabled":
            check = functools.partial(_control_enabled, window=a["window"], name=a["control"],
                                      role=a.get("role", "push-button"))
            _until(f"{a['control']!r} enabled in {a['window']!r}", functools.partial(_tree, osworld),
                   lambda tree, c=check: tree is not None and c(tree), timeout=max(timeout, 30))
        elif op == "wait_window":
            _until(f"a window titled {a['title']!r}", functools.partial(_tree, osworld),
                   lambda tree, t=a["title"]: tree is not None and any(t in title for title in _titles(tree)),
                   timeout=max(timeout, 30))
        elif op == "wait_gone":
            _until(f"no window titled {a['title']!r}", functools.partial(_tree, osworld),
                   lambda tree, t=a["title"]: tree is not None and not any(t in title for title in _titles(tree)),
                   timeout=max(timeout, 30))
        else:
            assert op == "done", f"{op} has no keyboard form for OSWorld's client"


@pytest.mark.parametrize("name", CLIENT_TASKS)
def test_osworld_client_sets_up_and_solves_a_sample_task(name: str, sample: Sample, osworld_fresh: OSWorldClient,
                                                         assets: AssetServer,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    task = sample.tasks[name]
    downloads = [f["url"].removeprefix(assets.url("")) for s in task["config"] if s["type"] == "download"
                 for f in s["parameters"]["files"]]
    before = {d: assets.hits.get(d, 0) for d in downloads}
    _run_setup(osworld_fresh, task["config"])
    # fetched by OSWorld's client from the test's server (once per task: its cache_dir is the test's own)
    assert all(assets.hits.get(d, 0) == before[d] + 1 for d in downloads), (downloads, assets.hits)
    monkeypatch.setenv("OSGYM_ASSET_CACHE", str(sample.cache))
    assert _score(osworld_fresh, task) == 0.0, f"{name}: scores before it is solved"
    _run_oracle(osworld_fresh, task["oracle"])
    assert _score(osworld_fresh, task) == 1.0, f"{name}: not solved"
