"""The ``apps-mail`` suite: Thunderbird's local folders (the apps tier's profile has one account, Local
Folders, whose Inbox and folders setup writes as mbox files before Thunderbird starts, so it finds them):
a new folder, a message filter (checked in the account's ``msgFilterRules.dat``, as OSWorld's thunderbird
tasks check theirs) and a message moved to a folder (checked in the folders' mbox files). Run it on
``tier: apps``."""

from __future__ import annotations

import random
from typing import Any
from urllib.parse import quote

from osgym.replicas.accounts import AGENT_HOME as HOME
from osgym.suites.app_files import poll_then, write_files
from osgym.suites.apps_smoke.common import ANIMALS, DONE, NAMES, WORDS, open_app
from osgym.suites.generators import Template, cmd, execute, op, q, rule, vm_file
from osgym.suites.variation import Variation

NAME = "apps-mail"
TIER = "apps"
DESCRIPTION = "Thunderbird: local mail folders, filters, moving mail (needs tier: apps)."
LOCAL = f"{HOME}/.thunderbird/osgym.default/Mail/Local Folders"
FILTERS = f"{LOCAL}/msgFilterRules.dat"
THUNDERBIRD = "Mozilla Thunderbird"
SENDERS = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy"]


def new_folder(name: str) -> list[dict[str, Any]]:
    """File (by its access key) > New > Folder... by clicks, then ``name`` in the dialog. Clicks, not access
    keys, in the menus: Thunderbird shows a menu and focuses its first item before it takes keys, and an
    access key pressed as soon as that showed was lost now and then (the submenu never opened); a click
    lands on what is shown.

    First the window must be titled for Local Folders: Thunderbird maps its window as "Home" and selects the
    account a moment later, and File > New built while nothing was selected has no Folder... item (a quiet
    run opened it in that moment; the submenu stays as it was built while it is open)."""
    return [op("wait_window", title=f"Local Folders - {THUNDERBIRD}", focused=True, timeout=60),
            op("wait_focused", window="Thunderbird", timeout=30), op("hotkey", keys=["alt", "f"]),
            op("click_element", window="Thunderbird", name="New", role="menu", timeout=30),
            op("click_element", window="Thunderbird", name="Folder…", role="menu-item", timeout=30),
            op("wait_focused", window="New Folder", role="entry", timeout=30), op("type", text=name),
            op("wait_enabled", window="New Folder", control="Create Folder"), op("press", key="enter"),
            op("wait_gone", title="New Folder", timeout=30)]


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
        "oracle": [*new_folder(folder), DONE],
    }


def folder_names(rng: random.Random, n: int) -> list[str]:
    """``n`` distinct folder names (letters, digits and spaces: Thunderbird keeps them as they are on disk)."""
    names: list[str] = []
    while len(names) < n:
        name = f"{rng.choice(WORDS).title()} {rng.choice(ANIMALS).title()} {rng.randint(2, 99)}"
        if name not in names:
            names.append(name)
    return names


def in_local_folders(window: str, folder: str) -> list[dict[str, Any]]:
    """Oracle ops, in a menu of folders that is open (a folder picker, Move To), choosing ``folder`` of Local
    Folders: its submenu, then the folder; each clicked where the accessibility tree shows it."""
    return [op("click_element", window=window, name="Local Folders", role="menu", timeout=30),
            op("click_element", window=window, name=folder, role="menu-item", timeout=30)]


def mail_filter(rng: random.Random) -> dict[str, Any]:
    target, *others = folder_names(rng, rng.randint(2, 3))
    name = f"{rng.choice(ANIMALS).title()} {rng.choice(NAMES)} {rng.randint(2, 99)}"
    term = f"{rng.choice(WORDS)} {rng.randint(10, 999)}"
    folders = {f"{LOCAL}/{f}": "" for f in rng.sample([target, *others], len(others) + 1)}
    wanted = {"name": name, "enabled": "yes", "action": "Move to folder",
              "actionValue": f"mailbox://nobody@Local%20Folders/{quote(target)}",
              "condition": [f"AND (subject,contains,{term})"]}
    saved = f'name="{name}"'  # the filter's first line in msgFilterRules.dat
    return {
        "instruction": f"In Thunderbird, add a message filter to Local Folders named '{name}' that moves every "
                       f"message whose subject contains '{term}' to the folder '{target}'.",
        "related_apps": ["thunderbird"],
        "config": [write_files({f"{LOCAL}/Inbox": inbox(rng), **folders}), *open_app(["thunderbird"], "Thunderbird")],
        "evaluator": {"func": "check_thunderbird_filter", "result": vm_file(FILTERS),
                      "expected": rule(expect=[wanted]),
                      # Thunderbird writes the filter list when the Message Filters window closes, the
                      # oracle's last wait; the evaluator waits for the file too (at most 20 s).
                      "postconfig": [execute(f"for i in $(seq 80); do grep -qxF {q(saved)} {q(FILTERS)} 2>/dev/null "
                                             "&& exit 0; sleep 0.25; done; exit 0")]},
        # Tools > Message Filters (access keys), New (Alt+N; the list is empty, so no New/Copy menu): the
        # editor opens on its name field; the first row's value field (Subject, contains) is the dialog's
        # only unnamed entry; three Tabs from it reach the folder picker of the first action (Move Message
        # to); OK; Escape closes the filter list, which saves it. The access key F once the menu has the
        # focus (on its first item, Address Book), as in mail-new-folder.
        "oracle": [op("wait_focused", window="Thunderbird", timeout=30), op("hotkey", keys=["alt", "t"]),
                   op("wait_enabled", window="Thunderbird", control="Message Filters", role="menu-item"),
                   op("wait_focused", window="Thunderbird", role="menu-item", timeout=30), op("press", key="f"),
                   op("wait_focused", window="Message Filters", role="list-box", timeout=30),
                   op("hotkey", keys=["alt", "n"]),
                   op("wait_focused", window="Filter Rules", role="entry", timeout=30), op("type", text=name),
                   op("click_element", window="Filter Rules", name="", role="entry"), op("type", text=term),
                   op("press", key="tab"), op("press", key="tab"), op("press", key="tab"),
                   op("hotkey", keys=["alt", "down"]), *in_local_folders("Filter Rules", target),
                   op("click_element", window="Filter Rules", name="OK", role="push-button"),
                   op("wait_gone", title="Filter Rules", timeout=30),
                   op("wait_focused", window="Message Filters", role="check-box", timeout=30),
                   op("press", key="escape"), op("wait_gone", title="Message Filters", timeout=30), DONE],
    }


