"""The offline asset cache end to end: ``osgym tasks fetch-assets`` from an HTTP server the test starts on
127.0.0.1 into a local directory and into S3 (SeaweedFS), read back at run time by URL only from the cache,
and ``osgym tasks check --cache`` refusing a task whose asset is missing."""

from __future__ import annotations

import hashlib
import json
import re
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from osgym.cli import app
from osgym.collection import load_recipe, plan_jobs
from osgym.errors import ConfigError, EvaluatorError, SetupError, StoreError
from osgym.replicas.client import Replica
from osgym.tasks import getters
from osgym.tasks.asset_fetch import fetch_assets
from osgym.tasks.asset_urls import missing_assets
from osgym.tasks.assets import AssetCache, local_copy
from osgym.tasks.files import read_task_file
from osgym.tasks.getters import Context
from osgym.tasks.setup import run_setup
from osgym.tasks.spec import load_task
from tests.store.store_support import ACCESS_KEY, BUCKET, SECRET_KEY, SeaweedS3, running_seaweed

XLSX = b"PK\x03\x04 a generated workbook " + bytes(range(256)) * 40
DOCX = b"PK\x03\x04 a generated document " + b"\x00\xff" * 3000
PNG = b"\x89PNG\r\n\x1a\n generated pixels " + bytes(range(200))
BIG = b"x" * (2 * 2**20 + 1)  # over a 1 MiB cap


class Assets(ThreadingHTTPServer):
    """Generated files on 127.0.0.1, with every request counted by path."""

    files: dict[str, tuple[bytes | None, str]] = {
        "/a.xlsx": (XLSX, "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
        "/b.docx": (DOCX, "application/octet-stream"), "/c.png": (PNG, "image/png"),
        "/big.bin": (BIG, "application/octet-stream"),
    }

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.hits: Counter[str] = Counter()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}{path}"


class Handler(BaseHTTPRequestHandler):
    server: Assets

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.server.hits[self.path] += 1
        if self.path == "/flaky.txt" and self.server.hits[self.path] == 1:
            self.send_error(503, "try again")
            return
        if self.path == "/moved":
            self.send_response(302)
            self.send_header("Location", "/c.png")
            self.end_headers()
            return
        if self.path == "/big-stream.bin":  # no Content-Length: the cap must hold while reading
            self.send_response(200)
            self.end_headers()
            for _ in range(3):
                self.wfile.write(b"y" * 2**20)
            self.close_connection = True
            return
        files = {**self.server.files, "/flaky.txt": (b"ok", "text/plain")}
        body, ctype = files.get(self.path, (None, ""))
        if body is None:
            self.send_error(404, "no such file")
            return
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[Assets]:
    srv = Assets()
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()


@pytest.fixture(scope="module")
def seaweed() -> Iterator[SeaweedS3]:
    with running_seaweed("osgym-weed-assets-") as s:
        yield s


def _task(tid: str, config: list[dict[str, Any]], result: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"id": tid, "instruction": "x", "config": config,
            "evaluator": {"func": "compare_table", "options": {"rules": [{"type": "sheet_data", "sheet_idx0": 0,
                                                                          "sheet_idx1": "EI0"}]},
                          "result": result or {"type": "vm_file", "path": "/home/user/a.xlsx",
                                                                        "dest": "a.xlsx"},
                          "expected": {"type": "cloud_file", "path": "gold.xlsx", "dest": "gold.xlsx"}}}


