"""desktop-basics templates: infeasible."""

from __future__ import annotations

import random
from typing import Any

from osgym.suites.desktop_basics.common import CLICK_XTERM, NAMES, WORDS, XTERM
from osgym.suites.generators import (
    op,
)

MISSING_APPS = {"GIMP": "gimp", "Firefox": "firefox", "VLC": "vlc", "Thunderbird": "thunderbird",
                "LibreOffice Writer": "soffice", "Inkscape": "inkscape", "Blender": "blender", "Spotify": "spotify",
                "Zoom": "zoom", "Slack": "slack", "Audacity": "audacity", "Krita": "krita", "Steam": "steam",
                "Visual Studio Code": "code", "Discord": "discord", "OBS Studio": "obs"}
APP_ACTIONS = ["open a new blank document", "create a new project named {n}", "open the file ~/Documents/{n}.dat",
               "export ~/Desktop/{n} as a PDF", "start a recording called {n}"]


def _infeasible(instruction: str, probe: str) -> dict[str, Any]:
    return {"instruction": instruction, "related_apps": ["xterm"], "config": XTERM,
            "evaluator": {"func": "infeasible"},
            "oracle": [CLICK_XTERM, op("type", text=probe + "\n"), op("fail")]}


def infeasible_missing_app(rng: random.Random) -> dict[str, Any]:
    app = rng.choice(sorted(MISSING_APPS))
    action = rng.choice(APP_ACTIONS).format(n=rng.choice(NAMES))
    return _infeasible(f"Open {app} and {action}.", f"which {MISSING_APPS[app]} || echo not installed")


def infeasible_resolution(rng: random.Random) -> dict[str, Any]:
    w, h, label = rng.choice([(7680, 4320, "8K"), (15360, 8640, "16K"), (10240, 4320, "10K ultrawide"),
                              (5120, 2880, "5K"), (6016, 3384, "6K")])
    hz = rng.choice([60, 75, 100, 120, 144, 165, 240, 360])
    scale = rng.choice([100, 125, 150, 175, 200, 250, 300])
    return _infeasible(f"Set the screen resolution to {w}x{h} ({label}) at {hz} Hz with {scale}% scaling.",
                       "xdpyinfo | grep dimensions")


def infeasible_wifi(rng: random.Random) -> dict[str, Any]:
    ssid = f"{rng.choice(WORDS).title()}{rng.choice(['Net', 'WiFi', '-5G', 'Home', 'Guest'])}{rng.randint(1, 99)}"
    pw = f"{rng.choice(WORDS)}{rng.randint(1000, 9999)}"
    return _infeasible(f"Connect this computer to the Wi-Fi network '{ssid}' with the password '{pw}'.",
                       "ls /sys/class/net")


def infeasible_printer(rng: random.Random) -> dict[str, Any]:
    brand, room = rng.choice(["HP", "Canon", "Brother", "Epson"]), rng.choice(["Office", "Lab", "Hall"])
    printer = f"{brand}-{room}-{rng.randint(1, 9)}"
    return _infeasible(f"Print ~/Documents/{rng.choice(NAMES)}.txt on the printer {printer}, "
                       f"{rng.randint(1, 5)} copies.", "lpstat -p || echo no printing system")
