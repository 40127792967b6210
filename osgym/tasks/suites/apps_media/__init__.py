"""The ``apps-media`` suite: VLC playlists. Setup makes short tone recordings in ~/Music and opens VLC
with some of them; the saved playlist must list exactly those. Run it on ``tier: apps``."""

from __future__ import annotations

import random
from typing import Any

from osgym.tasks.generators import HOME, Template, cmd, execute, op, q, rule
from osgym.tasks.suites.app_files import open_app
from osgym.tasks.suites.apps_smoke.common import ANIMALS, DONE, WORDS

NAME = "apps-media"
TIER = "apps"
DESCRIPTION = "VLC: save the playing list as a playlist file (needs tier: apps)."
VLC = "VLC media player"
TONES = ("import math, struct, sys, wave\n"
         "for i, path in enumerate(sys.argv[1:]):\n"
         "    with wave.open(path, 'wb') as w:\n"
         "        w.setnchannels(1); w.setsampwidth(1); w.setframerate(8000)\n"
         "        w.writeframes(bytes(int(128 + 60 * math.sin(2 * math.pi * (220 + 40 * i) * t / 8000))"
         " for t in range(8000 * 30)))\n")
"""Writes 30 s tones (a different pitch each) at the paths given; run inside the replica."""


def media_save_playlist(rng: random.Random) -> dict[str, Any]:
    # Replicas have no sound device: VLC's default output fails on every track and opens its Errors
    # dialog over the player, so it plays to the dummy output (``--aout adummy``).
    names = [f"{a}-{w}.wav" for a, w in zip(rng.sample(ANIMALS, 5), rng.sample(WORDS, 5), strict=True)]
    k = rng.randint(2, 4)
    queued, others = names[:k], names[k:]
    folder = f"{HOME}/Music"
    out_name = f"{rng.choice(WORDS)}-{rng.choice(['mix', 'list', 'set', 'queue'])}-{rng.randint(1, 99)}.xspf"
    out = f"{folder}/{out_name}"
    paths = [f"{folder}/{n}" for n in names]
    return {
        "instruction": f"VLC is playing a list of {k} recordings. Save that playlist as ~/Music/{out_name}",
        "related_apps": ["vlc"],
        "config": [execute(f"mkdir -p {q(folder)} && python3 -c {q(TONES)} {' '.join(q(p) for p in paths)}"),
                   *open_app(["vlc", "--aout", "adummy", *[f"{folder}/{n}" for n in queued]], VLC)],
        "evaluator": {"func": "check_include_exclude", "result": cmd(f"cat {q(out)}"),
                      "expected": rule(include=[f"file://{folder}/{n}" for n in queued],
                                       exclude=[f"/{n}" for n in others])},
        # Media > Save Playlist to File... is Ctrl+Y; Qt's file dialog takes the whole path in its name field.
        "oracle": [op("wait_focused", window=VLC, timeout=30), op("hotkey", keys=["ctrl", "y"]),
                   op("wait_focused", window="Save playlist", role="text", timeout=30), op("type", text=out),
                   op("wait_enabled", window="Save playlist", control="Save"), op("press", key="enter"),
                   op("wait_gone", title="Save playlist", timeout=30), DONE],
    }


TEMPLATES: list[Template] = [
    Template("media-save-playlist", "vlc", "save VLC's current list as a playlist file", media_save_playlist,
             difficulty=1),
]
