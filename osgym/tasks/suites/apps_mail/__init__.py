"""The ``apps-mail`` suite: Thunderbird's local folders (the apps tier's profile has one account, Local
Folders, whose Inbox setup fills). Run it on ``tier: apps``."""

from __future__ import annotations

import random
from typing import Any

from osgym.tasks.generators import HOME, Template, cmd, op, q, rule
from osgym.tasks.suites.app_files import open_app, write_files
from osgym.tasks.suites.apps_smoke.common import ANIMALS, DONE, NAMES, WORDS

NAME = "apps-mail"
TIER = "apps"
DESCRIPTION = "Thunderbird: local mail folders (needs tier: apps)."
LOCAL = f"{HOME}/.thunderbird/osgym.default/Mail/Local Folders"
SENDERS = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy"]


def inbox(rng: random.Random) -> str:
    """An mbox of a few seeded messages."""
    msgs = []
    for i in range(rng.randint(2, 5)):
        who, subject = rng.choice(SENDERS), f"{rng.choice(WORDS).title()} {rng.choice(NAMES)} {rng.randint(1, 999)}"
        msgs.append(f"From - Mon Jan  1 00:00:00 2024\nFrom: {who}@example.org\nTo: user@osgym.invalid\n"
                    f"Subject: {subject}\nDate: Mon, {i + 1} Jan 2024 09:00:00 +0000\n"
                    f"Message-ID: <{i}.{rng.randint(1, 10**9)}@example.org>\n\nAbout {subject.lower()}.\n\n")
    return "".join(msgs)


def mail_new_folder(rng: random.Random) -> dict[str, Any]:
    folder = f"{rng.choice(WORDS).title()} {rng.choice(ANIMALS).title()} {rng.randint(2, 99)}"
    return {
        "instruction": f"In Thunderbird, create a folder named '{folder}' under Local Folders.",
        "related_apps": ["thunderbird"],
        "config": [write_files({f"{LOCAL}/Inbox": inbox(rng)}), *open_app(["thunderbird"], "Thunderbird")],
        "evaluator": {"func": "check_include_exclude",
                      "result": cmd(f"test -f {q(LOCAL + '/' + folder)} && echo created || echo missing"),
                      "expected": rule(include=["created"], exclude=["missing"])},
        # File > New > Folder... by access keys, each once its menu is shown (see osgym/tasks/sample_apps.py).
        "oracle": [op("wait_focused", window="Thunderbird", timeout=30), op("hotkey", keys=["alt", "f"]),
                   op("wait_enabled", window="Thunderbird", control="New", role="menu"), op("press", key="n"),
                   op("wait_enabled", window="Thunderbird", control="Folder…", role="menu-item"), op("press", key="f"),
                   op("wait_focused", window="New Folder", role="entry", timeout=30), op("type", text=folder),
                   op("wait_enabled", window="New Folder", control="Create Folder"), op("press", key="enter"),
                   op("wait_gone", title="New Folder", timeout=30), DONE],
    }


TEMPLATES: list[Template] = [
    Template("mail-new-folder", "thunderbird", "create a named folder under Local Folders", mail_new_folder,
             difficulty=1),
]
