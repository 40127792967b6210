"""The apps tier as OSWorld's Ubuntu VM, where a task can tell (issue 40; docs/osworld.md, "The apps tier as
OSWorld's VM"): each test runs a task's kind of step through osgym's own setup code (``run_step``) in a real
apps replica and checks what the task's evaluator reads.

- a VS Code window that ``activate_window "Visual Studio Code"`` finds right after ``launch code``;
- ``google-chrome``, its window titled ``<page> - Google Chrome``, and Chrome's profile at
  ``~/.config/google-chrome``, present before the browser first runs, edited there and then used by the browser;
  its processes named ``chrome``, so that ``pkill chrome`` closes it and it writes its profile;
- ``apt-get update && apt-get install X`` for the packages tasks install, offline; ``pip install`` likewise;
- X clients in a ``sudo`` step (``... && xsel -bc``) reach the user's display;
- GNOME's settings set and read with ``gsettings`` (dconf), over the bus path Ubuntu has;
- the initial state gives no free reward: VLC is not the default video player, Mahjongg is installed,
  automatic screen locking is off;
- LibreOffice's extension cache directory; no user ``charles`` (OSWorld's VM has none: a task asks to create it).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import docker
import pytest

from osgym.errors import RequestRejected
from osgym.replicas.client import Replica
from osgym.replicas.pool import limits_for
from osgym.tasks import getters
from osgym.tasks.getters import Context
from osgym.tasks.getters.general import _VIDEO_TYPES
from osgym.tasks.setup import run_step
from osgym.tasks.spec import SetupStep
from tests.apps.test_apps_open import SCREEN, wait_session
from tests.conftest import held_replica

pytestmark = [pytest.mark.docker, pytest.mark.slow]

CHROME = "/home/user/.config/google-chrome"
TASK_PACKAGES = ["jq", "sysstat", "xsel", "zsh", "expect", "unzip", "astyle", "python3-pysrt",
                 "gnome-mahjongg"]
"""The packages OSWorld's task files install (apt and pip) or act on, as Debian names them."""


@pytest.fixture(scope="module")
def vm(image: str, docker_client: docker.DockerClient) -> Iterator[Replica]:
    with held_replica(image, docker_client, "osworld-vm", screen=SCREEN, limits=limits_for("apps")) as replica:
        wait_session(replica)
        yield replica


def _step(replica: Replica, type_: str, **parameters: object) -> None:
    run_step(replica, SetupStep(type=type_, parameters=parameters), where=f"test: {type_}")


def _fetch(replica: Replica, name: str) -> object:
    ctx = Context(replica)
    try:
        getters.check(name, {}, where="evaluator.result")
        return getters.fetch(ctx, name, {}, "task t: evaluator.result")
    finally:
        ctx.close()


def _ok(replica: Replica, command: str, *, root: bool = False) -> str:
    res = (replica.execute_as_root if root else replica.execute)(command, shell=True, timeout=120)
    assert res.returncode == 0, f"{command!r} exited {res.returncode}: {res.output[-500:]} {res.error[-500:]}"
    return res.output


def test_initial_state_gives_no_free_reward(vm: Replica) -> None:
    # 937087b6 "make VLC the default video player": the getter counts xdg-mime's answers over video types.
    assert _fetch(vm, "default_video_player") == "org.gnome.Totem.desktop\n"
    assert _ok(vm, "xdg-mime query default video/mp4").strip() == "vlc.desktop"
    # ddc75b62 "uninstall Mahjongg": its evaluator greps `dpkg -l` for mahjongg.
    assert "mahjongg" in _ok(vm, "dpkg -l | grep mahjongg")
    # a4d98375 "lock automatically": off, as on OSWorld's VM.
    assert _ok(vm, "gsettings get org.gnome.desktop.screensaver lock-enabled") == "false\n"
    # 99146c54 "delete browsing data on close": Chrome's profile as built holds only Chromium's own markers.
    assert _fetch(vm, "data_delete_automacally") == "false"
    # 3ce045a0, bedcedc4, f9be0997: GNOME's defaults, which the tasks must change.
    assert _ok(vm, "gsettings get org.gnome.desktop.interface text-scaling-factor") == "1.0\n"
    assert _ok(vm, "gsettings get org.gnome.desktop.session idle-delay") == "uint32 300\n"