_LIST_MESSAGES = ("python3 -c 'import mailbox, sys\n"
                  "for path in sys.argv[1:]:\n"
                  "    for m in mailbox.mbox(path):\n"
                  "        if not int(m.get(\"X-Mozilla-Status\") or \"0\", 16) & 8:\n"
                  "            print(path.rsplit(\"/\", 1)[1] + \": <\" + str(m[\"Subject\"]) + \">\")' ")
"""Print ``FOLDER: <SUBJECT>`` for each message of the given mbox files that is not marked deleted (flag 8 of
``X-Mozilla-Status``: Thunderbird marks a moved message so in its old folder until the folder is compacted)."""


def mail_move(rng: random.Random) -> dict[str, Any]:
    target, *others = folder_names(rng, rng.randint(1, 3))
    msgs: list[tuple[str, str, int]] = []
    for i in range(rng.randint(3, 6)):
        who = rng.choice(SENDERS)
        subject = f"{rng.choice(WORDS).title()} {rng.choice(NAMES)} {rng.randint(1, 999)}"
        if all(subject != s for _, s, _ in msgs):
            msgs.append((who, subject, i + 1))
    who, subject, day = rng.choice(msgs)
    mbox = "".join(f"From - Mon Jan  1 00:00:00 2024\nX-Mozilla-Status: 0000\nX-Mozilla-Status2: 00000000\n"
                   f"From: {w}@example.org\nTo: user@osgym.invalid\nSubject: {s}\n"
                   f"Date: Mon, {d} Jan 2024 09:00:00 +0000\nMessage-ID: <{d}.{rng.randint(1, 10**9)}@example.org>\n"
                   f"\nAbout {s.lower()}.\n\n" for w, s, d in msgs)
    folders = {f"{LOCAL}/{f}": "" for f in rng.sample([target, *others], len(others) + 1)}
    # The message list names a row by its columns: sender, date (en-US, the replica's UTC), subject, status.
    row = f"{who}@example.org, 1/{day}/24, 09:00, {subject}, Unread"
    paths = " ".join(q(f"{LOCAL}/{f}") for f in ("Inbox", target))
    return {
        "instruction": f"In Thunderbird, move the message '{subject}' from {who}@example.org in the Inbox of "
                       f"Local Folders to the folder '{target}'.",
        "related_apps": ["thunderbird"],
        "config": [write_files({f"{LOCAL}/Inbox": mbox, **folders}), *open_app(["thunderbird"], "Thunderbird")],
        "evaluator": {"func": "check_include_exclude",
                      # Thunderbird writes the folders after the move; the getter waits (at most 20 s).
                      "result": poll_then(f"grep -qxF {q('Subject: ' + subject)} {q(LOCAL + '/' + target)}",
                                          _LIST_MESSAGES + paths),
                      "expected": rule(include=[f"{target}: <{subject}>",
                                                *(f"Inbox: <{s}>" for _, s, _ in msgs if s != subject)],
                                       exclude=[f"Inbox: <{subject}>"])},
        # Thunderbird opens on the account (Local Folders, collapsed): Right expands it, Down selects its
        # first folder, the Inbox; the message's row is clicked; Message > Move To > Local Folders > folder.
        "oracle": [op("wait_focused", window="Thunderbird", timeout=30),
                   op("click_element", window="Thunderbird", name="Local Folders", role="tree-item", timeout=30),
                   op("press", key="Right"), op("press", key="Down"),
                   op("click_element", window="Inbox - Local Folders", name=row, role="list-item", timeout=30),
                   op("hotkey", keys=["alt", "m"]),
                   op("click_element", window="Thunderbird", name="Move To", role="menu"),
                   *in_local_folders("Thunderbird", target), DONE],
    }


TEMPLATES: list[Template] = [
    Template("mail-new-folder", "thunderbird", "create a named folder under Local Folders", mail_new_folder,
             difficulty=1),
    Template("mail-filter", "thunderbird", "add a message filter moving mail by subject to a folder", mail_filter,
             difficulty=3),
    # Its window keeps Thunderbird's own placement: the Move To submenus cascade from the menu bar, and with
    # a seeded window low on the screen they opened below the window's bottom edge, where a click counts
    # as outside the app (osgym.episodes.focus knows no popup menus).
    Template("mail-move-message", "thunderbird", "move one message of the Inbox to a folder", mail_move,
             difficulty=2, vary=Variation(geometry=False)),
]
