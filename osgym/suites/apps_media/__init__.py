"""The ``apps-media`` suite: VLC playlists and preferences. Setup makes short tone recordings in ~/Music
and opens VLC with some of them; a saved playlist must list exactly the expected ones, and saved
preferences are read from VLC's configuration file (``vlcrc``, OSWorld's VLC metrics). Run it on
``tier: apps``."""

from __future__ import annotations

import random
from typing import Any

from osgym.replicas.accounts import AGENT_HOME as HOME
from osgym.suites.apps_smoke.common import ANIMALS, DONE, WORDS, open_app
from osgym.suites.generators import Template, cmd, execute, op, q, rule, vm_file

NAME = "apps-media"
TIER = "apps"
DESCRIPTION = "VLC: save playlists, set and save preferences (needs tier: apps)."
VLC = "VLC media player"
TONES = ("import math, struct, sys, wave\n"
         "for i, path in enumerate(sys.argv[1:]):\n"
         "    with wave.open(path, 'wb') as w:\n"
         "        w.setnchannels(1); w.setsampwidth(1); w.setframerate(8000)\n"
         "        w.writeframes(bytes(int(128 + 60 * math.sin(2 * math.pi * (220 + 40 * i) * t / 8000))"
         " for t in range(8000 * 30)))\n")
"""Writes 30 s tones (a different pitch each) at the paths given; run inside the replica."""


def _tones(folder: str, names: list[str]) -> dict[str, Any]:
    return execute(f"mkdir -p {q(folder)} && python3 -c {q(TONES)} {' '.join(q(f'{folder}/{n}') for n in names)}")


def _recordings(rng: random.Random, n: int) -> list[str]:
    return [f"{a}-{w}.wav" for a, w in zip(rng.sample(ANIMALS, n), rng.sample(WORDS, n), strict=True)]


def save_playlist(folder: str, name: str) -> list[dict[str, Any]]:
    """Media > Save Playlist to File... (Ctrl+Y), then, in Qt's file dialog, go to ``folder`` (its path and
    Enter), wait for the dialog to show it, and save there as ``name``.

    The whole path typed at once into a dialog that has just opened left its button at "Open" now and then
    (3 times in 10 here): Qt's file dialog took the path for the folder it passes through, and Enter then
    went into the folder instead of saving. A folder's path and Enter always goes there; the name typed
    inside it always gives "Save"."""
    return [op("hotkey", keys=["ctrl", "y"]),
            op("wait_focused", window="Save playlist", role="text", timeout=30),
            op("type", text=f"{folder}/"), op("press", key="enter"),
            op("wait_element", window="Save playlist", name=folder, timeout=30),
            op("hotkey", keys=["ctrl", "a"]), op("type", text=name),
            op("wait_enabled", window="Save playlist", control="Save"), op("press", key="enter"),
            op("wait_gone", title="Save playlist", timeout=30)]


def media_save_playlist(rng: random.Random) -> dict[str, Any]:
    # Replicas have no sound device: VLC's default output fails on every track and opens its Errors
    # dialog over the player, so it plays to the dummy output (``--aout adummy``).
    names = _recordings(rng, 5)
    k = rng.randint(2, 4)
    queued, others = names[:k], names[k:]
    folder = f"{HOME}/Music"
    out_name = f"{rng.choice(WORDS)}-{rng.choice(['mix', 'list', 'set', 'queue'])}-{rng.randint(1, 99)}.xspf"
    out = f"{folder}/{out_name}"
    return {
        "instruction": f"VLC is playing a list of {k} recordings. Save that playlist as ~/Music/{out_name}",
        "related_apps": ["vlc"],
        "config": [_tones(folder, names),
                   *open_app(["vlc", "--aout", "adummy", *[f"{folder}/{n}" for n in queued]], VLC)],
        "evaluator": {"func": "check_include_exclude", "result": cmd(f"cat {q(out)}"),
                      "expected": rule(include=[f"file://{folder}/{n}" for n in queued],
                                       exclude=[f"/{n}" for n in others])},
        "oracle": [op("wait_focused", window=VLC, timeout=30), *save_playlist(folder, out_name), DONE],
    }


def _entry(name: str, ext: str) -> str:
    """How a saved playlist lists a recording beside it: VLC writes an M3U's entries as bare names on lines of
    their own, an XSPF's as file URLs (so a removed name is not found inside a kept one's)."""
    return f"\n{name}" if ext == "m3u" else f"/{name}</location>"


