"""Export a dataset as chat samples that SFT trainers load directly (TRL's ``SFTTrainer``, LLaMA-Factory).

``export_sft(uri, dataset, out, options)`` writes::

    out/data/train-00000.parquet ...   columns messages, images, episode_id, step, run_id, task_id, ...
    out/README.md                      the card: options, filter, kept and dropped counts, how to load
    out/export.json                    the same facts as JSON
    out/dataset_info.json              LLaMA-Factory's entry for the data (style llamafactory)

``datasets.load_dataset("parquet", data_files="out/data/*.parquet")`` opens it; ``images`` decode as
pictures (the Parquet files carry Hugging Face's feature metadata). The conversation is built by
:mod:`osgym.dataset.sft_samples`; which episodes go in is an :class:`EpisodeSelection` (made with
DuckDB by :mod:`osgym.analysis.selection`).

**Streaming.** Shard pairs are read one at a time: a steps shard's row groups (one per episode) and its
episodes twin (at most a shard's worth of rows), so memory holds one episode's screenshots, one shard's
episode rows and the samples of one output row group, whatever the dataset's size.
``bench/bench_sft_export.py`` measures it.

**Never half a dataset.** Everything is written under ``.<out>.incomplete-<pid>`` beside ``out`` and
renamed into place at the end; a failure removes it.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal

import pyarrow as pa
import pyarrow.parquet as pq
from PIL import UnidentifiedImageError
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from osgym.agents.formats import format_names
from osgym.dataset.hollow import check_hollow
from osgym.dataset.reader import DatasetView, open_dataset
from osgym.dataset.resize import encoded_size, fit_size, resize_frame
from osgym.dataset.schema import IMAGE_TYPE
from osgym.dataset.sft_card import card_text, llamafactory_info
from osgym.dataset.sft_samples import Frame, Sample, default_system_prompt, episode_samples, frame_reply, step_actions
from osgym.errors import ConfigError, OsgymError, PolicyError, StoreError, Unrenderable
from osgym.storage import S3Options

__all__ = ["EpisodeSelection", "ExportResult", "SftOptions", "export_sft", "sft_options", "sft_schema",
           "shard_pairs"]

ProgressFn = Callable[[int, int], None]
_STEP_COLUMNS = ["episode_id", "step", "screenshot", "width", "height", "action", "thought"]
_META_COLUMNS = ["episode_id", "run_id", "task_id", "domain", "instruction", "success", "score"]


@dataclass(frozen=True)
class EpisodeSelection:
    """Which episodes an export keeps: ``ids`` (``None`` for all), the filter that chose them, and counts."""

    ids: frozenset[str] | None
    expression: str | None
    label: str | None
    total: int
    kept: int

    @property
    def dropped(self) -> int:
        return self.total - self.kept


class SftOptions(BaseModel):
    """How an export writes its samples (recorded in its card)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    action_format: str = "pyautogui"
    """The registered action format the assistant's actions are written in."""
    style: Literal["trl", "llamafactory"] = "trl"
    per: Literal["step", "episode"] = "step"
    history: int | None = Field(default=None, ge=0, le=100)
    """Past screenshots per sample: per step the earlier turns before each step (default 0); per
    episode how many screenshots before the last keep theirs (default all)."""
    max_side: int | None = Field(default=None, ge=16, le=16384)
    max_pixels: int | None = Field(default=None, ge=256)
    coord_space: Literal["relative1000", "absolute"] = "relative1000"
    """UI-TARS only: its 0..1000 grid, or image pixels."""
    system_prompt: str | None = None
    """A template with ``{instruction}``, ``{width}``, ``{height}``; default: the format's prompt minus its task."""
    user_prompt: str = "{instruction}"
    shard_max_samples: int = Field(default=5000, ge=1)
    shard_max_bytes: int = Field(default=256 * 2**20, ge=2**16)
    row_group_samples: int = Field(default=64, ge=1)

    @field_validator("action_format")
    @classmethod
    def _known_format(cls, value: str) -> str:
        if value not in format_names():
            raise ValueError(f"expected one of {', '.join(format_names())}, actual {value!r}")
        return value

    @property
    def system_template(self) -> str:
        return self.system_prompt if self.system_prompt is not None else default_system_prompt(self.action_format)


