"""The getter registry: a getter type loads only if registered, its options are checked at load, names
refused on purpose say why, and every registered getter has a test of its own."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from osgym.errors import TaskLoadError
from osgym.tasks import getters
from osgym.tasks.spec import load_task

TESTS = Path(__file__).parent.parent
# Where getter tests live: the desktop tier's here, the apps tier's (Chromium, terminal, wallpaper, apps) there.
TEST_DIRS = (TESTS / "getters", TESTS / "apps")


def _test_functions() -> set[str]:
    trees = [ast.parse(path.read_text()) for d in TEST_DIRS for path in d.glob("test_*.py")]
    return {node.name for tree in trees for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")}


def test_every_registered_getter_has_a_test() -> None:
    tests = _test_functions()
    untested = [n for n in getters.GETTERS.names() if f"test_{n}" not in tests]
    assert not untested, f"registered getters without a test_<name> in tests/getters or tests/apps: {untested}"


def test_refused_names_are_not_registered_and_cannot_be() -> None:
    assert not set(getters.REFUSED) & set(getters.GETTERS.names())
    with pytest.raises(ValueError, match="refused on purpose: it reads a file from a Google Drive account"):
        getters.getter("googledrive_file")


def _task(result: object) -> dict[str, object]:
    return {"id": "t-get", "instruction": "x", "evaluator": {"func": "exact_match", "result": result,
                                                             "expected": {"type": "rule", "rules": {"expected": 1}}}}


def test_unregistered_getter_fails_at_load_naming_it_the_field_and_the_known_ones() -> None:
    with pytest.raises(TaskLoadError) as info:
        load_task(_task({"type": "vm_hologram"}))
    msg = str(info.value)
    assert "evaluator.result" in msg and "'vm_hologram'" in msg and "vm_file" in msg and "t-get" in msg, msg


def test_refused_getter_fails_at_load_with_its_reason() -> None:
    with pytest.raises(TaskLoadError, match="'info_from_website': it reads a live third-party website"):
        load_task(_task({"type": "info_from_website", "url": "https://example.org"}))


def test_getter_options_are_checked_at_load_in_lists_too() -> None:
    ev = {"func": ["exact_match", "exact_match"],
          "result": [{"type": "vm_command_line", "command": ["true"]}, {"type": "vm_screen_size", "x": 1}],
          "expected": [{"type": "rule", "rules": {"expected": ""}}, {"type": "rule", "rules": {"expected": {}}}]}
    with pytest.raises(TaskLoadError, match=r"evaluator.result\[1\]: getter 'vm_screen_size' takes no options, "
                                            r"actual \['x'\]"):
        load_task({"id": "t-list", "instruction": "x", "evaluator": ev})
    with pytest.raises(TaskLoadError, match=r"evaluator.result.command: Field required \(getter 'vm_command_line'\)"):
        load_task(_task({"type": "vm_command_line", "cmd": "ls"}))
    # `shell` is read as OSWorld's server reads it: a string or number is a truth value, a list is no flag
    for shell in ("true", "false", 0, 1.0, None, True):
        load_task(_task({"type": "vm_command_line", "command": "true", "shell": shell}))
    with pytest.raises(TaskLoadError, match=r"evaluator.result.shell"):
        load_task(_task({"type": "vm_command_line", "command": "true", "shell": [1]}))


def test_an_empty_getter_is_no_getter() -> None:
    """OSWorld runs no getter for ``"result": {}``."""
    task = load_task({"id": "t-empty", "instruction": "x",
                      "evaluator": {"func": "infeasible", "result": {}, "expected": {}}})
    assert task.evaluator.results == [None] and task.evaluator.expecteds == [None]


def test_registering_a_second_function_under_a_taken_name_fails() -> None:
    with pytest.raises(ValueError, match="already registered"):
        getters.getter("vm_file")(lambda ctx, options, where: None)
