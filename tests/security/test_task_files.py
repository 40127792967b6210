"""Task files are untrusted input: the host paths they name stay confined, and bad runs fail before replicas.

A hostile task file tries to write outside the evaluator's scratch directory (an absolute, a ``..``
or a symlinked ``dest``) and to read host files into a replica (``download``/``upload_file`` with a
local path or ``file://`` URL, ``cloud_file`` with a local path). Each attempt must be refused with an
error naming the task and the field, with nothing written or read outside; real replicas run the
episodes where the code path needs one. The recovery tests run ``osgym collect`` and
``run_collection`` with a mistyped policy option or a store that refuses connections or writes,
and check with Docker's own event log that no replica was ever started.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import pytest
import yaml

from osgym.agents.policies.noop import NoopPolicy
from osgym.collection import run_collection
from osgym.episodes import EpisodeLimits, run_episode
from osgym.errors import ConfigError, EvaluatorError, SetupError, StoreError, TaskLoadError
from osgym.replicas.pool import POOL_LABEL, ReplicaPool
from osgym.replicas.reaper import OWNER_LABEL
from osgym.storage import S3Options, open_backend
from osgym.tasks.files import Scratch, read_task_file
from osgym.tasks.spec import TaskSpec, load_task
from tests.conftest import SESSION, TEST_SCREEN
from tests.store.store_support import ACCESS_KEY, BUCKET, SECRET_KEY, SeaweedS3, running_seaweed

ROOT = Path(__file__).resolve().parents[2]
LIMITS = EpisodeLimits(max_steps=3, deadline_s=90, settle_s=0.2)
HOME = "/home/user"
READONLY_KEY, READONLY_SECRET = "OSGYMREADONLYKEY", "osgym-readonly-secret-0123456789"
FAST_S = 30.0
"""A run that cannot succeed must fail within this (a Python start and imports included), not after minutes."""


# -- fixtures ------------------------------------------------------------------------------------------

MODULE_POOL = f"{SESSION}-taskfiles"


@pytest.fixture(scope="module")
def taskfiles_pool(image: str, docker_client: docker.DockerClient) -> Iterator[ReplicaPool]:
    with ReplicaPool(image, 1, standby=1, name=MODULE_POOL, docker_client=docker_client,
                     screen=TEST_SCREEN) as pool:
        yield pool


@pytest.fixture
def taskfiles_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``OSGYM_TASK_FILES_DIR`` set to a fresh directory holding one allowed file; a secret lies beside it."""
    root = tmp_path / "allowed"
    root.mkdir()
    (root / "notes.txt").write_text("allowed content\n")
    (tmp_path / "host-secret.txt").write_text("AWS_SECRET=do-not-leak\n")
    monkeypatch.setenv("OSGYM_TASK_FILES_DIR", str(root))
    return root


def _task(tid: str, config: list[dict[str, Any]] | None = None, **evaluator: Any) -> dict[str, Any]:
    return {"id": tid, "instruction": "hostile task file", "config": config or [], "evaluator": evaluator}


def _on_replica(pool: ReplicaPool, task: TaskSpec, check: str | None = None) -> tuple[Any, str]:
    """Run ``task`` with the noop policy; then, on the same replica, the output of shell ``check``."""
    with pool.lease(timeout=180) as r:
        traj = run_episode(r, task, NoopPolicy(), limits=LIMITS)
        seen = r.execute(check, shell=True, timeout=15).output if check else ""
    return traj, seen


def _created_by(client: docker.DockerClient, since: float, pid: int) -> list[str]:
    """Names of osgym replicas the process ``pid`` of this machine created since ``since`` (Docker's event log),
    but for this module's own pool's: it refills in the background, from this process too (a replica released
    by one test is replaced while the next runs; seen under OSGYM_REPLICA_RESET=restore, where a clone's start
    came 0.2 s into the next test)."""
    events = client.events(since=int(since) - 1, until=int(time.time()) + 1, decode=True,
                           filters={"type": "container", "event": "create", "label": POOL_LABEL})
    owner = f"{socket.gethostname()}:{pid}:"
    return [e["Actor"]["Attributes"].get("name", "?") for e in events
            if e["Actor"]["Attributes"].get(OWNER_LABEL, "").startswith(owner)
            and e["Actor"]["Attributes"].get(POOL_LABEL) != MODULE_POOL]


