"""The package layout is the data path: a module imports only from its own package and earlier ones.

replicas -> tasks -> agents -> episodes -> dataset -> collection -> analysis -> serving, with the shared basics (errors,
settings, retrying, registry, sigterm) below them all and the CLI above. Imports under ``TYPE_CHECKING``
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


# Third-party packages load once in a parent interpreter; each osgym module is then imported first in a
# forked child of it. A cycle among osgym's own modules shows just as in a fresh interpreter, at a
# fraction of the cost (a fresh interpreter per module re-imports prefect, pyarrow, duckdb, ... each time).
_PRELOAD = """
import sys
for m in sys.argv[1:]:
    try:
        __import__(m)
    except BaseException:
        pass  # the forked import of the same module below names it
print(' '.join(sys.modules))
"""
_FORK_EACH = """
import importlib, os, sys
for name in sys.argv[1].split():
    try:
        importlib.import_module(name)
    except Exception:
        pass  # a child's own import of it reports the failure
running = {}
def reap(pid, status):
    module = running.pop(pid)
    if status and os.WIFSIGNALED(status):  # a child that raised has printed why
        print(f"{module}: the first import killed its interpreter ({os.WTERMSIG(status)})", flush=True)
for module in sys.argv[2:]:
    if len(running) >= (os.cpu_count() or 1):  # a child per core at a time
        reap(*os.wait())
    pid = os.fork()
    if pid == 0:
        try:
            importlib.import_module(module)
        except BaseException as e:
            print(f"{module}: {type(e).__name__}: {e}", flush=True)
            os._exit(1)
        os._exit(0)
    running[pid] = module
while running:
    reap(*os.wait())
"""
OWN = ("osgym", "flows", "tasks", "tests", "__main__")


def test_every_module_imports_first_in_a_fresh_interpreter() -> None:
    modules = [m for m in MODULES if m != "osgym.__main__"]
    everything = subprocess.run([sys.executable, "-c", _PRELOAD, *modules], capture_output=True, text=True,
                                timeout=300, check=True).stdout.split()
    third_party = " ".join(n for n in everything if n.split(".")[0] not in OWN)
    r = subprocess.run([sys.executable, "-c", _FORK_EACH, third_party, *modules], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    assert not r.stdout.strip(), r.stdout
