"""The replica server's reading of a command request (replica_images/server/commands.py), without a replica.

OSWorld's server hands ``shell`` to ``subprocess`` as it came, so its compatibility routes take every value
Python holds a truth value of (task files send ``"shell": "true"``) and a list with ``shell`` as
``Popen(list, shell=True)`` takes it; the native API stays strict. Garbage still gets a 400 that says why.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

SERVER_DIR = Path(__file__).resolve().parents[2] / "replica_images" / "server"


def _load() -> tuple[ModuleType, ModuleType]:
    """The server's ``commands`` and ``protocol``, imported as the server imports them (sys.modules restored)."""
    saved = {name: sys.modules.get(name) for name in ("protocol", "commands")}
    try:
        for name in ("protocol", "commands"):
            spec = importlib.util.spec_from_file_location(name, SERVER_DIR / f"{name}.py")
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
        return sys.modules["commands"], sys.modules["protocol"]
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


commands, protocol = _load()


@pytest.mark.parametrize(("shell", "expected"), [
    (True, True), ("true", True), ("True", True), ("false", True), ("0", True), ("yes", True), (1, True),
    (2.5, True), (False, False), ("", False), (0, False), (0.0, False), (None, False)])
def test_osworld_reads_shell_as_pythons_truth_value(shell: Any, expected: bool) -> None:
    got = commands.osworld_command_of({"command": "echo a > /tmp/x", "shell": shell})
    assert got == (("echo a > /tmp/x", True) if expected else (["echo", "a", ">", "/tmp/x"], False))


def test_osworld_without_shell_splits_a_string_and_expands_only_leading_tilde_slash() -> None:
    assert commands.osworld_command_of({"command": "ls -l '~/a b' ~/c ~ x~/y"}) == (
        ["ls", "-l", "/home/user/a b", "/home/user/c", "~", "x~/y"], False)
    assert commands.osworld_command_of({"command": ["cat", "~/notes.txt"], "shell": False}) == (
        ["cat", "/home/user/notes.txt"], False)


def test_osworld_list_with_shell_runs_its_first_item_as_the_script() -> None:
    """OSWorld's SetupController itself sends ``[cmd]`` with ``shell=True`` (its proxy and history steps)."""
    assert commands.osworld_command_of({"command": ["echo password | sudo -S chown user ~/.x"], "shell": True}) == (
        ["/bin/sh", "-c", "echo password | sudo -S chown user ~/.x"], False)
    assert commands.osworld_command_of({"command": ["echo $0-$1", "zero", "~/one"], "shell": "true"}) == (
        ["/bin/sh", "-c", "echo $0-$1", "zero", "/home/user/one"], False)


@pytest.mark.parametrize(("body", "message"), [
    ({"command": "true", "shell": [1]}, "shell: expected true or false"),
    ({"command": "true", "shell": {}}, "shell: expected true or false"),
    ({"shell": True}, "command: expected a non-empty string or list"),
    ({"command": "   ", "shell": "true"}, "command: expected a non-empty string or list"),
    ({"command": [], "shell": True}, "command: expected a non-empty string or list"),
    ({"command": ["ls", 3]}, "command: expected a non-empty string or list"),
    ({"command": ["a\x00b"]}, "command: expected a non-empty string or list"),
    ({"command": "echo 'unbalanced"}, "command: cannot split"),
])
def test_osworld_refuses_garbage_with_a_400_that_says_why(body: dict[str, Any], message: str) -> None:
    with pytest.raises(protocol.HttpError) as caught:
        commands.osworld_command_of(body)
    assert caught.value.status == 400 and message in caught.value.message, caught.value


def test_the_native_api_stays_strict() -> None:
    with pytest.raises(protocol.HttpError) as caught:
        commands.command_of({"command": "true", "shell": "true"})
    assert caught.value.status == 400 and "shell: expected true or false" in caught.value.message
    assert commands.command_of({"command": ["a b", "c"], "shell": True}) == ("'a b' c", True)
    assert commands.command_of({"command": "echo hi"}) == ("echo hi", True)