def test_default_video_player_follows_xdg_mime_default(vm: Replica) -> None:
    """What the agent does for 937087b6 (e.g. Thunar's "Set as default", or xdg-mime) turns the getter to VLC."""
    try:
        _ok(vm, "xdg-mime default vlc.desktop " + " ".join(f"video/{t}" for t in _VIDEO_TYPES))
        assert _fetch(vm, "default_video_player") == "vlc.desktop\n"
    finally:
        vm.execute(["rm", "-f", "/home/user/.config/mimeapps.list"])
    assert _fetch(vm, "default_video_player") == "org.gnome.Totem.desktop\n"


def test_task_packages_install_offline(vm: Replica) -> None:
    out = _ok(vm, "dpkg-query -W -f '${Package} ${Status}\\n' " + " ".join(TASK_PACKAGES))
    assert out.count("install ok installed") == len(TASK_PACKAGES), out
    # As task files chain them, with sudo (a root step here); the replica has no network.
    _step(vm, "execute", command="echo password | sudo -S apt update -y && echo password | sudo -S apt install jq -y",
          shell=True, check=True)
    _step(vm, "execute", command="echo password | sudo -S apt-get update && echo password | sudo -S apt-get install "
          "-y sysstat xsel zsh expect unzip astyle", shell=True, check=True)
    _step(vm, "execute", command="echo password | sudo -S pip install pysrt", shell=True, check=True)
    _ok(vm, "pip install pysrt && python3 -c 'import pysrt'")
    # A name that is no package fails, as on Ubuntu (0b35aee5 asks for `md5sum`).
    res = vm.execute_as_root("apt-get install -y md5sum", shell=True)
    assert res.returncode != 0 and "Unable to locate package md5sum" in res.output + res.error


def test_x_clients_after_sudo_reach_the_users_display(vm: Replica) -> None:
    """3eb2a122 clears the clipboard with ``echo password | sudo -S apt install xsel && xsel -bc``: on Ubuntu the
    user's shell runs ``xsel`` on the user's display; here the whole step is a root step, given the session's
    DISPLAY and X cookie as sudo keeps them."""
    _ok(vm, "printf 'left over' | xsel --clipboard --input")
    assert _ok(vm, "xsel --clipboard --output") == "left over"
    _step(vm, "command", command="echo password | sudo -S apt install xsel && xsel -bc", shell="true", check=True)
    assert _ok(vm, "xsel --clipboard --output") == ""
    # The step's own sudo keeps them too, as Ubuntu's env_keep does.
    _step(vm, "execute", command="echo password | sudo -S sh -c 'xsel --clipboard --output > /tmp/sudo-x'",
          shell=True, check=True)


def test_gsettings_set_and_get_over_ubuntus_bus_path(vm: Replica) -> None:
    # ec4e3f68: GNOME Shell's favourites, over the bus at /run/user/1000/bus.
    bus = "export DBUS_SESSION_BUS_ADDRESS='unix:path=/run/user/1000/bus'\n"
    _step(vm, "execute", command=bus + "gsettings set org.gnome.shell favorite-apps \"['thunderbird.desktop', "
          "'vim.desktop', 'google-chrome.desktop']\"", shell=True, check=True)
    assert _ok(vm, bus + "gsettings get org.gnome.shell favorite-apps") == \
        "['thunderbird.desktop', 'vim.desktop', 'google-chrome.desktop']\n"
    # f9be0997: set in setup, read back by the evaluator, with the replica's own bus address.
    _step(vm, "execute", command="gsettings set org.gnome.desktop.notifications show-banners false", shell=True,
          check=True)
    assert _ok(vm, "gsettings get org.gnome.desktop.notifications show-banners") == "false\n"
    # dconf keeps them (the values a fresh process reads from ~/.config/dconf/user).
    assert "show-banners=false" in _ok(vm, "dconf dump /org/gnome/desktop/notifications/")
    _ok(vm, "gsettings reset org.gnome.desktop.notifications show-banners"
            " && gsettings reset org.gnome.shell favorite-apps")


