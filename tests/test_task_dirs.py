"""A folder of OSWorld-format task files as a recipe's source: index or discovery, confinement, refusals, plan.

The folders are generated here (``osgym tasks sample`` and files written by the tests), in OSWorld's layout:
``<dir>/<domain>/<id>.json`` with an index ``{domain: [id, ...]}`` as ``evaluation_examples/test_all.json``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest
import yaml

from osgym.collection import Collection, load_recipe, plan_jobs, run_collection
from osgym.collection.collector import plan
from osgym.errors import ConfigError
from osgym.suites.sample import SAMPLE, SAMPLE_INDEX, write_sample
from osgym.tasks.spec import TaskSpec

ROOT = Path(__file__).resolve().parents[1]
IDS = {domain: ids for domain, ids in SAMPLE_INDEX.items()}
ORDER = [(d, i) for d, ids in SAMPLE_INDEX.items() for i in ids]  # index order: os first, then text_editor


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    write_sample(tmp_path / "osworld")
    return tmp_path / "osworld"


def _recipe(sample: Path, **kw: Any) -> dict[str, Any]:
    return {"name": "taskdir", "task_dir": str(sample / "examples"), "episodes": 6, "seed": 10,
            "store": str(sample.parent / "data"), **kw}


def _index(sample: Path, data: Any) -> str:
    path = sample / "index.json"
    path.write_text(json.dumps(data))
    return str(path)


def test_a_recipe_takes_a_suite_or_a_task_dir_not_both() -> None:
    with pytest.raises(ConfigError, match="task_dir and suite both name the tasks"):
        load_recipe({"name": "x", "episodes": 1, "task_dir": "t", "suite": "desktop-basics"})
    with pytest.raises(ConfigError, match="task_dir and tasks both"):
        load_recipe({"name": "x", "episodes": 1, "task_dir": "t", "tasks": ["terminal-create-file"]})
    with pytest.raises(ConfigError, match="task_index lists files of a task_dir"):
        load_recipe({"name": "x", "episodes": 1, "task_index": "test_all.json"})
    with pytest.raises(ConfigError, match="on_refused"):
        load_recipe({"name": "x", "episodes": 1, "task_dir": "t", "on_refused": "ignore"})
    # Without a task_dir the suite path is as before; with one, either tier is the recipe's choice.
    assert load_recipe({"name": "x", "episodes": 1}).suite == "desktop-basics"
    for tier in ("desktop", "apps"):
        rec = load_recipe({"name": "x", "episodes": 1, "task_dir": "t", "tier": tier})
        assert (rec.suite, rec.tier, rec.on_refused) == (None, tier, "fail")


def test_an_index_plans_its_files_round_robin_with_their_domains(sample: Path) -> None:
    rec = load_recipe(_recipe(sample, task_index=str(sample / "test_all.json")))
    jobs = plan_jobs(rec, "r1")
    assert [(j.task.domain, j.task.id) for j in jobs] == [*ORDER, *ORDER[:2]]
    assert [j.seed for j in jobs] == list(range(10, 16)) and [j.index for j in jobs] == list(range(6))
    assert len({j.episode_id for j in jobs}) == 6
    # Deterministic, and a plan for fewer episodes is a prefix of the plan for more: a resumed run keeps its ids.
    assert [j.episode_id for j in plan_jobs(rec, "r1")] == [j.episode_id for j in jobs]
    fewer = plan_jobs(rec.model_copy(update={"episodes": 3}), "r1")
    assert [j.episode_id for j in fewer] == [j.episode_id for j in jobs[:3]]
    # An index names a subset, in its own order.
    sub = load_recipe(_recipe(sample, episodes=2, task_index=_index(sample, {"text_editor": IDS["text_editor"],
                                                                            "os": IDS["os"][2:]})))
    assert [(j.task.domain, j.task.id) for j in plan_jobs(sub, "r1")] == [("text_editor", IDS["text_editor"][0]),
                                                                         ("os", IDS["os"][2])]


def test_without_an_index_every_file_runs_its_domain_the_folder_name(sample: Path) -> None:
    loose = dict(SAMPLE["os"][0], id="loose-task", domain="scratch")
    (sample / "examples" / "loose.json").write_text(json.dumps(loose))
    jobs = plan_jobs(load_recipe(_recipe(sample, episodes=5)), "r1")
    found = sorted((j.task.domain, j.task.id) for j in jobs)
    # Files sorted by path; a file directly in the folder keeps its own domain field.
    assert found == sorted([*ORDER, ("scratch", "loose-task")])
    assert all(isinstance(j.task, TaskSpec) and j.task.oracle for j in jobs)


@pytest.mark.parametrize("entry, says", [
    ({"os": ["../x"]}, "'../x' is not a plain name"),
    ({"..": ["x"]}, "'..': 'x' is not a plain name"),
    ({"os": ["/etc/passwd"]}, "'/etc/passwd' is not a plain name"),
    ({"/etc": ["passwd"]}, "'/etc': 'passwd' is not a plain name"),
    ({"os": ["a/b"]}, "'a/b' is not a plain name"),
    ({"os": [".hidden"]}, "'.hidden' is not a plain name"),
    ({"os": [7]}, "7 is not a plain name"),
    ({"os": ["no-such-task"]}, "'os': 'no-such-task': no file"),
    ({"os": [IDS["os"][0], IDS["os"][0]]}, "is listed twice"),
    (["os"], "expected OSWorld's test_all.json shape"),
    ({"os": "one-id"}, "expected OSWorld's test_all.json shape"),
])
def test_a_bad_index_entry_fails_the_plan_naming_it(sample: Path, entry: Any, says: str) -> None:
    recipe = _recipe(sample, task_index=_index(sample, entry))
    with pytest.raises(ConfigError) as info:
        Collection(recipe)  # no image is named and none is built: reaching for replicas would fail differently
    assert says in str(info.value) and "task_index" in str(info.value)
    assert not (sample.parent / "data").exists()


def test_symlinks_out_of_the_folder_are_refused(sample: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "os").mkdir(parents=True)
    secret = outside / "os" / "secret.json"
    secret.write_text(json.dumps(SAMPLE["os"][0]))
    examples = sample / "examples"
    (examples / "os" / "leak.json").symlink_to(secret)
    (examples / "linked").symlink_to(outside / "os")
    for entry in ({"os": ["leak"]}, {"linked": ["secret"]}):
        with pytest.raises(ConfigError, match="outside task_dir .*symlink out of its folder"):
            plan(load_recipe(_recipe(sample, task_index=_index(sample, entry))), "r1")
    with pytest.raises(ConfigError, match="task file 'os/leak.json': .* resolves to .*outside task_dir"):
        plan(load_recipe(_recipe(sample)), "r1")
    # A symlink that stays inside the folder is an ordinary file.
    (examples / "os" / "leak.json").unlink()
    (examples / "linked").unlink()
    (examples / "os" / "alias.json").symlink_to(examples / "os" / f"{IDS['os'][0]}.json")
    assert len(plan(load_recipe(_recipe(sample)), "r1")[0]) == 6


def test_a_missing_folder_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="task_dir .*nowhere.*not a directory"):
        Collection({"name": "x", "episodes": 1, "task_dir": str(tmp_path / "nowhere"), "store": str(tmp_path)})


def _break(sample: Path) -> tuple[Path, Path]:
    bad = sample / "examples" / "os" / "broken.json"
    bad.write_text(json.dumps(dict(SAMPLE["os"][0], id="broken", config=[{"type": "teleport", "parameters": {}}])))
    junk = sample / "examples" / "os" / "junk.json"
    junk.write_text("{not json")
    return bad, junk


def test_a_file_that_does_not_load_fails_the_run_unless_the_recipe_skips_it(sample: Path) -> None:
    _break(sample)
    with pytest.raises(ConfigError) as info:
        Collection(_recipe(sample))
    msg = str(info.value)
    assert "2 of 6 task files refused (add 'on_refused: skip' to run the others)" in msg
    assert "os/broken.json: task: unsupported config type 'teleport'" in msg
    assert "os/junk.json: cannot read task file" in msg
    assert not (sample.parent / "data").exists()

    jobs, refused = plan(load_recipe(_recipe(sample, on_refused="skip", episodes=4)), "r1")
    assert sorted((j.task.domain, j.task.id) for j in jobs) == sorted(ORDER)
    assert [r.path for r in refused] == ["os/broken.json", "os/junk.json"]
    assert "teleport" in refused[0].reason


def test_a_refused_index_entry_and_an_id_that_differs_from_the_index(sample: Path) -> None:
    tid = IDS["os"][0]
    path = sample / "examples" / "os" / f"{tid}.json"
    path.write_text(json.dumps(dict(SAMPLE["os"][0], id="another-id")))
    with pytest.raises(ConfigError, match=f"os/{tid}.json: its id 'another-id' is not the id the index lists"):
        plan(load_recipe(_recipe(sample, task_index=str(sample / "test_all.json"))), "r1")
    only = _index(sample, {"os": [tid]})
    with pytest.raises(ConfigError, match=r"no task file to run \(1 found, 1 refused\)"):
        plan(load_recipe(_recipe(sample, task_index=only, on_refused="skip")), "r1")


def test_plan_time_checks_refuse_a_task_naming_their_reason(sample: Path) -> None:
    # The hook the asset cache's missing_assets(task, cache) plugs into: reasons per task, before any replica.
    def missing(task: TaskSpec) -> list[str]:
        return ["asset http://127.0.0.1:9/sheet.xlsx is not in the cache"] if task.domain == "text_editor" else []

    rec = load_recipe(_recipe(sample))
    with pytest.raises(ConfigError, match=r"text_editor/.*: asset http://127.0.0.1:9/sheet.xlsx is not in the cache"):
        plan(rec, "r1", checks=[missing])
    jobs, refused = plan(rec.model_copy(update={"on_refused": "skip"}), "r1", checks=[missing])
    assert {j.task.domain for j in jobs} == {"os"} and len(refused) == 1


def test_the_cli_writes_the_sample_and_refuses_a_bad_index_before_docker(tmp_path: Path) -> None:
    env = {**os.environ, "DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"}

    def osgym(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "osgym", *args], cwd=ROOT, capture_output=True, text=True,
                              timeout=120, env=env)

    out = osgym("tasks", "sample", str(tmp_path / "s"))
    assert out.returncode == 0 and "4 task files" in out.stdout
    assert json.loads((tmp_path / "s" / "test_all.json").read_text()) == SAMPLE_INDEX
    (tmp_path / "s" / "bad.json").write_text(json.dumps({"os": ["../../etc/passwd"]}))
    recipe = tmp_path / "r.yaml"
    recipe.write_text(yaml.safe_dump({"name": "x", "episodes": 1, "task_dir": str(tmp_path / "s" / "examples"),
                                      "task_index": str(tmp_path / "s" / "bad.json"), "store": str(tmp_path)}))
    out = osgym("collect", str(recipe))
    assert out.returncode == 2 and "'../../etc/passwd' is not a plain name" in out.stderr
    assert "Traceback" not in out.stderr


def test_the_sample_recipe_is_valid_and_names_the_generated_folder() -> None:
    rec = load_recipe(ROOT / "datasets" / "osworld-sample.yaml")
    assert rec.task_dir and rec.task_index and rec.suite is None and rec.tier == "desktop"
    assert rec.policy.name == "scripted"


def test_a_task_folder_collects_a_dataset_with_domains_and_ids(sample: Path, image: str) -> None:
    """End to end on the desktop tier: the sample, scripted, into a real dataset, one episode per task."""
    (sample / "examples" / "os" / "broken.json").write_text("{}")
    recipe = _recipe(sample, episodes=4, image=image, replicas=1, standby=0, screen=[1280, 800],
                     on_refused="skip", max_steps=15, episode_timeout_s=120, policy={"name": "scripted"})
    summary = run_collection(recipe, run_id="taskdir-run")
    assert (summary["episodes"], summary["success"], summary["errors"]) == (4, 4, 0)
    assert [r.split(":")[0] for r in summary["refused_task_files"]] == ["os/broken.json"]
    root = sample.parent / "data" / "taskdir"
    rows = duckdb.sql(f"select domain, task_id, success, score from read_parquet('{root}/episodes/*/*.parquet') "
                      "order by domain, task_id").fetchall()
    assert rows == sorted((d, i, True, 1.0) for d, i in ORDER)
    manifest = json.loads((root / "_manifests" / "taskdir-run.json").read_text())
    assert manifest["config"]["recipe"]["task_dir"] == str(sample / "examples")
    assert [r["path"] for r in manifest["config"]["refused_task_files"]] == ["os/broken.json"]


def test_the_collect_flow_runs_a_task_folder_recipe_file_with_any_policy(sample: Path, image: str) -> None:
    """The Prefect flow (what the deployments run) takes a task-folder recipe by path; noop scores 0.0."""
    from flows import collect as collect_mod

    index = _index(sample, {"os": IDS["os"][:2]})  # chmod and mkdir: DONE at once leaves both undone
    path = sample.parent / "recipe.yaml"
    path.write_text(yaml.safe_dump(_recipe(sample, name="taskflow", task_index=index, episodes=2, image=image,
                                           replicas=1, standby=0, screen=[1280, 800], policy={"name": "noop"})))
    summary = collect_mod.collect(str(path), run_id="taskflow-run")
    assert (summary["episodes"], summary["success"], summary["errors"]) == (2, 0, 0)
    rows = duckdb.sql(f"select domain, task_id, success, score, policy from read_parquet("
                      f"'{sample.parent}/data/taskflow/episodes/*/*.parquet') order by task_id").fetchall()
    assert rows == sorted(("os", i, False, 0.0, "noop") for i in IDS["os"][:2])
