"""``update_browse_history``: visits written into Chromium's History before Chromium starts (apps tier).

OSWorld downloads a History database with Chrome's schema, adds rows and uploads it. Here the schema
comes from the replica's own Chromium: if the profile has no History yet, a headless Chromium creates
the profile and is stopped with SIGTERM (a clean "session ended" exit, so the next start shows no
restore prompt). Then the visits are added with the replica's Python, as the agent's user. The URLs
are only recorded, never opened.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from osgym.errors import SetupError
from osgym.replicas.client import Replica

__all__ = ["HistoryEntry", "update_browse_history"]

PROFILE_WAIT_S = 60.0

# Runs inside the replica: python3 -c HISTORY_SCRIPT '<json request>'; prints {"ok": n} or {"error": text}.
HISTORY_SCRIPT = r"""
import json, os, signal, sqlite3, subprocess, sys, time
req = json.loads(sys.argv[1])
profile = os.path.expanduser("~/.config/google-chrome")
db = os.path.join(profile, "Default", "History")

def answer(**kw):
    print(json.dumps(kw))
    sys.exit(0)

def running():
    try:
        pid = int(os.readlink(os.path.join(profile, "SingletonLock")).rsplit("-", 1)[1])
        os.kill(pid, 0)
        return True
    except (OSError, ValueError, IndexError):
        return False

if running():
    answer(error="Chromium is running: its History is locked; put update_browse_history before Chromium starts")
if not os.path.exists(db):
    browser = subprocess.Popen(["chromium", "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                "--user-data-dir=" + profile, "about:blank"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + req["wait"]
    while not os.path.exists(db) and browser.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(1)  # the schema is written just after the file appears
    try:
        os.killpg(browser.pid, signal.SIGTERM)
        browser.wait(30)
    except (OSError, subprocess.TimeoutExpired):
        os.killpg(browser.pid, signal.SIGKILL)
        browser.wait()
    if not os.path.exists(db):
        answer(error="headless Chromium made no History database in %ss" % req["wait"])
now = time.time()
con = sqlite3.connect(db, timeout=10)
try:
    with con:
        for e in req["history"]:
            # Chromium's time: microseconds since 1601-01-01 UTC
            t = int((now - e["seconds_ago"] + 11644473600) * 1000000)
            cur = con.execute("INSERT INTO urls (url, title, visit_count, typed_count, last_visit_time, hidden) "
                              "VALUES (?, ?, 1, 0, ?, 0)", (e["url"], e["title"], t))
            con.execute("INSERT INTO visits (url, visit_time, from_visit, transition, segment_id, visit_duration) "
                        "VALUES (?, ?, 0, 805306368, 0, 0)", (cur.lastrowid, t))
except sqlite3.Error as exc:
    answer(error="History: %s" % exc)
finally:
    con.close()
answer(ok=len(req["history"]))
"""


class HistoryEntry(BaseModel):
    """One entry of ``parameters.history``, as OSWorld's task files write it."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    url: str = Field(min_length=1, max_length=4096)
    title: str = Field(max_length=4096)
    visit_time_from_now_in_seconds: float = Field(ge=0, le=10 * 365 * 86400)


def update_browse_history(replica: Replica, entries: list[HistoryEntry], *, where: str) -> None:
    """Add ``entries`` to the History of the replica's Chromium profile (which must not be running).

    Raises:
        SetupError: naming ``where``, if Chromium is running or the database cannot be made or written.
    """
    request = {"wait": PROFILE_WAIT_S, "history": [
        {"url": e.url, "title": e.title, "seconds_ago": e.visit_time_from_now_in_seconds} for e in entries]}
    res = replica.execute(["python3", "-c", HISTORY_SCRIPT, json.dumps(request)], timeout=PROFILE_WAIT_S + 60)
    try:
        answer: dict[str, Any] = json.loads(res.output.strip().splitlines()[-1]) if res.output.strip() else {}
    except ValueError:
        answer = {}
    if "ok" not in answer:
        cause = answer.get("error") or f"exit {res.returncode}: {res.error.strip()[-300:]}"
        raise SetupError(f"{where}: update_browse_history: {cause}")
