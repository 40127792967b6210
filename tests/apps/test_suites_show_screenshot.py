"""``osgym suites show NAME --screenshot out.png`` on a real apps replica: prints the variant, saves a picture of
its initial state (the app the setup opened), and leaves no replica behind."""

from __future__ import annotations

import os
from pathlib import Path

import docker
import pytest
from PIL import Image
from typer.testing import CliRunner

from osgym.cli import app

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def test_show_screenshot_saves_the_initial_state_and_cleans_up(image: str, docker_client: docker.DockerClient,
                                                               tmp_path: Path) -> None:
    out = tmp_path / "initial.png"
    res = CliRunner().invoke(app, ["suites", "show", "apps-smoke", "--template", "gedit-append-line", "--seed", "4",
                                   "--screenshot", str(out)], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "template: gedit-append-line (difficulty 1" in res.output and "launch: gedit" in res.output
    with Image.open(out) as im:
        assert im.size == (1920, 1080)
        colours = im.convert("RGB").getcolors(maxcolors=1 << 16)
        assert colours is None or len(colours) > 50  # a desktop with an app, not a blank frame
    left = docker_client.containers.list(all=True, filters={"label": f"osgym.pool=osgym-show-{os.getpid()}"})
    assert not left, [c.name for c in left]
