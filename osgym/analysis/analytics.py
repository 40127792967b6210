"""DuckDB over an osgym dataset: views, named queries and a summary (design.md §8).

How a dataset becomes DuckDB views
----------------------------------
:func:`connect` opens the dataset with ``osgym.dataset.open_dataset`` (imported
inside the function) and hands the resulting ``DatasetView`` to
:func:`connect_view`, which also accepts any object with the same ``files``,
``filesystem``, ``episodes`` and ``steps`` attributes. Only the shards that the
manifests list as committed are read; nothing is globbed.

* **Local datasets** (``route="parquet"``): the views select from
  ``read_parquet([<committed shard paths>], union_by_name = true,
  hive_partitioning = false)``. DuckDB's own Parquet reader does projection and
  row-group pruning (each episode is one row group, so looking up one episode
  reads one row group per shard).
* **S3 and other remote filesystems** (``route="arrow"``): the view's
  ``pyarrow.dataset`` objects, which read through ``pyarrow.fs.S3FileSystem``,
  are registered with ``con.register`` and the views select from them. This
  works with any duckdb version and offline: DuckDB's httpfs extension is not
  used, because it is downloaded at run time and PyPI's
  ``duckdb-extension-httpfs`` only matches one exact duckdb release.

Either way the views are fixed when the connection is made: shards committed
later are not seen until you connect again.

Views and tables
----------------
``episodes``
    One row per episode, with every column of ``osgym.dataset.schema.EPISODES``.
``steps``
    One row per step. The ``screenshot`` struct is left out unless
    ``screenshots=True``; ``screenshot_sha256``, ``width`` and ``height`` stay.
``frames``
    The step columns plus ``image`` (the stored bytes, exactly as the replica
    encoded them) and ``image_path``. A view, so the bytes are read only by a
    query that selects them.
``frame_stats``
    One row per distinct frame that was decoded to check whether it is blank
    (see below). Filled by :func:`osgym.analysis.frames.frame_stats` (see there for how blank is decided),
    which :func:`query` runs first
    for any named query that needs it.
``step_flags``
    Per-step quality flags (``blank``, ``duplicate``, ``noop``) used by the
    quality queries; defined in ``sql/_step_flags.sql``.
``infra_error_classes`` and the macro ``is_infra_error(error_class)``
    The one rule for "the environment lost this episode" (replica fault, failed
    setup, evaluator error), used by the view ``success_groups`` (``sql/_success_groups.sql``),
    which computes the figures of every ``success_by_*`` query once; the macro is
    defined in ``sql/_infra_error.sql`` and the table holds
    ``osgym.errors.INFRA_ERROR_CLASSES`` (see :func:`define_infra_error`).

Named queries
-------------
Each ``osgym/sql/<name>.sql`` file (shipped as package data) holds one SELECT.
Its leading ``--`` comment is its description, and ``-- @param name = default:
text`` or ``-- @param name (required): text`` lines declare its ``$name``
parameters. :func:`list_queries` names them and :func:`query` runs one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any, Protocol

import duckdb
import pyarrow as pa
import pyarrow.fs as pafs

from osgym.analysis.duck import META_TABLE, to_arrow
from osgym.analysis.frames import frame_stats
from osgym.dataset.schema import TABLES
from osgym.errors import INFRA_ERROR_CLASSES, ConfigError

ROUTES = ("auto", "parquet", "arrow")




class DatasetViewLike(Protocol):
    """What :func:`connect_view` needs from ``osgym.dataset.DatasetView``."""

    @property
    def files(self) -> Mapping[str, Sequence[str]]: ...  # committed shard paths inside ``filesystem``, per table

    @property
    def filesystem(self) -> Any: ...  # pyarrow.fs.FileSystem

    @property
    def episodes(self) -> Any: ...  # pyarrow.dataset.Dataset

    @property
    def steps(self) -> Any: ...  # pyarrow.dataset.Dataset


# --------------------------------------------------------------------------- connecting


def connect(
    uri: str,
    dataset: str,
    s3: Any = None,
    *,
    screenshots: bool = False,
    route: str = "auto",
) -> duckdb.DuckDBPyConnection:
    """Open a dataset and return an in-memory DuckDB connection with its views.

    Args:
        uri: the store root, a local directory or ``s3://bucket/prefix``.
        dataset: the dataset's name under the root.
        s3: S3 settings passed through to ``osgym.dataset.open_dataset``.
        screenshots: keep the ``screenshot`` struct in the ``steps`` view.
        route: ``"auto"``, ``"parquet"`` or ``"arrow"`` (see the module docstring).

    Returns:
        A connection with the views ``episodes``, ``steps``, ``frames`` and
        ``step_flags`` and the table ``frame_stats``.

    Raises:
        StoreError: if the store cannot be read or a manifest is damaged.
        ValueError: if the URI or dataset name is malformed (from ``open_dataset``).
        ConfigError: if ``route`` is unknown.
    """
    from osgym.dataset import open_dataset

    view = open_dataset(uri, dataset, s3=s3)
    return connect_view(view, screenshots=screenshots, route=route)


def connect_view(
    view: DatasetViewLike,
    *,
    screenshots: bool = False,
    route: str = "auto",
    con: duckdb.DuckDBPyConnection | None = None,
) -> duckdb.DuckDBPyConnection:
    """Create the views over an opened dataset (an ``osgym.dataset.DatasetView`` or alike).

    Args:
        view: an object with ``files``, ``filesystem``, ``episodes`` and ``steps``.
        screenshots: keep the ``screenshot`` struct in the ``steps`` view.
        route: ``"parquet"`` reads local files with ``read_parquet``; ``"arrow"``
            registers the view's pyarrow datasets; ``"auto"`` picks ``"parquet"``
            for a local filesystem and ``"arrow"`` otherwise.
        con: a connection to add the views to; a new in-memory one by default.

    Returns:
        The connection.

    Raises:
        ConfigError: if ``route`` is unknown, or ``"parquet"`` is asked for remote files.
    """
    if route not in ROUTES:
        raise ConfigError(f"route: expected one of {ROUTES}, actual {route!r}")
    local = _is_local(view)
    if route == "auto":
        route = "parquet" if local else "arrow"
    if route == "parquet" and not local:
        raise ConfigError("route 'parquet' needs local files; use 'arrow' for remote datasets")
    con = con if con is not None else duckdb.connect()
    sources = {table: _source(con, view, table, route) for table in ("episodes", "steps")}

    con.execute(
        f"CREATE OR REPLACE VIEW episodes AS SELECT {_select_list(con, sources['episodes'], 'episodes')} "
        f"FROM {sources['episodes']}"
    )
    drop = None if screenshots else {"screenshot"}
    con.execute(
        f"CREATE OR REPLACE VIEW steps AS SELECT {_select_list(con, sources['steps'], 'steps', drop)} "
        f"FROM {sources['steps']}"
    )
    con.execute(
        f"CREATE OR REPLACE VIEW frames AS SELECT {_select_list(con, sources['steps'], 'steps', {'screenshot'})}, "
        f"screenshot.bytes AS image, screenshot.path AS image_path FROM {sources['steps']}"
    )
    con.execute(
        "CREATE OR REPLACE TABLE frame_stats (screenshot_sha256 VARCHAR PRIMARY KEY, blank BOOLEAN, "
        "image_width INTEGER, image_height INTEGER, error VARCHAR)"
    )
    con.execute(f"CREATE OR REPLACE TABLE {META_TABLE} (key VARCHAR PRIMARY KEY, value VARCHAR)")
    con.execute(f"INSERT INTO {META_TABLE} VALUES ('route', $route)", {"route": route})
    con.execute(f"CREATE OR REPLACE VIEW step_flags AS {_read_sql('_step_flags')}")
    define_infra_error(con)
    con.execute(_read_sql("_success_groups"))  # after the macro it calls
    return con


def define_infra_error(con: duckdb.DuckDBPyConnection, classes: Sequence[str] = INFRA_ERROR_CLASSES) -> None:
    """Create the ``is_infra_error`` macro (``sql/_infra_error.sql``) and its ``infra_error_classes`` table.

    Args:
        con: the connection to define them in.
        classes: the ``error_class`` values that count as lost to the environment.
    """
    con.execute("CREATE OR REPLACE TABLE infra_error_classes (error_class VARCHAR PRIMARY KEY)")
    if classes:
        con.executemany("INSERT INTO infra_error_classes VALUES (?)", [(c,) for c in classes])
    con.execute(_read_sql("_infra_error"))


def _is_local(view: DatasetViewLike) -> bool:
    fs = getattr(view, "filesystem", None)
    if fs is not None and not isinstance(fs, pafs.LocalFileSystem):
        return False
    paths = [p for files in view.files.values() for p in files]
    return all("://" not in p or p.startswith("file://") for p in paths)


def _sql_str(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _source(con: duckdb.DuckDBPyConnection, view: DatasetViewLike, table: str, route: str) -> str:
    files = list(view.files.get(table, ()))
    name = f"_osgym_{table}_source"
    if not files:
        con.register(name, TABLES[table].empty_table())
        return name
    if route == "parquet":
        paths = ", ".join(_sql_str(p.removeprefix("file://")) for p in files)
        return f"read_parquet([{paths}], union_by_name = true, hive_partitioning = false)"
    con.register(name, getattr(view, table))
    return name


_DUCKDB_TYPES = {
    pa.string(): "VARCHAR",
    pa.int32(): "INTEGER",
    pa.int64(): "BIGINT",
    pa.float64(): "DOUBLE",
    pa.bool_(): "BOOLEAN",
    pa.binary(): "BLOB",
}


def _duckdb_type(t: pa.DataType) -> str:
    if pa.types.is_timestamp(t):
        return "TIMESTAMPTZ" if t.tz else "TIMESTAMP"
    if pa.types.is_struct(t):
        fields = ", ".join(f"{t.field(i).name} {_duckdb_type(t.field(i).type)}" for i in range(t.num_fields))
        return f"STRUCT({fields})"
    if pa.types.is_list(t):
        return f"{_duckdb_type(t.value_type)}[]"
    return _DUCKDB_TYPES[t]


def _select_list(con: duckdb.DuckDBPyConnection, source: str, table: str, drop: set[str] | None = None) -> str:
    """The schema's columns in schema order; a column no shard has becomes a typed NULL."""
    present = {row[0] for row in con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()}
    items = []
    for f in TABLES[table]:
        if drop and f.name in drop:
            continue
        items.append(f.name if f.name in present else f"CAST(NULL AS {_duckdb_type(f.type)}) AS {f.name}")
    return ", ".join(items)


