"""A ``--where`` expression is read by DuckDB's own tokenizer and parser (quoting cannot hide a statement from
the check), and the sandbox evaluating it is bounded in memory and time.

The runaway expressions run in a child process whose address space is bounded and which is killed past a
deadline, so an unbounded evaluation fails the test, not the machine; peak memory is read from the kernel.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from osgym.analysis import selection
from osgym.analysis.selection import check_where, select_from_store
from osgym.errors import ConfigError
from tests.export.conftest import DATASET

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 2.0  # the child's bound on one evaluation (the default is longer; the mechanism is the same)
HEADROOM = 3 * 2**30  # the child's address space past what its imports took

CHILD = r"""
import json, resource, sys, time
from osgym.analysis import selection
from osgym.errors import ConfigError
selection.WHERE_TIMEOUT_S = float(sys.argv[4])
def status(key):
    return int(next(l for l in open("/proc/self/status") if l.startswith(key + ":")).split()[1]) * 1024
limit = status("VmSize") + int(sys.argv[5])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # the peak resident size (VmHWM) starts again from here
rss = status("VmRSS")
start = time.monotonic()
try:
    out = {"kept": selection.select_from_store(sys.argv[1], sys.argv[2], where=sys.argv[3]).kept, "error": None}
except ConfigError as exc:
    out = {"error": str(exc)}
except BaseException as exc:
    out = {"error": f"{type(exc).__name__}: {exc}", "crashed": True}
out.update(seconds=time.monotonic() - start, grew=status("VmHWM") - rss)
print("\n" + json.dumps(out))  # on a line of its own, whatever else was printed
"""


def _select_in_child(store: Path, where: str, timeout_s: float = TIMEOUT_S) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-c", CHILD, str(store), DATASET, where, str(timeout_s), str(HEADROOM)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


@pytest.mark.parametrize(("where", "message"), [
    # $$...$$ is one string to DuckDB: the quotes inside it open nothing, so what follows is SQL
    ("$$'$$ ; COPY (SELECT 1) TO 'out.csv' ; SELECT $$'$$", r"a ';' \(a second statement\) at character 6"),
    ("$$'$$ = 'x' -- '", "a comment at character 12"),
    ("$q$'$q$ = 'x') OR (true OR $q$'$q$ = 'y'", r"a '\)' closing nothing at character 13"),
    ("success = $$open", "an unclosed \\$\\$ quote at character 10"),
    ("task_id = E'\\'", "an unclosed ' quote at character 10"),
    ("success, stuck_episode", "2 expressions"),
])
def test_quoting_cannot_hide_what_the_check_refuses(where: str, message: str) -> None:
    with pytest.raises(ConfigError, match=f"--where: expected one SQL expression, actual .*{message}"):
        check_where(where)


def test_dollar_quoted_strings_are_still_expressions(demo_store: Path) -> None:
    assert check_where("task_id <> $$a;b -- /* ) ($$") == "task_id <> $$a;b -- /* ) ($$"
    sel = select_from_store(str(demo_store), DATASET, where="task_id = $t$t1$t$ AND steps >= 3")
    assert sel.ids == frozenset({"e1", "e2", "e7"})


def test_a_dollar_quoted_copy_is_refused_and_writes_no_file(demo_store: Path, tmp_path: Path) -> None:
    target = tmp_path / "copied.csv"
    where = f"$$'$$ ; COPY (SELECT * FROM episode_quality) TO '{target}' (FORMAT csv) ; SELECT $$'$$"
    with pytest.raises(ConfigError, match=r"--where: expected one SQL expression, actual a ';' \(a second"):
        select_from_store(str(demo_store), DATASET, where=where)
    assert not target.exists() and list(tmp_path.iterdir()) == []


def test_an_expression_running_past_the_time_bound_is_stopped(demo_store: Path) -> None:
    got = _select_in_child(demo_store, "(SELECT count(*) FROM range(1000000000000)) > 0")
    assert not got.get("crashed") and got["error"] is not None, got
    assert f"stopped after {TIMEOUT_S:g} s" in got["error"], got
    assert got["seconds"] < TIMEOUT_S + 20, got  # interrupted at the bound, however loaded the machine


def test_an_expression_past_the_memory_limit_is_stopped(demo_store: Path) -> None:
    # a time bound the memory limit trips well within, so that is what stops it (the default bound is as long)
    got = _select_in_child(demo_store, "(SELECT count(DISTINCT range) FROM range(1000000000000)) > 0", 60.0)
    # within the 512MB limit it grows ~470 MiB; unbounded, it grows until the child's address space runs out
    assert got["grew"] < 2**30, f"peak memory grew by {got['grew'] / 2**20:.0f} MiB"
    assert not got.get("crashed") and got["error"] is not None, got
    assert f"needs more than the sandbox's {selection.WHERE_MEMORY_LIMIT} of memory" in got["error"], got
