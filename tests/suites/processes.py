"""Worker processes for the property tests that draw thousands of variants per suite or template: CPU-bound
Python, so one process would leave a CI machine's second core idle. A module's fixture submits the work of
every selected test at once; each test waits on its own result and asserts on it in the pytest process."""

from __future__ import annotations

import multiprocessing
import os
import sys
import warnings
from collections.abc import Callable, Hashable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

import pytest

K = TypeVar("K", bound=Hashable)
R = TypeVar("R")
Warned = tuple[str, type[Warning], str, int, str | None]
"""A warning seen in a worker: message, category, file, line, module."""


def selected(request: pytest.FixtureRequest, test: Callable[..., object]) -> list[pytest.Function]:
    """The items of ``test`` (in the requesting module) this session runs: with ``-k`` only those, so a run
    of one test computes only what that test needs."""
    return [i for i in request.session.items
            if isinstance(i, pytest.Function) and i.module is request.module and i.originalname == test.__name__]


def params(items: Iterable[pytest.Function], name: str) -> list[Any]:
    """The value of parameter ``name`` in each item."""
    return [i.callspec.params[name] for i in items]


class Pending(Generic[R]):
    """A worker's result to come. The warnings the work raised are warned again by :meth:`result`, in the test
    that asks: pytest's filters (``error``) apply there, not in the worker, and fail the test as they did when
    the work ran in the test itself."""

    def __init__(self, future: Future[tuple[R, list[Warned]]]) -> None:
        self._future = future

    def result(self) -> R:
        value, warned = self._future.result()
        for message, category, filename, lineno, module in warned:
            warnings.warn_explicit(message, category, filename, lineno, module)
        return value


@contextmanager
def in_processes(work: Callable[[K], R], keys: Iterable[K]) -> Iterator[dict[K, Pending[R]]]:
    """``work(key)`` for every key, all submitted now to a process per core. ``work`` must be a module-level
    function: spawned workers import it. Spawned, not forked: the pytest process has threads (other fixtures'
    pools and clients), and a fork copies their locks in whatever state they are, held ones included."""
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=os.cpu_count(), mp_context=spawn) as pool:
        pending = {k: Pending(pool.submit(_recording, work, k)) for k in keys}
        try:
            yield pending
        finally:
            pool.shutdown(cancel_futures=True)  # a run stopped early does not wait for the work left


def _recording(work: Callable[[K], R], key: K) -> tuple[R, list[Warned]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = work(key)
    seen = dict.fromkeys((str(w.message), w.category, w.filename, w.lineno) for w in caught)
    return value, [(message, category, filename, lineno, _module(filename))
                   for message, category, filename, lineno in seen]


def _module(filename: str) -> str | None:
    """The module a warning came from, which pytest's ``ignore::Category:module`` filters match on."""
    return next((name for name, m in list(sys.modules.items()) if getattr(m, "__file__", None) == filename), None)
