"""Fixtures for the export tests: the analytics fixture's dataset (real Parquet shards and manifests, eight
episodes over two runs, real PNG/JPEG frames) and a loader that opens an export with Hugging Face ``datasets``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.analytics.conftest import DATASET, EPISODE_SPECS, write_dataset

__all__ = ["DATASET", "EPISODE_SPECS"]


@pytest.fixture(scope="session")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store root holding the dataset ``demo`` (tests/analytics/conftest.py describes it)."""
    root = tmp_path_factory.mktemp("sft-store")
    write_dataset(root)
    return root


@pytest.fixture
def load_export(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[Path], Any]:
    """``datasets.load_dataset("parquet", ...)`` of an export's shards, offline, with a cache of the test's own."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    import datasets

    datasets.disable_progress_bars()

    def load(out: Path) -> Any:
        return datasets.load_dataset("parquet", data_files=str(out / "data" / "*.parquet"), split="train",
                                     cache_dir=str(tmp_path / "hf-cache"))

    return load
