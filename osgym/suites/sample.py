"""``osgym tasks sample DIR``: a small folder of OSWorld-format task files that run on the desktop tier.

The folder has OSWorld's layout, ``DIR/examples/<domain>/<id>.json`` with an index ``DIR/test_all.json``
(``{domain: [id, ...]}``), so a recipe names it with ``task_dir`` and ``task_index`` as it would name
OSWorld's ``evaluation_examples``. The files use only what the desktop tier has (xterm, Mousepad) and
what osgym implements (``execute``, ``launch`` and ``sleep`` setup steps; the ``vm_command_line`` getter;
``exact_match``, ``check_include_exclude`` and ``infeasible``). Each file also carries osgym's optional
``oracle`` (a keyboard-and-mouse solution the ``scripted`` policy replays); OSWorld ignores it.
``datasets/osworld-sample.yaml`` runs them.

>>> sorted(SAMPLE_INDEX)
['os', 'text_editor']
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

_NS = uuid.UUID("6f2d1c1e-0b7a-4d8e-9a51-3c0f1b2e4d77")


def _id(name: str) -> str:
    return str(uuid.uuid5(_NS, name))  # stable, UUID-shaped like OSWorld's ids


def _xterm_task(name: str, instruction: str, prepare: str, typed: str, probe: str, expected: str) -> dict[str, Any]:
    return {
        "id": _id(name), "snapshot": "os", "instruction": instruction, "source": "osgym tasks sample",
        "config": [
            {"type": "execute", "parameters": {"command": prepare, "shell": True}},
            {"type": "launch", "parameters": {"command": ["xterm"]}},
            {"type": "sleep", "parameters": {"seconds": 0.5}},
        ],
        "related_apps": ["os", "terminal"],
        "evaluator": {"func": "exact_match",
                      "result": {"type": "vm_command_line", "command": probe, "shell": True},
                      "expected": {"type": "rule", "rules": {"expected": expected}}},
        "oracle": [{"op": "wait_window", "args": {"title": "xterm"}},
                   {"op": "click_window", "args": {"title": "xterm"}},
                   {"op": "type", "args": {"text": typed}},
                   {"op": "wait", "args": {"seconds": 0.5}},
                   {"op": "done"}],
    }


SAMPLE: dict[str, list[dict[str, Any]]] = {
    "os": [
        _xterm_task("chmod", "Make the script ~/Desktop/backup.sh executable by everyone, without changing its "
                    "other permissions.",
                    "printf '#!/bin/sh\\necho backing up\\n' > /home/user/Desktop/backup.sh && "
                    "chmod 644 /home/user/Desktop/backup.sh",
                    "chmod a+x ~/Desktop/backup.sh\n", "stat -c %a /home/user/Desktop/backup.sh", "755\n"),
        _xterm_task("mkdir", "Create a folder named 'reports' on the Desktop.",
                    "rm -rf /home/user/Desktop/reports", "mkdir ~/Desktop/reports\n",
                    "test -d /home/user/Desktop/reports && echo yes || echo no", "yes\n"),
        {"id": _id("bluetooth"), "snapshot": "os", "source": "osgym tasks sample", "config": [],
         "instruction": "Pair this computer with the Bluetooth headphones named 'Aurora Buds'.",
         "related_apps": ["os"], "evaluator": {"func": "infeasible"}, "oracle": [{"op": "fail"}]},
    ],
    "text_editor": [{
        "id": _id("shopping"), "snapshot": "os", "source": "osgym tasks sample",
        "instruction": "Edit ~/Documents/shopping.txt in the open text editor: add 'oranges' on its own line, "
                       "remove 'candy', keep the other items, and save.",
        "config": [
            {"type": "execute", "parameters": {"command": [
                "python3", "-c", "open('/home/user/Documents/shopping.txt', 'w').write('bread\\ncandy\\nmilk\\n')"]}},
            {"type": "launch", "parameters": {"command": ["mousepad", "/home/user/Documents/shopping.txt"]}},
        ],
        "related_apps": ["os", "mousepad"],
        "evaluator": {"func": "check_include_exclude",
                      "result": {"type": "vm_command_line", "command": "cat /home/user/Documents/shopping.txt",
                                 "shell": True},
                      "expected": {"type": "rule", "rules": {"include": ["bread", "milk", "oranges"],
                                                             "exclude": ["candy"]}}},
        "oracle": [{"op": "wait_window", "args": {"title": "shopping.txt"}},
                   {"op": "click_window", "args": {"title": "shopping.txt"}},
                   {"op": "hotkey", "args": {"keys": ["ctrl", "a"]}},
                   {"op": "type", "args": {"text": "bread\nmilk\noranges\n"}},
                   {"op": "hotkey", "args": {"keys": ["ctrl", "s"]}},
                   {"op": "wait_gone", "args": {"title": "*"}},
                   {"op": "done"}],
    }],
}
"""The sample's task files by domain."""

SAMPLE_INDEX = {domain: [t["id"] for t in tasks] for domain, tasks in SAMPLE.items()}


def write_task_folder(directory: str | Path, tasks_by_domain: dict[str, list[dict[str, Any]]]) -> list[Path]:
    """Write task files in OSWorld's layout under ``directory``: ``examples/<domain>/<id>.json`` and the index
    ``test_all.json``, replacing files of the same names; returns the task files' paths."""
    root = Path(directory)
    paths = []
    for domain, tasks in tasks_by_domain.items():
        (root / "examples" / domain).mkdir(parents=True, exist_ok=True)
        for task in tasks:
            path = root / "examples" / domain / f"{task['id']}.json"
            path.write_text(json.dumps(task, indent=2) + "\n")
            paths.append(path)
    index = {domain: [t["id"] for t in tasks] for domain, tasks in tasks_by_domain.items()}
    (root / "test_all.json").write_text(json.dumps(index, indent=2) + "\n")
    return paths


def write_sample(directory: str | Path) -> list[Path]:
    """Write the sample under ``directory`` (``examples/<domain>/<id>.json`` and ``test_all.json``), replacing
    files of the same names; returns the task files' paths."""
    return write_task_folder(directory, SAMPLE)


__all__ = ["SAMPLE", "SAMPLE_INDEX", "write_sample", "write_task_folder"]