@dataclass
class ExportResult:
    """What an export wrote: its directory, samples, shards and the counts its card records."""

    path: Path
    samples: int = 0
    shards: int = 0
    episodes_exported: int = 0
    dropped: Counter[str] = field(default_factory=Counter)


def sft_options(options: SftOptions | dict[str, Any] | None) -> SftOptions:
    """``options`` as :class:`SftOptions`.

    Raises:
        ConfigError: naming the first invalid field.
    """
    if isinstance(options, SftOptions):
        return options
    try:
        return SftOptions(**(options or {}))
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "options"
        raise ConfigError(f"sft export: {where}: {str(err['msg']).removeprefix('Value error, ')}") from exc


def sft_schema(style: str) -> pa.Schema:
    """The Arrow schema of an export's rows, with Hugging Face's feature metadata (pictures decode as images)."""
    if style == "trl":
        content: pa.DataType = pa.list_(pa.struct([("type", pa.string()), ("text", pa.string())]))
        content_feature: Any = [{"type": {"dtype": "string", "_type": "Value"},
                                 "text": {"dtype": "string", "_type": "Value"}}]
    else:
        content, content_feature = pa.string(), {"dtype": "string", "_type": "Value"}
    columns = [
        ("messages", pa.list_(pa.struct([("role", pa.string()), ("content", content)]))),
        ("images", pa.list_(IMAGE_TYPE)),
        ("episode_id", pa.string()), ("step", pa.int32()), ("run_id", pa.string()), ("task_id", pa.string()),
        ("domain", pa.string()), ("success", pa.bool_()), ("score", pa.float64()),
    ]
    # Lists as Python lists: every datasets version reads that form (4.x also writes "List", 3.x "Sequence").
    features: dict[str, Any] = {
        "messages": [{"role": {"dtype": "string", "_type": "Value"}, "content": content_feature}],
        "images": [{"_type": "Image"}],
    }
    for name, t in columns[2:]:
        features[name] = {"dtype": str(t) if t != pa.bool_() else "bool", "_type": "Value"}
    hf = json.dumps({"info": {"features": features}})
    return pa.schema(columns, metadata={b"huggingface": hf.encode(), b"osgym.export": b"sft"})


def _screen(manifest: dict[str, Any]) -> tuple[int, int] | None:
    screen = ((manifest.get("config") or {}).get("recipe") or {}).get("screen")
    if isinstance(screen, list | tuple) and len(screen) == 2 and all(isinstance(v, int) and v > 0 for v in screen):
        return int(screen[0]), int(screen[1])
    return None


def shard_pairs(view: DatasetView) -> Iterator[tuple[dict[str, Any], str | None, str]]:
    """(manifest, episodes file, steps file) for every steps shard, its episodes twin beside it.

    The writer keeps an episode and its steps in the same pair (``part-N`` of both tables), so
    anything computed per episode can be computed one pair at a time, in bounded memory.
    """
    for m in view.manifests:
        episodes = {PurePosixPath(e["path"]).name: f"{view.root}/{e['path']}" for e in m["tables"].get("episodes", [])}
        for e in m["tables"].get("steps", []):
            yield m, episodes.pop(PurePosixPath(e["path"]).name, None), f"{view.root}/{e['path']}"
        for path in episodes.values():  # episodes shards without steps: episodes that never took one
            yield m, path, ""


class _Writer:
    """Samples into Parquet shards under ``data/``: row groups of ``row_group_samples``, shards rolled by size."""

    def __init__(self, root: Path, schema: pa.Schema, options: SftOptions) -> None:
        self.root, self.schema, self.options = root / "data", schema, options
        self.root.mkdir(parents=True)
        self.rows: list[dict[str, Any]] = []
        self.writer: pq.ParquetWriter | None = None
        self.shards = self.shard_samples = self.shard_bytes = self.samples = 0

    def add(self, row: dict[str, Any], size: int) -> None:
        self.rows.append(row)
        self.shard_samples += 1
        self.shard_bytes += size
        self.samples += 1
        if len(self.rows) >= self.options.row_group_samples:
            self._flush()
        if self.shard_samples >= self.options.shard_max_samples or self.shard_bytes >= self.options.shard_max_bytes:
            self._close_shard()

    def _flush(self) -> None:
        if not self.rows:
            return
        if self.writer is None:
            path = self.root / f"train-{self.shards:05d}.parquet"
            self.writer = pq.ParquetWriter(path, self.schema, compression="zstd")
            self.shards += 1
        self.writer.write_table(pa.Table.from_pylist(self.rows, schema=self.schema))
        self.rows = []

    def _close_shard(self) -> None:
        self._flush()
        if self.writer is not None:
            self.writer.close()
            self.writer = None
        self.shard_samples = self.shard_bytes = 0

    def close(self) -> None:
        self._close_shard()


