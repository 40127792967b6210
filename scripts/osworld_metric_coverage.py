"""Count OSWorld's Linux task files by the metric functions their evaluators name, against osgym's registry.

Reads a local copy of OSWorld (a bare git mirror or a work tree) and prints, for every metric function
the Linux task files use, how many files use it and whether osgym registers it; then how many files
have every evaluator func registered. Only metric names are checked here (getters and setup steps are
``osgym tasks check``'s business). OSWorld's files are read, never copied.

Usage: python3 scripts/osworld_metric_coverage.py [REPO] [--rev HEAD] [--json]
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
from pathlib import Path

DEFAULT_REPO = "/work/.mirror/pkueecszc+OSWorld/repo"
EXAMPLES = "evaluation_examples/examples/"
WINDOWS_ONLY = {"Windows"}
NOT_AN_OBJECT = "(evaluator is not an object)"
EMPTY = "(empty func)"  # tasks OSWorld left without an evaluator


def _git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True, text=True, timeout=120).stdout


def task_funcs(repo: str, rev: str) -> dict[str, list[str]]:
    """Each Linux task file's path and the metric functions its evaluator names."""
    paths = [p for p in _git(repo, "ls-tree", "-r", "--name-only", rev, EXAMPLES).splitlines()
             if p.endswith(".json") and "/" in p[len(EXAMPLES):]  # template.json at the top is no task
             and p[len(EXAMPLES):].split("/")[0] not in WINDOWS_ONLY]
    # one `git cat-file --batch` for all files instead of a process per file
    batch = "".join(f"{rev}:{p}\n" for p in paths).encode()
    proc = subprocess.run(["git", "-C", repo, "cat-file", "--batch"], input=batch, capture_output=True, check=True,
                          timeout=300)
    out, data, pos = {}, proc.stdout, 0
    for p in paths:
        header_end = data.index(b"\n", pos)
        size = int(data[pos:header_end].split()[2])
        body = data[header_end + 1:header_end + 1 + size]
        pos = header_end + 1 + size + 1
        evaluator = json.loads(body).get("evaluator", {})
        if not isinstance(evaluator, dict):  # two vlc files hold a bare string here: no function to run
            out[p] = [NOT_AN_OBJECT]
            continue
        func = evaluator.get("func", [])
        out[p] = [func or EMPTY] if isinstance(func, str) else [f or EMPTY for f in func]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repo", nargs="?", default=DEFAULT_REPO)
    ap.add_argument("--rev", default="HEAD")
    ap.add_argument("--json", action="store_true", help="print a JSON summary instead of a table")
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the registry as this checkout has it
    from osgym.tasks import metrics

    registered = set(metrics.METRICS.names())
    files = task_funcs(args.repo, args.rev)
    by_func: collections.Counter[str] = collections.Counter()
    for funcs in files.values():
        by_func.update(set(funcs))
    covered = sum(1 for funcs in files.values() if set(funcs) <= registered)
    missing = {f: n for f, n in by_func.most_common() if f not in registered}
    rev = _git(args.repo, "rev-parse", args.rev).strip()
    if args.json:
        print(json.dumps({"commit": rev, "files": len(files), "all_registered": covered,
                          "funcs": len(by_func), "registered_funcs": len(by_func) - len(missing),
                          "missing": missing}, indent=1))
        return 0
    print(f"OSWorld {rev}: {len(files)} Linux task files, {len(by_func)} metric functions")
    print(f"files whose evaluator funcs are all registered: {covered} ({100 * covered / len(files):.0f} %)")
    print(f"functions registered: {len(by_func) - len(missing)} of {len(by_func)}")
    print("\nfiles  func  (unregistered, most files first)")
    for f, n in missing.items():
        print(f"{n:5d}  {f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
