"""The production topology of docs/operations.md, run with its own commands, in its order, on real parts.

A private PostgreSQL cluster (tests/deploy/postgres.py) backs `prefect server start`; two replica-host
workers each drive their own Docker daemon (the main one, and the second daemon of tests/second_daemon.py
standing in for a second host); a control worker runs the flows that hold no replicas. The commands are
read from the "Production" section's code block and run as written, with only the literals below
changed (hosts, ports, secrets, paths): a command this test does not know fails it, so the section and
the test cannot drift apart. `make images` on a replica host is stood in for by the fixtures: the main
daemon's image is built, the second daemon gets a copy (building there would run debootstrap again).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import docker
import duckdb
import httpx
import pytest
import yaml

from osgym.collection.collector import plan_jobs
from osgym.collection.recipe import load_recipe
from osgym.replicas.pool import POOL_LABEL
from tests.deploy.conftest import ROOT, free_port
from tests.deploy.postgres import PrivatePostgres, running_postgres
from tests.second_daemon import SecondDaemon

DOCS = ROOT / "docs" / "operations.md"
EPISODES, SHARDS = 8, 4
BACKGROUND = (("prefect", "server", "start"), ("prefect", "worker", "start"))
HOSTS = ("host1", "host2")


def production_commands() -> list[str]:
    """The command lines of the Production section's code block, comments and blank lines left out."""
    text = DOCS.read_text()
    section = text[text.index("## Production"):]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block, "docs/operations.md: the Production section has no bash block"
    return [line for line in block.group(1).splitlines() if line.strip() and not line.lstrip().startswith("#")]