def _tasks(root: Path, srv: Assets, *extra: str) -> dict[str, dict[str, Any]]:
    """Three OSWorld-shaped task files naming four URLs (one twice, one behind a redirect); ``extra`` URLs
    go in a fourth task's download step."""
    dl = {"type": "download", "parameters": {"files": [{"url": srv.url("/a.xlsx"), "path": "/home/user/a.xlsx"}]}}
    t1 = _task("t1", [dl])
    t1["evaluator"]["expected"]["path"] = srv.url("/b.docx")
    t2 = _task("t2", [dl, {"type": "upload_file", "parameters": {"files": [
        {"local_path": srv.url("/moved"), "path": "/home/user/c.png"}]}}])
    t2["evaluator"]["expected"] = {"type": "cloud_file", "multi": True, "path": [srv.url("/b.docx"),
                                   srv.url("/a.xlsx")], "dest": ["b.docx", "a.xlsx"], "gives": [0, 1]}
    tasks = {"calc/t1.json": t1, "multi_apps/t2.json": t2}
    if extra:
        tasks["os/t3.json"] = _task("t3", [{"type": "download", "parameters": {"files": [
            {"url": u, "path": f"/home/user/f{i}"} for i, u in enumerate(extra)]}}])
    tasks["Windows/skip.json"] = _task("w", [{"type": "download", "parameters": {"files": [
        {"url": srv.url("/excluded"), "path": "/home/user/x"}]}}])
    for rel, t in tasks.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(json.dumps(t))
    return tasks


def _fetch(tasks: Path, cache: str, *more: str) -> Any:
    return CliRunner().invoke(app, ["tasks", "fetch-assets", str(tasks), "--cache", cache, "--exclude", "Windows",
                                    "--allow-private-hosts", *more])


def test_fetch_assets_fills_a_local_cache_once_and_a_second_run_fetches_nothing(tmp_path: Path, server: Assets) -> None:
    _tasks(tmp_path / "tasks", server)
    cache_dir = tmp_path / "cache"
    first = _fetch(tmp_path / "tasks", str(cache_dir))
    assert first.exit_code == 0, first.output
    assert "fetched 3 (" in first.output and "already cached 0, failed 0" in first.output
    # each URL once, although t1 and t2 both name /a.xlsx and /b.docx; the excluded task's URL never
    assert server.hits == Counter({"/a.xlsx": 1, "/b.docx": 1, "/moved": 1, "/c.png": 1})
    manifest = json.loads((cache_dir / "manifest.json").read_text())
    assert manifest["format"] == "osgym-asset-cache/1"
    entry = manifest["assets"][server.url("/a.xlsx")]
    assert entry == {"sha256": hashlib.sha256(XLSX).hexdigest(), "size": len(XLSX),
                     "content_type": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"}
    assert manifest["assets"][server.url("/moved")]["sha256"] == hashlib.sha256(PNG).hexdigest()
    blobs = {p.name: p.read_bytes() for p in (cache_dir / "blobs").iterdir()}
    assert blobs == {hashlib.sha256(d).hexdigest(): d for d in (XLSX, DOCX, PNG)}
    # readable by other uids: a compatibility replica's server reads the cache through a mount
    assert {oct(p.stat().st_mode & 0o777) for p in [cache_dir / "manifest.json", *(cache_dir / "blobs").iterdir()]} \
        == {"0o644"}

    second = _fetch(tmp_path / "tasks", str(cache_dir))
    assert second.exit_code == 0, second.output
    assert "fetched 0 (0 B), already cached 3, failed 0" in second.output
    assert sum(server.hits.values()) == 4  # no request at all the second time


def test_failed_urls_are_reported_with_reasons_and_leave_nothing_in_the_cache(tmp_path: Path, server: Assets) -> None:
    _tasks(tmp_path / "tasks", server, server.url("/missing.xlsx"), server.url("/big.bin"),
           server.url("/big-stream.bin"))
    cache_dir = tmp_path / "cache"
    result = _fetch(tmp_path / "tasks", str(cache_dir), "--max-mib", "1")
    assert result.exit_code == 1, result.output
    out = result.output
    assert "fetched 3 (" in out and "failed 3" in out
    assert f"{server.url('/missing.xlsx')}: HTTP 404" in out and "os/t3.json: config[0].parameters.files[0].url" in out
    assert f"{server.url('/big.bin')}: 2.0 MiB is over the size cap of 1.0 MiB (raise it with --max-mib)" in out
    assert f"{server.url('/big-stream.bin')}: more than the size cap of 1.0 MiB" in out
    assert server.hits["/missing.xlsx"] == 1  # a 404 is not retried
    assets = json.loads((cache_dir / "manifest.json").read_text())["assets"]
    assert set(assets) == {server.url(p) for p in ("/a.xlsx", "/b.docx", "/moved")}
    assert sorted(p.name for p in (cache_dir / "blobs").iterdir()) == sorted(
        hashlib.sha256(d).hexdigest() for d in (XLSX, DOCX, PNG))  # no partial blob, no temporary file


def test_transient_failures_are_retried_and_private_hosts_refused_by_default(tmp_path: Path, server: Assets) -> None:
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "t.json").write_text(json.dumps(_task("t", [{"type": "download", "parameters": {
        "files": [{"url": server.url("/flaky.txt"), "path": "/home/user/f.txt"}]}}])))
    cache = AssetCache(tmp_path / "cache")
    refused = fetch_assets(tmp_path / "tasks", cache)
    assert not refused.ok and "resolves to the non-public address 127.0.0.1" in refused.results[0].reason
    assert server.hits["/flaky.txt"] == 0
    report = fetch_assets(tmp_path / "tasks", cache, allow_private_hosts=True, backoff_s=0)
    assert report.ok and [r.status for r in report.results] == ["fetched"] and server.hits["/flaky.txt"] == 2


