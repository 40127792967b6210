"""The apps tier's desktop routes: readiness covers the XFCE session, ``/terminal`` reads
xfce4-terminal's text, and the wallpaper can be read and changed, natively and in OSWorld's
compatibility mode (the request shapes OSWorld's SetupController and PythonController send); the
on-screen accessibility tree of a real table holds all its rows.
"""

from __future__ import annotations

import io
import json
import re
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator

import docker
import httpx
import pytest
from PIL import Image

from osgym.agents.policies.scripted import A11Y_COMPONENT
from osgym.errors import RequestRejected, SetupError
from osgym.replicas.actions import Hotkey, Press, Typing
from osgym.replicas.client import Replica
from osgym.replicas.pool import ReplicaPool, limits_for
from osgym.suites import templates
from osgym.tasks.setup import run_setup, run_step
from osgym.tasks.spec import SetupStep
from tests.apps.test_apps_open import SCREEN, SESSION_UP
from tests.conftest import held_replica
from tests.replica.helpers import compat_replica

pytestmark = [pytest.mark.docker, pytest.mark.slow]

WALLPAPER_RGB = (201, 37, 119)
DESKTOP_SPOT = (1500, 600)
"""A point of the bare desktop: right of the icon column, between the panels."""


@pytest.fixture(scope="module")
def apps_replica(image: str, docker_client: docker.DockerClient) -> Iterator[Replica]:
    with held_replica(image, docker_client, "apps-desktop", screen=SCREEN, limits=limits_for("apps")) as replica:
        yield replica


def _solid_png(rgb: tuple[int, int, int]) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (64, 36), rgb).save(buf, format="PNG")
    return buf.getvalue()