def media_playlist_subset(rng: random.Random) -> dict[str, Any]:
    names = _recordings(rng, rng.randint(4, 6))
    removed = rng.sample(names, rng.randint(1, len(names) - 2))
    kept = [n for n in names if n not in removed]
    folder = f"{HOME}/Music"
    ext = rng.choice(["m3u", "xspf"])
    out_name = f"{rng.choice(WORDS)}-{rng.choice(['mix', 'list', 'set', 'picks', 'short'])}-{rng.randint(1, 99)}.{ext}"
    out = f"{folder}/{out_name}"
    gone = removed[0] if len(removed) == 1 else f"{', '.join(removed[:-1])} and {removed[-1]}"
    return {
        "instruction": f"VLC is playing a list of {len(names)} recordings. Remove {gone} from the list and save "
                       f"the rest as the playlist ~/Music/{out_name}",
        "related_apps": ["vlc"],
        "config": [_tones(folder, names),
                   *open_app(["vlc", "--aout", "adummy", *[f"{folder}/{n}" for n in names]], VLC)],
        "evaluator": {"func": "check_include_exclude", "result": cmd(f"cat {q(out)}"),
                      "expected": rule(include=[_entry(n, ext) for n in kept],
                                       exclude=[_entry(n, ext) for n in removed])},
        # View > Playlist (Ctrl+L) shows the list in the player's window, one row per recording; each one to
        # remove is selected by a click on its title and deleted with Delete; then Save Playlist (Ctrl+Y),
        # where the file name's extension picks the format.
        "oracle": [op("wait_focused", window=VLC, timeout=30), op("hotkey", keys=["ctrl", "l"]),
                   *[o for n in removed for o in (op("click_element", window=VLC, name=n, role="table-cell",
                                                     timeout=30), op("press", key="delete"))],
                   *save_playlist(folder, out_name), DONE],
    }


PREFS = "Simple Preferences"
VLCRC = f"{HOME}/.config/vlc/vlcrc"
SWITCHES = {
    # metric: (the box's label in Interface, the instruction's words, the value to save; the opposite is VLC's default)
    "check_one_instance_when_started_from_file": ("Use only one instance when started from file manager",
                                                  "turn off using only one instance when started from the file manager",
                                                  0),
    "check_qt_minimal_view": ("Start in minimal view mode", "make it start in minimal view mode", 1),
}


def media_preferences(rng: random.Random) -> dict[str, Any]:
    names = _recordings(rng, rng.randint(1, 3))
    folder = f"{HOME}/Music"
    record = f"{HOME}/{rng.choice(['Videos', 'Music'])}/{rng.choice(ANIMALS)}-{rng.choice(WORDS)}-{rng.randint(1, 99)}"
    metric = rng.choice(sorted(SWITCHES))
    box, words, value = SWITCHES[metric]
    first = rng.random() < 0.5
    asks = [f"set the folder for recordings to {record}", words]
    said = " and ".join(asks if first else asks[::-1])
    field = f"expected_{metric.removeprefix('check_')}"
    return {
        "instruction": f"In VLC's preferences, {said}. Save the preferences.",
        "related_apps": ["vlc"],
        "config": [_tones(folder, names), execute(f"mkdir -p {q(record)}"),
                   *open_app(["vlc", "--aout", "adummy", *[f"{folder}/{n}" for n in names]], VLC)],
        "evaluator": {"func": ["is_vlc_recordings_folder", metric], "conj": "and",
                      "result": [vm_file(VLCRC), vm_file(VLCRC, "vlcrc-copy")],
                      "expected": [rule(recording_file_path=record), rule(**{field: value})]},
        # Tools > Preferences (Ctrl+P) opens on its Interface page, where the box is; the record folder is
        # a field of the Input / Codecs page; Save writes vlcrc and closes the dialog.
        "oracle": [op("wait_focused", window=VLC, timeout=30), op("hotkey", keys=["ctrl", "p"]),
                   op("wait_enabled", window=PREFS, control="Save", timeout=30),
                   op("click_element", window=PREFS, name=box, role="check-box", timeout=30),
                   op("click_element", window=PREFS, name="Input / Codecs", role="check-box"),
                   op("click_element", window=PREFS, name="Record directory or filename", role="text", timeout=30),
                   op("wait_focused", window=PREFS, role="text"), op("hotkey", keys=["ctrl", "a"]),
                   op("type", text=record), op("click_element", window=PREFS, name="Save", role="push-button"),
                   op("wait_gone", title=PREFS, timeout=30), DONE],
    }


TEMPLATES: list[Template] = [
    Template("media-save-playlist", "vlc", "save VLC's current list as a playlist file", media_save_playlist,
             difficulty=1),
    Template("media-playlist-subset", "vlc", "remove some recordings from VLC's list and save the rest as a playlist",
             media_playlist_subset, difficulty=2),
    Template("media-preferences", "vlc", "set VLC's recordings folder and an interface option, and save them",
             media_preferences, difficulty=2),
]