class Topology:
    """Runs the section's lines: `export` sets the shell's environment, `prefect` and `osgym` run as
    modules of this Python, servers and workers stay in the background until :meth:`stop`."""

    def __init__(self, home: Path, replacements: dict[str, str], hosts: dict[str, dict[str, str]]):
        self.home = home
        self.replacements = replacements
        self.hosts = hosts
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
        self.env.update(PREFECT_HOME=str(home), PREFECT_UI_ENABLED="false", DO_NOT_TRACK="1", PWD=str(ROOT),
                        # test tuning, not a command: workers look for runs every 2 s, not every 10 s
                        PREFECT_WORKER_QUERY_SECONDS="2", PREFECT_WORKER_PREFETCH_SECONDS="1")
        self.env.pop("PREFECT_PROFILES_PATH", None)
        self.procs: list[tuple[str, subprocess.Popen[bytes]]] = []
        self.outputs: list[str] = []
        self.timings: list[tuple[str, float]] = []

    def run(self, line: str) -> None:
        started = time.monotonic()
        self._run(line)
        self.timings.append((line, time.monotonic() - started))

    def _run(self, line: str) -> None:
        # one pass, so that a replacement's text (a URL, a password) is never replaced again
        pattern = "|".join(re.escape(k) for k in sorted(self.replacements, key=len, reverse=True))
        line = re.sub(pattern, lambda m: self.replacements[m.group(0)], line)
        words = shlex.split(line)
        if words[0] == "export":
            key, _, value = words[1].partition("=")
            self.env[key] = value
            return
        if words == ["make", "images"]:
            return  # the image fixtures did it on both daemons (see the module docstring)
        assigns: dict[str, str] = {}
        while "=" in words[0] and words[0].split("=")[0].isidentifier():
            key, _, value = words.pop(0).partition("=")
            assigns[key] = value
        assert words[0] in ("prefect", "osgym"), f"docs/operations.md gained a command this test cannot run: {line}"
        if tuple(words[:3]) == BACKGROUND[0]:
            self._background("server", words, assigns, {})
            self._wait_for_server()
        elif tuple(words[:3]) == BACKGROUND[1] and "$(hostname)" in line:
            for host, host_env in self.hosts.items():  # one per replica host
                self._background(host, [w.replace("$(hostname)", host) for w in words],
                                 {k: v.replace("$(hostname)", host) for k, v in assigns.items()}, host_env)
        elif tuple(words[:3]) == BACKGROUND[1]:
            self._background(words[words.index("--name") + 1], words, assigns, {})
        else:
            self.outputs.append(self.call(*words, env=assigns))

    def call(self, *words: str, env: dict[str, str] | None = None) -> str:
        """Run one command to its end in the shell's environment; its output."""
        p = subprocess.run([sys.executable, "-m", *words], cwd=ROOT, env={**self.env, **(env or {})},
                           capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, f"{shlex.join(words)}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}\n{self.logs()}"
        return p.stdout

    def _background(self, name: str, words: list[str], assigns: dict[str, str], host_env: dict[str, str]) -> None:
        log = open(self.home / f"{name}.log", "wb")  # noqa: SIM115
        proc = subprocess.Popen([sys.executable, "-m", *words], cwd=ROOT, env={**self.env, **host_env, **assigns},
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append((name, proc))

    def _wait_for_server(self) -> None:
        url = f"http://127.0.0.1:{self.replacements['4200']}/api/health"
        user, _, password = self.env["PREFECT_SERVER_API_AUTH_STRING"].partition(":")
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and self.procs[0][1].poll() is None:
            try:
                if httpx.get(url, auth=(user, password), timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise AssertionError(f"prefect server did not start:\n{self.logs()}")

    def logs(self) -> str:
        return "\n".join(f"--- {name}.log\n{(self.home / f'{name}.log').read_text(errors='replace')[-2500:]}"
                         for name, _ in self.procs)

    def stop(self) -> None:
        for _, p in reversed(self.procs):  # workers first, the server last
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


@dataclass
class Production:
    shell: Topology
    postgres: PrivatePostgres
    recipe: Path
    store: Path
    seconds: float


@pytest.fixture(scope="module")
def production(second_daemon: SecondDaemon, image: str,
               tmp_path_factory: pytest.TempPathFactory) -> Iterator[Production]:
    """The section's commands run once, from the server to the report; the processes stay up for the tests."""
    base = tmp_path_factory.mktemp("production")
    store = base / "store"
    recipe = {"name": "nightly", "dataset": "nightly", "episodes": EPISODES, "replicas": 1, "standby": 1,
              "screen": [1280, 800], "tasks": ["terminal-create-file", "terminal-rename-file"], "image": image,
              "store": str(store), "max_steps": 10, "episode_timeout_s": 120, "settle_s": 0.5}
    (base / "nightly.yaml").write_text(yaml.safe_dump(recipe))
    assert docker.DockerClient(base_url=second_daemon.url).images.get(image)  # what `make images` leaves there
    (base / "home").mkdir()
    with running_postgres() as pg:
        replacements = {
            "postgresql+asyncpg://prefect:SECRET@db-host:5432/prefect": pg.url,
            "osgym:LOGIN-SECRET": f"osgym:{secrets.token_urlsafe(12)}",
            "--host 0.0.0.0": "--host 127.0.0.1",
            "prefect-host": "127.0.0.1",
            "4200": str(free_port()),
            "datasets/nightly.yaml": str(base / "nightly.yaml"),
            "s3://bucket/osgym": str(store),
        }
        shell = Topology(base / "home", replacements, {"host1": {}, "host2": {"DOCKER_HOST": second_daemon.url}})
        started = time.monotonic()
        try:
            for line in production_commands():
                shell.run(line)
            yield Production(shell, pg, base / "nightly.yaml", store, time.monotonic() - started)
        finally:
            shell.stop()


def test_the_production_section_runs_as_written(production: Production, second_daemon: SecondDaemon) -> None:
    root = production.store / "nightly"
    manifests = list((root / "_manifests").glob("*.json"))
    assert len(manifests) == 1, manifests
    manifest = json.loads(manifests[0].read_text())
    run_id = manifests[0].stem
    assert manifest["episodes"] == EPISODES
    assert manifest["config"]["parts"] == [f"s{i:03d}" for i in range(SHARDS)]
    listed = sorted(e["path"] for e in manifest["tables"]["episodes"])
    assert listed == sorted(str(p.relative_to(root)) for p in (root / "episodes").glob("*/*.parquet"))
    rows = duckdb.sql(f"select episode_id, host, success from read_parquet({[str(root / p) for p in listed]})")
    rows = rows.fetchall()
    ids = [r[0] for r in rows]
    requested = {j.episode_id for j in plan_jobs(load_recipe(production.recipe), run_id)}
    assert sorted(ids) == sorted(requested) and len(ids) == len(set(ids)) == EPISODES
    assert {r[1] for r in rows} == set(HOSTS)  # each replica host ran shards
    assert all(r[2] for r in rows)
    report = production.shell.outputs[-1]  # `osgym report`'s tables
    for row in ("episodes", "successes"):
        assert re.search(rf"│ {row}\s+│\s+{EPISODES} │", report), report

    # the runs are in PostgreSQL: the scale-out, its shards and the report ran, and completed, from their
    # deployments' queues (the runs the schedules made for later are still waiting)
    runs = production.postgres.sql(
        "select d.name, q.name, r.state_type from flow_run r join deployment d on d.id = r.deployment_id "
        "join work_queue q on q.id = r.work_queue_id where r.state_type <> 'SCHEDULED' order by 1",
        database="prefect").split()
    assert runs == ["collect-scaleout|control|COMPLETED", *["collect-shard|default|COMPLETED"] * SHARDS,
                    "report|control|COMPLETED"], runs
    d2 = docker.DockerClient(base_url=second_daemon.url)
    assert not d2.containers.list(all=True, filters={"label": POOL_LABEL})
    print(f"production topology, from `prefect server start` to `osgym report`: {production.seconds:.0f} s")
    for line, seconds in production.shell.timings:
        print(f"  {seconds:6.1f} s  {line[:100]}")


def test_a_schedule_fires_on_the_postgres_backed_server(production: Production) -> None:
    """The report deployment, given a 10-second schedule, gets runs from the server's scheduler that land."""
    params = json.dumps({"dataset": "nightly", "store": str(production.store)})
    production.shell.call("prefect", "--no-prompt", "deploy", "--name", "report", "--interval", "10",
                          "--params", params)
    query = ("select r.state_type from flow_run r join deployment d on d.id = r.deployment_id "
             "where d.name = 'report' and r.auto_scheduled and r.state_type = 'COMPLETED'")
    deadline = time.monotonic() + 120
    while not production.postgres.sql(query, database="prefect").split():
        assert time.monotonic() < deadline, f"no scheduled report run completed in 120 s\n{production.shell.logs()}"
        time.sleep(2)


def _descendants(pid: int) -> list[int]:
    """``pid``'s processes, children first found through /proc's PPid (the worker's flow-run processes)."""
    parents: dict[int, int] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                status = (d / "status").read_text()
            except OSError:
                continue
            parents[int(d.name)] = int(re.search(r"^PPid:\s+(\d+)", status, re.M).group(1))  # type: ignore[union-attr]
    found, frontier = [], [pid]
    while frontier:
        frontier = [child for child, parent in parents.items() if parent in frontier]
        found += frontier
    return found


def test_a_lost_host_s_shard_runs_again_on_the_survivor(production: Production, second_daemon: SecondDaemon,
                                                         docker_client: docker.DockerClient) -> None:
    """host2 dies (its worker, the shard's process and its Docker daemon, SIGKILL) while its shard runs: the
    automation of automations.yaml marks the silent run Crashed, collect-scaleout runs the shard again on host1,
    and the run completes by itself, every episode once, nothing left on host1. Runs last: it kills the daemon
    (and starts it again for the modules after this one)."""
    shell, pg = production.shell, production.postgres
    recipe = yaml.safe_load(production.recipe.read_text()) | {"name": "lost", "dataset": "lost", "episodes": 12}
    (path := production.recipe.with_name("lost.yaml")).write_text(yaml.safe_dump(recipe))
    host2 = next(p for name, p in shell.procs if name == "host2")
    runner = subprocess.Popen(
        [sys.executable, "-m", "prefect", "deployment", "run", "collect-scaleout/collect-scaleout", "--params",
         json.dumps({"recipe": str(path), "shards": SHARDS}), "--watch"],
        cwd=ROOT, env=shell.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    shard_runs = ("select r.name, r.state_type, r.infrastructure_pid from flow_run r join deployment d on "
                  "d.id = r.deployment_id where d.name = 'collect-shard' and r.parameters->'recipe'->>'dataset' "
                  "= 'lost' order by r.created")
    try:
        victim = None
        deadline = time.monotonic() + 300
        while victim is None:
            assert time.monotonic() < deadline and runner.poll() is None, \
                f"no shard ran on host2 in 300 s: {pg.sql(shard_runs, database='prefect')}\n{shell.logs()}"
            time.sleep(1)
            mine = set(_descendants(host2.pid))
            for row in pg.sql(shard_runs, database="prefect").split():
                name, state, infra = row.split("|")
                if state == "RUNNING" and infra and int(infra.rsplit(":", 1)[-1]) in mine:
                    victim = name
        time.sleep(5)  # let it commit some of its episodes first
        for pid in [*_descendants(host2.pid), host2.pid]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        second_daemon.kill()
        killed = time.monotonic()
        out, _ = runner.communicate(timeout=600)
        assert runner.returncode == 0, f"{out[-3000:]}\n{shell.logs()}"
        print(f"host2 killed while it ran {victim}; the scale-out completed {time.monotonic() - killed:.0f} s later")
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()

    states = [row.split("|")[:2] for row in pg.sql(shard_runs, database="prefect").split()]
    assert [victim, "CRASHED"] in states, states
    assert sum(state == "COMPLETED" for _, state in states) == SHARDS and len(states) == SHARDS + 1, states
    root = production.store / "lost"
    (manifest_path,) = (root / "_manifests").glob("*.json")
    manifest = json.loads(manifest_path.read_text())
    listed = [str(root / e["path"]) for e in manifest["tables"]["episodes"]]
    ids = [r[0] for r in duckdb.sql(f"select episode_id from read_parquet({listed})").fetchall()]
    planned = {j.episode_id for j in plan_jobs(load_recipe(path), manifest_path.stem)}
    assert manifest["episodes"] == 12 and len(ids) == len(set(ids)) == 12 and set(ids) == planned, sorted(ids)
    # the survivor holds nothing of the run: every pool it ran for the run is gone
    events = duckdb.sql(f"select distinct pool from read_parquet('{root}/pool_events/**/*.parquet') "
                        "where host = 'host1'").fetchall()
    assert events
    for (pool,) in events:
        assert not docker_client.containers.list(all=True, filters={"label": f"{POOL_LABEL}={pool}"}), pool
    # host2 comes back: the dead shard's replicas are still there, stopped, until reaped (as reap-replicas does)
    d2 = second_daemon.start()
    for c in d2.containers.list(all=True, filters={"label": POOL_LABEL}):
        c.remove(force=True)
