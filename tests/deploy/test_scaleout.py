"""Scale-out: one dataset run split over two workers, each driving replicas on its own Docker host.

Runs before tests/pool (alphabetical order), whose two-host test kills the shared second daemon.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from tests.deploy.conftest import PrefectServer


def test_two_workers_on_two_docker_hosts_share_one_run(prefect_server: PrefectServer, second_daemon, image,
                                                       tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    prefect_server.cli("work-pool", "create", "osgym", "--type", "process")
    prefect_server.cli("deploy", "--name", "collect-shard")
    fast = {"PREFECT_WORKER_QUERY_SECONDS": "2", "PREFECT_WORKER_PREFETCH_SECONDS": "1"}
    prefect_server.worker("w1", env={**fast, "OSGYM_HOST_NAME": "host1"}, limit=1)
    prefect_server.worker("w2", env={**fast, "OSGYM_HOST_NAME": "host2", "DOCKER_HOST": second_daemon.url}, limit=1)

    from flows.scaleout import collect_scaleout

    recipe = {"name": "scaleout", "episodes": 6, "replicas": 1, "standby": 1, "screen": [1280, 800],
              "tasks": ["terminal-create-file", "terminal-rename-file"], "image": image,
              "store": str(tmp_path / "data"), "max_steps": 10, "episode_timeout_s": 120, "settle_s": 0.5}
    with prefect_server.settings():
        out = collect_scaleout(recipe, shards=2, run_id="scaleout-run", timeout_s=900)
    assert out["episodes"] == 6

    root = tmp_path / "data" / "scaleout"
    manifest = json.loads((root / "_manifests" / "scaleout-run.json").read_text())
    assert manifest["episodes"] == 6 and manifest["config"]["parts"] == ["s000", "s001"]
    listed = sorted(e["path"] for e in manifest["tables"]["episodes"])
    on_disk = sorted(str(p.relative_to(root)) for p in (root / "episodes").glob("*/*.parquet"))
    assert listed == on_disk
    rows = duckdb.sql(f"select episode_id, host, success from read_parquet({[str(root / p) for p in listed]})")
    rows = rows.fetchall()
    assert len(rows) == 6 and len({r[0] for r in rows}) == 6
    assert all(r[2] for r in rows)
    assert {r[1] for r in rows} == {"host1", "host2"}
