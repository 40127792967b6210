"""Choosing episodes by quality: a user's ``--where`` expression and named filters over ``episode_quality``.

The view ``episode_quality`` (``sql/_episode_quality.sql``) has one row per episode: every column of
``episodes`` plus ``steps``, ``distinct_frames``, ``blank_frames``, ``duplicate_frames``,
``noop_actions``, ``stuck_episode`` and ``infra_error``, built from the report's own ``step_flags``
view and ``is_infra_error`` macro, so an export keeps what the report counts as good.

A ``--where`` expression is untrusted input, so it is only ever an expression:

1. **Read by DuckDB's own tokenizer and parser.** No ``;``, no comments, parentheses balanced, as
   DuckDB splits the text into tokens (so a ``;`` inside ``'...'``, ``"..."`` or ``$tag$...$tag$`` is
   part of a string, and one outside any of them is seen however the quotes around it are arranged), and
   exactly one expression to DuckDB's expression parser; so it cannot end the ``(...)`` it is placed in
   or start another statement.
2. **Run in a sandbox.** The view's rows stream into a second, empty in-memory DuckDB connection with
   file access off (``enable_external_access = false``, no extension loading), at most
   ``WHERE_MEMORY_LIMIT`` of memory with nothing spilled to disk, one thread, and its configuration
   locked; the expression is evaluated there, where the only table is ``episode_quality``, and is
   interrupted after ``WHERE_TIMEOUT_S``. It can read no file, load nothing, change no setting and hold
   the machine for no longer than that; the dataset is never opened for writing at all.
3. **Parsed by DuckDB** as exactly one ``SELECT`` before it runs.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import duckdb
import pyarrow.dataset as pads

from osgym.analysis.analytics import _read_sql, connect_view
from osgym.analysis.duck import arrow_batches
from osgym.analysis.frames import frame_stats
from osgym.dataset.reader import open_dataset
from osgym.dataset.schema import TABLES
from osgym.dataset.sft import EpisodeSelection, shard_pairs
from osgym.errors import ConfigError

__all__ = ["NAMED_FILTERS", "check_where", "combine_filters", "select_episodes", "select_from_store"]

NAMED_FILTERS: dict[str, str] = {
    "successful": "success",
    "clean": "blank_frames = 0 AND noop_actions = 0 AND NOT infra_error",
}
"""Filters by name: ``successful`` episodes, and ``clean`` ones (no blank frame, no no-op action, not
lost to the environment)."""

MAX_WHERE_CHARS = 4000
WHERE_MEMORY_LIMIT = "512MB"
"""What the sandbox evaluating a ``--where`` may hold: one shard's episode rows take a few MB."""
WHERE_TIMEOUT_S = 60.0
"""How long one evaluation (one shard pair's episodes) may run; a filter takes well under a second."""
_SANDBOX_CONFIG: dict[str, str | bool | int | float | list[str]] = {
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "memory_limit": WHERE_MEMORY_LIMIT,
    "temp_directory": "",  # nothing spills to disk: past the limit the query fails
    "threads": 1,
}
_QUOTE = re.compile(r"\$\w*\$|['\"]")


def check_where(expr: str) -> str:
    """Refuse anything but one SQL expression: no ``;``, comments, unclosed quotes or unbalanced parentheses, as
    DuckDB's tokenizer reads the text, and exactly one expression to DuckDB's parser.

    >>> check_where("success and not stuck_episode")
    'success and not stuck_episode'
    >>> check_where("success; DROP TABLE episodes")
    Traceback (most recent call last):
    ...
    osgym.errors.ConfigError: --where: expected one SQL expression, actual a ';' (a second statement) at character 7

    Raises:
        ConfigError: naming what was found and where.
    """
    what = "--where: expected one SQL expression"
    if not isinstance(expr, str) or not expr.strip():
        raise ConfigError(f"{what}, actual an empty expression")
    if len(expr) > MAX_WHERE_CHARS:
        raise ConfigError(f"{what} of at most {MAX_WHERE_CHARS} characters, actual {len(expr)}")
    try:
        tokens = duckdb.tokenize(expr)
    except duckdb.Error as exc:
        raise ConfigError(f"{what}, actual {_first_line(exc)}") from None
    ends = [pos for pos, _ in tokens[1:]] + [len(expr)]
    depth = 0
    for (pos, kind), end in zip(tokens, ends, strict=True):
        text = expr[pos:end].rstrip()
        if kind == duckdb.token_type.comment:
            raise ConfigError(f"{what}, actual a comment at character {pos}")
        if kind != duckdb.token_type.operator:
            continue
        for i, c in enumerate(text, pos):
            if c == ";":
                raise ConfigError(f"{what}, actual a ';' (a second statement) at character {i}")
            depth += (c == "(") - (c == ")")
            if depth < 0:
                raise ConfigError(f"{what}, actual a ')' closing nothing at character {i}")
    if depth:
        raise ConfigError(f"{what}, actual {depth} unclosed '('")
    try:
        duckdb.SQLExpression(expr)
    except duckdb.Error as exc:
        raise ConfigError(f"{what}, actual {_parse_failure(exc, expr, tokens)}") from None
    return expr.strip()


