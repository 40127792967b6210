"""The dataset card: ``<root>/<dataset>/README.md``, front matter for the Hugging Face Hub
(configs, features) and a summary of the committed runs (counts, success rate, policy mix).
"""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pyarrow.compute as pc

from osgym.dataset.hollow import hollow_episodes
from osgym.dataset.layout import CARD_NAME, MANIFEST_DIR
from osgym.dataset.reader import DatasetView, view_of
from osgym.dataset.schema import SCHEMA_VERSION, TABLES, hf_feature
from osgym.errors import StoreError
from osgym.storage import Backend, S3Options, open_backend

__all__ = ["write_card", "write_dataset_card"]


def _yaml_str(s: str) -> str:
    return json.dumps(s)  # a JSON string is a valid YAML flow scalar


def _card_text(dataset: str, view: DatasetView) -> str:
    cols = ["run_id", "policy", "success", "num_steps", "hollow"]
    ep = view.episodes.to_table(columns=cols)
    n_ep = ep.num_rows
    n_hollow = hollow_episodes(ep)
    n_ok = int(pc.sum(ep["success"]).as_py() or 0) if n_ep else 0
    n_steps = sum(m["steps"] for m in view.manifests)

    def by(key: str) -> dict[str, tuple[int, int]]:
        if not n_ep:
            return {}
        g = ep.group_by(key).aggregate([("success", "count"), ("success", "sum")]).to_pylist()
        return {str(r[key]): (int(r["success_count"]), int(r["success_sum"] or 0)) for r in g}

    per_run, per_policy = by("run_id"), by("policy")

    def pct(a: int, b: int) -> str:
        return f"{100 * a / b:.1f}%" if b else "n/a"

    lines = [
        "---",
        f"pretty_name: {_yaml_str(dataset)}",
        "tags:",
        "- computer-use",
        "- agent-trajectories",
        "- osgym",
        *(["- hollow"] if n_hollow else []),
        "configs:",
    ]
    for table in ("episodes", "steps"):
        rels = [p[len(view.root) + 1 :] for p in view.files[table]]
        lines += [f"- config_name: {table}", "  data_files:", "  - split: train"]
        if rels:
            lines += ["    path:"] + [f"    - {_yaml_str(r)}" for r in rels]
        else:
            lines += [f"    path: {_yaml_str(f'{table}/*/*.parquet')}"]
    lines += ["dataset_info:"]
    for table, schema in TABLES.items():
        lines += [f"- config_name: {table}", "  features:"]
        for f in schema:
            feat = hf_feature(f.type)
            kind = "image" if feat["_type"] == "Image" else feat["dtype"]
            lines += [f"  - name: {f.name}", f"    dtype: {_yaml_str(kind)}"]
    lines += ["---", "", f"# {dataset}", ""]
    if n_hollow:
        lines += [f"> **Hollow data: {n_hollow} of {n_ep} episodes ran on hollow replicas** (column `hollow`): a load "
                  "test of osgym's control plane with synthetic screens and no desktop. They are not agent data: do "
                  "not train on them. `osgym dataset export` refuses them unless given `--allow-hollow`.", ""]
    lines += [
        f"Computer-use agent episodes collected by osgym: **{len(view.manifests)} runs, {n_ep} episodes, "
        f"{n_steps} steps, success rate {pct(n_ok, n_ep)}**. Only committed runs (those with a manifest in "
        f"`{MANIFEST_DIR}/`) are counted.",
        "",
        "## Runs",
        "",
        "| run_id | created | episodes | steps | shards | success rate |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for m in view.manifests:
        _, ok = per_run.get(m["run_id"], (0, 0))
        lines.append(
            f"| {m['run_id']} | {m['created_at'][:19]}Z | {m['episodes']} | {m['steps']} | "
            f"{len(m['tables']['steps'])} | {pct(ok, m['episodes'])} |"
        )
    lines += ["", "## Policy mix", "", "| policy | episodes | share | success rate |", "|---|---:|---:|---:|"]
    for policy, (count, ok) in sorted(per_policy.items(), key=lambda kv: -kv[1][0]):
        lines.append(f"| {policy} | {count} | {pct(count, n_ep)} | {pct(ok, count)} |")
    for table, schema in TABLES.items():
        lines += [
            "",
            f"## Schema: `{table}` (schema version {SCHEMA_VERSION})",
            "",
            "| column | type |",
            "|---|---|",
        ]
        lines += [f"| {f.name} | `{f.type}` |" for f in schema]
    lines += [
        "",
        "## Layout and loading",
        "",
        "```",
        "episodes/run=<run_id>/part-<shard>.parquet   one row per episode",
        "steps/run=<run_id>/part-<shard>.parquet      one row per step; one row group per episode",
        f"{MANIFEST_DIR}/<run_id>.json                  a run's shards, row counts and sha256 sums",
        "```",
        "",
        "Screenshots are stored as the replica encoded them (PNG or JPEG) in the `screenshot` struct "
        "`{bytes, path}`, the Hugging Face `Image` layout.",
        "",
        "```python",
        "from osgym.dataset import open_dataset",
        f"view = open_dataset(URI, {dataset!r})",
        "for batch in view.steps.to_batches(columns=['episode_id', 'step', 'screenshot', 'action']):",
        "    ...",
        "```",
        "",
    ]
    return "\n".join(lines)


# Two runs that commit at once each write the card; the one that read the manifests first may write last,
# over a card that already counted both (5 of 20 tries, six runs at once). So a writer reads the manifests
# again after its write and writes once more if they changed: the last write then saw every run committed
# before it. A few rounds suffice; past them the card is merely late, and the next commit rewrites it.
CARD_ROUNDS = 5


def write_card(backend: Backend, dataset: str) -> None:
    view = view_of(backend)
    for _ in range(CARD_ROUNDS):
        try:
            text = _card_text(dataset, view)
        except (OSError, pa.ArrowException) as exc:
            raise StoreError(f"cannot read the episodes of {backend.uri('')} for the dataset card: {exc}") from exc
        backend.put(CARD_NAME, text.encode(), "text/markdown; charset=utf-8")
        now = view_of(backend)
        if now.manifests == view.manifests:
            return
        view = now


def write_dataset_card(uri: str | os.PathLike[str], dataset: str, s3: S3Options | None = None) -> None:
    """Write ``<root>/<dataset>/README.md``: schema, runs, counts, success rate and policy mix.

    :meth:`DatasetWriter.finalize` calls it after every committed run.

    Raises:
        StoreError: when the dataset cannot be read or the card cannot be written.
    """
    write_card(open_backend(uri, dataset, s3), dataset)