def _wait_desktop_color(replica: Replica, rgb: tuple[int, int, int], timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while True:
        got = Image.open(io.BytesIO(replica.screenshot().data)).convert("RGB").getpixel(DESKTOP_SPOT)
        if all(abs(a - b) <= 6 for a, b in zip(got, rgb, strict=True)):
            return
        assert time.monotonic() < deadline, f"desktop at {DESKTOP_SPOT} is {got}, expected about {rgb}"
        time.sleep(0.25)


def test_ready_means_the_session_is_up(make_pool: Callable[..., ReplicaPool]) -> None:
    """A leased replica's panel and desktop are already drawn: the server answers /health only after
    the session script reports them (an app launched before mapped at 0,0, undecorated)."""
    pool = make_pool(1, screen=SCREEN, limits=limits_for("apps"))
    with pool.lease(timeout=120) as replica:
        res = replica.execute(SESSION_UP, shell=True, timeout=10)
        assert res.returncode == 0, f"session not up when the replica was ready: {res}"
        assert all(replica.health()["desktop"].values())
        assert replica.health()["grab"] == "mit-shm"  # the apps tier's screenshots come through shared memory too


def test_terminal_returns_the_focused_terminals_text(apps_replica: Replica) -> None:
    apps_replica.launch(["xfce4-terminal", "--title", "osgym-term"])
    apps_replica.wait_window("osgym-term", timeout=20, focused=True)
    apps_replica.act([Typing(text="echo osgym-terminal-$((6*7))"), Press(key="enter")])
    deadline = time.monotonic() + 20
    text = None
    while text is None or "osgym-terminal-42" not in text:
        assert time.monotonic() < deadline, f"terminal text without the command's output: {text!r}"
        time.sleep(0.25)
        text = apps_replica.terminal()
    assert "echo osgym-terminal-$((6*7))" in text  # the command line too, as a person sees it
    apps_replica.close_window("osgym-term")


def test_wallpaper_changes_natively(apps_replica: Replica) -> None:
    assert apps_replica.wallpaper() == "/usr/share/backgrounds/osgym/wallpaper"
    apps_replica.write_file("/home/user/Documents/solid.png", _solid_png(WALLPAPER_RGB))
    # As a task file's setup step (OSWorld's "change_wallpaper"), which calls POST /wallpaper.
    run_step(apps_replica, SetupStep(type="change_wallpaper", parameters={"path": "~/Documents/solid.png"}))
    assert apps_replica.wallpaper() == "/home/user/Documents/solid.png"
    _wait_desktop_color(apps_replica, WALLPAPER_RGB)
    with pytest.raises(RequestRejected) as exc:
        apps_replica.set_wallpaper("/home/user/Documents/missing.png")
    assert exc.value.status == 404
    with pytest.raises(SetupError, match=r"config\[0\].*missing.png"):
        run_step(apps_replica, SetupStep(type="change_wallpaper", parameters={"path": "~/Documents/missing.png"}),
                 where="task t: config[0]")
    assert apps_replica.wallpaper() == "/home/user/Documents/solid.png"  # unchanged by the failed call


def test_osworld_change_wallpaper_and_terminal_in_compat_mode(image: str, docker_client: docker.DockerClient) -> None:
    with compat_replica(docker_client, image, SCREEN, mem_limit="1536m", pids_limit=1024, ready_timeout=90) as url, \
            httpx.Client(base_url=url, timeout=60) as vm:
        up = vm.post("/setup/upload", data={"file_path": "/home/user/Documents/osworld.png"},
                     files={"file_data": ("osworld.png", _solid_png((20, 160, 60)))})
        assert up.status_code == 200
        r = vm.post("/setup/change_wallpaper", json={"path": "~/Documents/osworld.png"})
        assert (r.status_code, r.text) == (200, "Wallpaper changed successfully")
        assert vm.post("/setup/change_wallpaper", json={}).status_code == 400
        assert vm.post("/setup/change_wallpaper", json={"path": "/nope.png"}).status_code == 404
        deadline = time.monotonic() + 15
        while True:
            shot = Image.open(io.BytesIO(vm.get("/screenshot").content)).convert("RGB")
            if shot.getpixel(DESKTOP_SPOT) == (20, 160, 60):
                break
            assert time.monotonic() < deadline, f"compat wallpaper not shown: {shot.getpixel(DESKTOP_SPOT)}"
            time.sleep(0.25)
        # OSWorld's get_vm_wallpaper: an empty POST /wallpaper returns the image shown.
        got = vm.post("/wallpaper")
        assert got.status_code == 200 and got.headers["content-type"] == "image/png"
        assert Image.open(io.BytesIO(got.content)).convert("RGB").getpixel((0, 0)) == (20, 160, 60)
        # The agent can point xfconf anywhere; the route serves no file outside home, /tmp and /usr/share.
        setx = vm.post("/execute", json={"command": ["xfconf-query", "-c", "xfce4-desktop", "-p",
                                                     "/backdrop/screen0/monitorscreen/workspace0/last-image",
                                                     "-s", "/etc/passwd"]})
        assert setx.json()["returncode"] == 0, setx.text
        assert vm.post("/wallpaper").status_code == 403
        # No terminal focused yet: output null, as OSWorld answers.
        assert vm.get("/terminal").json() == {"output": None, "status": "success"}


def test_on_screen_tree_holds_every_row_of_a_table_with_hidden_columns(apps_replica: Replica) -> None:
    """VLC's playlist is a table whose cells are one flat list, row after row, with hidden columns
    (Artist, Genre, ...) between a row's on-screen cells: the on-screen tree skips those and goes on to
    the next rows (it once stopped at the first hidden cell, and an oracle never found row 2)."""
    task = templates("apps-media", ["media-playlist-subset"])[0].variant(2)
    names = set(re.findall(r"[a-z]+-[a-z]+\.wav", json.dumps(task.config[0].parameters)))
    assert len(names) >= 4
    run_setup(apps_replica, task.config, task_id=task.id)  # ends with VLC in front
    try:
        apps_replica.act([Hotkey(keys=["ctrl", "l"])])
        deadline, missing = time.monotonic() + 30, set(names)
        while missing:
            assert time.monotonic() < deadline, f"rows never on screen in the tree: {sorted(missing)}"
            time.sleep(0.5)
            tree = ET.fromstring(apps_replica.accessibility(showing_only=True))
            missing -= {el.get("name") for el in tree.iter("table-cell") if el.get(f"{A11Y_COMPONENT}size")}
    finally:  # VLC and the distractor window the setup opened beside it
        for title in {str(s.parameters["title"]) for s in task.config if s.type == "wait_window"}:
            apps_replica.close_window(title)
