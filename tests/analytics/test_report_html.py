from __future__ import annotations

import hashlib
import html
import re
import types
from pathlib import Path
from typing import Any

import duckdb
import pytest
from PIL import Image
from rich.console import Console

from osgym.analysis import analytics, report
from osgym.errors import ConfigError
from osgym.replicas import cost


@pytest.fixture
def parquet_con(view: Any) -> Any:
    c = analytics.connect_view(view)
    yield c
    c.close()


@pytest.fixture(autouse=True)
def _packaged_prices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OSGYM_PRICES", raising=False)


def test_print_report_shows_every_section_and_the_assumptions(parquet_con: duckdb.DuckDBPyConnection) -> None:
    console = Console(record=True, width=220)
    report.print_report(parquet_con, console)
    text = console.export_text()
    for section in report.SECTIONS:
        assert section.title in text
    assert "success_rate" in text and "25.0%" in text  # the summary
    assert "replica unreachable: connection reset" in text
    # a dataset without accounting is priced at the assumed profile, and says so
    assert "m7i.4xlarge" in text and "$0.8064/hour" in text and "1,076 replicas per host" in text
    assert "$0.01799" in text and "assumed, not measured" in text
    assert "decoded 3 small candidate frame(s), 2 single-colour" in text


def _header_cells(text: str, title: str) -> list[str]:
    """The header cells of the table under ``title`` in a printed report."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.rstrip() == title)
    header = next(line for line in lines[start + 1:] if line.startswith("┃"))
    return [cell.strip() for cell in header.strip("┃").split("┃")]


def test_the_terminal_report_fits_80_columns_without_pages(parquet_con: duckdb.DuckDBPyConnection) -> None:
    console = Console(record=True, width=80)
    report.print_report(parquet_con, console)
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "(1/" not in text and "(2/" not in text  # no table split into pages
    for section in report.SECTIONS:
        assert section.title in text
        if section.terminal:  # every chosen column, under its short header, whole and in order
            assert _header_cells(text, section.title) == [c.label for c in section.terminal], section.title
    assert _header_cells(text, "Latency percentiles") == ["metric", "n", "p50", "p90", "p99", "mean", "max"]
    for header in ("usd_per_replica_day", "episodes_per_replica_day"):
        assert header in text  # the one-row cost table on its side, names whole
    assert "--html" in text  # where the columns left out are
    assert not re.search(r"\d[eE][-+]\d", text)  # no exponent notation anywhere


def test_fit_table_turns_one_row_on_its_side_and_leaves_columns_out_of_many() -> None:
    import pyarrow as pa

    one = pa.table({f"a_long_column_name_{i}": [0.0000667] for i in range(6)})
    t, left_out = report.fit_table("one", one, 80)
    assert [c.header for c in t.columns] == ["what", "value"] and t.row_count == 6 and left_out == ()
    names = [f"a_long_column_name_{i}" for i in range(8)]
    many = pa.table({"key": ["k1", "k2"], **{n: [1.0, 2.0] for n in names}, "note": ["word " * 40, "short"]})
    t, left_out = report.fit_table("many", many, 80)
    assert t.columns[0].header == "key" and 1 < len(t.columns) < 10
    assert [c.header for c in t.columns[1:]] + list(left_out) == [*names, "note"]  # in order, none lost
    chosen = (report.Column("key", "k"), report.Column("note", "what"), report.Column(names[3], "three"))
    picked, picked_out = report.fit_table("chosen", many, 80, chosen)
    assert [c.header for c in picked.columns] == ["k", "what", "three"]
    assert set(picked_out) == {*names} - {names[3]}
    none, _ = report.fit_table("Failure causes", many.slice(0, 0), 80)
    console = Console(record=True, width=80)
    for p in (t, picked, none):
        console.print(p)
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "(1/" not in text and text.count("word") == 40  # the long text folds, whole
    assert "Failure causes\n" in text and "(no rows)" in text  # the title on one line


def test_report_tables_price_the_cost_section(parquet_con: duckdb.DuckDBPyConnection) -> None:
    table = cost.PriceTable(default_host="t", hosts=[cost.HostPrice(instance="t", vcpus=4, memory_gib=16,
                                                                    usd_per_hour=3.6)])
    inputs = report.CostInputs(table, cost.Profile(cores=0.3, mem_mib=100))  # 10 per host: $0.0001/replica-s
    tables = report.report_tables(parquet_con, inputs)
    assert list(tables) == [s.query for s in report.SECTIONS]
    assert tables["cost"].to_pylist()[0]["total_usd"] == pytest.approx(0.0325)


def test_html_report(parquet_con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    page = report.write_html_report(parquet_con, tmp_path / "out", example_pages=2)
    assert page == tmp_path / "out" / "report.html"
    text = page.read_text()
    charts = sorted(p.name for p in (tmp_path / "out" / "charts").iterdir())
    assert charts == ["episode_wall_s.png", "failure_causes.png", "host_faults.png", "quality_flags.png",
                      "success_by_app.png", "success_by_domain.png", "success_by_policy.png", "success_by_task.png"]
    for name in charts:
        assert f"src='charts/{name}'" in text
        with Image.open(tmp_path / "out" / "charts" / name) as im:
            assert im.format == "PNG" and im.width == 760
    for section in report.SECTIONS:
        assert f"<h2>{html.escape(section.title)}</h2>" in text
    for column in ("faulted_attempts", "example_episode", "success_rate_excl_infra"):  # left out of the terminal
        assert f"<th>{column}</th>" in text
    assert "$0.8064/hour" in text
    assert "<h2>Fleet plan: 1,000 replicas</h2>" in text and "<th>fleet per day</th><td>$19.35</td>" in text
    # The first two failure causes' examples (e3, e6) got trajectory pages, linked from the table.
    assert '<a href="episodes/e3/index.html">e3</a>' in text
    assert '<a href="episodes/e6/index.html">e6</a>' in text
    assert (tmp_path / "out" / "episodes" / "e3" / "index.html").exists()
    assert not (tmp_path / "out" / "episodes" / "e5").exists()


def test_trajectory_page_keeps_originals_and_draws_overlays(
    parquet_con: duckdb.DuckDBPyConnection, tmp_path: Path, data: types.SimpleNamespace
) -> None:
    page = report.write_trajectory_page(parquet_con, "e1", tmp_path, gif=True)
    folder = tmp_path / "e1"
    assert page == folder / "index.html"
    for step, frame in enumerate(["V1", "V2", "V3"]):
        original = folder / f"{step:04d}.png"
        assert original.read_bytes() == data.FRAMES[frame]  # stored bytes, not re-encoded
        assert hashlib.sha256(original.read_bytes()).hexdigest() == data.sha(frame)
        with Image.open(folder / f"{step:04d}.overlay.png") as im:
            assert im.size == (64, 48)
    with Image.open(folder / "0000.overlay.png") as im, Image.open(folder / "0000.png") as orig:
        assert im.convert("RGB").tobytes() != orig.convert("RGB").tobytes()  # something was drawn
    with Image.open(folder / "trajectory.gif") as gif:
        assert gif.n_frames == 3
    text = page.read_text()
    assert "Step 0 · CLICK (10, 12)" in text and "Step 2 · DONE" in text
    assert "src='0000.overlay.png'" in text and "href='0000.png'" in text
    # Untrusted text is escaped: the thought "<think>", the typed "<b>there</b>", the instruction "<t1>".
    assert "<think>" not in text and "&lt;think&gt;" in text
    assert "<b>there</b>" not in text and "&lt;b&gt;there&lt;/b&gt;" in text
    assert "Do &lt;t1&gt; &amp; check" in text
    assert "2026-11-01 12:01:00 UTC" in text


def test_trajectory_page_from_a_view_with_jpeg_and_zero_size_frames(view: Any, tmp_path: Path,
                                                                    data: types.SimpleNamespace) -> None:
    report.write_trajectory_page(view, "e7", tmp_path)
    assert (tmp_path / "e7" / "0000.jpg").read_bytes() == data.FRAMES["BJ"]
    assert (tmp_path / "e7" / "0000.overlay.jpg").exists()
    report.write_trajectory_page(view, "e5", tmp_path)
    assert (tmp_path / "e5" / "0001.png").read_bytes() == data.FRAMES["Z"]


def test_trajectory_page_edge_cases(parquet_con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    empty = report.write_trajectory_page(parquet_con, "e6", tmp_path)
    assert "No steps recorded." in empty.read_text()
    assert "setup: launch failed: gedit not found" in empty.read_text()
    with pytest.raises(ConfigError, match="no episode 'missing'"):
        report.write_trajectory_page(parquet_con, "missing", tmp_path)


def test_describe_action() -> None:
    assert report.describe_action({"action_type": "CLICK", "x": 1, "y": 2, "button": "right"}) == "CLICK (1, 2) right"
    assert report.describe_action({"action_type": "CLICK", "parameters": {"x": 5, "y": 6}}) == "CLICK (5, 6)"
    assert report.describe_action({"action_type": "TYPING", "text": "a" * 80}) == "TYPING '" + "a" * 60 + "…'"
    assert report.describe_action({"action_type": "SCROLL", "dy": -3}) == "SCROLL dx=0 dy=-3"
    assert report.describe_action({"action_type": "WAIT", "seconds": 2}) == "WAIT 2s"
    assert report.describe_action({"action_type": "PRESS", "key": "enter"}) == "PRESS enter"
    assert report.describe_action({"action_type": "ZOOM", "level": 2}) == 'ZOOM {"level": 2}'
    assert report.describe_action(None) == "(no action)"


def test_draw_action_marks_the_target_and_tracks_the_pointer() -> None:
    base = Image.new("RGB", (400, 300), "white")
    img, pointer = report.draw_action(base, {"action_type": "CLICK", "x": 200, "y": 150})
    assert pointer == (200, 150)
    assert base.getpixel((200, 150)) == (255, 255, 255)  # the original is untouched
    radius = max(5, round(300 / 45))
    assert img.getpixel((200 + radius, 150)) != (255, 255, 255)  # the ring
    dragged, pointer = report.draw_action(base, {"action_type": "DRAG_TO", "x": 300, "y": 150}, pointer=(100, 150))
    assert pointer == (300, 150)
    assert dragged.getpixel((150, 150)) != (255, 255, 255)  # the drag line from the previous pointer
    typed, pointer = report.draw_action(base, {"action_type": "TYPING", "text": "x"}, pointer=(1, 1))
    assert pointer == (1, 1)
    assert typed.getpixel((200, 150)) == (255, 255, 255)  # no marker for keyboard actions
    assert typed.getpixel((4, 8)) == (0, 0, 0)  # the label box
    clamped, pointer = report.draw_action(base, [{"action_type": "MOVE_TO", "x": 9999, "y": 5}])
    assert pointer == (399, 5)


def test_bar_chart_and_markdown() -> None:
    img = report.bar_chart("t", ["a", "b", "c"], {"x": [0.0, None, 2.0], "y": [1.0, 1.0, 1.0]}, width=500)
    assert img.size[0] == 500 and img.size[1] > 100
    zero = report.bar_chart("empty", [], {"x": []})
    assert zero.size[0] == 760
    import pyarrow as pa

    md = report.to_markdown(pa.table({"host": ["h|1"], "fault_rate": [0.5], "episodes": [3]}))
    assert md.splitlines() == ["| host | fault_rate | episodes |", "| --- | ---: | ---: |", "| h\\|1 | 50.0% | 3 |"]


def test_format_value() -> None:
    assert [report.format_value(c, v) for c, v in [
        ("x", None), ("x", True), ("x", 1234), ("retry_rate", 1.0), ("usd_per_replica_day", 0.6048),
        ("total_usd", 0.00228), ("p99", 87.9), ("p99", 382.0), ("x", float("nan")), ("usd_per_success", 6.67e-05),
        ("setup_s", 95.0)]] == [
        "–", "yes", "1,234", "100.0%", "$0.6048", "$0.00228", "87.9", "382", "–", "$0.0000667", "1 min 35 s"]


def test_no_raw_html_from_data_in_report(parquet_con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    text = report.write_html_report(parquet_con, tmp_path).read_text()
    assert not re.search(r"<(script|think|t1)\b", text)
