"""A small synthetic dataset written as real Parquet shards plus manifests.

Eight episodes over two runs and three shards. Frames are real 64x48 images
made with Pillow: ``V1``..``V10`` random noise (never blank), ``B`` a
single-colour PNG, ``BJ`` a single-colour JPEG, ``NB`` a white PNG with one
black pixel (small enough to be decoded, yet not blank) and ``Z`` a frame
recorded with width = height = 0.

====  ====  ======  ========  ====  =======  =========  =============  ========  =======  ========
ep    task  domain  policy    host  success  term.      error_class    attempts  wall s   replica s
====  ====  ======  ========  ====  =======  =========  =============  ========  =======  ========
e1    t1    os      scripted  h1    yes      done       -              1         30       40
e2    t1    os      random    h1    no       max_steps  -              1         60       70
e3    t2    editor  scripted  h2    no       error      replica_fault  3         20       25
e4    t2    editor  scripted  h2    yes      done       -              2         40       50
e5    t3    editor  random    h1    no       fail       -              1         10       15
e6    t3    editor  random    -     no       error      setup_error    1         5        5
e7    t1    os      scripted  h2    no       timeout    timeout        2         90       100
e8    t2    editor  random    h3    no       error      replica_fault  3         15       20
====  ====  ======  ========  ====  =======  =========  =============  ========  =======  ========

Steps (frame, action): e1 V1 CLICK, V2 TYPING, V3 DONE; e2 V4 WAIT, V4 CLICK,
V5 MOVE_TO, V5 WAIT; e3 B CLICK, B CLICK; e4 B PRESS, V6 HOTKEY, V7 DONE;
e5 NB CLICK, Z TYPING, V8 FAIL; e6 none; e7 BJ SCROLL, V9 DRAG_TO, V9 MOVE_TO;
e8 V10 CLICK. Step ``i`` has policy_ms = 100 (i + 1) and env_ms = 10 (i + 1).
"""

from __future__ import annotations

import hashlib
import io
import json
import random
import types
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
from PIL import Image

from osgym.dataset.schema import EPISODES, SCHEMA_VERSION, STEPS

SIZE = (64, 48)
DATASET = "demo"
T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
USD_PER_REPLICA_S_RECORDED = 0.0002


def _encode(im: Image.Image, fmt: str = "PNG") -> bytes:
    buf = io.BytesIO()
    im.save(buf, fmt, **({"quality": 80} if fmt == "JPEG" else {}))
    return buf.getvalue()


def _noise(seed: int) -> bytes:
    rng = random.Random(seed)
    im = Image.frombytes("RGB", SIZE, bytes(rng.getrandbits(8) for _ in range(SIZE[0] * SIZE[1] * 3)))
    return _encode(im)


def make_frames() -> dict[str, bytes]:
    frames = {f"V{i}": _noise(i) for i in range(1, 11)}
    frames["B"] = _encode(Image.new("RGB", SIZE, (20, 20, 20)))
    frames["BJ"] = _encode(Image.new("RGB", SIZE, (200, 200, 200)), "JPEG")
    nb = Image.new("RGB", SIZE, (255, 255, 255))
    nb.putpixel((10, 10), (0, 0, 0))
    frames["NB"] = _encode(nb)
    frames["Z"] = _encode(Image.new("RGB", (1, 1), (0, 0, 0)))
    return frames


FRAMES = make_frames()


def sha(name: str) -> str:
    return hashlib.sha256(FRAMES[name]).hexdigest()


