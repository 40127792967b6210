"""The card of an SFT export (``README.md``): Hub front matter, the options, the filter and what it kept,
and how to load the data with ``datasets``, TRL and LLaMA-Factory; and LLaMA-Factory's ``dataset_info.json``."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["card_text", "llamafactory_info"]


def llamafactory_info(dataset: str) -> dict[str, Any]:
    """LLaMA-Factory's ``dataset_info.json`` entry for an export's ``data/`` folder (ShareGPT with images)."""
    return {
        f"osgym_{dataset}": {
            "file_name": "data",
            "formatting": "sharegpt",
            "columns": {"messages": "messages", "images": "images"},
            "tags": {"role_tag": "role", "content_tag": "content", "user_tag": "user",
                     "assistant_tag": "assistant", "system_tag": "system"},
        }
    }


def _code(text: str) -> list[str]:
    return ["```text", *text.replace("```", "'''").splitlines(), "```"]


def card_text(facts: dict[str, Any]) -> str:
    """The card's Markdown from an export's facts (``export.json``)."""
    src, opts, flt, out = facts["source"], facts["options"], facts["filter"], facts["output"]
    name = src["dataset"]
    pretty = json.dumps(f"{name} (SFT, {opts['action_format']})")
    lines = [
        "---",
        f"pretty_name: {pretty}",
        "tags:", "- computer-use", "- agent-trajectories", "- osgym", "- sft",
        "configs:", "- config_name: default", "  data_files:", "  - split: train", '    path: "data/*.parquet"',
        "---", "",
        f"# {name}: supervised fine-tuning samples",
        "",
        f"Exported by `osgym dataset export {name} --format sft` from {len(src['runs'])} committed runs "
        f"({src['episodes']} episodes): **{out['samples']} samples** from {out['episodes_exported']} episodes "
        f"in {out['shards']} Parquet shards under `data/`.",
        "",
        "## Filter",
        "",
        f"- filter: {('`' + flt['label'] + '`') if flt['label'] else 'none (every episode)'}",
    ]
    if flt["expression"]:
        lines.append(f"- SQL over `episode_quality`: `{flt['expression']}`")
    lines += [
        f"- episodes considered: {flt['episodes_considered']}, kept: {flt['kept']}, dropped: {flt['dropped']}",
        "",
        "Dropped after the filter (" + out["dropped_unit"] + "):",
        "",
        "| reason | count |", "|---|---:|",
    ]
    lines += [f"| {k} | {v} |" for k, v in out["dropped"].items()] or ["| (none) | 0 |"]
    lines += [
        "",
        "`unrenderable`: an action the format has no form for (or a reply that would not parse back as the "
        "same actions); `bad_action`: an action cell that is not actions; `bad_image`: a screenshot that does "
        "not decode; `no_steps`: an episode that ended before its first step.",
        "",
        "## Options",
        "",
        "| option | value |", "|---|---|",
    ]
    for key in ("action_format", "style", "per", "history", "max_side", "max_pixels", "coord_space", "user_prompt"):
        lines.append(f"| {key} | `{json.dumps(opts[key])}` |")
    lines += ["", "System prompt template (`{width}` and `{height}` are each picture's size):", ""]
    lines += _code(opts["system_template"])
    lines += [
        "",
        "## Columns",
        "",
        "| column | content |", "|---|---|",
        "| messages | system; then per step a user turn (the screenshot; the first also the instruction) and an "
        "assistant turn (thought and action in the chosen format) |",
        "| images | the screenshots, in the order of the placeholders (Hugging Face `Image` list) |",
        "| episode_id, step, run_id, task_id, domain, success, score | where each sample comes from "
        "(`step` is empty per episode) |",
        "",
        "Content style `" + opts["style"] + "`: "
        + ("TRL's conversational vision format: each `content` is a list of `{\"type\": \"text\", \"text\": ...}` "
           "and `{\"type\": \"image\"}`." if opts["style"] == "trl" else
           "LLaMA-Factory's ShareGPT format: each `content` is a string, one `<image>` per picture; "
           "`dataset_info.json` holds the entry (copy it into LLaMA-Factory's `data/dataset_info.json`, "
           "with `file_name` pointing at this `data/` folder)."),
        "",
        "## Loading",
        "",
        "```python",
        "from datasets import load_dataset",
        'ds = load_dataset("parquet", data_files="data/*.parquet", split="train")',
        "ds[0][\"messages\"], ds[0][\"images\"]  # images decode as PIL pictures",
        "```",
        "",
    ]
    return "\n".join(lines)
