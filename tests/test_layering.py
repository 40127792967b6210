"""The package layout is the data path: a module imports only from its own package and earlier ones, and no
modules import each other in a circle.

replicas -> tasks -> suites -> agents -> episodes -> dataset -> collection -> analysis -> serving, with the shared
basics (errors, settings, retrying, registry, sigterm, storage) below them all and the CLI above. Every import counts:
at module level, inside a function, and under ``TYPE_CHECKING`` (an annotation that names a later package is an
arrow back up all the same). Every module must also import on its own in a fresh interpreter: an eager package
``__init__`` can otherwise hide a cycle that shows only for some first import.
"""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import osgym

ORDER = ["replicas", "tasks", "suites", "agents", "episodes", "dataset", "collection", "analysis", "serving"]
TOP = {"cli": len(ORDER) + 1, "__main__": len(ORDER) + 1}
MODULES = sorted(m.name for m in pkgutil.walk_packages(osgym.__path__, "osgym."))


def _rank(module: str) -> int:
    part = module.split(".")[1] if module.count(".") else ""
    if part in ORDER:
        return ORDER.index(part) + 1
    return TOP.get(part, 0)  # errors, settings, retrying, registry, the package itself


def _path(module: str) -> Path:
    spec_path = Path(osgym.__path__[0]).parent / (module.replace(".", "/") + ".py")
    return spec_path if spec_path.exists() else spec_path.with_suffix("") / "__init__.py"


def _imports(module: str) -> set[str]:
    """The osgym modules ``module`` imports, anywhere in it (``from pkg import mod`` names ``pkg.mod``)."""
    found = set()
    for node in ast.walk(ast.parse(_path(module).read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("osgym"):
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in MODULES else node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("osgym")}
    return found - {module}


GRAPH = {m: {i for i in _imports(m) if i in MODULES} for m in MODULES}


@pytest.mark.parametrize("module", MODULES)
def test_no_module_imports_from_a_later_package(module: str) -> None:
    later = sorted(m for m in _imports(module) if _rank(m) > _rank(module))
    assert not later, f"{module} imports from later packages: {later}"


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative).

    >>> circles({"a": {"b"}, "b": {"a"}, "c": {"a"}})
    [['a', 'b']]
    """
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            nxt = next(edges, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_modules_import_each_other_in_a_circle() -> None:
    assert circles(GRAPH) == [], "modules that import each other (directly or round a circle)"


def test_the_checks_see_what_they_check() -> None:
    """The graph holds the imports the checks judge: one at module level, one inside a function and one under
    TYPE_CHECKING, from modules that have them."""
    assert "osgym.errors" in GRAPH["osgym.replicas.client"]
    assert any(_rank(i) < _rank(m) for m in MODULES for i in GRAPH[m])
    assert len(GRAPH) == len(MODULES) > 150


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