def _parse_failure(exc: duckdb.Error, expr: str, tokens: list[tuple[int, Any]]) -> str:
    """What DuckDB's expression parser found wrong, in the words of :func:`check_where`'s other refusals.

    >>> _parse_failure(duckdb.ParserException("Parser Error: unterminated string literal"), "a = 'b",
    ...                [(0, duckdb.token_type.identifier), (2, duckdb.token_type.operator),
    ...                 (4, duckdb.token_type.string_const)])
    "an unclosed ' quote at character 4"
    """
    message = _first_line(exc)
    pos, kind = tokens[-1] if tokens else (0, None)
    if kind in (duckdb.token_type.string_const, duckdb.token_type.identifier):
        quote = _unclosed(expr[pos:].rstrip(), message)
        if quote is not None:
            return f"an unclosed {quote} quote at character {pos}"
    count = re.search(r"found (\d+) expressions", message)
    return f"{count.group(1)} expressions" if count else message


def _unclosed(text: str, message: str) -> str | None:
    """The quote that opens ``text`` (the last token, which an open quote runs to the end of) if it is left open.

    >>> _unclosed("$tag$abc", "syntax error"), _unclosed("$tag$abc$tag$", "syntax error"), _unclosed("'ab", "")
    ('$tag$', None, None)
    """
    opener = _QUOTE.search(text)
    if opener is None:
        return None
    quote = opener.group()
    if quote.startswith("$"):  # the parser calls an open $tag$ only a syntax error at or near it
        closed = len(text) >= 2 * len(quote) and text.endswith(quote)
        return quote if text.startswith(quote) and not closed else None
    return quote if "unterminated" in message else None


