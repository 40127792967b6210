"""Scale-out: one dataset run split into shards, each run by a worker on its own replica host.

``collect_scaleout`` starts one ``collect`` flow run per shard through
``run_deployment`` on the work pool, so each worker's host drives its own local
replica pool, waits for all of them, and merges the shards' part manifests into
the run's single manifest. Episodes are assigned to shards by index, so every
requested episode is in exactly one shard.

A shard whose run crashes (its host, worker or process died: automations.yaml marks a run that stopped
sending heartbeats Crashed, and one a worker took but never started) runs again, up to ``shard_retries``
times, on whichever worker takes it; it resumes the same run id, so the episodes its dead run committed
are kept and not run twice. A shard that fails (its own error) is not run again: the flow fails, naming it.
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
    shard_retries: int = 2,
) -> dict[str, Any]:
    """Run ``recipe`` as ``shards`` child flow runs of ``deployment`` and merge their manifests."""
    rec = load_recipe(recipe)
    if shards < 1:
        raise OsgymError(f"shards: expected >= 1, actual {shards}")
    if shard_retries < 0:
        raise OsgymError(f"shard_retries: expected >= 0, actual {shard_retries}")
    run_id = run_id or new_run_id()
    log = get_run_logger()

    def start(shard: int, attempt: int) -> Any:
        params = {"recipe": rec.model_dump(mode="json"), "run_id": run_id, "shard": shard, "shards": shards}
        name = f"{run_id}-shard-{shard}" + (f"-retry-{attempt}" if attempt else "")
        child = run_deployment(deployment, parameters=params, timeout=0, as_subflow=True, flow_run_name=name)
        log.info("shard %d/%d: flow run %s%s", shard, shards, child.id, f" (retry {attempt})" if attempt else "")
        return child

    children = [start(shard, 0) for shard in range(shards)]
    attempts = [0] * shards
    deadline = time.monotonic() + timeout_s
    with get_client(sync_client=True) as client:
        while True:
            runs = [client.read_flow_run(c.id) for c in children]
            for shard, run in enumerate(runs):
                if run.state is not None and run.state.is_crashed() and attempts[shard] < shard_retries:
                    log.warning("shard %d: flow run %s crashed (%s); running it again", shard, run.id,
                                run.state.message)
                    attempts[shard] += 1
                    children[shard] = start(shard, attempts[shard])
                    runs[shard] = client.read_flow_run(children[shard].id)
            if all(r.state is not None and r.state.is_final() for r in runs) or time.monotonic() > deadline:
                break
            time.sleep(2)
    states = [r.state.type.value if r.state else "UNKNOWN" for r in runs]
    failed = {str(c.id): s for c, s in zip(children, states, strict=True) if s != "COMPLETED"}
    if failed:
        raise OsgymError(f"shards did not complete: {failed}; re-run with run_id={run_id} to resume them")
    manifest = merge_parts(rec.store, rec.dataset_name, run_id, expected_parts=shards)
    return {"run_id": run_id, "shards": shards, "episodes": manifest.episodes, "steps": manifest.steps,
            "shard_retries": sum(attempts)}
