"""``osgym suites list`` and ``osgym suites show`` describe the built-in suites."""

from __future__ import annotations

from typer.testing import CliRunner

from osgym.cli import app


def test_suites_list_and_show() -> None:
    runner = CliRunner()
    listed = runner.invoke(app, ["suites", "list"], env={"COLUMNS": "200"})
    assert listed.exit_code == 0 and "desktop-basics" in listed.output and "38" in listed.output
    shown = runner.invoke(app, ["suites", "show", "desktop-basics", "--variants", "2", "--seed", "1"],
                          env={"COLUMNS": "250"})
    assert shown.exit_code == 0, shown.output
    assert "windows-maximize" in shown.output and "FAIL" in shown.output and "2 variants, seed 1" in shown.output
    missing = runner.invoke(app, ["suites", "show", "nope"])
    assert missing.exit_code == 2


def test_suites_show_one_variant() -> None:
    runner = CliRunner()
    shown = runner.invoke(app, ["suites", "show", "apps-smoke", "--template", "gedit-append-line", "--seed", "4"],
                          env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert "template: gedit-append-line (difficulty 1, domain editor)" in shown.output
    assert "variant: 4" in shown.output and "instruction: In gedit" in shown.output
    assert "launch: gedit /home/user/Documents/todo.txt" in shown.output
    unknown = runner.invoke(app, ["suites", "show", "apps-smoke", "--template", "nope"])
    assert unknown.exit_code == 2 and "nope" in unknown.output
    nowhere = runner.invoke(app, ["suites", "show", "apps-smoke", "--screenshot", "/nonexistent/dir/x.png"])
    assert nowhere.exit_code == 2 and "no directory '/nonexistent/dir'" in nowhere.output
