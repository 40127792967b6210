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
