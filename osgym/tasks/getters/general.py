"""Commands, the terminal, the accessibility tree, screen and windows, and rules given in the task file."""

from __future__ import annotations

import calendar
import json
from collections import Counter
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, StrictBool, StrictFloat, StrictInt, StrictStr

from osgym.errors import EvaluatorError
from osgym.tasks.commands import step_command
from osgym.tasks.getters import Context, getter
from osgym.tasks.setup import run_command


class _Options(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CommandOptions(_Options):
    """``command``: argv list or a string; ``shell``: run it through ``/bin/sh``, read as OSWorld reads it
    (:mod:`osgym.tasks.commands`: its task files also write the string ``"true"``)."""

    command: StrictStr | list[StrictStr]
    shell: StrictBool | StrictStr | StrictInt | StrictFloat | None = None
    timeout: float = 30

    @property
    def argv_and_shell(self) -> tuple[str | list[str], bool | None]:
        return step_command(self.command, self.shell)


@getter("vm_command_line", CommandOptions)
def vm_command_line(ctx: Context, o: CommandOptions, where: str) -> str:
    """The command's standard output (as root through Docker if it uses sudo, like setup steps)."""
    return run_command(ctx.replica, *o.argv_and_shell, min(o.timeout, 300)).output


@getter("vm_command_error", CommandOptions)
def vm_command_error(ctx: Context, o: CommandOptions, where: str) -> str:
    """The command's standard error."""
    return run_command(ctx.replica, *o.argv_and_shell, min(o.timeout, 300)).error


@getter("vm_terminal_output")
def vm_terminal_output(ctx: Context, o: None, where: str) -> str | None:
    """The focused terminal's text, as OSWorld's ``/terminal`` reads it (None: no terminal has the focus)."""
    return ctx.replica.terminal()


@getter("accessibility_tree")
def accessibility_tree(ctx: Context, o: None, where: str) -> str:
    """The AT-SPI accessibility tree as XML, in OSWorld's layout."""
    return ctx.replica.accessibility()


@getter("vm_screen_size")
def vm_screen_size(ctx: Context, o: None, where: str) -> dict[str, int]:
    """``{"width", "height"}`` of the screen in pixels."""
    width, height = ctx.replica.health()["screen"]
    return {"width": int(width), "height": int(height)}


class WindowSizeOptions(_Options):
    app_class_name: StrictStr


@getter("vm_window_size", WindowSizeOptions)
def vm_window_size(ctx: Context, o: WindowSizeOptions, where: str) -> dict[str, int] | None:
    """``{"width", "height"}`` of the first window whose WM_CLASS (class or instance) is ``app_class_name``,
    case-insensitively; None if there is none."""
    want = o.app_class_name.lower()
    for w in ctx.replica.api.request("GET", "/windows").json()["windows"]:
        if want in (str(w.get("wm_class", "")).lower(), str(w.get("wm_instance", "")).lower()):
            return {"width": int(w["width"]), "height": int(w["height"])}
    return None


_WM_STATE_SCRIPT = (
    'for w in $(wmctrl -l | cut -d" " -f1); do printf "%d %s\\n" "$w" "$(xprop -id "$w" _NET_WM_STATE)"; done'
)


@getter("vm_windows")
def vm_windows(ctx: Context, o: None, where: str) -> list[dict[str, Any]]:
    """The replica's top-level windows (``GET /windows``) plus the window manager's maximized/minimized state."""
    listed = ctx.replica.api.request("GET", "/windows").json()["windows"]
    res = ctx.replica.execute(_WM_STATE_SCRIPT, shell=True, timeout=15)
    states: dict[int, str] = {}
    for line in res.output.splitlines():
        wid, _, state = line.partition(" ")
        if wid.isdigit():
            states[int(wid)] = state
    out = []
    for w in listed:
        state = states.get(int(w["id"]), "")
        out.append({**w, "maximized": "MAXIMIZED_VERT" in state and "MAXIMIZED_HORZ" in state,
                    "minimized": bool(w.get("minimized")) or "HIDDEN" in state})
    return out


class RuleOptions(_Options):
    """``rules``: the value handed to the metric as it is (the metric declares its model, checked at load)."""

    rules: Any = None


@getter("rule", RuleOptions)
def rule(ctx: Context, o: RuleOptions, where: str) -> Any:
    """The task file's ``rules``, as they are."""
    return o.rules


# OSWorld's relative days: a fixed offset, or a rule on today's date.
RelativeDay = Literal["tomorrow", "5th next month", "10th next month", "11th next month", "this month",
                      "this Saturday", "this Sunday", "next Monday", "next Friday",
                      "first monday four months later"]


class RelativeTime(_Options):
    from_: RelativeDay
    to: RelativeDay | None = None

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True,
                              alias_generator=lambda n: "from" if n == "from_" else n)


class RelativeRules(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)
    relativeTime: RelativeTime
    expected: dict[str, Any]


class RelativeTimeOptions(_Options):
    rules: RelativeRules


def _next_month_day(now: datetime, day: int) -> datetime:
    year, month = (now.year + 1, 1) if now.month == 12 else (now.year, now.month + 1)
    return datetime(year, month, day)


