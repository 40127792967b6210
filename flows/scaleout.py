"""Scale-out: one dataset run split into shards, each run by a worker on its own replica host.

``collect_scaleout`` starts one ``collect`` flow run per shard through
``run_deployment`` on the work pool, so each worker's host drives its own local
replica pool, waits for all of them, and merges the shards' part manifests into
the run's single manifest. Episodes are assigned to shards by index, so every
requested episode is in exactly one shard.
"""

from __future__ import annotations

import time
from typing import Any

from prefect import flow, get_run_logger
from prefect.client.orchestration import get_client
from prefect.deployments import run_deployment

from osgym.collection.collector import new_run_id
from osgym.collection.recipe import load_recipe
from osgym.dataset import merge_parts
from osgym.errors import OsgymError


@flow(name="collect-scaleout")
def collect_scaleout(
    recipe: dict[str, Any] | str,
    shards: int = 2,
    run_id: str | None = None,
    deployment: str = "collect/collect-shard",
    timeout_s: float = 24 * 3600,
) -> dict[str, Any]:
    """Run ``recipe`` as ``shards`` child flow runs of ``deployment`` and merge their manifests."""
    rec = load_recipe(recipe)
    if shards < 1:
        raise OsgymError(f"shards: expected >= 1, actual {shards}")
    run_id = run_id or new_run_id()
    log = get_run_logger()
    children = []
    for shard in range(shards):
        params = {"recipe": rec.model_dump(mode="json"), "run_id": run_id, "shard": shard, "shards": shards}
        child = run_deployment(deployment, parameters=params, timeout=0, as_subflow=True,
                               flow_run_name=f"{run_id}-shard-{shard}")
        log.info("shard %d/%d: flow run %s", shard, shards, child.id)
        children.append(child)
    states = _wait(children, timeout_s)
    failed = {str(c.id): s for c, s in zip(children, states, strict=True) if s != "COMPLETED"}
    if failed:
        raise OsgymError(f"shards did not complete: {failed}; re-run with run_id={run_id} to resume them")
    manifest = merge_parts(rec.store, rec.dataset_name, run_id, expected_parts=shards)
    return {"run_id": run_id, "shards": shards, "episodes": manifest.episodes, "steps": manifest.steps}


def _wait(children: list[Any], timeout_s: float) -> list[str]:
    deadline = time.monotonic() + timeout_s
    with get_client(sync_client=True) as client:
        while True:
            runs = [client.read_flow_run(c.id) for c in children]
            if all(r.state is not None and r.state.is_final() for r in runs) or time.monotonic() > deadline:
                return [r.state.type.value if r.state else "UNKNOWN" for r in runs]
            time.sleep(2)
