"""A measured :class:`~osgym.replicas.cost.Profile` from a dataset, or from one run of it.

The episodes table carries each episode's accounting (CPU seconds and memory of its replica while
leased, from the cgroup; tokens; bytes stored). The named query ``profile`` folds them into the
figures the cost model needs; :func:`find_run` finds which dataset of a store holds a run, for
``osgym pool plan --from-run RUN``.
"""

from __future__ import annotations

from typing import Any

import duckdb

from osgym.analysis import analytics
from osgym.errors import ConfigError
from osgym.replicas.cost import DEFAULT_PROFILE, MIN_CORES, Profile


def measured_profile(con: duckdb.DuckDBPyConnection, run_id: str | None = None, *, name: str = "") -> Profile:
    """The profile the episodes of ``con`` (only run ``run_id``'s, if given) measured.

    Args:
        con: a connection from :func:`osgym.analysis.analytics.connect`.
        run_id: one run of the dataset, or None for all of them.
        name: the dataset's name, to cite in the profile's source.

    Raises:
        ConfigError: if there is no such episode, or none carries resource accounting.
    """
    row: dict[str, Any] = analytics.query(con, "profile", run_id=run_id or "").to_pylist()[0]
    what = f"run {run_id}" if run_id else "the dataset"
    if not row["episodes"]:
        raise ConfigError(f"{what} has no episodes" + (f" in dataset {name}" if name else ""))
    if not row["metered_episodes"] or row["mem_mib"] is None:
        raise ConfigError(f"{what} has no resource accounting: its episodes were collected before osgym measured "
                          "replicas (dataset schema 2), or on a host whose cgroups this process could not read")
    return Profile(
        cores=max(row["cores"] or 0.0, MIN_CORES), mem_mib=row["mem_mib"], mem_peak_mib=row["mem_peak_mib"],
        replica_s=row["replica_s"] or 0.0, input_tokens=row["input_tokens"] or 0.0,
        output_tokens=row["output_tokens"] or 0.0, bytes=row["bytes"] or 0.0, success_rate=row["success_rate"],
        episodes=row["episodes"], model=row["model"],
        source=f"measured: {row['metered_episodes']} episode(s) of {what}" + (f" of {name}" if name else ""),
    )


def find_run(store: str, run_id: str, s3: Any = None) -> str:
    """The name of the dataset in ``store`` that holds run ``run_id``.

    Raises:
        ConfigError: if no dataset there holds it (naming the datasets there).
        StoreError: if the store cannot be read.
    """
    from osgym.dataset import list_datasets, open_dataset

    names = list_datasets(store, s3=s3)
    for name in names:
        if run_id in open_dataset(store, name, s3=s3).runs:
            return name
    raise ConfigError(f"no dataset in {store} holds run {run_id!r}; datasets there: {', '.join(names) or 'none'}")


def profile_or_default(con: duckdb.DuckDBPyConnection, run_id: str | None = None) -> Profile:
    """:func:`measured_profile`, or :data:`~osgym.replicas.cost.DEFAULT_PROFILE` (with the dataset's per-episode
    figures and model) when its episodes carry no accounting, so a report of an older dataset still prices it."""
    try:
        return measured_profile(con, run_id)
    except ConfigError:
        pass
    row: dict[str, Any] = analytics.query(con, "profile", run_id=run_id or "").to_pylist()[0]
    return DEFAULT_PROFILE.model_copy(update={
        "replica_s": row["replica_s"] or 0.0, "input_tokens": row["input_tokens"] or 0.0,
        "output_tokens": row["output_tokens"] or 0.0, "bytes": row["bytes"] or 0.0,
        "success_rate": row["success_rate"], "episodes": row["episodes"] or 0, "model": row["model"]})
