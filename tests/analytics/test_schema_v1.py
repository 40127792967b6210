"""Shards written at schema version 1 (before accounting, tokens and replies) still read and report."""

from __future__ import annotations

import types
from pathlib import Path

import pyarrow as pa
import pytest
from rich.console import Console

from osgym.analysis import analytics, report
from osgym.analysis.profile import measured_profile, profile_or_default
from osgym.dataset.schema import EPISODES, STEPS
from osgym.errors import ConfigError
from osgym.replicas.cost import DEFAULT_PROFILE

V2_EPISODES = {"cpu_s", "mem_avg_mib", "mem_peak_mib", "net_bytes", "input_tokens", "output_tokens", "bytes_written"}
V2_STEPS = {"raw", "usage", "input_tokens", "output_tokens"}


def _v1(schema: pa.Schema, added: set[str]) -> pa.Schema:
    return pa.schema([f for f in schema if f.name not in added], metadata=schema.metadata)


def test_a_version_1_dataset_reads_prices_and_reports(data: types.SimpleNamespace, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OSGYM_PRICES", raising=False)
    rows = [data.episode_rows(f"e{i}", "r1") for i in range(1, 9)]
    shards = {"episodes": [[ep for ep, _ in rows]], "steps": [[s for _, st in rows for s in st]]}
    view = data.write_view(tmp_path, shards,
                           schemas={"episodes": _v1(EPISODES, V2_EPISODES), "steps": _v1(STEPS, V2_STEPS)})
    con = analytics.connect_view(view)
    assert con.execute("SELECT count(*), count(cpu_s), count(input_tokens) FROM episodes").fetchall() == [(8, 0, 0)]
    assert con.execute("SELECT count(*), count(raw) FROM steps").fetchall()[0][1] == 0
    with pytest.raises(ConfigError, match="no resource accounting"):
        measured_profile(con)
    p = profile_or_default(con)
    assert (p.cores, p.mem_mib, p.source) == (DEFAULT_PROFILE.cores, DEFAULT_PROFILE.mem_mib, DEFAULT_PROFILE.source)
    assert p.episodes == 8 and p.replica_s == pytest.approx(325 / 8)
    (cost_row,) = report.report_tables(con)["cost"].to_pylist()
    assert cost_row["tokens_usd"] == 0 and cost_row["storage_usd"] == 0 and cost_row["total_usd"] > 0
    console = Console(record=True, width=80)
    report.print_report(con, console)
    assert "assumed, not measured" in " ".join(console.export_text().split())
