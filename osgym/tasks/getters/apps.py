"""Applications' configuration and state: VLC, GIMP, VS Code, and media inside a slide deck."""

from __future__ import annotations

import io
import posixpath
import time
import zipfile

from pydantic import BaseModel, ConfigDict, StrictStr, field_validator

from osgym.errors import EvaluatorError
from osgym.replicas.accounts import AGENT_HOME as HOME
from osgym.replicas.actions import Hotkey, Press, Typing
from osgym.tasks.getters import Context, getter
from osgym.tasks.getters.files import read_vm_file, relative_name
from osgym.tasks.metrics._files import too_big

VLCRC = f"{HOME}/.config/vlc/vlcrc"
GIMP_DIR = f"{HOME}/.config/GIMP/2.10"


class _Options(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DestOptions(_Options):
    dest: StrictStr

    _dest_inside = field_validator("dest")(relative_name)


PALETTE_WAIT_S = 10.0
"""The longest ``vscode_config`` waits for the command it typed to have written its file."""


def _fetch(ctx: Context, path: str, dest: str, where: str) -> str | None:
    data = read_vm_file(ctx, path)
    if data is None:
        return None
    return str(ctx.scratch.write(dest, data, where=f"{where}.dest", error=EvaluatorError))


@getter("vlc_config", DestOptions)
def vlc_config(ctx: Context, o: DestOptions, where: str) -> str | None:
    """VLC's ``~/.config/vlc/vlcrc``, fetched as ``dest``."""
    return _fetch(ctx, VLCRC, o.dest, where)


# Runs inside the replica: VLC's HTTP interface (a task launches VLC with --extraintf http and OSWorld's
# password) on the replica's loopback; prints status.xml, or nothing if VLC does not answer.
_VLC_STATUS_SCRIPT = r"""
import base64, sys, urllib.request
r = urllib.request.Request("http://127.0.0.1:8080/requests/status.xml",
                           headers={"Authorization": "Basic " + base64.b64encode(b":password").decode()})
try:
    with urllib.request.urlopen(r, timeout=10) as f:
        sys.stdout.write(f.read(4 << 20).decode("utf-8", "replace"))
except OSError as exc:
    sys.stderr.write(str(exc)); sys.exit(3)
"""


@getter("vlc_playing_info", DestOptions)
def vlc_playing_info(ctx: Context, o: DestOptions, where: str) -> str | None:
    """VLC's playing status (``status.xml`` of its HTTP interface), fetched as ``dest``; None if VLC does not
    answer (not running, or without its HTTP interface)."""
    res = ctx.replica.execute(["python3", "-c", _VLC_STATUS_SCRIPT], timeout=30)
    if res.returncode != 0:
        return None
    return str(ctx.scratch.write(o.dest, res.output.encode(), where=f"{where}.dest", error=EvaluatorError))


class GimpOptions(DestOptions):
    file_name: StrictStr

    # a file of GIMP's own directory, with no way out of it
    _file_inside = field_validator("file_name")(relative_name)


@getter("gimp_config_file", GimpOptions)
def gimp_config_file(ctx: Context, o: GimpOptions, where: str) -> str | None:
    """A file of GIMP's configuration directory (``~/.config/GIMP/2.10/<file_name>``), fetched as ``dest``."""
    return _fetch(ctx, f"{GIMP_DIR}/{o.file_name}", o.dest, where)


class VscodeOptions(DestOptions):
    vscode_extension_command: StrictStr
    path: StrictStr


@getter("vscode_config", VscodeOptions)
def vscode_config(ctx: Context, o: VscodeOptions, where: str) -> str | None:
    """Runs a VS Code command through its command palette (Ctrl+Shift+P, the command, Enter), waits a
    second, and fetches ``path`` as ``dest``: OSWorld's way to make VS Code write a settings file.

    OSWorld waits the second only; here the second is a minimum, and the wait goes on until the screen has
    been quiet (the palette closed, the window redrawn after the command ran), up to 10 s: on a loaded
    machine a second was seen to pass before the command had run. A file still missing then is fetched
    again until those 10 s have passed."""
    deadline = time.monotonic() + PALETTE_WAIT_S
    ctx.replica.act([Hotkey(keys=["ctrl", "shift", "p"]), Typing(text=o.vscode_extension_command),
                     Press(key="enter")], settle=PALETTE_WAIT_S, mode="damage", minimum=1.0, quiet=0.3)
    # A quiet screen is not proof that the command ran: with the load at 20 or more, the window went quiet
    # for 0.3 s before the command had written its file. So a file still missing is looked for again, within
    # the same bound.
    got = _fetch(ctx, o.path, o.dest, where)
    while got is None and time.monotonic() < deadline:
        time.sleep(0.25)
        got = _fetch(ctx, o.path, o.dest, where)
    return got


class SlideOptions(DestOptions):
    ppt_file_path: StrictStr
    slide_index: int


def _slide_media(ctx: Context, o: SlideOptions, where: str, kind: str) -> str | None:
    """The media file a slide uses (``kind``: ``audio``, or ``image`` for the background), from inside
    the deck or, if linked, from the replica; fetched as ``dest``."""
    from pptx import Presentation

    data = read_vm_file(ctx, o.ppt_file_path)
    if data is None:
        return None
    deck_path = ctx.scratch.write(posixpath.basename(o.ppt_file_path) or "deck.pptx", data,
                                  where=f"{where}.ppt_file_path", error=EvaluatorError)
    if too_big(str(deck_path)):
        raise EvaluatorError(f"{where}: {o.ppt_file_path!r} unpacks to more than a presentation may")
    try:
        slides = Presentation(io.BytesIO(data)).slides
    except (ValueError, KeyError, zipfile.BadZipFile) as exc:
        raise EvaluatorError(f"{where}: cannot read {o.ppt_file_path!r} as a presentation: {exc}") from exc
    if not 0 <= o.slide_index < len(slides):
        return None
    part = slides[o.slide_index].part
    wanted: set[str] | None = None
    if kind == "image":  # only the picture the slide's background fill names
        ns = {"p": "http://schemas.openxmlformats.org/presentationml/2006/main",
              "a": "http://schemas.openxmlformats.org/drawingml/2006/main"}
        embed = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}embed"
        wanted = {b.get(embed) for b in part._element.findall(".//p:bgPr//a:blip", ns)} - {None}
        if not wanted:
            return None
    for rid, rel in part.rels.items():
        if kind not in rel.reltype or (wanted is not None and rid not in wanted):
            continue
        if rel.is_external:
            target = rel.target_ref
            if not target.startswith("file://"):
                return None
            return _fetch(ctx, target[len("file://"):], o.dest, where)
        blob: bytes = rel.target_part.blob
        return str(ctx.scratch.write(o.dest, blob, where=f"{where}.dest", error=EvaluatorError))
    return None


@getter("audio_in_slide", SlideOptions)
def audio_in_slide(ctx: Context, o: SlideOptions, where: str) -> str | None:
    """The audio a slide plays (embedded, or the linked file on the replica), fetched as ``dest``."""
    return _slide_media(ctx, o, where, "audio")


@getter("background_image_in_slide", SlideOptions)
def background_image_in_slide(ctx: Context, o: SlideOptions, where: str) -> str | None:
    """The picture a slide's background is filled with, fetched as ``dest``; None without one."""
    return _slide_media(ctx, o, where, "image")
