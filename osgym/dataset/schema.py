"""The dataset's two tables as pyarrow schemas (design.md §6).

``episodes`` has one row per requested episode, successful or not.
``steps`` has one row per observation/action pair; the screenshot column uses
the Hugging Face ``Image`` layout ``{bytes, path}`` so ``datasets`` decodes it.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

SCHEMA_VERSION = 5
"""5 added ``hollow`` to episodes (true: a hollow replica ran it, a load test of the control plane, not agent data;
null in older files, whose episodes all ran on real replicas).
4 added ``setup_failures`` to episodes (the setup steps that failed but were tolerated, as OSWorld tolerates them).
3 added ``related_apps`` to episodes (the task's applications, OSWorld's field), for success by application.
2 added the resource accounting and token columns (episodes: ``cpu_s`` .. ``bytes_written``; steps: ``raw``,
``usage``, ``input_tokens``, ``output_tokens``). Older files still read: a column a shard lacks reads as null."""


IMAGE_TYPE = pa.struct([("bytes", pa.binary()), ("path", pa.string())])

EPISODES = pa.schema(
    [
        ("episode_id", pa.string()),
        ("run_id", pa.string()),
        ("task_id", pa.string()),
        ("variant", pa.string()),
        ("domain", pa.string()),
        ("instruction", pa.string()),
        ("policy", pa.string()),
        ("policy_config", pa.string()),  # JSON
        ("image", pa.string()),
        ("replica_id", pa.string()),
        ("host", pa.string()),
        ("started_at", pa.timestamp("us", tz="UTC")),
        ("ended_at", pa.timestamp("us", tz="UTC")),
        ("num_steps", pa.int32()),
        ("success", pa.bool_()),
        ("score", pa.float64()),
        ("termination", pa.string()),
        ("error_class", pa.string()),
        ("error_message", pa.string()),
        ("attempts", pa.int32()),
        ("setup_s", pa.float64()),
        ("policy_s", pa.float64()),
        ("env_s", pa.float64()),
        ("replica_s", pa.float64()),
        ("cost_usd", pa.float64()),
        ("schema_version", pa.int32()),
        # v2: what the episode's replica used while leased (its cgroup), and the model's tokens
        ("cpu_s", pa.float64()),
        ("mem_avg_mib", pa.float64()),
        ("mem_peak_mib", pa.float64()),
        ("net_bytes", pa.int64()),
        ("input_tokens", pa.int64()),
        ("output_tokens", pa.int64()),
        ("bytes_written", pa.int64()),  # screenshots, trees and replies stored for the episode
        # v3: the applications the task is about (OSWorld's related_apps; empty if it names none)
        ("related_apps", pa.list_(pa.string())),
        # v4: setup steps that failed but that setup went on after (OSWorld's rule), one message each
        ("setup_failures", pa.list_(pa.string())),
        # v5: a hollow replica ran it (osgym.replicas.hollow): synthetic screens, never agent data
        ("hollow", pa.bool_()),
    ],
    metadata={"osgym.table": "episodes", "osgym.schema_version": str(SCHEMA_VERSION)},
)

STEPS = pa.schema(
    [
        ("episode_id", pa.string()),
        ("step", pa.int32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("screenshot", IMAGE_TYPE),
        ("screenshot_sha256", pa.string()),
        ("width", pa.int32()),
        ("height", pa.int32()),
        ("a11y", pa.string()),
        ("action", pa.string()),  # JSON of the typed action
        ("action_type", pa.string()),
        ("thought", pa.string()),
        ("reward", pa.float64()),
        ("done", pa.bool_()),
        ("policy_ms", pa.float64()),
        ("env_ms", pa.float64()),
        ("error", pa.string()),
        # v2: the model's reply (capped) and its token usage (JSON as the provider sent it)
        ("raw", pa.string()),
        ("usage", pa.string()),
        ("input_tokens", pa.int64()),
        ("output_tokens", pa.int64()),
    ],
    metadata={"osgym.table": "steps", "osgym.schema_version": str(SCHEMA_VERSION)},
)

TABLES: dict[str, pa.Schema] = {"episodes": EPISODES, "steps": STEPS}


def hf_feature(t: pa.DataType) -> dict[str, Any]:
    """The Hugging Face ``datasets`` feature of a column type.

    >>> hf_feature(IMAGE_TYPE), hf_feature(pa.int32())
    ({'_type': 'Image'}, {'dtype': 'int32', '_type': 'Value'})
    """
    if t == IMAGE_TYPE:
        return {"_type": "Image"}
    return {"dtype": str(t), "_type": "Value"}


def file_schema(schema: pa.Schema) -> pa.Schema:
    """The table schema plus the ``huggingface`` features key, so ``datasets`` decodes screenshots as images."""
    features = {f.name: hf_feature(f.type) for f in schema}
    hf = json.dumps({"info": {"features": features}})
    return schema.with_metadata({**(schema.metadata or {}), b"huggingface": hf.encode()})
