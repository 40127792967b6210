"""Every ``--help`` screen fits 80 columns with every option name whole (no ``--max-sessions-per-to…``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from osgym.cli import app

ROOT = Path(__file__).resolve().parents[1]


def _commands(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from _commands(sub, (*path, name))


COMMANDS = dict(_commands(typer.main.get_command(app)))


def _option_names(command: Any) -> list[str]:
    """Every option name of ``command`` (``--record`` and ``--no-record`` both), arguments left out."""
    return [name for p in command.params for name in (*p.opts, *p.secondary_opts) if name.startswith("-")]


def _check(text: str, command: Any) -> None:
    lines = text.splitlines()
    assert lines and max(len(line) for line in lines) <= 80, max(lines, key=len)
    assert "…" not in text
    for name in _option_names(command):
        assert re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text), f"{name} is not whole in:\n{text}"


@pytest.mark.parametrize("path", list(COMMANDS), ids=lambda p: " ".join(p) or "osgym")
def test_help_fits_80_columns_with_every_option_name_whole(path: tuple[str, ...]) -> None:
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "80"}, prog_name="osgym")
    assert result.exit_code == 0, result.output
    _check(result.output, COMMANDS[path])


def test_the_command_list_keeps_each_description_whole() -> None:
    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "80"}, prog_name="osgym")
    commands = result.output.split("Commands:")[1]
    assert "..." not in commands
    assert "Serve replicas to RL trainers: OSGym's protocol (/reset, /step,\n" in result.output


def test_serve_help_from_the_installed_entry_point_at_80_columns() -> None:
    out = subprocess.run([sys.executable, "-m", "osgym", "serve", "--help"], cwd=ROOT, capture_output=True,
                         text=True, timeout=120, env={**os.environ, "COLUMNS": "80"})
    assert out.returncode == 0, out.stderr
    assert {"--max-sessions-per-token", "--no-live-view"} <= set(_option_names(COMMANDS[("serve",)]))
    _check(out.stdout, COMMANDS[("serve",)])
    assert "--max-sessions-per-token <int>" in out.stdout


def test_consoles_follow_columns_after_import(monkeypatch: pytest.MonkeyPatch) -> None:
    # made while COLUMNS says 40 (as pytest-xdist's workers import the CLI with COLUMNS=80), then used at 120
    from osgym.cli._app import TerminalConsole

    monkeypatch.setenv("COLUMNS", "40")
    made = TerminalConsole()
    monkeypatch.setenv("COLUMNS", "120")
    assert made.width == 120


def test_an_error_is_not_broken_across_lines() -> None:
    long_name = "x" * 150
    res = CliRunner().invoke(app, ["pool", "plan", "--dataset", long_name, "--store", "/nonexistent-store"],
                             env={"COLUMNS": "80"})
    assert res.exit_code == 2 and long_name in res.output, res.output
