"""Hollow episodes in a dataset: counted for the card, refused by the exports unless asked.

Episodes of hollow replicas (:mod:`osgym.replicas.hollow`) carry ``hollow`` true: they load the control plane
with synthetic screens and are never agent data, so nothing that feeds a trainer takes them by default.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from osgym.dataset.reader import DatasetView
from osgym.errors import HollowDataRefused

__all__ = ["check_hollow", "hollow_episodes"]


def hollow_episodes(episodes: pa.Table) -> int:
    """How many rows of an ``episodes`` table ran on hollow replicas (a null ``hollow``, from files older than
    schema 5, is a real replica's)."""
    if "hollow" not in episodes.column_names or not episodes.num_rows:
        return 0
    return int(pc.sum(pc.fill_null(episodes["hollow"], False)).as_py() or 0)


def check_hollow(view: DatasetView, dataset: str, allow: bool) -> int:
    """Refuse a dataset that holds hollow episodes unless ``allow``; returns how many it holds.

    Raises:
        HollowDataRefused: naming how many episodes are hollow and how to take them anyway.
    """
    table = view.episodes.to_table(columns=["hollow"])
    n = hollow_episodes(table)
    if n and not allow:
        raise HollowDataRefused(f"dataset {dataset}: {n} of {table.num_rows} episodes ran on hollow replicas (a "
                                "load test with synthetic screens, not agent data); refusing to export them. Pass "
                                "--allow-hollow (allow_hollow=True) to export them anyway")
    return n