# --------------------------------------------------------------------------- named queries

_PARAM = re.compile(
    r"^--\s*@param\s+(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*"
    r"(?:=\s*(?P<default>[^:\s]+)|\((?P<required>required)\))?\s*:\s*(?P<doc>.*)$"
)
_REQUIRED = object()


@dataclass(frozen=True)
class QueryInfo:
    """A named query: its SQL, description and parameters (``name -> default``; required ones absent)."""

    name: str
    sql: str
    description: str
    defaults: dict[str, Any] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    docs: dict[str, str] = field(default_factory=dict)

    @property
    def params(self) -> tuple[str, ...]:
        """Every parameter's name, required first."""
        return self.required + tuple(self.defaults)


def _sql_dir() -> Any:
    return resources.files("osgym.analysis").joinpath("sql")


def _read_sql(name: str) -> str:
    path = _sql_dir().joinpath(f"{name}.sql")
    if not path.is_file():
        raise ConfigError(f"query: expected one of {', '.join(list_queries())}, actual {name!r}")
    return str(path.read_text(encoding="utf-8"))


def list_queries() -> list[str]:
    """The names of the shipped named queries, sorted.

    >>> "success_by_task" in list_queries()
    True
    """
    names = (p.name.removesuffix(".sql") for p in _sql_dir().iterdir() if p.name.endswith(".sql"))
    return sorted(n for n in names if not n.startswith("_"))