# episode_id: (task, domain, policy, host, success, termination, error_class, error_message,
#              attempts, wall_s, replica_s, steps [(frame, action)])
EPISODE_SPECS: dict[str, tuple[Any, ...]] = {
    "e1": ("t1", "os", "scripted", "h1", True, "done", None, None, 1, 30, 40,
           [("V1", {"action_type": "CLICK", "x": 10, "y": 12, "button": "left", "num_clicks": 1}),
            ("V2", {"action_type": "TYPING", "text": "hi <b>there</b>"}),
            ("V3", {"action_type": "DONE"})]),
    "e2": ("t1", "os", "random", "h1", False, "max_steps", None, None, 1, 60, 70,
           [("V4", {"action_type": "WAIT", "seconds": 1.0}),
            ("V4", {"action_type": "CLICK", "x": 5, "y": 5}),
            ("V5", {"action_type": "MOVE_TO", "x": 1, "y": 1}),
            ("V5", {"action_type": "WAIT", "seconds": 1.0})]),
    "e3": ("t2", "editor", "scripted", "h2", False, "error", "replica_fault",
           "replica unreachable: connection reset", 3, 20, 25,
           [("B", {"action_type": "CLICK", "x": 3, "y": 3}),
            ("B", {"action_type": "CLICK", "x": 3, "y": 3})]),
    "e4": ("t2", "editor", "scripted", "h2", True, "done", None, None, 2, 40, 50,
           [("B", {"action_type": "PRESS", "key": "enter"}),
            ("V6", {"action_type": "HOTKEY", "keys": ["ctrl", "s"]}),
            ("V7", {"action_type": "DONE"})]),
    "e5": ("t3", "editor", "random", "h1", False, "fail", None, None, 1, 10, 15,
           [("NB", {"action_type": "CLICK", "x": 1, "y": 1}),
            ("Z", {"action_type": "TYPING", "text": "x"}),
            ("V8", {"action_type": "FAIL"})]),
    "e6": ("t3", "editor", "random", None, False, "error", "setup_error",
           "setup: launch failed: gedit not found", 1, 5, 5, []),
    "e7": ("t1", "os", "scripted", "h2", False, "timeout", "timeout", "episode deadline exceeded", 2, 90, 100,
           [("BJ", {"action_type": "SCROLL", "dx": 0, "dy": -3, "x": 20, "y": 20}),
            ("V9", {"action_type": "DRAG_TO", "x": 30, "y": 30}),
            ("V9", {"action_type": "MOVE_TO", "x": 2, "y": 2})]),
    "e8": ("t2", "editor", "random", "h3", False, "error", "replica_fault",
           "replica unreachable: health check timed out", 3, 15, 20,
           [("V10", {"action_type": "CLICK", "x": 40, "y": 40})]),
}

# run_id -> shards -> episode ids
LAYOUT = {"r1": [["e1", "e2"], ["e3", "e4"]], "r2": [["e5", "e6", "e7", "e8"]]}


def episode_rows(eid: str, run_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    (task, domain, policy, host, success, term, err, msg, attempts, wall, replica_s, steps) = EPISODE_SPECS[eid]
    start = T0 + timedelta(minutes=int(eid[1:]))
    ep = {
        "episode_id": eid, "run_id": run_id, "task_id": task, "variant": "v0", "domain": domain,
        "instruction": f"Do <{task}> & check", "policy": policy, "policy_config": json.dumps({"seed": 1}),
        "image": "osgym/desktop:test", "replica_id": None if host is None else f"{host}-r1", "host": host,
        "started_at": start, "ended_at": start + timedelta(seconds=wall), "num_steps": len(steps),
        "success": success, "score": 1.0 if success else 0.0, "termination": term, "error_class": err,
        "error_message": msg, "attempts": attempts, "setup_s": 1.0, "policy_s": 0.5, "env_s": 0.25,
        "replica_s": float(replica_s), "cost_usd": replica_s * USD_PER_REPLICA_S_RECORDED,
        "schema_version": SCHEMA_VERSION,
    }
    rows = []
    for i, (frame, action) in enumerate(steps):
        w, h = (0, 0) if frame == "Z" else SIZE
        ext = "jpeg" if frame == "BJ" else "png"
        rows.append({
            "episode_id": eid, "step": i, "ts": start + timedelta(seconds=i),
            "screenshot": {"bytes": FRAMES[frame], "path": f"{eid}/{i:04d}.{ext}"},
            "screenshot_sha256": sha(frame), "width": w, "height": h, "a11y": None,
            "action": json.dumps(action, sort_keys=True), "action_type": action["action_type"],
            "thought": f"step {i}: <think>", "reward": 0.0, "done": i == len(steps) - 1,
            "policy_ms": 100.0 * (i + 1), "env_ms": 10.0 * (i + 1), "error": None,
        })
    return ep, rows


def _sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_dataset(root: Path, dataset: str = DATASET) -> Path:
    """Write LAYOUT as Parquet shards (one row group per episode) and one manifest per run."""
    base = root / dataset
    for run_id, shards in LAYOUT.items():
        entries: dict[str, list[dict[str, Any]]] = {"episodes": [], "steps": []}
        n_eps = n_steps = 0
        for shard_no, eids in enumerate(shards):
            eps, steps = [], []
            for eid in eids:
                ep, rows = episode_rows(eid, run_id)
                eps.append([ep])
                steps.append(rows)
            for table, schema, groups in (("episodes", EPISODES, eps), ("steps", STEPS, steps)):
                rel = Path(table) / f"run={run_id}" / f"part-{shard_no:05d}.parquet"
                path = base / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                with pq.ParquetWriter(path, schema, compression="zstd") as writer:
                    for rows in groups:
                        writer.write_table(pa.Table.from_pylist(rows, schema=schema))
                nrows = sum(len(g) for g in groups)
                entries[table].append({"path": rel.as_posix(), "rows": nrows, "bytes": path.stat().st_size,
                                       "sha256": _sha256_file(path)})
            n_eps += len(eps)
            n_steps += sum(len(s) for s in steps)
        manifest = {"run_id": run_id, "dataset": dataset, "created_at": T0.isoformat(),
                    "schema_version": SCHEMA_VERSION, "config": {}, "tables": entries,
                    "episodes": n_eps, "steps": n_steps}
        (base / "_manifests").mkdir(parents=True, exist_ok=True)
        (base / "_manifests" / f"{run_id}.json").write_text(json.dumps(manifest))
    # An uncommitted shard that no manifest lists: readers must never see it.
    stray = base / "episodes" / "run=r3" / "part-00000.parquet"
    stray.parent.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist([episode_rows("e1", "r3")[0] | {"episode_id": "ghost"}],
                                        schema=EPISODES), stray)
    return base


