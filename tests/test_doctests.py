"""Every docstring example in the package runs, module by module."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import osgym

MODULES = sorted(m.name for m in pkgutil.walk_packages(osgym.__path__, "osgym.") if m.name != "osgym.__main__")


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed"


def test_the_package_has_examples_to_run() -> None:
    counted = sum(len([t for t in doctest.DocTestFinder().find(importlib.import_module(n)) if t.examples])
                  for n in MODULES)
    assert counted >= 40, counted