def test_chrome_profile_is_google_chromes_and_a_task_edit_reaches_the_browser(vm: Replica) -> None:
    """3299584d's setup: edit Chrome's Preferences with jq before the browser starts, then start it as
    ``google-chrome``; the browser opens the edited startup page, and the profile stays where the getter reads."""
    assert "Chromium" in _ok(vm, "google-chrome --version")
    assert json.loads(_ok(vm, f"cat '{CHROME}/Default/Preferences'")), "no Chrome profile before Chrome's first run"
    assert _ok(vm, "readlink -f /home/user/.config/chromium").strip() == CHROME
    _step(vm, "execute", shell=True, check=True,
          command=f"cd {CHROME}/Default && jq '. + {{\"session\": {{\"restore_on_startup\": 4, "
                  "\"startup_urls\": [\"http://osgym.invalid/start\"]}}' Preferences > temp && mv temp Preferences")
    _step(vm, "launch", command=["google-chrome", "--remote-debugging-port=1337"])
    try:
        tabs: list[dict[str, str]] = []
        deadline = time.monotonic() + 60
        while not any("osgym.invalid" in t.get("url", "") for t in tabs):
            assert time.monotonic() < deadline, f"Chrome did not open its startup page: {tabs}"
            time.sleep(1)
            res = vm.execute(["python3", "-c", "import urllib.request; print(urllib.request.urlopen("
                              "'http://127.0.0.1:1337/json', timeout=5).read().decode())"])
            tabs = json.loads(res.output) if res.returncode == 0 else []
        # Chrome tasks then activate the browser by its title, as on OSWorld's VM: "<page> - Google Chrome".
        _step(vm, "activate_window", window_name="Google Chrome")
        cmdline = _ok(vm, "pgrep -a -f -- '[-]-remote-debugging-port=1337' | head -1")  # [-]: not this shell
        assert f"--user-data-dir={CHROME}" in cmdline, cmdline
        assert _fetch(vm, "new_startup_page") == "false"  # what 3299584d scores: no free reward
        # Six Chrome tasks end with postconfig `pkill chrome` so that the browser writes its profile before the
        # evaluator reads it: google-chrome's browser process is named `chrome`, as Google Chrome's is.
        browser = _ok(vm, "pgrep -o -f -- '[-]-remote-debugging-port=1337'").strip()
        assert _ok(vm, f"cat /proc/{browser}/comm") == "chrome\n"
        assert _ok(vm, "pgrep -x chromium || true") == "", "google-chrome's processes are all named chrome"
        _step(vm, "execute", command="pkill chrome", shell="true", check=True)
        deadline = time.monotonic() + 30
        while vm.execute(["pgrep", "-f", "--", "[-]-remote-debugging-port=1337"]).returncode == 0:
            assert time.monotonic() < deadline, "pkill chrome did not close the browser"
            time.sleep(0.5)
        prefs = json.loads(_ok(vm, f"cat '{CHROME}/Default/Preferences'"))
        # Chrome takes SIGTERM as the session's end and writes its profile; one still running, or killed, has
        # "Crashed" there.
        assert prefs["profile"]["exit_type"] == "SessionEnded", prefs["profile"]["exit_type"]
    finally:
        vm.execute(["sh", "-c", "pkill -f -- '[-]-remote-debugging-port=1337'; sleep 2; "
                             "pkill -9 -f -- '[-]-remote-debugging-port=1337'; true"])


def test_vscode_window_found_by_activate_window_right_after_launch(vm: Replica) -> None:
    """Every vs_code task's setup: ``launch ["code"]`` then ``activate_window "Visual Studio Code"`` at once."""
    started = time.monotonic()
    _step(vm, "launch", command=["code"])
    _step(vm, "activate_window", window_name="Visual Studio Code")
    print(f"activate_window: VS Code's window after {time.monotonic() - started:.1f} s")
    deadline = time.monotonic() + 10
    while not any(w.focused and "Visual Studio Code" in w.title for w in vm.windows()):
        assert time.monotonic() < deadline, [(w.title, w.focused) for w in vm.windows()]
        time.sleep(0.2)
    # wmctrl's rules: strict is the whole title, case-sensitively; by_class the class as instance.class.
    _step(vm, "activate_window", window_name="visual studio code")
    with pytest.raises(RequestRejected, match="no window matches"):
        vm.activate_window("visual studio code", strict=True, by_class=False)
    vm.activate_window("Code", strict=False, by_class=True)


def test_libreoffice_paths_and_users(vm: Replica) -> None:
    _ok(vm, "test -d /home/user/.config/libreoffice/4/user/uno_packages/cache/uno_packages")
    # a462a795 ("switch to the user Charles") is infeasible and 5812b315 asks to create charles: no such user.
    assert vm.execute(["id", "charles"]).returncode != 0
