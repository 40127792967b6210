"""Resizing on export scales the actions with the pictures: a click still lands on the same element.

The frame is a real replica screenshot (``docs/apps/calc.png``: LibreOffice Calc on an apps replica,
1920x1080, stored at 960x540 as a recipe with ``max_side: 960`` stores it) with one distinct element drawn
on it, a magenta button. The episode is written by osgym's own dataset writer, with the run's screen
(1920x1080) in its manifest, and its action is a click on the button's centre in screen pixels. Each
export resizes the picture; the test decodes the exported picture, reads the click back out of the
exported reply with the format's parser, and checks that the pixel under it is the button's.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageDraw

from osgym.agents.formats import ReplyContext, get_format
from osgym.dataset import DatasetWriter
from osgym.dataset.resize import fit_size
from osgym.dataset.sft import export_sft
from osgym.episodes.trajectory import EpisodeResult, Step, Trajectory
from osgym.replicas.actions import Click, Done

SCREEN = (1920, 1080)
FRAME = Path(__file__).resolve().parents[2] / "docs" / "apps" / "calc.png"
BUTTON = (601, 301, 631, 321)  # in the stored 960x540 picture
MAGENTA = (255, 0, 255)
T0 = datetime(2026, 12, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def click_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    img = Image.open(FRAME).convert("RGB")
    assert img.size == (960, 540)
    ImageDraw.Draw(img).rectangle(BUTTON, fill=MAGENTA)
    buf = io.BytesIO()
    img.save(buf, "PNG")
    sx, sy = SCREEN[0] / img.size[0], SCREEN[1] / img.size[1]
    centre = (round((BUTTON[0] + BUTTON[2]) / 2 * sx), round((BUTTON[1] + BUTTON[3]) / 2 * sy))
    steps = [
        Step(step=0, ts=T0, screenshot=buf.getvalue(), screenshot_format="png", width=960, height=540,
             action=Click(x=centre[0], y=centre[1]).to_json(), action_type="CLICK", thought="Press the button."),
        Step(step=1, ts=T0, screenshot=buf.getvalue(), screenshot_format="png", width=960, height=540,
             action=Done().to_json(), action_type="DONE", done=True),
    ]
    episode = EpisodeResult(
        episode_id="click-1", run_id="r1", task_id="press-button", variant="0", domain="calc",
        instruction="Press the magenta button", policy="scripted", policy_config={}, image="osgym/apps:test",
        replica_id="r", host="h",
        trajectory=Trajectory(steps=steps, score=1.0, termination="done", started_at=T0, ended_at=T0),
    )
    root = tmp_path_factory.mktemp("clicks")
    with DatasetWriter(root, "clicks", "r1", run_config={"recipe": {"screen": list(SCREEN)}}) as writer:
        writer.add(episode)
    return root


def _pixel_under_click(row: dict[str, Any], fmt: str, coord_space: str = "relative1000") -> tuple[int, ...]:
    picture: Image.Image = row["images"][0]
    reply = row["messages"][-1]["content"][0]["text"]
    ctx = ReplyContext(image_size=picture.size, screen=picture.size, coord_space=coord_space)  # type: ignore[arg-type]
    _, actions = get_format(fmt).parse(reply, ctx)
    click = actions[0]
    assert isinstance(click, Click) and click.x is not None and click.y is not None
    scale = picture.size[0] / 960, picture.size[1] / 540
    box = (BUTTON[0] * scale[0], BUTTON[1] * scale[1], BUTTON[2] * scale[0], BUTTON[3] * scale[1])
    assert box[0] <= click.x <= box[2] and box[1] <= click.y <= box[3], (click, box)
    return tuple(picture.convert("RGB").getpixel((click.x, click.y)))  # type: ignore[arg-type]


@pytest.mark.parametrize(("fmt", "options"), [
    ("pyautogui", {"max_side": 640}),
    ("pyautogui", {"max_pixels": 480 * 270}),
    ("computer_13", {"max_side": 1280}),  # larger than the stored picture: kept as it is
    ("osgym", {"max_side": 800}),
    ("uitars", {"max_side": 640}),
    ("uitars", {"max_side": 640, "coord_space": "absolute"}),
])
def test_a_click_lands_on_the_same_element_after_resizing(click_store: Path, tmp_path: Path, fmt: str,
                                                         options: dict[str, Any],
                                                         load_export: Callable[[Path], Any]) -> None:
    export_sft(click_store, "clicks", tmp_path / "out", {"action_format": fmt, **options})
    rows = list(load_export(tmp_path / "out"))
    assert len(rows) == 2
    row = rows[0]
    expected = fit_size((960, 540), options.get("max_side"), options.get("max_pixels"))
    assert row["images"][0].size == expected
    if "max_pixels" in options:
        assert expected[0] * expected[1] <= options["max_pixels"]
    r, g, b = _pixel_under_click(row, fmt, options.get("coord_space", "relative1000"))
    assert r > 200 and b > 200 and g < 60, (r, g, b)
