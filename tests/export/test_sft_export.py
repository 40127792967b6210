"""``export_sft``: samples that Hugging Face ``datasets`` loads, in TRL's documented conversational vision format.

TRL's format (docs/source/dataset_formats.md, "Vision datasets"): a ``messages`` column of
``{"role", "content"}`` turns whose ``content`` is a list of ``{"type": "image"}`` and
``{"type": "text", "text": ...}`` items, and an ``images`` column holding the pictures in placeholder
order. LLaMA-Factory's ShareGPT form has string contents with one ``<image>`` per picture.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from osgym.agents.formats import RenderContext, ReplyContext, get_format, same_actions
from osgym.analysis.selection import select_from_store
from osgym.dataset.sft import export_sft
from osgym.dataset.sft_samples import OMITTED, step_actions
from osgym.errors import ConfigError
from tests.export.conftest import DATASET, EPISODE_SPECS

STEPS = {eid: spec[-1] for eid, spec in EPISODE_SPECS.items()}
ALL_STEPS = sum(len(s) for s in STEPS.values())  # 19
WITH_STEPS = sorted(eid for eid, s in STEPS.items() if s)  # 7 of 8 (e6 never took a step)


def _check_trl_row(row: dict[str, Any]) -> None:
    """One row against TRL's conversational vision format."""
    messages, images = row["messages"], row["images"]
    roles = [m["role"] for m in messages]
    assert roles[0] == "system" and roles[-1] == "assistant"
    assert roles[1:] == ["user", "assistant"] * ((len(roles) - 1) // 2)
    placeholders = 0
    for m in messages:
        assert isinstance(m["content"], list) and m["content"]
        for item in m["content"]:
            assert item["type"] in ("text", "image")
            if item["type"] == "text":
                assert isinstance(item["text"], str) and item["text"]
            else:
                assert m["role"] == "user" and item["text"] is None
                placeholders += 1
    assert placeholders == len(images) >= 1
    assert all(isinstance(im, Image.Image) and im.size in {(64, 48), (1, 1)} for im in images)  # 1x1: frame Z


def test_a_trl_export_loads_with_datasets_in_trls_format(demo_store: Path, tmp_path: Path,
                                                         load_export: Callable[[Path], Any]) -> None:
    result = export_sft(demo_store, DATASET, tmp_path / "out", {"action_format": "pyautogui"})
    ds = load_export(tmp_path / "out")
    assert ds.num_rows == result.samples == ALL_STEPS
    assert set(ds.column_names) >= {"messages", "images", "episode_id", "step", "success"}
    assert result.dropped == {"no_steps": 1}
    for row in ds:
        _check_trl_row(row)
        spec_action = STEPS[row["episode_id"]][row["step"]][1]
        reply = row["messages"][-1]["content"][0]["text"]
        _, back = get_format("pyautogui").parse(reply, ReplyContext(image_size=(64, 48), screen=(64, 48)))
        assert same_actions(back, step_actions(json.dumps(spec_action)))
        user = row["messages"][1]["content"]
        assert user[0] == {"type": "text", "text": "Do <" + EPISODE_SPECS[row["episode_id"]][0] + "> & check"}
    first = next(r for r in ds if r["episode_id"] == "e1" and r["step"] == 0)
    assert first["messages"][-1]["content"][0]["text"] == "step 0: <think>\n```python\npyautogui.click(10, 12)\n```"
    assert "Task:" not in first["messages"][0]["content"][0]["text"]  # the task is the user's, not the system's
    assert not list(tmp_path.glob(".out.incomplete*"))


def test_history_and_per_episode_shape_the_conversations(demo_store: Path, tmp_path: Path,
                                                         load_export: Callable[[Path], Any]) -> None:
    export_sft(demo_store, DATASET, tmp_path / "h2", {"history": 2})
    rows = {(r["episode_id"], r["step"]): r for r in load_export(tmp_path / "h2")}
    for (_eid, step), row in rows.items():
        _check_trl_row(row)
        turns = min(step, 2) + 1
        assert len(row["images"]) == turns and len(row["messages"]) == 1 + 2 * turns
    e2_3 = rows[("e2", 3)]["messages"]  # steps 1..3 as turns; the first carries the instruction
    assert [c["type"] for c in e2_3[1]["content"]] == ["text", "image"]
    assert [c["type"] for c in e2_3[3]["content"]] == ["image"]

    export_sft(demo_store, DATASET, tmp_path / "ep", {"per": "episode", "history": 1})
    episodes = {r["episode_id"]: r for r in load_export(tmp_path / "ep")}
    assert sorted(episodes) == WITH_STEPS
    for eid, row in episodes.items():
        _check_trl_row(row)
        n = len(STEPS[eid])
        assert len(row["messages"]) == 1 + 2 * n and row["step"] is None
        assert len(row["images"]) == min(n, 2)
        omitted = [m for m in row["messages"] if m["role"] == "user"
                   and {"type": "text", "text": OMITTED} in m["content"]]
        assert len(omitted) == n - min(n, 2)


def test_a_llamafactory_export_has_one_image_token_per_picture(demo_store: Path, tmp_path: Path,
                                                               load_export: Callable[[Path], Any]) -> None:
    export_sft(demo_store, DATASET, tmp_path / "lf", {"style": "llamafactory", "history": 1})
    ds = load_export(tmp_path / "lf")
    assert ds.num_rows == ALL_STEPS
    for row in ds:
        contents = [m["content"] for m in row["messages"]]
        assert all(isinstance(c, str) for c in contents)
        assert sum(c.count("<image>") for c in contents) == len(row["images"])
        assert [m["role"] for m in row["messages"]][0] == "system"
    info = json.loads((tmp_path / "lf" / "dataset_info.json").read_text())
    entry = info[f"osgym_{DATASET}"]
    assert entry["formatting"] == "sharegpt" and entry["file_name"] == "data"
    assert entry["columns"] == {"messages": "messages", "images": "images"}


@pytest.mark.parametrize("fmt", ["pyautogui", "computer_13", "anthropic", "uitars", "osgym"])
def test_every_action_format_exports_replies_that_parse_back(demo_store: Path, tmp_path: Path, fmt: str,
                                                             load_export: Callable[[Path], Any]) -> None:
    result = export_sft(demo_store, DATASET, tmp_path / fmt, {"action_format": fmt})
    ds = load_export(tmp_path / fmt)
    assert ds.num_rows == result.samples
    assert result.samples + result.dropped.get("unrenderable", 0) == ALL_STEPS
    ctx = RenderContext((64, 48))
    for row in ds:
        reply = row["messages"][-1]["content"][0]["text"]
        _, back = get_format(fmt).parse(reply, ctx.reply_context())
        want = step_actions(json.dumps(STEPS[row["episode_id"]][row["step"]][1]))
        assert same_actions(back, want, ctx.tolerance(fmt)), (reply, want)
    card = (tmp_path / fmt / "README.md").read_text()
    assert f'action_format | `"{fmt}"`' in card


def test_the_card_records_the_filter_and_what_it_kept(demo_store: Path, tmp_path: Path,
                                                      load_export: Callable[[Path], Any]) -> None:
    sel = select_from_store(str(demo_store), DATASET, where="success and not stuck_episode", filters=["successful"])
    assert sel.ids == {"e1", "e4"} and (sel.total, sel.kept, sel.dropped) == (8, 2, 6)
    result = export_sft(demo_store, DATASET, tmp_path / "f", {"per": "episode"}, selection=sel)
    assert result.samples == 2 and {r["episode_id"] for r in load_export(tmp_path / "f")} == {"e1", "e4"}
    facts = json.loads((tmp_path / "f" / "export.json").read_text())
    assert facts["filter"] == {"label": "filter successful AND where success and not stuck_episode",
                               "expression": "(success) AND (success and not stuck_episode)",
                               "episodes_considered": 8, "kept": 2, "dropped": 6}
    card = (tmp_path / "f" / "README.md").read_text()
    assert "episodes considered: 8, kept: 2, dropped: 6" in card
    assert "`(success) AND (success and not stuck_episode)`" in card
    assert card.startswith("---\n") and 'path: "data/*.parquet"' in card


def test_an_export_refuses_a_directory_that_holds_files(demo_store: Path, tmp_path: Path) -> None:
    out = tmp_path / "busy"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(ConfigError, match="expected a new or empty directory"):
        export_sft(demo_store, DATASET, out)
    assert (out / "keep.txt").read_text() == "mine" and not list(tmp_path.glob(".busy.incomplete*"))
    with pytest.raises(ConfigError, match="action_format: expected one of"):
        export_sft(demo_store, DATASET, tmp_path / "new", {"action_format": "xml"})
    assert not (tmp_path / "new").exists()


def test_an_export_with_no_sample_fails_and_leaves_nothing(demo_store: Path, tmp_path: Path) -> None:
    sel = select_from_store(str(demo_store), DATASET, where="score > 2")
    with pytest.raises(ConfigError, match="nothing to export from demo: the filter kept 0 episodes"):
        export_sft(demo_store, DATASET, tmp_path / "none", selection=sel)
    assert not (tmp_path / "none").exists() and not list(tmp_path.glob(".none.incomplete*"))