def _frames(
    steps: list[dict[str, Any]], screen: tuple[int, int] | None, options: SftOptions
) -> list[Frame | OsgymError]:
    out: list[Frame | OsgymError] = []
    for s in steps:
        shot = s["screenshot"] or {}
        data = shot.get("bytes") or b""
        try:
            size, fmt = encoded_size(data)
            target = fit_size(size, options.max_side, options.max_pixels)
            if target != size:
                data, fmt = resize_frame(data, target)
            actions = step_actions(s["action"])
            reply = frame_reply(options.action_format, s["thought"], actions, screen or size, target,
                                options.coord_space)
        except (UnidentifiedImageError, OSError, ValueError) as exc:
            out.append(StoreError(f"bad_image: step {s['step']}: {exc}"))
            continue
        except OsgymError as exc:
            out.append(exc)
            continue
        ext = "jpg" if fmt == "jpeg" else fmt
        out.append(Frame(image={"bytes": data, "path": f"{s['episode_id']}/{s['step']:04d}.{ext}"}, size=target,
                         reply=reply))
    return out


def _reason(exc: OsgymError) -> str:
    if isinstance(exc, Unrenderable):
        return "unrenderable"
    if isinstance(exc, StoreError):
        return "bad_image"
    if isinstance(exc, PolicyError):
        return "bad_action"
    return "error"


def _episodes(view: DatasetView, selection: EpisodeSelection | None) -> Iterator[
        tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]]:
    """(manifest, episode row, its steps) for each selected episode, streaming shard pair by shard pair."""
    fs = view.filesystem
    keep = None if selection is None else selection.ids
    for manifest, episodes_path, steps_path in shard_pairs(view):
        meta: dict[str, dict[str, Any]] = {}
        if episodes_path:
            table = pq.read_table(fs.open_input_file(episodes_path), columns=_META_COLUMNS)
            meta = {r["episode_id"]: r for r in table.to_pylist() if keep is None or r["episode_id"] in keep}
        if steps_path:
            pf = pq.ParquetFile(fs.open_input_file(steps_path))
            current: str | None = None
            rows: list[dict[str, Any]] = []
            # Sequential batches: reading row group i by index costs time in the file's row-group count.
            for batch in pf.iter_batches(batch_size=32, columns=_STEP_COLUMNS, use_threads=False):
                for row in batch.to_pylist():
                    if row["episode_id"] != current:
                        if current is not None and current in meta:
                            yield manifest, meta.pop(current), rows
                        current, rows = row["episode_id"], []
                    if keep is None or row["episode_id"] in keep:
                        rows.append(row)
            if current is not None and current in meta:
                yield manifest, meta.pop(current), rows
        for row in meta.values():  # selected, but no steps in this pair
            yield manifest, row, []


def _stage(out: Path) -> Path:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError(f"--out {out}: expected a new or empty directory, actual one that holds files")
    staging = out.parent / f".{out.name}.incomplete-{os.getpid()}"
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    return staging


