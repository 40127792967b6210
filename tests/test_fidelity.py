"""``osgym tasks check DIR --run``: every task file that loads runs with a do-nothing policy on real replicas, and
each is judged faithful or not, with the cause (:mod:`osgym.collection.fidelity`).

The folder is written here, on the desktop tier: a faithful task, one whose setup command fails but is tolerated
(as OSWorld tolerates it), one that noop solves, an infeasible one, one whose setup errs, and the four tasks of
``osgym tasks sample`` (the desktop tier's sample OSWorld-format tasks, which must be faithful: this is where
they are checked to score 0 for doing nothing); plus files that cannot run here (refused, needing an uncached
asset), which are counted and not run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from osgym.agents.policies.noop import NoopPolicy
from osgym.collection import load_recipe
from osgym.collection.collector import plan
from osgym.collection.fidelity import FidelityReport, Outcome, judge
from osgym.episodes import EpisodeLimits, run_episode
from osgym.errors import ConfigError
from osgym.replicas.pool import ReplicaPool
from osgym.suites.sample import SAMPLE
from osgym.tasks.check import CheckReport
from osgym.tasks.spec import load_task

ROOT = Path(__file__).resolve().parents[1]
ABSENT = "test -e /home/user/Desktop/made.txt && echo yes || echo no"


def _task(tid: str, config: list[dict[str, Any]], evaluator: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"id": tid, "instruction": "Create made.txt on the Desktop.", "config": config,
            "evaluator": evaluator or {"func": "exact_match",
                                       "result": {"type": "vm_command_line", "command": ABSENT, "shell": True},
                                       "expected": {"type": "rule", "rules": {"expected": "yes\n"}}}}


FAILING = ["sh", "-c", "echo no such package >&2; exit 3"]
TASKS = {
    "fid-faithful": _task("fid-faithful", [{"type": "execute", "parameters": {
        "command": ["rm", "-f", "/home/user/Desktop/made.txt"]}}]),
    "fid-tolerated": _task("fid-tolerated", [{"type": "execute", "parameters": {"command": FAILING}}]),
    "fid-free": _task("fid-free", [], {"func": "exact_match",
                                       "result": {"type": "vm_command_line", "command": "echo yes", "shell": True},
                                       "expected": {"type": "rule", "rules": {"expected": "yes\n"}}}),
    "fid-infeasible": _task("fid-infeasible", [], {"func": "infeasible"}),
    "fid-erring": _task("fid-erring", [{"type": "activate_window",
                                        "parameters": {"window_name": "No Such Window 7"}}]),
}
NOT_RUN = {
    "fid-refused": _task("fid-refused", [{"type": "teleport", "parameters": {}}]),
    "fid-uncached": _task("fid-uncached", [{"type": "download", "parameters": {"files": [
        {"url": "https://assets.osgym.invalid/fidelity/sheet.xlsx", "path": "/home/user/sheet.xlsx"}]}}]),
}


def _folder(root: Path, *, sample: bool = True) -> Path:
    for tid, task in {**TASKS, **NOT_RUN}.items():
        (root / "os").mkdir(parents=True, exist_ok=True)
        (root / "os" / f"{tid}.json").write_text(json.dumps(task))
    for domain, tasks in (SAMPLE.items() if sample else ()):
        (root / domain).mkdir(parents=True, exist_ok=True)
        for t in tasks:
            (root / domain / f"{t['id']}.json").write_text(json.dumps(t))
    return root


def _osgym(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "OSGYM_ASSET_CACHE"}  # no cache: a URL is uncached
    return subprocess.run([sys.executable, "-m", "osgym", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env=env)


# ---- the verdicts, without replicas ----------------------------------------------------------------------

def test_the_first_failed_condition_is_the_cause_with_how_often_it_held() -> None:
    setup = "task fid-x: config[0]: execute ['apt', 'install', 'jq'] exited 100: E: no network"
    both = [Outcome(1.0, setup_failures=(setup,)), Outcome(0.0, "setup_error: SetupError: task fid-x: config[1]: "
                                                                "activate_window step rejected by the replica: 404")]
    v = judge("fid-x", "os", both)
    assert (v.faithful, v.kind, v.runs) == (False, "error", 2)
    assert v.cause == ("error in 1 of 2 episodes: setup_error: SetupError: config[1]: activate_window step "
                       "rejected by the replica: 404")
    v = judge("fid-x", "os", both[:1] * 3)
    assert (v.kind, v.cause) == ("setup", "setup step failed in 3 of 3 episodes: config[0]: execute ['apt', "
                                          "'install', 'jq'] exited 100: E: no network")
    assert judge("fid-x", "os", [Outcome(0.0), Outcome(1.0), Outcome(1.0)]).cause == \
        "noop scored 1 in 2 of 3 episodes"
    assert judge("fid-x", "os", [Outcome(0.0)] * 3).faithful
    # OSWorld's infeasible tasks: their score is not judged, but an error or a failed step still is.
    assert judge("fid-x", "os", [Outcome(1.0)], infeasible=True).faithful
    assert judge("fid-x", "os", [Outcome(0.0, setup_failures=(setup,))], infeasible=True).kind == "setup"
    assert judge("fid-x", "os", [Outcome(0.0, setup_failures=(setup, setup, setup))]).cause == (
        "setup step failed in 1 of 1 episodes (and 2 more steps): config[0]: execute ['apt', 'install', 'jq'] exited "
        "100: E: no network")
    assert judge("fid-x", "os", []).cause == "no episode ran"
    long = judge("fid-x", "os", [Outcome(0.0, "evaluator_error: " + "x" * 1000)]).cause
    assert long is not None and len(long) == 300 and long.endswith("…")


def test_the_report_counts_and_tabulates_in_markdown() -> None:
    check = CheckReport(with_cache=True)
    check.add("os", loaded=True)
    check.add("os", loaded=True)
    check.add("os", loaded=False, uncached=True)
    check.add("chrome", loaded=False, live=True)
    check.add("chrome", loaded=False, refused=[("setup", "googledrive")])
    report = FidelityReport("tasks/", check, [judge("b|c", "os", [Outcome(0.0)] * 3),
                                              judge("a", "os", [Outcome(1.0)] * 3)], repeat=3, tier="apps")
    assert report.summary().splitlines() == [
        "faithful: 1 of 2 (50.0 %) of the task files that can run (3 noop episodes each, apps tier)",
        "not faithful: 1 score above 0 for doing nothing",
        "not run: 1 need uncached assets, 1 open live websites, 1 are refused (of 5 task files; "
        "`osgym tasks check` without --run says why)"]
    table = report.markdown().splitlines()
    at = table.index("| domain | faithful | task files run |")
    assert table[at + 2:at + 4] == ["| os | 1 | 2 |", ""]
    at = table.index("| task id | domain | runs | faithful | cause |")
    assert table[at + 2:] == ["| a | os | 3 | no | noop scored 1 in 3 of 3 episodes |", "| b\\|c | os | 3 | yes |  |"]


def test_a_recipe_excludes_files_by_directory_or_name(tmp_path: Path) -> None:
    folder = _folder(tmp_path / "tasks", sample=False)
    (folder / "Windows").mkdir()
    (folder / "Windows" / "w.json").write_text(json.dumps(TASKS["fid-free"] | {"id": "fid-windows"}))
    rec = load_recipe({"name": "x", "episodes": 7, "task_dir": str(folder), "on_refused": "skip",
                       "exclude": ["Windows", "fid-erring.json"], "store": str(tmp_path)})
    jobs, refused = plan(rec, "r1", checks=[])
    assert sorted({j.task.id for j in jobs}) == sorted(set(TASKS) - {"fid-erring"} | {"fid-uncached"})
    assert [r.path for r in refused] == ["os/fid-refused.json"]
    with pytest.raises(ConfigError, match="task_index and exclude both choose the files"):
        load_recipe({"name": "x", "episodes": 1, "task_dir": "t", "task_index": "i.json", "exclude": ["W"]})
    with pytest.raises(ConfigError, match="exclude leaves out files of a task_dir"):
        load_recipe({"name": "x", "episodes": 1, "exclude": ["W"]})


@pytest.mark.parametrize("args, says", [
    (["{missing}", "--run"], "is not a directory"),
    (["{dir}", "--run", "--repeat", "0"], "--repeat: expected 1..1000 episodes per task, actual 0"),
    (["{dir}", "--run", "--replicas", "0"], "--replicas: expected at least 1, actual 0"),
    (["{dir}", "--run", "--tier", "gpu"], "--tier: expected 'desktop' or 'apps', actual 'gpu'"),
    (["{dir}", "--run", "--policy", "random"], "--policy: expected one of noop"),
    (["{dir}", "--repeat", "2"], "--repeat: only with --run"),
    (["{dir}", "--run", "--live-files"], "--live-files lists what the check without --run refuses"),
    (["{dir}", "--run", "--out", "{missing}/report.md"], "--out: no directory"),
])
def test_bad_input_is_a_clear_error_before_any_replica(tmp_path: Path, args: list[str], says: str) -> None:
    folder = _folder(tmp_path / "tasks", sample=False)
    filled = [a.format(dir=folder, missing=tmp_path / "nowhere") for a in args]
    # no Docker here: reaching for replicas would fail differently (and later)
    out = subprocess.run([sys.executable, "-m", "osgym", "tasks", "check", *filled], cwd=ROOT, capture_output=True,
                         text=True, timeout=120, env={**os.environ, "DOCKER_HOST": f"unix://{tmp_path}/none.sock"})
    assert out.returncode == 2, out.stdout + out.stderr
    assert says in " ".join(out.stderr.split()) and "Traceback" not in out.stderr, out.stderr


# ---- on real replicas -------------------------------------------------------------------------------------

@pytest.mark.docker
@pytest.mark.slow
def test_check_run_judges_each_task_on_real_replicas(tmp_path: Path, image: str) -> None:
    """The command as a user runs it, --repeat 2 on two desktop replicas; the table is read from --out."""
    folder = _folder(tmp_path / "tasks")
    t0 = time.monotonic()
    out = _osgym("tasks", "check", str(folder), "--run", "--policy", "noop", "--repeat", "2", "--replicas", "2",
                 "--tier", "desktop", "--out", str(tmp_path / "report.md"), timeout=900)
    print(f"tasks check --run: {len(TASKS) + 4} task files x 2 in {time.monotonic() - t0:.0f} s")
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.splitlines()[:3] == [
        "faithful: 6 of 9 (66.7 %) of the task files that can run (2 noop episodes each, desktop tier)",
        "not faithful: 1 err, 1 fail a setup step, 1 score above 0 for doing nothing",
        "not run: 1 need uncached assets, 1 are refused (of 11 task files; `osgym tasks check` without --run "
        "says why)"], out.stdout
    rows = {}
    for line in (tmp_path / "report.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        if len(cells) == 5 and cells[2].isdigit():
            rows[cells[0]] = (cells[1], int(cells[2]), cells[3], cells[4])
    sample_ids = {t["id"]: d for d, ts in SAMPLE.items() for t in ts}
    assert set(rows) == set(TASKS) | set(sample_ids), rows
    assert rows["fid-faithful"] == ("os", 2, "yes", "")
    assert rows["fid-infeasible"] == ("os", 2, "yes", "infeasible (its score is not judged)")
    assert rows["fid-free"] == ("os", 2, "no", "noop scored 1 in 2 of 2 episodes")
    domain, runs, faithful, cause = rows["fid-tolerated"]
    assert (domain, runs, faithful) == ("os", 2, "no")
    assert cause.startswith("setup step failed in 2 of 2 episodes: config[0]: execute ") and \
        "exited 3: no such package" in cause, cause
    domain, runs, faithful, cause = rows["fid-erring"]
    assert (runs, faithful) == (2, "no") and cause.startswith("error in 2 of 2 episodes: setup_error: SetupError: "
                                                              "config[0]: activate_window"), cause
    # The sample's tasks set up cleanly and pay nothing for doing nothing (the infeasible one included).
    for tid, domain in sample_ids.items():
        assert rows[tid][:3] == (domain, 2, "yes"), (tid, rows[tid])


@pytest.mark.docker
def test_an_episode_records_every_tolerated_setup_failure(make_pool: Any) -> None:
    """Not only config[]: a postconfig command that fails is tolerated too, and recorded. A probe (a postconfig step
    whose output the evaluator reads, e1fc0df3's ``grep`` for an extension) that exits 1 has answered "no", which
    is what doing nothing must give: not recorded; one that exits 2 could not look: recorded."""
    pool: ReplicaPool = make_pool(1)
    data = dict(TASKS["fid-tolerated"])
    data["evaluator"] = dict(data["evaluator"], postconfig=[
        {"type": "execute", "parameters": {"command": "exit 4", "shell": True}},
        {"type": "command", "parameters": {"command": ["grep", "-r", "nothing-here", "/etc/hostname"],
                                           "stdout": "grep.out"}},
        {"type": "command", "parameters": {"command": ["grep", "-r", "x", "/no/such/dir"], "stdout": "err.out"}}])
    with pool.lease(timeout=120) as r:
        traj = run_episode(r, load_task(data), NoopPolicy(), limits=EpisodeLimits(max_steps=3, deadline_s=120))
    assert traj.error_class is None and traj.termination == "done" and traj.score == 0.0, traj.error_message
    assert len(traj.setup_failures) == 3, traj.setup_failures
    first, post, probe = traj.setup_failures
    assert first.startswith("task fid-tolerated: config[0]: execute ") and "exited 3: no such package" in first
    assert post.startswith("task fid-tolerated: evaluator.postconfig[0]: execute 'exit 4' exited 4")
    assert probe.startswith("task fid-tolerated: evaluator.postconfig[2]: command ") and "exited 2" in probe, probe