def _osgym_collect(recipe: dict[str, Any], tmp_path: Path, env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe))
    proc = subprocess.Popen([sys.executable, "-m", "osgym", "collect", str(path), "--no-report"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "COLUMNS": "400", **env})
    out, _ = proc.communicate(timeout=300)
    return proc, out


def _recipe(image: str, tmp_path: Path, **fields: Any) -> dict[str, Any]:
    base = {"name": "sec-probe", "episodes": 2, "replicas": 1, "standby": 0, "image": image,
            "tasks": ["terminal-create-file"], "screen": [800, 600], "store": str(tmp_path / "data")}
    return {**base, **fields}


# -- dest: where getters write on the host ------------------------------------------------------------


@pytest.mark.parametrize(("dest", "why"), [
    ("/tmp/osgym-pwned.txt", "an absolute path"),
    ("../../osgym-pwned.txt", "climbs out with '..'"),
    ("~/osgym-pwned.txt", "'~' is not expanded"),
])
def test_a_dest_that_leaves_the_scratch_directory_fails_at_load(dest: str, why: str) -> None:
    bad = _task("t-dest", func="compare_text_file", result={"type": "vm_file", "path": f"{HOME}/a", "dest": "a"},
                expected={"type": "vm_file", "path": f"{HOME}/b", "dest": dest})
    with pytest.raises(TaskLoadError, match=r"task t-dest .*evaluator\.expected\.dest: expected a relative") as info:
        load_task(bad)
    assert why in str(info.value) and repr(dest) in str(info.value)