@dataclass
class FixtureView:
    """Stands in for ``osgym.dataset.DatasetView`` (same attributes)."""

    root: str
    manifests: list[dict[str, Any]]
    files: dict[str, list[str]]
    filesystem: Any = field(default_factory=pafs.LocalFileSystem)

    @property
    def episodes(self) -> pads.Dataset:
        return pads.dataset(self.files["episodes"], schema=EPISODES, format="parquet", filesystem=self.filesystem)

    @property
    def steps(self) -> pads.Dataset:
        return pads.dataset(self.files["steps"], schema=STEPS, format="parquet", filesystem=self.filesystem)


def open_fixture_view(root: str | Path, dataset: str, s3: Any = None) -> FixtureView:
    base = Path(root) / dataset
    manifests = [json.loads(p.read_text()) for p in sorted((base / "_manifests").glob("*.json"))]
    files: dict[str, list[str]] = {"episodes": [], "steps": []}
    for m in manifests:
        for table in files:
            files[table].extend(str(base / e["path"]) for e in m["tables"][table])
    return FixtureView(root=str(base), manifests=manifests, files=files)


def write_view(base: Path, tables: dict[str, list[list[dict[str, Any]]]],
               schemas: dict[str, pa.Schema] | None = None) -> FixtureView:
    """Write ad-hoc shards (one file per list of rows) and return a view listing exactly them."""
    files: dict[str, list[str]] = {"episodes": [], "steps": []}
    for table, shards in tables.items():
        schema = (schemas or {}).get(table) or {"episodes": EPISODES, "steps": STEPS}[table]
        for i, rows in enumerate(shards):
            path = base / table / "run=x" / f"part-{i:05d}.parquet"
            path.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
            files[table].append(str(path))
    return FixtureView(root=str(base), manifests=[], files=files)


@pytest.fixture(scope="session")
def data() -> types.SimpleNamespace:
    """The fixture's building blocks, for tests that need more than the shared dataset."""
    return types.SimpleNamespace(
        FRAMES=FRAMES, sha=sha, SPECS=EPISODE_SPECS, DATASET=DATASET, episode_rows=episode_rows,
        write_dataset=write_dataset, open_fixture_view=open_fixture_view, write_view=write_view,
        FixtureView=FixtureView,
    )


@pytest.fixture(scope="session")
def dataset_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("store")
    write_dataset(root)
    return root


@pytest.fixture(scope="session")
def view(dataset_root: Path) -> FixtureView:
    return open_fixture_view(dataset_root, DATASET)


@pytest.fixture(params=["parquet", "arrow"])
def con(request: pytest.FixtureRequest, view: FixtureView) -> Any:
    from osgym.analysis import analytics

    c = analytics.connect_view(view, route=request.param)
    yield c
    c.close()
