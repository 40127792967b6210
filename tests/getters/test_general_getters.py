"""Command, tree, screen, window and rule getters on a real desktop replica; the rule getters against
OSWorld's own functions."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest

from osgym.replicas.client import Replica
from osgym.tasks import getters
from osgym.tasks.getters import Context
from osgym.tasks.getters.general import format_day, resolve_day

pytestmark = [pytest.mark.docker]


def _fetch(ctx: Context, name: str, **options: Any) -> Any:
    getters.check(name, options, where="evaluator.result")
    return getters.fetch(ctx, name, options, "task t: evaluator.result")


def test_vm_command_line(ctx: Context) -> None:
    assert _fetch(ctx, "vm_command_line", command=["printf", "%s|", "a b", "c"]) == "a b|c|"
    assert _fetch(ctx, "vm_command_line", command="echo $((6*7))", shell=True) == "42\n"
    # OSWorld's task files also write shell as the string "true"; its server hands the value to subprocess, so
    # any string but "" runs through the shell ("false" too), 0 does not, and a list's first item is the script.
    assert _fetch(ctx, "vm_command_line", command="echo $((6*7))", shell="true") == "42\n"
    assert _fetch(ctx, "vm_command_line", command="echo $((6*7))", shell="false") == "42\n"
    assert _fetch(ctx, "vm_command_line", command="echo $((6*7))", shell=0) == "$((6*7))\n"
    assert _fetch(ctx, "vm_command_line", command=["echo $0-$1", "a", "b"], shell=1) == "a-b\n"
    assert _fetch(ctx, "vm_command_line", command="echo ok >&2; echo out", shell=True) == "out\n"


def test_vm_command_error(ctx: Context) -> None:
    assert _fetch(ctx, "vm_command_error", command="echo oops >&2; echo out", shell=True) == "oops\n"
    assert "No such file" in _fetch(ctx, "vm_command_error", command=["ls", "/nonexistent-osgym"])


def test_accessibility_tree(ctx: Context) -> None:
    tree = _fetch(ctx, "accessibility_tree")
    assert tree.lstrip().startswith("<") and "desktop-frame" in tree


def test_vm_screen_size(ctx: Context) -> None:
    width, height = ctx.replica.health()["screen"]
    assert _fetch(ctx, "vm_screen_size") == {"width": width, "height": height}


def test_vm_window_size(desktop: Replica, ctx: Context) -> None:
    name = f"sizeterm{uuid.uuid4().hex[:6]}"
    desktop.launch(["xterm", "-name", name, "-geometry", "60x10"])
    window = desktop.wait_window(name, timeout=15)
    try:
        got = _fetch(ctx, "vm_window_size", app_class_name=name.upper())  # matched case-insensitively
        assert got == {"width": window.width, "height": window.height}
        assert _fetch(ctx, "vm_window_size", app_class_name="no-such-class") is None
    finally:
        desktop.close_window(name)


def test_vm_windows(desktop: Replica, ctx: Context) -> None:
    name = f"listterm{uuid.uuid4().hex[:6]}"
    desktop.launch(["xterm", "-name", name])
    desktop.wait_window(name, timeout=15, focused=True)
    try:
        listed = {w["wm_instance"]: w for w in _fetch(ctx, "vm_windows")}
        assert listed[name]["focused"] and listed[name]["maximized"] is False and listed[name]["minimized"] is False
    finally:
        desktop.close_window(name)


def test_rule(ctx: Context, osworld_get: Callable[..., list[Any]]) -> None:
    rules = {"expect": ["a", {"b": 1}]}
    assert _fetch(ctx, "rule", rules=rules) == rules
    assert osworld_get(ctx.replica, ("misc", "get_rule", {"rules": rules})) == [rules]


RELATIVE = [
    {"relativeTime": {"from": "tomorrow"}, "expected": {"time": "{DoW}, {Month} {DayD}, {Year}"}},
    {"relativeTime": {"from": "5th next month"}, "expected": {"time": "{Year}-{Month0D}-{Day0D}"}},
    {"relativeTime": {"from": "10th next month"}, "expected": {"time": "{MonthFull} {DayD}"}},
    {"relativeTime": {"from": "this month"}, "expected": {"time": "{month} {Year}"}},
    {"relativeTime": {"from": "next Monday"}, "expected": {"time": "{Day0D}/{Month0D}/{Year}", "x": 1}},
    {"relativeTime": {"from": "first monday four months later"}, "expected": {"time": "{Year}-{Month0D}-{Day0D}"}},
    {"relativeTime": {"from": "this Saturday", "to": "this Sunday"},
     "expected": {"from": "{DoW} {DayD}", "to": "{DoW} {DayD}"}},
    {"relativeTime": {"from": "10th next month", "to": "11th next month"},
     "expected": {"from": "{Month} {DayD}", "to": "{Month} {DayD}"}},
    {"relativeTime": {"from": "next Monday", "to": "next Friday"},
     "expected": {"from": "{Year}-{Month0D}-{Day0D}", "to": "{Year}-{Month0D}-{Day0D}"}},
]


def test_rule_relativeTime(ctx: Context, osworld_get: Callable[..., list[Any]]) -> None:
    ours = [_fetch(ctx, "rule_relativeTime", rules=r) for r in RELATIVE]
    assert ours[0]["expected"]["time"] == format_day("{DoW}, {Month} {DayD}, {Year}",
                                                      resolve_day("tomorrow", datetime.now()))
    assert ours[4] == {"relativeTime": {"from": "next Monday"}, "expected": {"time": ours[4]["expected"]["time"],
                                                                             "x": 1}}
    theirs = osworld_get(ctx.replica, *[("misc", "get_rule_relativeTime", {"rules": r}) for r in RELATIVE])
    assert ours == theirs


@pytest.mark.parametrize("day, name, expected", [
    (datetime(2024, 1, 3), "next Monday", datetime(2024, 1, 8)),   # a Wednesday
    (datetime(2024, 1, 8), "next Monday", datetime(2024, 1, 15)),  # a Monday: the one after
    (datetime(2024, 12, 20), "10th next month", datetime(2025, 1, 10)),
    (datetime(2024, 1, 3), "this Saturday", datetime(2024, 1, 6)),
    (datetime(2024, 1, 3), "next Friday", datetime(2024, 1, 5)),
    (datetime(2024, 10, 15), "first monday four months later", datetime(2025, 2, 3)),
    (datetime(2024, 8, 15), "first monday four months later", datetime(2024, 12, 2)),
])
def test_rule_relativeTime_days(day: datetime, name: str, expected: datetime) -> None:
    assert resolve_day(name, day).date() == expected.date()


def test_rule_relativeTime_options_are_checked_at_load() -> None:
    from osgym.errors import TaskLoadError
    from osgym.tasks.spec import load_task
    task = {"id": "t-rel", "instruction": "x", "evaluator": {"func": "exact_match", "result": {
        "type": "rule_relativeTime", "rules": {"relativeTime": {"from": "someday"}, "expected": {"time": "x"}}}}}
    named = r"evaluator.result.rules.relativeTime.from: Input should be .*\(getter 'rule_relativeTime'\)"
    with pytest.raises(TaskLoadError, match=named):
        load_task(task)


def test_time_diff_range(ctx: Context, osworld_get: Callable[..., list[Any]]) -> None:
    assert _fetch(ctx, "time_diff_range", diff_range_in_minutes=5) == 5
    assert osworld_get(ctx.replica, ("misc", "get_time_diff_range", {"diff_range_in_minutes": 5})) == [5]


def test_shortcuts_on_desktop(ctx: Context) -> None:
    name = f"osgym-{uuid.uuid4().hex[:6]}.desktop"
    body = "[Desktop Entry]\nType=Application\nName=Test\nExec=true\n"
    ctx.replica.write_file(f"/home/user/Desktop/{name}", body.encode())
    ctx.replica.write_file(f"/home/user/Desktop/{name}.txt", b"not a shortcut")
    try:
        got = _fetch(ctx, "shortcuts_on_desktop")
        assert got[name] == body and f"{name}.txt" not in got
    finally:
        ctx.replica.execute(["rm", "-f", f"/home/user/Desktop/{name}", f"/home/user/Desktop/{name}.txt"])
