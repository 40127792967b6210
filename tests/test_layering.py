"""The package layout is the data path: a module imports only from its own package and earlier ones.

replicas -> tasks -> agents -> episodes -> dataset -> collection -> analysis -> serving, with the shared basics (errors,
settings, retrying, registry) below them all and the CLI above. Imports under ``TYPE_CHECKING``
serve annotations only and are exempt (a policy's history is a list of the episode's steps).
Every module must also import
on its own in a fresh interpreter: an eager package ``__init__`` can otherwise hide a cycle that
shows only for some first import.
"""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import osgym

ORDER = ["replicas", "tasks", "agents", "episodes", "dataset", "collection", "analysis", "serving"]
TOP = {"cli": len(ORDER) + 1, "__main__": len(ORDER) + 1}
MODULES = sorted(m.name for m in pkgutil.walk_packages(osgym.__path__, "osgym."))


def _rank(module: str) -> int:
    part = module.split(".")[1] if module.count(".") else ""
    if part in ORDER:
        return ORDER.index(part) + 1
    return TOP.get(part, 0)  # errors, settings, retrying, registry, the package itself


def _imports(module: str) -> set[str]:
    spec_path = Path(osgym.__path__[0]).parent / (module.replace(".", "/") + ".py")
    if not spec_path.exists():
        spec_path = spec_path.with_suffix("") / "__init__.py"
    tree = ast.parse(spec_path.read_text())
    typing_only = {id(n) for guard in ast.walk(tree) if isinstance(guard, ast.If)
                   and ast.unparse(guard.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
                   for stmt in guard.body for n in ast.walk(stmt)}
    found = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:  # annotations only: no import at run time
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("osgym"):
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("osgym")}
    return found


@pytest.mark.parametrize("module", MODULES)
def test_no_module_imports_from_a_later_package(module: str) -> None:
    later = sorted(m for m in _imports(module) if _rank(m) > _rank(module))
    assert not later, f"{module} imports from later packages: {later}"


def test_every_module_imports_first_in_a_fresh_interpreter() -> None:
    code = "import importlib, sys\nfor m in sys.argv[1:]:\n    importlib.import_module(m)\n"
    failed = []
    for module in MODULES:
        if module == "osgym.__main__":
            continue
        r = subprocess.run([sys.executable, "-c", code, module], capture_output=True, text=True, timeout=60)
        if r.returncode:
            failed.append(f"{module}: {r.stderr.strip().splitlines()[-1]}")
    assert not failed, "\n".join(failed)