def combine_filters(where: str | None, filters: Sequence[str] = ()) -> str | None:
    """One expression from named filters and a ``--where``, joined by AND (``None`` keeps everything).

    >>> combine_filters("score > 0.5", ["successful"])
    '(success) AND (score > 0.5)'

    Raises:
        ConfigError: for an unknown filter name or a ``where`` that :func:`check_where` refuses.
    """
    parts = []
    for name in filters:
        if name not in NAMED_FILTERS:
            raise ConfigError(f"--filter: expected one of {', '.join(NAMED_FILTERS)}, actual {name!r}")
        parts.append(NAMED_FILTERS[name])
    if where is not None:
        parts.append(check_where(where))
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else " AND ".join(f"({p})" for p in parts)


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def select_episodes(con: duckdb.DuckDBPyConnection, expr: str | None, *, label: str | None = None) -> EpisodeSelection:
    """The episodes of ``con`` (a connection from :func:`~osgym.analysis.analytics.connect`) that ``expr`` keeps.

    Args:
        con: a connection with the report's views.
        expr: a SQL expression over the columns of ``episode_quality``; ``None`` keeps every episode.
        label: how the card names the filter (the named filters and ``--where`` as given).

    Raises:
        ConfigError: if the expression is refused, DuckDB cannot evaluate it (naming the columns), or it needs
            more than ``WHERE_MEMORY_LIMIT`` or ``WHERE_TIMEOUT_S``.
    """
    con.execute(_read_sql("_episode_quality"))
    if expr is None:
        total = int(con.execute("SELECT count(*) FROM episodes").fetchone()[0])  # type: ignore[index]
        return EpisodeSelection(ids=None, expression=None, label=None, total=total, kept=total)
    expr = check_where(expr)
    columns = con.sql("SELECT * FROM episode_quality LIMIT 0").columns
    if re.search(r"blank", expr, re.IGNORECASE):
        frame_stats(con)  # blank frames are decoded in Python; only a filter that reads them pays for it
    sql = f"SELECT episode_id, coalesce(CAST(({expr}) AS BOOLEAN), false) AS keep FROM episode_quality"
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise ConfigError(f"--where {expr!r}: {_first_line(exc)}; columns: {', '.join(columns)}") from exc
    if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
        raise ConfigError(f"--where {expr!r}: expected one expression, actual {len(statements)} statements")
    sandbox = duckdb.connect(":memory:", config=_SANDBOX_CONFIG)
    timed_out = threading.Event()

    def stop() -> None:
        timed_out.set()
        sandbox.interrupt()

    # DuckDB has no statement timeout: a timer interrupts the evaluation, wherever it is
    timer = threading.Timer(WHERE_TIMEOUT_S, stop)
    timer.daemon = True
    timer.start()
    try:
        sandbox.register("episode_quality", arrow_batches(con.sql("SELECT * FROM episode_quality"), 8192))
        sandbox.execute("SET enable_progress_bar = false")  # a long query would draw on the caller's terminal
        sandbox.execute("SET lock_configuration = true")
        kept: set[str] = set()
        total = 0
        reader: Any = arrow_batches(sandbox.sql(sql), 8192)
        for batch in reader:
            ids, keep = batch.column(0).to_pylist(), batch.column(1).to_pylist()
            total += len(ids)
            kept.update(i for i, k in zip(ids, keep, strict=True) if k)
    except duckdb.Error as exc:
        if timed_out.is_set():
            raise ConfigError(f"--where {expr!r}: stopped after {WHERE_TIMEOUT_S:g} s (an expression may run that "
                              "long on one shard's episodes)") from None
        if isinstance(exc, duckdb.OutOfMemoryException):
            raise ConfigError(f"--where {expr!r}: needs more than the sandbox's {WHERE_MEMORY_LIMIT} of memory "
                              f"({_first_line(exc)})") from None
        raise ConfigError(f"--where {expr!r}: {_first_line(exc)}; columns: {', '.join(columns)}") from exc
    finally:
        timer.cancel()
        sandbox.close()
    return EpisodeSelection(ids=frozenset(kept), expression=expr, label=label or expr, total=total, kept=len(kept))


@dataclass(frozen=True)
class _PairView:
    """One shard pair as a ``DatasetViewLike``: what :func:`~osgym.analysis.analytics.connect_view` reads."""

    files: dict[str, list[str]]
    filesystem: Any

    def _dataset(self, table: str) -> pads.Dataset:
        return pads.dataset(self.files[table], schema=TABLES[table], format="parquet", filesystem=self.filesystem)

    @property
    def episodes(self) -> pads.Dataset:
        return self._dataset("episodes")

    @property
    def steps(self) -> pads.Dataset:
        return self._dataset("steps")


def select_from_store(
    uri: str, dataset: str, *, where: str | None = None, filters: Sequence[str] = (), s3: Any = None
) -> EpisodeSelection:
    """Open a dataset and select its episodes with named ``filters`` and a ``where`` expression (AND-ed).

    Every flag is per episode and an episode's rows all sit in one shard pair, so the views are
    built over one pair at a time: memory stays that of one shard, however large the dataset (one
    connection over 100 shards of 1,000 episodes peaked at 1.8 GB, DuckDB holding every file's
    row-group metadata).

    Raises:
        ConfigError: for an unknown filter or a refused expression.
        StoreError: if the dataset cannot be read.
    """
    expr = combine_filters(where, filters)
    label = " AND ".join([*(f"filter {f}" for f in filters), *([f"where {where}"] if where else [])]) or None
    view = open_dataset(uri, dataset, s3=s3)
    if expr is None:
        total = sum(int(m.get("episodes", 0)) for m in view.manifests)
        return EpisodeSelection(ids=None, expression=None, label=None, total=total, kept=total)
    kept: set[str] = set()
    total = 0
    for _, episodes_file, steps_file in shard_pairs(view):
        if episodes_file is None:
            continue  # steps without their episodes: no episode row to keep
        pair = _PairView({"episodes": [episodes_file], "steps": [steps_file] if steps_file else []},
                         view.filesystem)
        con = connect_view(pair)
        try:
            part = select_episodes(con, expr, label=label)
        finally:
            con.close()
        total += part.total
        kept |= part.ids or set()
    return EpisodeSelection(ids=frozenset(kept), expression=expr, label=label or expr, total=total, kept=len(kept))
