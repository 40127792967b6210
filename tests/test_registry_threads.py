"""A registry's built-ins load once, whichever thread looks first, and no thread sees them half-loaded."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from osgym.registry import Registry


def test_a_lookup_during_another_threads_load_waits_for_it() -> None:
    loads = []
    started = threading.Event()

    def load() -> None:  # as importing the metric families does: registrations arrive one by one
        loads.append(1)
        reg.add("first", 1)
        started.set()
        time.sleep(0.3)
        reg.add("second", 2)

    reg: Registry[int] = Registry("thing", load=load)
    with ThreadPoolExecutor(2) as ex:
        a = ex.submit(reg.get, "first")
        started.wait(5)
        b = ex.submit(reg.get, "second")  # before the fix: ConfigError, the registry had only "first"
        assert (a.result(5), b.result(5)) == (1, 2)
    assert loads == [1]


def test_a_registration_may_look_up_while_loading() -> None:
    def load() -> None:
        reg.add("a", 1)
        assert reg.names() == ("a",)  # the same thread re-enters without deadlock, seeing what is there
        reg.add("b", 2)

    reg: Registry[int] = Registry("thing", load=load)
    assert reg.names() == ("a", "b")
