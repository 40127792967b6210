"""Shared shape of the metric tests: a table of cases scored by osgym (against the score a user expects)
and by OSWorld's own function (against osgym's score, or against the difference written down in
docs/osworld-coverage.md)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from osgym.tasks import metrics
from tests.metrics.conftest import Call, OSWorld

SAME = "same"


@dataclass(frozen=True)
class File:
    """A file the test writes into its tmp dir; the metric gets its path."""

    content: str | bytes
    name: str = "file"


@dataclass(frozen=True)
class Case:
    id: str
    result: Any
    expected: Any
    want: float
    options: dict[str, Any] = field(default_factory=dict)
    osworld: float | str = SAME
    """OSWorld's score where it differs from ``want`` (a number), or the start of the error it raises."""


def ids(cases: Sequence[Case]) -> list[str]:
    return [c.id for c in cases]


def materialize(value: Any, where: Path) -> Any:
    """``value`` with every :class:`File` written under ``where`` and replaced by its path."""
    if isinstance(value, File):
        where.mkdir(parents=True, exist_ok=True)
        path = where / value.name
        if isinstance(value.content, bytes):
            path.write_bytes(value.content)
        else:
            path.write_text(value.content, encoding="utf-8")
        return str(path)
    if isinstance(value, list):
        return [materialize(v, where / str(i)) for i, v in enumerate(value)]
    return value


def args(case: Case, tmp: Path) -> tuple[Any, Any]:
    return materialize(case.result, tmp / case.id / "result"), materialize(case.expected, tmp / case.id / "expected")


def ours(name: str, case: Case, tmp: Path) -> float:
    result, expected = args(case, tmp)
    return metrics.score(name, result, expected, case.options)


def check(name: str, case: Case, tmp: Path) -> None:
    """osgym scores the case as a user expects."""
    assert ours(name, case, tmp) == pytest.approx(case.want, abs=1e-9), case.id


def parity(osworld: OSWorld, module: str, func: str, cases: Sequence[Case], tmp: Path, name: str | None = None,
           tolerance: float = 1e-9) -> None:
    """OSWorld's function scores every case as osgym does, except the recorded differences."""
    calls, mine = [], []
    for c in cases:
        result, expected = args(c, tmp / "parity")
        calls.append(Call(module, func, result, expected, c.options))
        mine.append(metrics.score(name or func, result, expected, c.options))
    theirs = osworld.scores(calls)
    for c, got, own in zip(cases, theirs, mine, strict=True):
        if c.osworld == SAME:
            assert isinstance(got, float) and got == pytest.approx(own, abs=tolerance), (c.id, got, own)
        elif isinstance(c.osworld, str):
            assert isinstance(got, str) and got.startswith(c.osworld), (c.id, got)
        else:
            assert got == pytest.approx(c.osworld, abs=tolerance), (c.id, got)