def test_runtime_reads_by_url_from_the_cache_only_and_verify_sha256(tmp_path: Path, server: Assets,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    tasks = _tasks(tmp_path / "tasks", server)
    cache_dir = tmp_path / "cache"
    assert _fetch(tmp_path / "tasks", str(cache_dir)).exit_code == 0
    server.shutdown()  # from here on there is no network: the cache alone answers
    where = "task t1: config[0].parameters.files[0].url"
    monkeypatch.delenv("OSGYM_ASSET_CACHE", raising=False)
    with pytest.raises(SetupError, match=r"task t1: config\[0\]\.parameters\.files\[0\]\.url: remote URLs cannot be "
                                         r"fetched here .* has not set OSGYM_ASSET_CACHE"):
        read_task_file(server.url("/a.xlsx"), where=where, error=SetupError)
    monkeypatch.setenv("OSGYM_ASSET_CACHE", str(cache_dir))
    assert read_task_file(server.url("/a.xlsx"), where=where, error=SetupError) == XLSX
    assert read_task_file(server.url("/moved"), where=where, error=SetupError) == PNG

    # the cloud_file getter of t2 (multi) reads both from the cache into the scratch directory
    spec = load_task(tasks["multi_apps/t2.json"])
    g = spec.evaluator.expecteds[0]
    assert g is not None
    ctx = Context(None)  # type: ignore[arg-type]  # cloud_file reads no replica
    try:
        paths = getters.fetch(ctx, g.type, g.options, "task t2: evaluator.expected")
        assert [Path(p).read_bytes() for p in paths] == [DOCX, XLSX]
    finally:
        ctx.close()

    missing = server.url("/never-fetched.xlsx")
    # the cache's location stays in the operator's log: the message may reach a serve client
    with pytest.raises(EvaluatorError, match=re.escape(f"task t9: evaluator.expected.path: '{missing}' is not in the "
                                                       "asset cache (replicas are offline; run "
                                                       "`osgym tasks fetch-assets`")):
        read_task_file(missing, where="task t9: evaluator.expected.path", error=EvaluatorError)

    blob = cache_dir / "blobs" / hashlib.sha256(XLSX).hexdigest()
    blob.write_bytes(XLSX[:-1] + b"!")  # same size: only the hash tells
    with pytest.raises(SetupError, match=re.escape(f"{where}: the cached copy of '{server.url('/a.xlsx')}' is corrupt: "
                                                   f"blob {blob.name} has sha256 ")):
        read_task_file(server.url("/a.xlsx"), where=where, error=SetupError)


def test_missing_assets_and_tasks_check_refuse_a_task_naming_the_url(tmp_path: Path, server: Assets) -> None:
    tasks = _tasks(tmp_path / "tasks", server)
    t1, t2 = load_task(tasks["calc/t1.json"]), load_task(tasks["multi_apps/t2.json"])
    assert missing_assets(t1, None) == [server.url("/a.xlsx"), server.url("/b.docx")]
    cache = AssetCache(tmp_path / "cache")
    cache.add(server.url("/a.xlsx"), XLSX)
    cache.add(server.url("/b.docx"), DOCX)
    assert missing_assets(t1, cache) == []
    assert missing_assets(t2, AssetCache(tmp_path / "cache")) == [server.url("/moved")]

    result = CliRunner().invoke(app, ["tasks", "check", str(tmp_path / "tasks"), "--exclude", "Windows",
                                      "--cache", str(tmp_path / "cache")])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split() == ["domain", "loaded", "uncached", "live", "sites", "refused", "total"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[1:4]}
    assert rows["calc"] == ["1", "0", "0", "0", "1"] and rows["multi_apps"] == ["0", "1", "0", "0", "1"]
    assert ("loaded: 1 of 2 (50.0 %); every name has a function: 2 of 2 (100.0 %), with the files refused only for "
            "live sites or for uncached assets") in result.output
    assert f"     1  asset not cached: {server.url('/moved')}" in result.output
    plain = CliRunner().invoke(app, ["tasks", "check", str(tmp_path / "tasks"), "--exclude", "Windows"])
    assert "asset not cached" not in plain.output and "uncached" not in plain.output  # as it was without --cache


def test_a_task_folder_run_refuses_a_task_whose_asset_is_not_cached_before_any_replica(
        tmp_path: Path, server: Assets, monkeypatch: pytest.MonkeyPatch) -> None:
    _tasks(tmp_path / "tasks", server)
    recipe = load_recipe({"name": "assets", "task_dir": str(tmp_path / "tasks"), "episodes": 2,
                          "store": str(tmp_path / "data")})
    monkeypatch.delenv("OSGYM_ASSET_CACHE", raising=False)
    with pytest.raises(ConfigError, match=re.escape(f"asset not cached: {server.url('/a.xlsx')}")):
        plan_jobs(recipe, "r1")  # no cache at all: every URL is missing
    cache = AssetCache(tmp_path / "cache")
    for url, data in (("/a.xlsx", XLSX), ("/b.docx", DOCX)):
        cache.add(server.url(url), data)
    monkeypatch.setenv("OSGYM_ASSET_CACHE", str(tmp_path / "cache"))
    skip = recipe.model_copy(update={"on_refused": "skip", "task_dir": str(tmp_path / "tasks" / "calc")})
    assert {j.task.id for j in plan_jobs(skip, "r1")} == {"t1"}  # t1's two URLs are cached now
    with pytest.raises(ConfigError, match=re.escape(f"asset not cached: {server.url('/moved')}")):
        plan_jobs(recipe.model_copy(update={"task_dir": str(tmp_path / "tasks" / "multi_apps")}), "r1")


def test_fetch_assets_into_s3_then_read_back_at_run_time(tmp_path: Path, server: Assets, seaweed: SeaweedS3,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in {"AWS_ENDPOINT_URL": seaweed.endpoint, "AWS_ACCESS_KEY_ID": ACCESS_KEY,
                 "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_REGION": "us-east-1"}.items():
        monkeypatch.setenv(k, v)
    _tasks(tmp_path / "tasks", server, server.url("/missing.xlsx"))
    prefix = f"assets-{uuid.uuid4().hex[:8]}"
    cache = f"s3://{BUCKET}/{prefix}"
    first = _fetch(tmp_path / "tasks", cache)
    assert first.exit_code == 1 and "fetched 3 (" in first.output and "failed 1" in first.output, first.output
    listed = seaweed.client().list_objects_v2(Bucket=BUCKET, Prefix=prefix)  # type: ignore[attr-defined]
    keys = {o["Key"].removeprefix(prefix + "/") for o in listed["Contents"]}
    assert keys == {"manifest.json", *(f"blobs/{hashlib.sha256(d).hexdigest()}" for d in (XLSX, DOCX, PNG))}
    hits = sum(server.hits.values())
    second = _fetch(tmp_path / "tasks", cache)
    assert "fetched 0 (0 B), already cached 3, failed 1" in second.output, second.output
    assert sum(server.hits.values()) == hits + 1  # only the 404 was asked again

    monkeypatch.setenv("OSGYM_ASSET_CACHE", cache)
    where = "task t1: config[0].parameters.files[0].url"
    assert read_task_file(server.url("/b.docx"), where=where, error=SetupError) == DOCX
    with pytest.raises(SetupError, match=r"'http://127\.0\.0\.1:\d+/missing\.xlsx' is not in the asset cache \("):
        read_task_file(server.url("/missing.xlsx"), where=where, error=SetupError)

    # compatibility replicas mount a local mirror of an S3 cache (they are offline)
    mirror = local_copy(AssetCache(cache), tmp_path / "mirror")
    assert json.loads((mirror / "manifest.json").read_text())["assets"] == \
        json.loads(seaweed.client().get_object(Bucket=BUCKET, Key=f"{prefix}/manifest.json")["Body"].read())["assets"]  # type: ignore[attr-defined]
    assert {p.name: p.read_bytes() for p in (mirror / "blobs").iterdir()} == \
        {hashlib.sha256(d).hexdigest(): d for d in (XLSX, DOCX, PNG)}
    before = {p: p.stat().st_mtime_ns for p in mirror.rglob("*")}
    assert local_copy(AssetCache(cache), tmp_path / "mirror") == mirror
    assert {p: p.stat().st_mtime_ns for p in mirror.rglob("*")} == before  # nothing copied again
    assert local_copy(AssetCache(tmp_path / "mirror")) == mirror  # a local cache is its own copy
    docx = hashlib.sha256(DOCX).hexdigest()
    seaweed.client().put_object(Bucket=BUCKET, Key=f"{prefix}/blobs/{docx}", Body=b"changed")  # type: ignore[attr-defined]
    with pytest.raises(StoreError, match=f"corrupt: blob {docx}"):
        local_copy(AssetCache(cache), tmp_path / "mirror2")


@pytest.mark.docker
def test_setup_steps_put_the_cached_bytes_into_an_offline_replica(tmp_path: Path, server: Assets, replica: Replica,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    tasks = _tasks(tmp_path / "tasks", server)
    assert _fetch(tmp_path / "tasks", str(tmp_path / "cache")).exit_code == 0
    server.shutdown()
    monkeypatch.setenv("OSGYM_ASSET_CACHE", str(tmp_path / "cache"))
    t2 = load_task(tasks["multi_apps/t2.json"])
    run_setup(replica, t2.config, task_id=t2.id)  # download, then upload_file through a redirect's copy
    assert replica.read_file("/home/user/a.xlsx") == XLSX and replica.read_file("/home/user/c.png") == PNG
    gone = load_task(_task("t4", [{"type": "download", "parameters": {"files": [
        {"url": server.url("/not-cached.docx"), "path": "/home/user/n.docx"}]}}]))
    with pytest.raises(SetupError, match=re.escape(f"task t4: config[0].parameters.files[0].url: "
                                                   f"'{server.url('/not-cached.docx')}' is not in the asset cache")):
        run_setup(replica, gone.config, task_id=gone.id)
