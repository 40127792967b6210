"""Task files written by hand in OSWorld's exact JSON format load unchanged and run on real replicas."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from osgym.agents.policies.noop import NoopPolicy
from osgym.agents.policies.scripted import ScriptedPolicy
from osgym.episodes import EpisodeLimits, run_episode
from osgym.errors import TaskLoadError
from osgym.replicas.pool import ReplicaPool
from osgym.tasks.spec import OracleStep, TaskSpec, load_task

HERE = Path(__file__).parent / "osworld_tasks"
LIMITS = EpisodeLimits(max_steps=20, deadline_s=120, settle_s=0.5)

# OSWorld files carry no solution; the tests attach one to show each task can be solved and judged.
ORACLES = {
    "terminal_chmod": [
        {"op": "wait_window", "args": {"title": "xterm"}},
        {"op": "click_window", "args": {"title": "xterm"}},
        {"op": "type", "args": {"text": "chmod a+x ~/Desktop/backup.sh\n"}},
        {"op": "done"},
    ],
    "file_shopping_list": [
        {"op": "wait_window", "args": {"title": "shopping.txt"}},
        {"op": "click_window", "args": {"title": "shopping.txt"}},
        {"op": "hotkey", "args": {"keys": ["ctrl", "a"]}},
        {"op": "type", "args": {"text": "bread\nmilk\noranges\n"}},
        {"op": "hotkey", "args": {"keys": ["ctrl", "s"]}},
        {"op": "wait_gone", "args": {"title": "*"}},
        {"op": "done"},
    ],
    "infeasible_bluetooth": [{"op": "fail"}],
}


def _load(name: str) -> TaskSpec:
    return load_task(HERE / f"{name}.json")


def _solvable(name: str) -> TaskSpec:
    return _load(name).model_copy(update={"oracle": [OracleStep(**o) for o in ORACLES[name]]})


def test_osworld_files_load_unchanged() -> None:
    term, files, infeasible = _load("terminal_chmod"), _load("file_shopping_list"), _load("infeasible_bluetooth")
    assert term.evaluator.funcs == ["exact_match"] and term.evaluator.results[0].type == "vm_command_line"
    assert files.evaluator.funcs == ["check_include_exclude"]
    assert infeasible.infeasible and infeasible.config == []
    assert term.snapshot == "os" and term.model_extra == {"trajectory": "trajectories/"}
    assert [s.type for s in term.config] == ["execute", "launch", "sleep"]


def test_unknown_config_type_fails_at_load_naming_type_and_task() -> None:
    with pytest.raises(TaskLoadError) as info:
        load_task(HERE / "invalid" / "unknown_config_type.json")
    msg = str(info.value)
    assert "'googledrive'" in msg and "0f9e8d7c-6b5a-4c3d-2e1f-0a9b8c7d6e5f" in msg, msg


@pytest.mark.parametrize("bad, named", [
    ({"func": "compare_holograms"}, "'compare_holograms'"),  # no function registered under that name
    ({"func": "exact_match", "result": {"type": "vm_hologram"}}, "'vm_hologram'"),
])
def test_unknown_metric_or_getter_fails_at_load(bad: dict, named: str) -> None:
    with pytest.raises(TaskLoadError, match=named):
        load_task({"id": "t-bad", "instruction": "x", "config": [], "evaluator": bad})


@pytest.mark.docker
@pytest.mark.parametrize("name", sorted(ORACLES))
def test_osworld_file_runs_solved_and_unsolved(shared_pool: ReplicaPool, name: str) -> None:
    with shared_pool.lease(timeout=120) as r:
        solved = run_episode(r, _solvable(name), ScriptedPolicy(), limits=LIMITS)
    with shared_pool.lease(timeout=120) as r:
        idle = run_episode(r, _load(name), NoopPolicy(), limits=LIMITS)
    assert solved.error_class is None, solved.error_message
    assert solved.score == 1.0 and solved.termination == ("fail" if name.startswith("infeasible") else "done")
    assert idle.error_class is None and idle.score == 0.0


# OSWorld's server hands `shell` to subprocess as the file gives it: "true" (and "false") run through the shell,
# 0 does not, and a list with a true `shell` runs its first item as the script (osgym.tasks.commands).
SHELL_SHAPES = {
    "id": "osgym-shell-shapes", "instruction": "Nothing to do.", "snapshot": "os",
    "config": [
        {"type": "execute", "parameters": {"command": "echo setup > /tmp/osgym-shapes", "shell": "true"}},
        {"type": "execute", "parameters": {"command": ["echo list-$0 >> /tmp/osgym-shapes", "ok"], "shell": 1}},
        {"type": "execute", "parameters": {"command": "mkdir /tmp/osgym-shapes-split;", "shell": 0}},
    ],
    "evaluator": {
        "postconfig": [{"type": "execute", "parameters": {"command": "echo post >> /tmp/osgym-shapes",
                                                          "shell": "false"}}],
        "func": "exact_match",
        "result": {"type": "vm_command_line", "command": "cat /tmp/osgym-shapes; ls -d /tmp/osgym-shapes-split*",
                   "shell": "true"},
        "expected": {"type": "rule", "rules": {"expected": "setup\nlist-ok\npost\n/tmp/osgym-shapes-split;\n"}},
    },
}


def test_shell_given_as_a_string_or_number_loads() -> None:
    task = load_task(SHELL_SHAPES)
    assert [s.parameters["shell"] for s in task.config] == ["true", 1, 0]
    assert task.evaluator.postconfig[0].parameters["shell"] == "false"


@pytest.mark.parametrize("field", ["config", "postconfig"])
@pytest.mark.parametrize("shell", [[1], {"on": True}])
def test_a_shell_that_is_no_flag_fails_at_load_naming_the_step(field: str, shell: object) -> None:
    step = {"type": "execute", "parameters": {"command": "true", "shell": shell}}
    task = {"id": "t-shell", "instruction": "x", "evaluator": {"func": "infeasible"}}
    if field == "config":
        task["config"] = [step]
        named = "config[0].parameters.shell"
    else:
        task["evaluator"] = {"func": "infeasible", "postconfig": [step]}
        named = "evaluator.postconfig[0].parameters.shell"
    with pytest.raises(TaskLoadError, match=rf"t-shell.*{re.escape(named)}: expected true or false"):
        load_task(task)


def test_a_step_without_a_command_fails_at_load() -> None:
    with pytest.raises(TaskLoadError, match=r"config\[0\]\.parameters\.command: expected a non-empty string or list"):
        load_task({"id": "t-cmd", "instruction": "x", "evaluator": {"func": "infeasible"},
                   "config": [{"type": "launch", "parameters": {"command": []}}]})


@pytest.mark.docker
def test_string_and_number_shell_flags_run_as_osworld_runs_them(shared_pool: ReplicaPool) -> None:
    with shared_pool.lease(timeout=120) as r:
        idle = run_episode(r, load_task(SHELL_SHAPES), NoopPolicy(), limits=LIMITS)
    assert idle.error_class is None, idle.error_message
    assert idle.score == 1.0