def test_the_scratch_directory_refuses_absolute_dotdot_and_symlinked_names(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("original")
    with Scratch() as s:
        (s.root / "linkdir").symlink_to(outside)
        (s.root / "linkfile").symlink_to(outside / "keep.txt")
        for name, why in [(str(outside / "new.txt"), "absolute"), ("../outside/new.txt", "'..'"),
                          ("linkdir/new.txt", "symlink"), ("linkfile", "symlink"), ("", "empty")]:
            with pytest.raises(EvaluatorError, match=r"task t: evaluator\.result\.dest: ") as info:
                s.write(name, b"pwned", where="task t: evaluator.result.dest", error=EvaluatorError)
            assert why in str(info.value), info.value
        inside = s.write("sub/ok.txt", b"fine", where="task t: evaluator.result.dest", error=EvaluatorError)
        assert inside == s.root / "sub" / "ok.txt" and inside.read_bytes() == b"fine"
    assert sorted(p.name for p in outside.iterdir()) == ["keep.txt"]
    assert (outside / "keep.txt").read_text() == "original"


@pytest.mark.docker
@pytest.mark.parametrize("kind", ["absolute", "dotdot"])
def test_a_getter_dest_outside_the_scratch_directory_writes_nothing_on_the_host(
    taskfiles_pool: ReplicaPool, tmp_path: Path, kind: str
) -> None:
    """The runtime check holds even for a task that skipped load-time validation."""
    name = f"osgym-pwned-{uuid.uuid4().hex[:8]}.txt"
    target = tmp_path / name if kind == "absolute" else Path(tempfile.gettempdir()) / name
    dest = str(target) if kind == "absolute" else f"../{name}"
    task = load_task(_task(
        "t-dest-run", config=[{"type": "execute", "parameters": {"command": ["sh", "-c", "echo pwned > /tmp/p"]}}],
        func="file_exists", result={"type": "vm_file", "path": "/tmp/p", "dest": "ok.txt"}))
    getter = task.evaluator.result
    assert getter is not None and not isinstance(getter, list) and getter.model_extra is not None
    getter.model_extra["dest"] = dest  # as a task built around load_task's checks would carry it
    try:
        traj, _ = _on_replica(taskfiles_pool, task)
        assert not target.exists(), f"the task wrote {target} on the host"
    finally:
        target.unlink(missing_ok=True)
    assert traj.termination == "error" and traj.error_class == "evaluator_error", traj.error_message
    assert "task t-dest-run: evaluator.result.dest:" in traj.error_message and repr(dest) in traj.error_message


FILE_METRIC_CASES = [
    ("compare_text_file", {}),
    ("compare_table", {"rules": [{"type": "sheet_data", "sheet_idx0": 0, "sheet_idx1": "EI0"}]}),
    ("compare_docx_files", {}),
    ("compare_pptx_files", {}),
    ("compare_csv", {}),
]


@pytest.mark.docker
@pytest.mark.parametrize(("func", "options"), FILE_METRIC_CASES, ids=[c[0] for c in FILE_METRIC_CASES])
def test_a_file_metric_opens_only_files_a_getter_fetched(taskfiles_pool: ReplicaPool, tmp_path: Path, func: str,
                                                         options: dict[str, Any]) -> None:
    """A ``rule`` getter handing a file metric a host path (a secret, /dev/zero to exhaust memory, or a
    list of them) is refused before the metric opens anything."""
    secret = tmp_path / "host-secret.txt"
    secret.write_text("AWS_SECRET=do-not-leak\n")
    for tid, path in (("t-metric-zero", "/dev/zero"), ("t-metric-secret", str(secret)),
                      ("t-metric-list", [str(secret)])):
        spec = _task(tid, func=func, result={"type": "rule", "rules": path},
                     expected={"type": "rule", "rules": str(secret)})
        spec["evaluator"]["options"] = options
        task = load_task(spec)
        t0 = time.monotonic()
        traj, _ = _on_replica(taskfiles_pool, task)
        assert time.monotonic() - t0 < 60
        assert traj.error_class == "evaluator_error", traj.error_message
        assert f"task {tid}: evaluator.result: {func} compares files a vm_file or cloud_file getter " \
               f"fetched, actual {path!r}" in traj.error_message, traj.error_message


def test_every_metric_that_opens_files_says_so() -> None:
    """The evaluator confines only metrics marked ``files``: every metric of a file family must be."""
    from osgym.tasks import metrics

    names = metrics.METRICS.names()
    for name in names:
        m = metrics.get(name)
        family = m.func.__module__.rsplit(".", 1)[-1]
        if family in ("table", "docs", "slides", "pdf") or name == "compare_text_file":
            assert m.files, f"{name} ({family}) opens files but is not marked files=True"


# -- sources: which host files a task may read ---------------------------------------------------------


def test_local_files_are_refused_unless_the_operator_names_a_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OSGYM_TASK_FILES_DIR", raising=False)
    for source in ("/etc/hostname", "file:///etc/hostname", "notes.txt"):
        with pytest.raises(SetupError, match=r"task t: config\[0\]\.parameters\.files\[0\]\.url: local files are not "
                                             r"allowed: the operator has not set OSGYM_TASK_FILES_DIR"):
            read_task_file(source, where="task t: config[0].parameters.files[0].url", error=SetupError)


def test_remote_urls_stay_refused_and_odd_schemes_fail_at_load() -> None:
    with pytest.raises(SetupError, match="remote URLs cannot be fetched here"):
        read_task_file("https://example.org/a.docx", where="task t: x", error=SetupError, root=Path("/nonexistent"))
    bad = _task("t-scheme", config=[{"type": "download", "parameters": {
        "files": [{"url": "ftp://example.org/x", "path": f"{HOME}/x"}]}}], func="exact_match",
        result={"type": "rule", "rules": {}})
    with pytest.raises(TaskLoadError, match=r"task t-scheme .*config\[0\]\.parameters\.files\[0\]\.url: expected an "
                                            r"http\(s\) URL, a file:// URL or a path"):
        load_task(bad)
    bad["config"][0]["parameters"]["files"][0]["url"] = "file://otherhost/etc/passwd"
    with pytest.raises(TaskLoadError, match="names this machine only"):
        load_task(bad)


def test_only_regular_files_inside_the_directory_are_read(taskfiles_root: Path, tmp_path: Path) -> None:
    secret = tmp_path / "host-secret.txt"
    (taskfiles_root / "escape").symlink_to(secret)
    (taskfiles_root / "escape-dir").symlink_to(tmp_path)
    (taskfiles_root / "inner-link").symlink_to(taskfiles_root / "notes.txt")
    os.mkfifo(taskfiles_root / "fifo")
    (taskfiles_root / "sub").mkdir()
    fake_home = tmp_path / "home"
    (fake_home / ".aws").mkdir(parents=True)
    (fake_home / ".aws" / "credentials").write_text("[default]\naws_secret_access_key=x\n")

    def read(source: str) -> bytes:
        return read_task_file(source, where="task t: evaluator.expected.path", error=EvaluatorError)

    for ok in ("notes.txt", str(taskfiles_root / "notes.txt"), f"file://{taskfiles_root}/notes.txt",
               "sub/../notes.txt", "inner-link"):
        assert read(ok) == b"allowed content\n", ok
    outside = [str(secret), f"file://{secret}", "../host-secret.txt", "escape", "escape-dir/host-secret.txt",
               "/proc/self/environ", "file:///proc/self/environ", str(fake_home / ".aws" / "credentials"),
               f"{taskfiles_root}/../host-secret.txt"]
    for source in outside:
        with pytest.raises(EvaluatorError, match=r"task t: evaluator\.expected\.path: .* is outside "
                                                 r"OSGYM_TASK_FILES_DIR") as info:
            read(source)
        assert "do-not-leak" not in str(info.value)
    t0 = time.monotonic()
    for special, why in (("fifo", "not a regular file"), ("sub", "not a regular file"), ("missing", "No such file")):
        with pytest.raises(EvaluatorError, match=why):
            read(special)
    assert time.monotonic() - t0 < 5, "a FIFO must not block the reader"


def _upload(tid: str, source: str, key: str = "local_path", step: str = "upload_file") -> TaskSpec:
    return load_task(_task(tid, config=[{"type": step, "parameters": {"files": [{key: source,
                                                                                 "path": f"{HOME}/got.txt"}]}}],
                           func="exact_match", result={"type": "vm_command_line", "command": f"cat {HOME}/got.txt",
                                                       "shell": True},
                           expected={"type": "rule", "rules": {"expected": "allowed content\n"}}))


@pytest.mark.docker
def test_setup_uploads_only_files_from_the_operators_directory(
    taskfiles_pool: ReplicaPool, taskfiles_root: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "host-secret.txt"
    (taskfiles_root / "escape").symlink_to(secret)
    hostile = [
        ("t-up-abs", str(secret), "local_path", "upload_file"),
        ("t-up-link", "escape", "local_path", "upload_file"),
        ("t-dl-environ", "file:///proc/self/environ", "url", "download"),
        ("t-dl-dotdot", "file://" + str(taskfiles_root) + "/../host-secret.txt", "url", "download"),
    ]
    for tid, source, key, step in hostile:
        traj, seen = _on_replica(taskfiles_pool, _upload(tid, source, key, step),
                                 check=f"test -e {HOME}/got.txt && echo PRESENT || echo ABSENT")
        assert traj.error_class == "setup_error", (tid, traj.error_message)
        assert f"task {tid}: config[0].parameters.files[0].{key}:" in traj.error_message, traj.error_message
        assert "outside OSGYM_TASK_FILES_DIR" in traj.error_message and "do-not-leak" not in traj.error_message
        assert seen.strip() == "ABSENT", f"{tid}: the host file reached the replica"

    traj, _ = _on_replica(taskfiles_pool, _upload("t-up-ok", "notes.txt"))
    assert (traj.error_class, traj.termination, traj.score) == (None, "done", 1.0), traj.error_message


@pytest.mark.docker
def test_cloud_file_reads_only_from_the_operators_directory(
    taskfiles_pool: ReplicaPool, taskfiles_root: Path, tmp_path: Path
) -> None:
    def task(tid: str, source: str) -> TaskSpec:
        make = f"printf 'allowed content\\n' > {HOME}/result.txt"
        return load_task(_task(tid, config=[{"type": "execute", "parameters": {"command": make, "shell": True}}],
                               func="compare_text_file",
                               result={"type": "vm_file", "path": f"{HOME}/result.txt", "dest": "result.txt"},
                               expected={"type": "cloud_file", "path": source, "dest": "expected.txt"}))

    traj, _ = _on_replica(taskfiles_pool, task("t-cloud-secret", str(tmp_path / "host-secret.txt")))
    assert traj.error_class == "evaluator_error", traj.error_message
    assert "task t-cloud-secret: evaluator.expected.path:" in traj.error_message
    assert "outside OSGYM_TASK_FILES_DIR" in traj.error_message

    traj, _ = _on_replica(taskfiles_pool, task("t-cloud-ok", "notes.txt"))
    assert (traj.error_class, traj.score) == (None, 1.0), traj.error_message


# -- recovery: bad runs fail before any replica starts ------------------------------------------------


def test_a_policy_option_typo_is_refused_naming_the_key_and_the_allowed_ones(tmp_path: Path) -> None:
    image = "osgym/desktop:never-used"  # the recipe fails to load, so no image is looked at
    for policy, named in [({"name": "scripted", "options": {"noize": 0.2}}, ["'noize'", "allowed: noise"]),
                          ({"name": "noop", "options": {"seed": 1}}, ["'seed'", "allowed: none"]),
                          ({"name": "random", "options": {"max_action": 3}}, ["'max_action'", "max_actions"]),
                          ({"name": "openai", "options": {"modle": "m"}}, ["'modle'", "model"])]:
        with pytest.raises(ConfigError, match="rejected: unknown option") as info:
            run_collection(_recipe(image, tmp_path, policy=policy))
        assert all(n in str(info.value) for n in named), info.value
    with pytest.raises(ConfigError, match=r"option noise: expected a probability in \[0, 1\], actual 3.0"):
        run_collection(_recipe(image, tmp_path, policy={"name": "scripted", "options": {"noise": 3}}))


@pytest.mark.docker
def test_osgym_collect_with_a_policy_typo_starts_no_replica(
    image: str, docker_client: docker.DockerClient, tmp_path: Path
) -> None:
    t0 = time.time()
    proc, out = _osgym_collect(_recipe(image, tmp_path, policy={"name": "scripted", "options": {"noize": 0.2}}),
                               tmp_path, env={})
    elapsed = time.time() - t0
    assert proc.returncode == 2, out[-3000:]
    assert "unknown option 'noize' (allowed: noise)" in out and "Traceback" not in out, out[-3000:]
    assert elapsed < FAST_S, f"took {elapsed:.0f} s"
    assert _created_by(docker_client, t0, proc.pid) == []


@pytest.fixture
def refused_endpoint() -> Iterator[str]:
    """An S3 endpoint URL on 127.0.0.1 whose port refuses connections: bound, never listening."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{s.getsockname()[1]}"


@pytest.mark.docker
def test_an_s3_store_that_refuses_connections_fails_the_run_before_any_replica(
    image: str, docker_client: docker.DockerClient, tmp_path: Path, refused_endpoint: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    env = {"AWS_ENDPOINT_URL": refused_endpoint, "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    recipe = _recipe(image, tmp_path, store="s3://osgym-nowhere/pre")

    t0 = time.time()
    with pytest.raises(StoreError) as info:
        run_collection(recipe)
    elapsed = time.time() - t0
    assert elapsed < FAST_S, f"took {elapsed:.0f} s"
    message = str(info.value)
    assert "S3 HeadBucket osgym-nowhere failed after 2 attempts" in message and "Could not connect" in message
    assert f"Check that the endpoint {refused_endpoint} is up" in message, message
    assert _created_by(docker_client, t0, os.getpid()) == []

    t0 = time.time()
    proc, out = _osgym_collect(recipe, tmp_path, env=env)
    elapsed = time.time() - t0
    assert proc.returncode == 2 and "Could not connect" in out and "Traceback" not in out, out[-3000:]
    assert elapsed < FAST_S, f"took {elapsed:.0f} s"
    assert _created_by(docker_client, t0, proc.pid) == []


@pytest.mark.docker
def test_a_read_only_local_store_fails_osgym_collect_before_any_replica(
    image: str, docker_client: docker.DockerClient, tmp_path: Path
) -> None:
    """The store directory exists but is mounted read-only (in a mount namespace of the command's own)."""
    # the suite runs as root (make test starts dockerd); a skip here would hide the read-only case
    assert os.geteuid() == 0 and shutil.which("unshare"), "needs root and unshare(1) for a private read-only bind mount"
    store = tmp_path / "ro-store"
    (store / "sec-probe").mkdir(parents=True)
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(yaml.safe_dump(_recipe(image, tmp_path, store=str(store))))
    script = (f'mount --bind -o ro "{store}" "{store}" && '
              f'exec "{sys.executable}" -m osgym collect "{recipe}" --no-report')
    t0 = time.time()
    # unshare without --fork execs the shell, which execs python: the pid Docker records as owner is proc.pid
    proc = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sh", "-c", script], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "COLUMNS": "400"})
    out, _ = proc.communicate(timeout=300)
    elapsed = time.time() - t0
    assert proc.returncode == 2, out[-3000:]
    assert f"cannot write {store}/sec-probe/.osgym-probe-" in out and "Read-only file system" in out, out[-3000:]
    assert "Traceback" not in out and elapsed < FAST_S, (elapsed, out[-3000:])
    assert _created_by(docker_client, t0, proc.pid) == []
    assert list((store / "sec-probe").iterdir()) == []


@pytest.fixture(scope="module")
def taskfiles_seaweed() -> Iterator[SeaweedS3]:
    """A SeaweedFS endpoint with the usual read-write identity and a read-only one."""
    def add_reader(server: SeaweedS3) -> None:
        config = json.loads((server.workdir / "s3.json").read_text())
        config["identities"].append({"name": "reader", "actions": ["Read", "List"],
                                     "credentials": [{"accessKey": READONLY_KEY, "secretKey": READONLY_SECRET}]})
        (server.workdir / "s3.json").write_text(json.dumps(config))

    with running_seaweed("osgym-weed-sec-", add_reader) as server:
        yield server


@pytest.mark.docker
def test_a_read_only_s3_store_fails_the_run_before_any_replica(
    image: str, docker_client: docker.DockerClient, tmp_path: Path, taskfiles_seaweed: SeaweedS3,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    prefix = f"ro-{uuid.uuid4().hex[:8]}"
    for k, v in {"AWS_ENDPOINT_URL": taskfiles_seaweed.endpoint, "AWS_ACCESS_KEY_ID": READONLY_KEY,
                 "AWS_SECRET_ACCESS_KEY": READONLY_SECRET, "AWS_REGION": "us-east-1"}.items():
        monkeypatch.setenv(k, v)
    t0 = time.time()
    with pytest.raises(StoreError, match=r"S3 PUT s3://.*/\.osgym-probe-.* failed \(AccessDenied.*refused the "
                                         r"credentials") as info:
        run_collection(_recipe(image, tmp_path, store=f"s3://{BUCKET}/{prefix}"))
    assert time.time() - t0 < FAST_S, info.value
    assert _created_by(docker_client, t0, os.getpid()) == []


def test_the_store_probe_leaves_nothing_behind(taskfiles_seaweed: SeaweedS3, tmp_path: Path) -> None:
    prefix = f"rw-{uuid.uuid4().hex[:8]}"
    opts = S3Options(endpoint_url=taskfiles_seaweed.endpoint, region="us-east-1", access_key=ACCESS_KEY,
                     secret_key=SECRET_KEY)
    open_backend(f"s3://{BUCKET}/{prefix}", "ds", opts).check()
    listed = taskfiles_seaweed.client().list_objects_v2(Bucket=BUCKET, Prefix=prefix)  # type: ignore[attr-defined]
    assert listed.get("KeyCount", 0) == 0, listed.get("Contents")

    open_backend(tmp_path / "store", "ds").check()
    assert list((tmp_path / "store" / "ds").iterdir()) == []


def test_a_local_store_that_cannot_take_a_directory_fails_with_a_store_error(tmp_path: Path) -> None:
    """A write that fails mid-run says so as a StoreError naming the path, never as a bare OSError traceback."""
    backend = open_backend(tmp_path / "store", "ds")
    backend.check()
    (tmp_path / "store" / "ds" / "pool_events").write_text("a file where a directory belongs")
    with pytest.raises(StoreError, match=r"cannot create .*/ds/pool_events/run=r1: .*Not a directory"):
        backend.put("pool_events/run=r1/events.parquet", b"x")
