"""OSWorld-format tasks end to end on the apps tier: ``osgym tasks sample --tier apps`` writes 12 task files
(Chromium, Calc, Writer, Impress, GIMP, VLC, Thunderbird, VS Code, os, multi_apps) and their assets; a
local HTTP server on 127.0.0.1 serves the assets at the URLs the task files name, ``fetch_assets`` (what
``osgym tasks fetch-assets --allow-private-hosts`` runs) fills a fresh asset cache from it, and the server
is stopped before any episode, so every ``download`` step and ``cloud_file`` getter reads the cache only.

The tasks are loaded as a recipe's ``task_dir``/``task_index`` loads them (with the plan-time check
that their assets are cached). Each runs twice on a fresh apps replica (the tier's limits, 1920x1080):
the scripted oracle (keyboard and mouse only) scores 1.0 and a do-nothing policy 0.0. Two worker
threads, one per replica of the module's pool, as in test_apps_suites.py.
"""

from __future__ import annotations

import functools
import http.server
import os
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor

import docker
import pytest

from osgym.agents.policies.noop import NoopPolicy
from osgym.agents.policies.scripted import ScriptedPolicy
from osgym.replicas.pool import ReplicaPool, limits_for
from osgym.suites.sample_apps import task_id, write_apps_sample
from osgym.tasks.asset_fetch import fetch_assets
from osgym.tasks.asset_urls import missing_assets
from osgym.tasks.assets import AssetCache
from osgym.tasks.spec import TaskSpec
from osgym.tasks.taskdir import index_entries, load_entries
from tests.apps.test_apps_open import SCREEN
from tests.apps.test_apps_suites import GUI_INPUT, Pair, _episode, assert_oracle_one_noop_zero
from tests.conftest import SESSION

pytestmark = [pytest.mark.docker, pytest.mark.slow]

TASK_NAMES = ["chrome-form", "chrome-link", "calc-total", "writer-append", "impress-title", "gimp-mirror", "vlc-play",
              "thunderbird-folder", "vscode-font", "os-count-errors", "os-extract", "multi-notes-to-writer"]


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, TaskSpec]]:
    """The sample's tasks by name, their assets fetched into a fresh cache named by OSGYM_ASSET_CACHE."""
    root = tmp_path_factory.mktemp("apps-sample")
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(root / "assets")))
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        write_apps_sample(root, f"http://127.0.0.1:{srv.server_address[1]}/")
        cache = AssetCache(root / "cache")
        report = fetch_assets(root / "examples", cache, allow_private_hosts=True)
        assert report.ok and report.count("fetched") >= 12, report.render()
    finally:
        srv.shutdown()
        srv.server_close()
    loaded = load_entries(index_entries(root / "examples", root / "test_all.json"),
                          [functools.partial(missing_assets, cache=cache)])
    assert not loaded.refused, loaded.refused
    by_name = {t.id: t for t in loaded.tasks}
    old = os.environ.get("OSGYM_ASSET_CACHE")
    os.environ["OSGYM_ASSET_CACHE"] = str(root / "cache")
    try:
        yield {name: by_name[task_id(name)] for name in TASK_NAMES}
    finally:
        if old is None:
            os.environ.pop("OSGYM_ASSET_CACHE", None)
        else:
            os.environ["OSGYM_ASSET_CACHE"] = old


@pytest.fixture(scope="module")
def e2e_pool(image: str, docker_client: docker.DockerClient) -> Iterator[ReplicaPool]:
    with ReplicaPool(image, 2, standby=1, name=f"{SESSION}-apps-e2e", docker_client=docker_client,
                     screen=SCREEN, limits=limits_for("apps")) as pool:
        yield pool


def _oracle_and_noop(pool: ReplicaPool, task: TaskSpec) -> Pair:
    return _episode(pool, task, ScriptedPolicy()), _episode(pool, task, NoopPolicy())


@pytest.fixture(scope="module")
def episodes(e2e_pool: ReplicaPool, sample: dict[str, TaskSpec],
             request: pytest.FixtureRequest) -> Iterator[dict[str, Future[Pair]]]:
    selected = [i.callspec.params["name"] for i in request.session.items
                if i.module is request.module and hasattr(i, "callspec")]  # only what -k selected
    with ThreadPoolExecutor(2, thread_name_prefix="episode") as ex:
        futures = {n: ex.submit(_oracle_and_noop, e2e_pool, sample[n]) for n in selected}
        yield futures
        for f in futures.values():
            f.cancel()


@pytest.mark.parametrize("name", TASK_NAMES)
def test_oracle_scores_one_and_noop_scores_zero(episodes: dict[str, Future[Pair]], sample: dict[str, TaskSpec],
                                                name: str) -> None:
    solved, idle = episodes[name].result(timeout=1200)
    where = f"{name} ({sample[name].domain}/{sample[name].id})"
    kinds = assert_oracle_one_noop_zero(solved, idle, where)
    assert kinds <= GUI_INPUT | {"WAIT", "DONE", "MOVE_TO"}, f"{where}: not keyboard and mouse only: {kinds}"