def export_sft(
    uri: str | os.PathLike[str],
    dataset: str,
    out: str | os.PathLike[str],
    options: SftOptions | dict[str, Any] | None = None,
    *,
    selection: EpisodeSelection | None = None,
    s3: S3Options | None = None,
    progress: ProgressFn | None = None,
    allow_hollow: bool = False,
) -> ExportResult:
    """Write the selected episodes of a dataset as chat samples for SFT (see the module docstring).

    Args:
        uri: the store root. dataset: the dataset's name.
        out: a new (or empty) local directory.
        options: an :class:`SftOptions` or its fields.
        selection: the episodes to keep (:func:`osgym.analysis.selection.select_from_store`); all by default.
        s3: S3 settings for an ``s3://`` store.
        progress: called with (episodes done, episodes to do) after each episode.
        allow_hollow: export episodes of hollow replicas too (:mod:`osgym.dataset.hollow`).

    Raises:
        HollowDataRefused: if the dataset holds episodes of hollow replicas and not ``allow_hollow``.
        ConfigError: for invalid options, an ``out`` that holds files, or nothing to export.
        StoreError: when the dataset cannot be read or the export cannot be written.
    """
    opts = sft_options(options)
    view = open_dataset(uri, dataset, s3=s3)
    check_hollow(view, dataset, allow_hollow)
    target = Path(out)
    staging = _stage(target)
    result = ExportResult(path=target)
    total = selection.kept if selection is not None else sum(int(m.get("episodes", 0)) for m in view.manifests)
    done = 0
    try:
        writer = _Writer(staging, sft_schema(opts.style), opts)
        for manifest, meta, steps in _episodes(view, selection):
            done += 1
            if not steps:
                result.dropped["no_steps"] += 1
            else:
                steps.sort(key=lambda r: r["step"])
                frames = _frames(steps, _screen(manifest), opts)
                exported = False
                for sample in episode_samples(
                    frames, [s["step"] for s in steps], instruction=meta["instruction"] or "", style=opts.style,
                    per=opts.per, history=opts.history, system_prompt=opts.system_template,
                    user_prompt=opts.user_prompt,
                ):
                    if isinstance(sample, Sample):
                        writer.add(_row(sample, meta), sum(len(i["bytes"]) for i in sample.images))
                        exported = True
                    else:
                        result.dropped[_reason(sample)] += 1
                result.episodes_exported += int(exported)
            if progress is not None:
                progress(done, total)
        writer.close()
        result.samples, result.shards = writer.samples, writer.shards
        if not result.samples:  # datasets cannot load a Parquet file without rows: say why instead
            why = ", ".join(f"{k} {v}" for k, v in sorted(result.dropped.items())) or "no episodes"
            raise ConfigError(f"nothing to export from {dataset}: the filter kept {total} episodes and "
                              f"they gave no sample (dropped: {why})")
        facts = _facts(dataset, view, opts, selection, result)
        (staging / "export.json").write_text(json.dumps(facts, indent=2, sort_keys=True) + "\n")
        (staging / "README.md").write_text(card_text(facts))
        if opts.style == "llamafactory":
            (staging / "dataset_info.json").write_text(json.dumps(llamafactory_info(dataset), indent=2) + "\n")
        if target.exists():
            target.rmdir()  # _stage checked that it is empty
        os.replace(staging, target)
    except (OSError, pa.ArrowException) as exc:
        raise StoreError(f"sft export of {dataset} to {target} failed: {exc}; check the store, the directory "
                         f"and free space") from exc
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return result


def _row(sample: Sample, meta: dict[str, Any]) -> dict[str, Any]:
    return {"messages": sample.messages, "images": sample.images, "step": sample.step,
            **{k: meta[k] for k in ("episode_id", "run_id", "task_id", "domain", "success", "score")}}


def _facts(dataset: str, view: DatasetView, opts: SftOptions, selection: EpisodeSelection | None,
           result: ExportResult) -> dict[str, Any]:
    total = sum(int(m.get("episodes", 0)) for m in view.manifests)
    return {
        "source": {"dataset": dataset, "runs": view.runs, "episodes": total},
        "options": {**opts.model_dump(), "system_template": opts.system_template},
        "filter": {
            "label": selection.label if selection else None,
            "expression": selection.expression if selection else None,
            "episodes_considered": selection.total if selection else total,
            "kept": selection.kept if selection else total,
            "dropped": selection.dropped if selection else 0,
        },
        "output": {
            "samples": result.samples, "shards": result.shards, "episodes_exported": result.episodes_exported,
            "dropped": dict(sorted(result.dropped.items())),
            "dropped_unit": "episodes" if opts.per == "episode" else "samples (steps); no_steps counts episodes",
        },
    }