@cache
def query_info(name: str) -> QueryInfo:
    """Parse a named query's header.

    Raises:
        ConfigError: if there is no query of that name.
    """
    if name.startswith("_") or not re.fullmatch(r"[A-Za-z0-9_]+", name):
        raise ConfigError(f"query: expected one of {', '.join(list_queries())}, actual {name!r}")
    sql = _read_sql(name)
    description: list[str] = []
    defaults: dict[str, Any] = {}
    required: list[str] = []
    docs: dict[str, str] = {}
    for line in sql.splitlines():
        if not line.startswith("--"):
            break
        m = _PARAM.match(line)
        if m:
            docs[m["name"]] = m["doc"].strip()
            if m["default"] is not None:
                defaults[m["name"]] = json.loads(m["default"])
            else:
                required.append(m["name"])
        elif not line.lstrip("- ").startswith("@"):
            description.append(line.lstrip("-").strip())
    return QueryInfo(name, sql, " ".join(d for d in description if d), defaults, tuple(required), docs)


def query(con: duckdb.DuckDBPyConnection, name: str, **params: Any) -> pa.Table:
    """Run the named query ``osgym/sql/<name>.sql``.

    Args:
        con: a connection from :func:`connect` or :func:`connect_view`.
        name: one of :func:`list_queries`.
        **params: values for the query's ``$name`` parameters; declared defaults fill the rest.

    Returns:
        The result as a pyarrow Table.

    Raises:
        ConfigError: if the query is unknown, a required parameter is missing,
            or a parameter is not one the query declares.
    """
    info = query_info(name)
    unknown = sorted(set(params) - set(info.params))
    if unknown:
        raise ConfigError(f"{name}: expected parameters {list(info.params)}, actual unknown {unknown}")
    missing = [p for p in info.required if p not in params]
    if missing:
        raise ConfigError(f"{name}: missing required parameter(s) {missing}")
    values = {**info.defaults, **params}
    if "step_flags" in info.sql or "frame_stats" in info.sql:
        frame_stats(con)
    return to_arrow(con.sql(info.sql, params=values or None))


def summary(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    """Headline numbers: episodes, success rate, steps per episode and time per episode.

    Returns:
        A dict with ``runs``, ``tasks``, ``episodes``, ``successes``,
        ``success_rate``, ``steps``, ``steps_per_episode``, ``episode_s`` (mean
        wall time) and ``replica_s`` (total); rates are ``None`` for an empty dataset.
    """
    row = query(con, "summary").to_pylist()
    return dict(row[0])