def resolve_day(name: str, now: datetime, *, paired_with: str | None = None) -> datetime:
    """The date OSWorld means by ``name`` on ``now`` (``paired_with``: the range's start, for "next Friday").

    >>> resolve_day("next Monday", datetime(2024, 1, 3)).date()  # a Wednesday
    datetime.date(2024, 1, 8)
    >>> resolve_day("5th next month", datetime(2024, 12, 20)).date()
    datetime.date(2025, 1, 5)
    """
    wd = now.weekday()
    if name == "tomorrow":
        return now + timedelta(days=1)
    if name in ("5th next month", "10th next month", "11th next month"):
        return _next_month_day(now, int(name.split("th")[0]))
    if name == "this month":
        return now
    if name == "this Saturday":
        return now + timedelta(days=5 - wd)
    if name == "this Sunday":
        return now + timedelta(days=6 - wd)
    if name == "next Monday":
        return now + timedelta(days=7 - wd)
    if name == "next Friday":
        if wd < 4 and paired_with == "next Monday":
            return now + timedelta(days=4 - wd + 7)
        return now + timedelta(days=4 - wd if wd < 4 else 6 - wd + 5)
    if name == "first monday four months later":
        # OSWorld's arithmetic, kept: four months on, wrapping the year from September.
        year = now.year + 1 if now.month >= 9 else now.year
        month = (now.month + 4) % 12 or 12
        first = datetime(year, month, 1)
        return first + timedelta(days=(7 - first.weekday()) % 7)
    raise ValueError(f"unknown relative day {name!r}")


def format_day(template: str, day: datetime) -> str:
    """OSWorld's date placeholders filled in, each once.

    >>> format_day("{DoW}, {Month} {DayD}, {Year} ({Month0D}/{Day0D}, {MonthFull}, {month})", datetime(2024, 3, 5))
    'Tue, Mar 5, 2024 (03/05, March, march)'
    """
    fields = {"{DoW}": calendar.day_abbr[day.weekday()], "{Month}": calendar.month_abbr[day.month],
              "{DayD}": str(day.day), "{Year}": str(day.year), "{Month0D}": f"{day.month:02d}",
              "{month}": calendar.month_name[day.month].lower(), "{MonthFull}": calendar.month_name[day.month],
              "{Day0D}": f"{day.day:02d}"}
    for key, value in fields.items():
        template = template.replace(key, value, 1)
    return template


@getter("rule_relativeTime", RelativeTimeOptions)
def rule_relativeTime(ctx: Context, o: RelativeTimeOptions, where: str) -> dict[str, Any]:
    """The rules, with ``expected.time`` (or ``expected.from``/``to``) filled in from today's date.

    Raises:
        EvaluatorError: if ``expected`` lacks the key the relative time fills.
    """
    now = datetime.now()
    rel = o.rules.relativeTime
    rules = o.rules.model_dump(by_alias=True, exclude_unset=True)  # as the task file wrote them
    expected = dict(rules["expected"])
    try:
        if rel.to is None:
            expected["time"] = format_day(expected["time"], resolve_day(rel.from_, now))
        else:
            expected["from"] = format_day(expected["from"], resolve_day(rel.from_, now))
            expected["to"] = format_day(expected["to"], resolve_day(rel.to, now, paired_with=rel.from_))
    except KeyError as exc:
        raise EvaluatorError(f"{where}: rules.expected needs {exc} for relativeTime {rel.from_!r}") from exc
    rules["expected"] = expected
    return rules


class DiffRangeOptions(_Options):
    diff_range_in_minutes: float


@getter("time_diff_range", DiffRangeOptions)
def time_diff_range(ctx: Context, o: DiffRangeOptions, where: str) -> float:
    """The task file's ``diff_range_in_minutes``."""
    return o.diff_range_in_minutes


# The video MIME subtypes OSWorld asks about (the ones desktop files commonly declare).
_VIDEO_TYPES = ("3gp", "3gpp", "3gpp2", "avi", "divx", "dv", "fli", "flv", "mp2t", "mp4", "mp4v-es", "mpeg",
                "mpeg-system", "msvideo", "ogg", "quicktime", "vnd.divx", "vnd.mpegurl", "vnd.rn-realvideo", "webm",
                "x-anim", "x-avi", "x-flc", "x-fli", "x-flv", "x-m4v", "x-matroska", "x-mpeg", "x-mpeg-system",
                "x-mpeg2", "x-ms-asf", "x-ms-asf-plugin", "x-ms-asx", "x-ms-wm", "x-ms-wmv", "x-ms-wmx", "x-ms-wvx",
                "x-msvideo", "x-nsv", "x-ogm", "x-ogm+ogg", "x-theora", "x-theora+ogg")


@getter("default_video_player")
def default_video_player(ctx: Context, o: None, where: str) -> str:
    """The desktop file most video MIME types open with (``xdg-mime query default``), or ``"unknown"``."""
    script = 'for t in "$@"; do xdg-mime query default "video/$t"; done'
    res = ctx.replica.execute(["sh", "-c", script, "sh", *_VIDEO_TYPES], timeout=60)
    apps = [line.strip() for line in res.output.splitlines() if line.strip()]
    # OSWorld counts each answer with its newline: keep it so metrics comparing "vlc.desktop\n" still match.
    return f"{Counter(apps).most_common(1)[0][0]}\n" if apps else "unknown"


@getter("shortcuts_on_desktop")
def shortcuts_on_desktop(ctx: Context, o: None, where: str) -> dict[str, str]:
    """The ``.desktop`` files on the user's desktop: file name -> content."""
    script = ('import json, os, sys\nd = os.path.expanduser("~/Desktop")\nout = {}\n'
              'for n in sorted(os.listdir(d)) if os.path.isdir(d) else []:\n'
              '    p = os.path.join(d, n)\n'
              '    if n.endswith(".desktop") and os.path.isfile(p) and os.path.getsize(p) < 1 << 20:\n'
              '        out[n] = open(p, errors="replace").read()\n'
              'print(json.dumps(out))')
    res = ctx.replica.execute(["python3", "-c", script], timeout=30)
    if res.returncode != 0:
        raise EvaluatorError(f"{where}: reading the desktop's shortcuts failed: {res.error.strip()[-300:]}")
    shortcuts: dict[str, str] = json.loads(res.output)
    return shortcuts

