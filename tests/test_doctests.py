"""Every docstring example in the package runs, module by module.

Only modules that have examples are tests: a module without one would pass while checking nothing.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import osgym

FINDER = doctest.DocTestFinder()
ALL_MODULES = sorted(m.name for m in pkgutil.walk_packages(osgym.__path__, "osgym.") if m.name != "osgym.__main__")
MODULES = [name for name in ALL_MODULES if any(t.examples for t in FINDER.find(importlib.import_module(name)))]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, f"{name}: no example ran"
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed"


def test_the_package_has_examples_to_run() -> None:
    counted = sum(len([t for t in FINDER.find(importlib.import_module(n)) if t.examples]) for n in MODULES)
    assert len(MODULES) >= 40 and counted >= 40, (len(MODULES), counted)
