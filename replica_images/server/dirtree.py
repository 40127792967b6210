"""A directory as OSWorld's ``/list_directory`` shows it, bounded: the one walker of the replica.

OSWorld's route (osworld.py) and the host's ``list_directory`` getter (osgym/tasks/getters/files.py, which runs
``python3 /opt/osgym/dirtree.py PATH`` as the agent's user) both use it. The walk stops after ``max_entries``
entries and ``max_depth`` levels and does not follow symlinked directories; a directory whose listing was cut
says so (``"truncated": true``).
"""

import json
import os
import sys

MAX_TREE_ENTRIES = 20_000
MAX_DEPTH = 32


def tree(path, max_entries=MAX_TREE_ENTRIES, max_depth=MAX_DEPTH):
    """``{"type": "directory", "name", "children": [...]}`` with ``{"type": "file", "name"}`` leaves."""
    budget = [max_entries]

    def walk(d, depth):
        node = {"type": "directory", "name": os.path.basename(d), "children": []}
        try:
            entries = sorted(os.listdir(d))
        except OSError as exc:
            return {"error": str(exc)}
        for entry in entries:
            if budget[0] <= 0:
                node["truncated"] = True
                break
            budget[0] -= 1
            full = os.path.join(d, entry)
            if os.path.isdir(full) and not os.path.islink(full) and depth < max_depth:
                node["children"].append(walk(full, depth + 1))
            else:
                node["children"].append({"type": "file", "name": entry})
        return node

    return walk(path, 0)


if __name__ == "__main__":
    target = sys.argv[1]
    print(json.dumps(tree(target) if os.path.isdir(target) else None))
