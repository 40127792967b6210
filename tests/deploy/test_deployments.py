"""prefect.yaml deployed to a real Prefect server and run by a real process worker."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import duckdb
import yaml
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

from tests.deploy.conftest import ROOT, PrefectServer


async def _wait_for(server: PrefectServer, flow_run_id: str, timeout: float) -> tuple[str, list]:
    async with get_client() as client:
        deadline = time.monotonic() + timeout
        while True:
            run = await client.read_flow_run(flow_run_id)
            if run.state and run.state.is_final():
                arts = await client.read_artifacts(
                    artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[run.id])))
                return run.state.type.value, arts
            if time.monotonic() > deadline:
                return f"still {run.state.type.value if run.state else 'unknown'}", []
            await asyncio.sleep(1)


def test_collect_smoke_deployment_runs_on_a_process_worker(prefect_server: PrefectServer, tmp_path: Path) -> None:
    prefect_server.cli("work-pool", "create", "osgym", "--type", "process")
    out = prefect_server.cli("deploy", "--all")
    for name in ("collect-nightly", "collect-smoke", "reap-replicas", "report"):
        assert name in out
    recipe = yaml.safe_load((ROOT / "datasets" / "smoke.yaml").read_text())
    recipe.update(episodes=3, store=str(tmp_path / "data"), name="deploytest", dataset="deploytest")
    (tmp_path / "recipe.yaml").write_text(yaml.safe_dump(recipe))
    prefect_server.worker("w1")
    out = prefect_server.cli("deployment", "run", "collect/collect-smoke", "--params",
                             json.dumps({"recipe": str(tmp_path / "recipe.yaml")}))
    run_id = next(line.split()[-1] for line in out.splitlines() if "UUID" in line)
    with prefect_server.settings():
        state, artifacts = asyncio.run(_wait_for(prefect_server, run_id, timeout=600))
    assert state == "COMPLETED", (prefect_server.home / "worker-w1.log").read_text()[-4000:]
    keys = {a.key for a in artifacts if a.key}
    assert "collect-summary" in keys and "collect-progress" in keys
    assert any(k.endswith("-cost") for k in keys) and any(k.endswith("-quality-flags") for k in keys)
    n, ok = duckdb.sql(f"select count(*), sum(success::int) from "
                       f"read_parquet('{tmp_path}/data/deploytest/episodes/*/*.parquet')").fetchall()[0]
    assert (n, ok) == (3, 3)
    manifests = list((tmp_path / "data" / "deploytest" / "_manifests").glob("*.json"))
    assert len(manifests) == 1 and json.loads(manifests[0].read_text())["episodes"] == 3
