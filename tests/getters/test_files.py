"""File getters on a real desktop replica: vm_file (single, lists, gives, missing, date suffix, OSWorld's
Thunderbird profile), cloud_file, cache_file through a postconfig step's stdout, content_from_vm_file,
list_directory in OSWorld's tree shape; each against OSWorld's own getter where it can run here."""

from __future__ import annotations

import io
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from openpyxl import Workbook

from osgym.errors import EvaluatorError, TaskLoadError
from osgym.replicas.client import Replica
from osgym.tasks import getters
from osgym.tasks.evaluate import evaluate
from osgym.tasks.getters import Context
from osgym.tasks.spec import load_task

pytestmark = [pytest.mark.docker]


def _dir(replica: Replica) -> str:
    d = f"/home/user/getters-{uuid.uuid4().hex[:8]}"
    assert replica.execute(["mkdir", "-p", d]).returncode == 0
    return d


def _fetch(ctx: Context, name: str, **options: Any) -> Any:
    getters.check(name, options, where="evaluator.result")
    return getters.fetch(ctx, name, options, "task t: evaluator.result")


def test_vm_file(ctx: Context, osworld_get: Callable[..., list[Any]]) -> None:
    d = _dir(ctx.replica)
    ctx.replica.write_file(f"{d}/a.txt", b"alpha\n")
    got = _fetch(ctx, "vm_file", path=f"{d}/a.txt", dest="sub/a.txt")
    assert Path(got).read_bytes() == b"alpha\n" and ctx.scratch.holds(got) and got.endswith("sub/a.txt")
    assert Path(_fetch(ctx, "vm_file", path=f"{d}/a.txt")).name == "a.txt"  # dest defaults to the file's name
    assert _fetch(ctx, "vm_file", path=f"{d}/missing.txt", dest="m.txt") is None
    # OSWorld's getter on the same replica: the same bytes, None for a missing file.
    ref = osworld_get(ctx.replica, ("file", "get_vm_file", {"path": f"{d}/a.txt", "dest": "a.txt"}),
                      ("file", "get_vm_file", {"path": f"{d}/missing.txt", "dest": "m.txt"}))
    assert ref == [b"alpha\n", None]


def test_vm_file_multi_and_gives_parity(ctx: Context, osworld_get: Callable[..., list[Any]]) -> None:
    d = _dir(ctx.replica)
    for name in ("a", "b", "c"):
        ctx.replica.write_file(f"{d}/{name}.txt", name.encode())
    cases = [
        {"path": [f"{d}/a.txt", f"{d}/b.txt", f"{d}/c.txt"], "dest": ["a", "b", "c"], "multi": True, "gives": [0, 2]},
        {"path": [f"{d}/a.txt", f"{d}/nope.txt"], "dest": ["a", "n"], "multi": True, "gives": [0, 1]},
        {"path": [f"{d}/a.txt", f"{d}/b.txt"], "dest": ["a", "b"], "multi": True, "gives": [1]},
        {"path": [f"{d}/a.txt", f"{d}/b.txt"], "dest": ["a", "b"], "multi": True},
        {"path": [f"{d}/b.txt", f"{d}/c.txt"], "dest": ["b", "c"], "multi": "true", "gives": [1]},  # as OSWorld writes
    ]
    ours = [_fetch(ctx, "vm_file", **c) for c in cases]
    read = [[None if p is None else Path(p).read_bytes() for p in v] if isinstance(v, list) else
            Path(v).read_bytes() for v in ours]
    assert read == [[b"a", b"c"], [b"a", None], b"b", b"a", b"c"]
    assert osworld_get(ctx.replica, *[("file", "get_vm_file", c) for c in cases]) == read


def test_vm_file_options_are_checked_at_load() -> None:
    def task(result: dict[str, Any]) -> dict[str, Any]:
        return {"id": "t-opt", "instruction": "x", "evaluator": {"func": "compare_text_file", "result": result,
                                                                 "expected": result}}
    bad = [({"type": "vm_file", "path": ["/a", "/b"], "dest": "x", "multi": True},
            "evaluator.result: dest: expected a list when multi is True"),
           ({"type": "vm_file", "path": ["/a", "/b"], "dest": ["x"], "multi": True},
            r"evaluator.result: dest: expected 2 names \(one per path\), actual 1"),
           ({"type": "vm_file", "path": "/a", "dest": "x", "gives": [3]}, "evaluator.result: gives: expected indexes"),
           ({"type": "vm_file", "path": "/a", "dest": "../x"}, "evaluator.result.dest: expected a relative path"),
           ({"type": "vm_file", "path": ["/a"], "dest": ["/etc/x"], "multi": True},
            "evaluator.result.dest: .*an absolute path"),
           ({"type": "vm_file", "path": "/a", "dest": "x", "colour": 1},
            "evaluator.result.colour: Extra inputs are not permitted")]
    for getter, named in bad:
        with pytest.raises(TaskLoadError, match=named) as info:
            load_task(task(getter))
        assert "(getter 'vm_file')" in str(info.value) and "t-opt" in str(info.value)


def test_vm_file_time_suffix(ctx: Context) -> None:
    d = _dir(ctx.replica)
    today = datetime.now().strftime("%Y%m%d")
    ctx.replica.write_file(f"{d}/report{today}.txt", b"dated")
    got = _fetch(ctx, "vm_file", path=f"{d}/report.txt", dest="report.txt", time_suffix=True, time_format="%Y%m%d")
    assert Path(got).read_bytes() == b"dated" and Path(got).name == f"report{today}.txt"


