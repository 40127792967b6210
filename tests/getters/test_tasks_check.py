"""``osgym tasks check DIR`` on task files the test writes: per-domain counts, every refused name with
its count and reason, load errors counted by message, exit code 0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from osgym.cli import app
from osgym.errors import TaskLoadError
from osgym.tasks.spec import load_task


def _write(root: Path, domain: str, name: str, task: dict[str, object] | str) -> None:
    (root / domain).mkdir(parents=True, exist_ok=True)
    (root / domain / f"{name}.json").write_text(task if isinstance(task, str) else json.dumps(task))


def _task(tid: str, ev: dict[str, object], config: list[object] | None = None) -> dict[str, object]:
    return {"id": tid, "instruction": "x", "config": config or [], "evaluator": ev}


def test_tasks_check_counts_domains_and_refused_names(tmp_path: Path) -> None:
    ok = {"func": "exact_match", "result": {"type": "vm_command_line", "command": ["true"]},
          "expected": {"type": "rule", "rules": {"expected": ""}}}
    _write(tmp_path, "os", "a", _task("a", ok))
    _write(tmp_path, "os", "b", _task("b", {"func": "check_hologram", "result": {"type": "vm_hologram"}}))
    _write(tmp_path, "chrome", "c", _task("c", ok, [{"type": "googledrive", "parameters": {}}]))
    _write(tmp_path, "chrome", "d", _task("d", {"func": "exact_match", "result": {"type": "googledrive_file"},
                                                "expected": {"type": "rule", "rules": {"expected": 1}}}))
    _write(tmp_path, "chrome", "e", _task("e", {"func": "exact_match", "result": {"type": "vm_hologram"},
                                                "expected": {"type": "rule", "rules": {"expected": 1}}}))
    _write(tmp_path, "gimp", "f", _task("f", {"func": "exact_match", "result": {"type": "vm_file", "path": "/a",
                                                                                "dest": "../x"}}))
    _write(tmp_path, "gimp", "g", "{not json")
    live = [{"type": "chrome_open_tabs", "parameters": {"urls_to_open": ["https://news.example/"]}}]
    _write(tmp_path, "chrome", "h", _task("h", ok, live))
    # live websites and a metric osgym lacks: refused, not counted as "live sites" only
    _write(tmp_path, "chrome", "i", _task("i", {"func": "check_hologram", "result": {"type": "vm_file", "path": "/a"}},
                                          live))
    # excluded by directory and by file name
    _write(tmp_path, "Windows", "w", _task("w", ok))
    (tmp_path / "template.json").write_text("{}")
    # a file directly in DIR: its own domain field names the domain
    (tmp_path / "top.json").write_text(json.dumps({**_task("top", ok), "domain": "files"}))
    result = CliRunner().invoke(app, ["tasks", "check", str(tmp_path), "--exclude", "Windows",
                                      "--exclude", "template.json"])
    assert result.exit_code == 0, result.output
    out = result.output
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()[:6]}
    assert out.splitlines()[0].split() == ["domain", "loaded", "live", "sites", "refused", "total"]
    assert rows["chrome"] == ["0", "1", "4", "5"] and rows["gimp"] == ["0", "0", "2", "2"]
    assert rows["os"] == ["1", "0", "1", "2"] and rows["files"] == ["1", "0", "0", "1"]
    assert rows["total"] == ["2", "1", "7", "10"] and "Windows" not in rows
    assert ("loaded: 2 of 10 (20.0 %); every name has a function: 3 of 10 (30.0 %), with the files refused only "
            "for live sites") in out
    assert "     2  live site chrome_open_tabs  (it names live third-party websites; replicas are offline)" in out
    assert "     2  getter vm_hologram  (not implemented)" in out
    assert "     2  metric check_hologram  (not implemented)" in out
    assert "     1  setup googledrive  (it fills a Google Drive account)" in out
    assert "     1  getter googledrive_file  (it reads a file from a Google Drive account)" in out
    assert "climbs out with '..'" in out and "unreadable JSON (JSONDecodeError)" in out


def test_tasks_check_lists_the_live_site_files_and_their_sites(tmp_path: Path) -> None:
    ok = {"func": "exact_match", "result": {"type": "vm_command_line", "command": ["true"]},
          "expected": {"type": "rule", "rules": {"expected": ""}}}
    tabs = {"type": "chrome_open_tabs", "parameters": {"urls_to_open": [
        "https://news.example/a", "http://127.0.0.1:8000/local", "https://shop.example/", "https://news.example/b"]}}
    _write(tmp_path, "chrome", "live", _task("live", ok, [tabs]))
    _write(tmp_path, "chrome", "local", _task("local", ok, [{"type": "chrome_open_tabs", "parameters": {
        "urls_to_open": ["http://127.0.0.1:8000/"]}}]))
    _write(tmp_path, "vs_code", "ext", _task("ext", ok, [{"type": "execute", "parameters": {
        "command": ["code", "--install-extension", "ms-python.python"]}}]))
    plain = CliRunner().invoke(app, ["tasks", "check", str(tmp_path)])
    assert plain.exit_code == 0 and "refused only for live sites (" not in plain.output
    out = CliRunner().invoke(app, ["tasks", "check", str(tmp_path), "--live-files"]).output
    listed = out.split("task files refused only for live sites", 1)[1].splitlines()[1:]
    assert listed == ["  chrome/live.json  news.example, shop.example", "  vs_code/ext.json  the VS Code marketplace"]


def test_tasks_check_on_a_missing_directory_fails_clearly(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["tasks", "check", str(tmp_path / "nowhere")])
    assert result.exit_code == 2 and "is not a directory" in " ".join(result.output.split())


def test_invalid_options_count_once_whatever_their_list_position(tmp_path: Path) -> None:
    for tid, rules in (("a", [{"type": "nonsense"}]), ("b", [{"type": "sheet_name"}, {"type": "nonsense"}])):
        _write(tmp_path, "calc", tid, _task(tid, {"func": "compare_table", "result": {"type": "vm_file", "path": "/a"},
                                                  "expected": {"type": "vm_file", "path": "/b"},
                                                  "options": {"rules": rules}}))
    out = CliRunner().invoke(app, ["tasks", "check", str(tmp_path)]).output
    assert "     2  invalid task: evaluator func 'compare_table': option rules.*:" in out, out


def test_a_task_that_needs_vs_codes_marketplace_is_refused_as_a_live_site(tmp_path: Path) -> None:
    listed = {"func": "is_extension_installed",
              "result": {"type": "vm_command_line", "command": ["code", "--list-extensions", "|", "grep", "a.b"]},
              "expected": {"type": "rule", "rules": {"type": "contain", "expected": "a.b"}}}
    vsix = [{"type": "download", "parameters": {"files": [{"url": "t.vsix", "path": "/home/user/t.vsix"}]}}]
    install = [{"type": "command", "parameters": {"command": ["code", "--install-extension", "ms-python.python"]}}]
    with pytest.raises(TaskLoadError, match="installs the VS Code extension 'a.b' from the marketplace"):
        load_task(_task("m", listed))
    with pytest.raises(TaskLoadError, match="'ms-python.python' from the marketplace"):
        load_task(_task("i", {"func": "exact_match", "result": {"type": "vm_file", "path": "/a"},
                              "expected": {"type": "rule", "rules": {"expected": ""}}}, install))
    assert load_task(_task("v", listed, vsix)).id == "v"  # the agent installs the .vsix the task brings
    assert load_task(_task("m", listed), live_sites=True).id == "m"
    _write(tmp_path, "vs_code", "m", _task("m", listed))
    out = CliRunner().invoke(app, ["tasks", "check", str(tmp_path)]).output
    assert out.splitlines()[1].split() == ["vs_code", "0", "1", "0", "1"], out
    assert ("     1  live site extension marketplace  (it installs a VS Code extension from the marketplace; "
            "replicas are offline)") in out
