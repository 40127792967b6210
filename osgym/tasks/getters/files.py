"""File getters: files fetched from the replica or the task-files directory, the directory tree, the wallpaper.

Every file lands in the evaluation's scratch directory under a ``dest`` name that cannot leave it
(checked at load, and again when written): file metrics only ever open those.

``multi`` and ``gives`` are OSWorld's: with ``multi``, ``path`` and ``dest`` are lists of the same
length and every file is fetched; ``gives`` (default ``[0]``) picks which of them the metric gets,
one path alone or a list of paths. A file missing on the replica is ``None`` (metrics score 0).
"""

from __future__ import annotations

import io
import json
import posixpath
import re
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, StrictBool, field_validator, model_validator

from osgym.errors import EvaluatorError, RequestRejected
from osgym.tasks.files import check_relative_name, check_source, read_task_file
from osgym.tasks.getters import Context, getter


class _Options(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _LoadValueError(ValueError, EvaluatorError):
    """check_relative_name's error inside a pydantic validator: a ValueError, so pydantic reports it."""


def relative_name(name: str) -> str:
    """``name``, if it is a relative path that stays inside the scratch directory (for options' validators,
    which name the field).

    Raises:
        ValueError: saying what is wrong.
    """
    try:
        check_relative_name(name, where="-", error=_LoadValueError)
    except _LoadValueError as exc:
        raise ValueError(str(exc).removeprefix("-: ")) from None
    return name


def _relative_names(value: str | list[str] | None) -> str | list[str] | None:
    for name in [] if value is None else value if isinstance(value, list) else [value]:
        relative_name(name)
    return value


def _names(value: str | list[str], multi: bool, what: str) -> list[str]:
    if multi != isinstance(value, list):
        raise ValueError(f"{what}: expected {'a list' if multi else 'a string'} when multi is {multi}")
    return list(value) if isinstance(value, list) else [value]


class FilesOptions(_Options):
    """``path`` and ``dest``: one name each, or (``multi``) lists of the same length; ``gives``: which
    of them the metric receives."""

    path: str | list[str]
    dest: str | list[str] | None = None
    multi: StrictBool = False
    gives: list[int] = [0]

    _dest_inside = field_validator("dest")(_relative_names)

    @field_validator("multi", mode="before")
    @classmethod
    def _multi_as_text(cls, v: Any) -> Any:
        """OSWorld's task files also write ``"multi": "true"``."""
        return {"true": True, "false": False}.get(v, v) if isinstance(v, str) else v

    def pairs(self) -> list[tuple[str, str]]:
        paths = _names(self.path, self.multi, "path")
        dests = _names(self.dest, self.multi, "dest") if self.dest is not None else [self._default_dest(p)
                                                                                      for p in paths]
        return list(zip(paths, dests, strict=True))

    def _default_dest(self, path: str) -> str:
        return posixpath.basename(path.rstrip("/")) or "file"

    @model_validator(mode="after")
    def _consistent(self) -> FilesOptions:
        paths = _names(self.path, self.multi, "path")
        if self.dest is not None:
            dests = _names(self.dest, self.multi, "dest")
            if len(dests) != len(paths):
                raise ValueError(f"dest: expected {len(paths)} names (one per path), actual {len(dests)}")
        if not paths or not all(isinstance(p, str) and p for p in paths):
            raise ValueError("path: expected non-empty names")
        bad = [g for g in self.gives if not 0 <= g < len(paths)]
        if bad or not self.gives:
            raise ValueError(f"gives: expected indexes of path (0..{len(paths) - 1}), actual {self.gives}")
        return self


def _given(opts: FilesOptions, values: list[Any]) -> Any:
    picked = [values[i] for i in opts.gives]
    return picked[0] if len(picked) == 1 else picked


class VmFileOptions(FilesOptions):
    """OSWorld's ``time_suffix`` (one file only) inserts today's date, ``time_format``, before the extension."""

    time_suffix: StrictBool = False
    time_format: str = "%Y_%m_%d"


_THUNDERBIRD_PROFILE = re.compile(r"^(/home/user|~)/\.thunderbird/([^/]+)(/.*)?$")
OSGYM_THUNDERBIRD_PROFILE = "osgym.default"


def thunderbird_fallback(path: str) -> str | None:
    """The same file in osgym's Thunderbird profile, for a path in OSWorld's own (``t5q2a5hp.default-release``).

    >>> thunderbird_fallback("/home/user/.thunderbird/t5q2a5hp.default-release/prefs.js")
    '/home/user/.thunderbird/osgym.default/prefs.js'
    >>> thunderbird_fallback("/home/user/.thunderbird/osgym.default/prefs.js") is None
    True
    """
    m = _THUNDERBIRD_PROFILE.match(path)
    if m is None or m.group(2) == OSGYM_THUNDERBIRD_PROFILE or not m.group(2).endswith((".default-release",
                                                                                        ".default")):
        return None
    return f"{m.group(1)}/.thunderbird/{OSGYM_THUNDERBIRD_PROFILE}{m.group(3) or ''}"


def read_vm_file(ctx: Context, path: str) -> bytes | None:
    """The bytes of ``path`` on the replica, None if there is no such file.

    A path in OSWorld's Thunderbird profile that does not exist is read from osgym's profile
    (:func:`thunderbird_fallback`): a task that installed OSWorld's profile reads its own.
    """
    for p in (path, thunderbird_fallback(path)):
        if p is None:
            continue
        try:
            return ctx.replica.read_file(p)
        except RequestRejected:
            continue
    return None


def _with_date(name: str, fmt: str) -> str:
    # OSWorld's rule: the date goes before the first dot, and only the first extension is kept.
    stem, dot, rest = name.partition(".")
    return f"{stem}{datetime.now().strftime(fmt)}.{rest.split('.')[0]}" if dot else name


@getter("vm_file", VmFileOptions)
def vm_file(ctx: Context, o: VmFileOptions, where: str) -> Any:
    """Files from the replica into the scratch directory: their paths (None for a missing file)."""
    pairs = o.pairs()
    if o.time_suffix and not o.multi:
        pairs = [(_with_date(p, o.time_format), _with_date(d, o.time_format)) for p, d in pairs]
    out: list[Any] = []
    for p, d in pairs:
        data = read_vm_file(ctx, p)
        out.append(None if data is None else
                   str(ctx.scratch.write(d, data, where=f"{where}.dest", error=EvaluatorError)))
    return _given(o, out)


def _sources(value: str | list[str]) -> str | list[str]:
    for p in value if isinstance(value, list) else [value]:
        try:
            check_source(p, where="-", error=_LoadValueError)
        except _LoadValueError as exc:
            raise ValueError(str(exc).removeprefix("-: ")) from None
    return value


class CloudFileOptions(FilesOptions):
    _path_source = field_validator("path")(_sources)

    def _default_dest(self, path: str) -> str:
        return "expected"


@getter("cloud_file", CloudFileOptions)
def cloud_file(ctx: Context, o: CloudFileOptions, where: str) -> Any:
    """Files from the operator's task-files directory (``OSGYM_TASK_FILES_DIR``), or http(s) URLs' copies in
    the asset cache (``OSGYM_ASSET_CACHE``), into the scratch directory.

    Raises:
        EvaluatorError: if a source is outside the directory, unreadable, or a URL the cache lacks.
    """
    out = []
    for p, d in o.pairs():
        data = read_task_file(p, where=f"{where}.path", error=EvaluatorError)
        out.append(str(ctx.scratch.write(d, data, where=f"{where}.dest", error=EvaluatorError)))
    return _given(o, out)


class CacheFileOptions(_Options):
    """``path``: a name in the scratch directory, written by a ``postconfig`` step's ``stdout``."""

    path: str

    _path_inside = field_validator("path")(relative_name)


@getter("cache_file", CacheFileOptions)
def cache_file(ctx: Context, o: CacheFileOptions, where: str) -> str:
    """The path of a file a ``postconfig`` step wrote into the scratch directory (its ``stdout``).

    Raises:
        EvaluatorError: if no step wrote it.
    """
    path = ctx.scratch.root / o.path
    if not ctx.scratch.holds(path):
        raise EvaluatorError(f"{where}.path: {o.path!r} was not written by a postconfig step's 'stdout'")
    return str(path)


class ContentOptions(_Options):
    path: str
    file_type: Literal["xlsx"]
    file_content: Literal["last_row"]


@getter("content_from_vm_file", ContentOptions)
def content_from_vm_file(ctx: Context, o: ContentOptions, where: str) -> list[str] | None:
    """The last row of a workbook's first sheet, as strings (OSWorld reads it with pandas, header row first)."""
    import pandas as pd

    from osgym.tasks.metrics._files import too_big

    data = read_vm_file(ctx, o.path)
    if data is None:
        return None
    path = ctx.scratch.write(posixpath.basename(o.path) or "content.xlsx", data, where=f"{where}.path",
                             error=EvaluatorError)
    if too_big(str(path)):
        raise EvaluatorError(f"{where}: {o.path!r} unpacks to more than a workbook may")
    try:
        frame = pd.read_excel(io.BytesIO(data))
    except (ValueError, OSError, KeyError) as exc:
        raise EvaluatorError(f"{where}: cannot read {o.path!r} as a workbook: {exc}") from exc
    if frame.empty:
        return None
    return [str(v) for v in frame.iloc[-1].astype(str).tolist()]


class DirectoryOptions(_Options):
    path: str


TREE_WALKER = "/opt/osgym/dirtree.py"
"""The replica's one directory walker (replica_images/server/dirtree.py), which OSWorld's /list_directory route
uses too. It runs as the agent's user with the directory as its argument: nothing a task names is spliced into
code."""


@getter("list_directory", DirectoryOptions)
def list_directory(ctx: Context, o: DirectoryOptions, where: str) -> dict[str, Any] | None:
    """The directory tree at ``path`` in OSWorld's shape: ``{"type": "directory", "name", "children": [...]}``
    with ``{"type": "file", "name"}`` leaves (None if it is no directory). A directory whose listing was cut
    at the walk's bound (20,000 entries in all) carries ``"truncated": true``.

    Raises:
        EvaluatorError: if the walk fails inside the replica.
    """
    res = ctx.replica.execute(["python3", TREE_WALKER, o.path], timeout=60)
    if res.returncode != 0:
        raise EvaluatorError(f"{where}: listing {o.path!r} failed: {res.error.strip()[-300:]}")
    tree: dict[str, Any] | None = json.loads(res.output)
    return tree


class DestOptions(_Options):
    dest: str

    _dest_inside = field_validator("dest")(relative_name)


@getter("vm_wallpaper", DestOptions)
def vm_wallpaper(ctx: Context, o: DestOptions, where: str) -> str | None:
    """The desktop's wallpaper image, fetched into the scratch directory as ``dest`` (apps tier).

    Raises:
        EvaluatorError: on a tier without a wallpaper (the desktop tier).
    """
    try:
        path = ctx.replica.wallpaper()
    except RequestRejected as exc:
        raise EvaluatorError(f"{where}: this replica has no wallpaper (the apps tier has): {exc}") from exc
    data = read_vm_file(ctx, path)
    if data is None:
        return None
    return str(ctx.scratch.write(o.dest, data, where=f"{where}.dest", error=EvaluatorError))