def test_vm_file_reads_osworlds_thunderbird_profile_from_osgyms(ctx: Context) -> None:
    profile = "/home/user/.thunderbird/osgym.default"
    assert ctx.replica.execute(["mkdir", "-p", profile]).returncode == 0
    ctx.replica.write_file(f"{profile}/osgym-test-prefs.js", b'user_pref("mail.x", 1);\n')
    got = _fetch(ctx, "vm_file", path="/home/user/.thunderbird/t5q2a5hp.default-release/osgym-test-prefs.js",
                 dest="prefs.js")
    assert got is not None and Path(got).read_bytes() == b'user_pref("mail.x", 1);\n'


def test_cloud_file(ctx: Context, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "gold.txt").write_bytes(b"gold")
    (tmp_path / "two.txt").write_bytes(b"two")
    monkeypatch.setenv("OSGYM_TASK_FILES_DIR", str(tmp_path))
    assert Path(_fetch(ctx, "cloud_file", path="gold.txt", dest="g.txt")).read_bytes() == b"gold"
    listed = _fetch(ctx, "cloud_file", path=["gold.txt", "two.txt"], dest=["1", "2"], multi=True, gives=[1, 0])
    assert [Path(p).read_bytes() for p in listed] == [b"two", b"gold"]
    with pytest.raises(EvaluatorError, match="outside OSGYM_TASK_FILES_DIR"):
        _fetch(ctx, "cloud_file", path="/etc/hostname", dest="h")
    with pytest.raises(EvaluatorError, match="remote URLs cannot be fetched"):
        _fetch(ctx, "cloud_file", path="https://example.org/a.txt", dest="a")


def test_cache_file(desktop: Replica) -> None:
    """A postconfig step's ``stdout`` goes into the evaluation's scratch directory; cache_file hands it to
    the metric (OSWorld's cache directory)."""
    marker = uuid.uuid4().hex
    task = load_task({"id": "t-cache", "instruction": "x", "evaluator": {
        "postconfig": [{"type": "execute", "parameters": {"command": ["echo", marker], "stdout": "echo.out"}}],
        "func": "compare_text_file", "result": {"type": "cache_file", "path": "echo.out"},
        "expected": {"type": "cache_file", "path": "echo.out"}}})
    assert evaluate(desktop, task, "DONE") == 1.0
    with pytest.raises(TaskLoadError, match=r"postconfig\[0\].parameters.stdout.*climbs out"):
        load_task({"id": "t-cache", "instruction": "x", "evaluator": {
            "postconfig": [{"type": "execute", "parameters": {"command": ["true"], "stdout": "../x"}}],
            "func": "compare_text_file", "result": {"type": "cache_file", "path": "x"}}})
    missing = load_task({"id": "t-cache2", "instruction": "x", "evaluator": {
        "func": "compare_text_file", "result": {"type": "cache_file", "path": "never.out"}}})
    with pytest.raises(EvaluatorError, match="'never.out' was not written by a postconfig step"):
        evaluate(desktop, missing, "DONE")


def test_a_metric_whose_expected_value_is_no_file_passes_the_file_guard(desktop: Replica) -> None:
    """compare_time_in_speedtest_results opens only its result: the expected value is a number of minutes
    (time_diff_range), which the evaluator's file guard must let through."""
    d = _dir(desktop)
    task = load_task({"id": "t-speed", "instruction": "x", "evaluator": {
        "func": "compare_time_in_speedtest_results",
        "result": {"type": "vm_file", "path": f"{d}/speed.csv", "dest": "speed.csv"},
        "expected": {"type": "time_diff_range", "diff_range_in_minutes": "60"}}})
    for taken, score in ((datetime.now(), 1.0), (datetime.now() - timedelta(hours=3), 0.0)):
        desktop.write_file(f"{d}/speed.csv", f"Date,Time\n2026-01-01,{taken:%H:%M}\n".encode())
        assert evaluate(desktop, task, "DONE") == score


def test_content_from_vm_file(ctx: Context, osworld_get: Callable[..., list[Any]]) -> None:
    d = _dir(ctx.replica)
    wb = Workbook()
    ws = wb.active
    assert ws is not None
    for row in (["name", "qty", "price"], ["apple", 3, 1.5], ["pear", 7, 2.25]):
        ws.append(row)
    buf = io.BytesIO()
    wb.save(buf)
    ctx.replica.write_file(f"{d}/sales.xlsx", buf.getvalue())
    config = {"path": f"{d}/sales.xlsx", "file_type": "xlsx", "file_content": "last_row"}
    ours = _fetch(ctx, "content_from_vm_file", **config)
    assert ours == ["pear", "7", "2.25"]
    assert osworld_get(ctx.replica, ("file", "get_content_from_vm_file", config)) == [ours]


def _sorted_tree(tree: Any) -> Any:
    if isinstance(tree, dict) and "children" in tree:
        return {**tree, "children": sorted((_sorted_tree(c) for c in tree["children"]), key=lambda c: c["name"])}
    return tree


def test_list_directory(ctx: Context) -> None:
    d = _dir(ctx.replica)
    for path in ("a.txt", "sub/b.txt", "sub/deeper/c.txt"):
        ctx.replica.write_file(f"{d}/tree/{path}", b"x")
    assert ctx.replica.execute(["mkdir", f"{d}/tree/empty"]).returncode == 0
    tree = _fetch(ctx, "list_directory", path=f"{d}/tree")
    assert _sorted_tree(tree) == {"type": "directory", "name": "tree", "children": [
        {"type": "file", "name": "a.txt"},
        {"type": "directory", "name": "empty", "children": []},
        {"type": "directory", "name": "sub", "children": [
            {"type": "file", "name": "b.txt"},
            {"type": "directory", "name": "deeper", "children": [{"type": "file", "name": "c.txt"}]}]}]}
    assert _fetch(ctx, "list_directory", path=f"{d}/tree/a.txt") is None
    assert _fetch(ctx, "list_directory", path=f"{d}/nowhere") is None
