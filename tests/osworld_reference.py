"""Loading OSWorld's own evaluator modules inside the reference venv (tests/metrics/conftest.py), shared
by tests/metrics/osworld_runner.py, tests/getters/osworld_getter_runner.py and
tests/osworld_client/osworld_client_runner.py (OSWorld's controllers); stdlib only, not
imported by osgym or by pytest.

A family's module is loaded from OSWorld's real file without the package ``__init__`` (which imports
every family); for the modules listed in a runner's ``heavy`` mapping the imports of libraries that
cannot be installed here are left out, and a runner runs a function only if its code names nothing
those imports would have bound (:func:`names`).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import sys
import types
from typing import Any


def enter_packages(family: str) -> None:
    """Register ``desktop_env``, ``.evaluators`` and ``.evaluators.<family>`` as bare packages."""
    spec = importlib.util.find_spec("desktop_env")
    assert spec is not None and spec.submodule_search_locations, "desktop_env is not installed here"
    root = spec.submodule_search_locations[0]
    for name, sub in (("desktop_env", ""), ("desktop_env.evaluators", "/evaluators"),
                      (f"desktop_env.evaluators.{family}", f"/evaluators/{family}")):
        pkg = types.ModuleType(name)
        pkg.__path__ = [root + sub]
        sys.modules[name] = pkg


def load(family: str, module: str, heavy: dict[str, tuple[set[str], set[str]]]) -> types.ModuleType:
    """``desktop_env.evaluators.<family>.<module>``, without the imports ``heavy[module][0]`` names."""
    name = f"desktop_env.evaluators.{family}.{module}"
    if module not in heavy or name in sys.modules:
        return importlib.import_module(name)
    return load_without(name, heavy[module][0])


def load_without(name: str, dropped: set[str]) -> types.ModuleType:
    """Module ``name`` compiled from its own source without the top-level imports of ``dropped``."""
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.origin
    tree = ast.parse(open(spec.origin, encoding="utf-8").read())
    tree.body = [n for n in tree.body if not (
        (isinstance(n, ast.Import) and {a.name for a in n.names} <= dropped)
        or (isinstance(n, ast.ImportFrom) and n.module in dropped))]
    mod = types.ModuleType(name)
    mod.__file__ = spec.origin
    sys.modules[name] = mod
    exec(compile(tree, spec.origin, "exec"), mod.__dict__)
    return mod


def names(code: Any) -> set[str]:
    """Every global name a function's code (nested code included) refers to."""
    found = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found |= names(const)
    return found
