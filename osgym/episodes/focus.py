"""Whether an episode's GUI input went to the app its task is about: the check behind "oracles act like a
person, inside the application" (issue 17), run on the windows each step recorded (``Step.windows``).

The task's apps are the windows its setup waited for, focused, with ``wait_window`` steps (found in the
first step's window list): one for most tasks (the last such step), one per app for a flow across apps
(apps-multi: a page and a sheet), which opens each app with a focused wait. A distractor of
:mod:`osgym.suites.variation` is waited for unfocused, so it is never one of them. Windows that appear later
with an app's WM class or a title the oracle names (its dialogs: ``Save``, ``Received - Google Chrome``) are the
apps' too. Windows already up beside the apps at the first step are never theirs: the distractor, or anything
setup left.

- keys (``TYPING``, ``PRESS``, ``HOTKEY``): the focused window, when the policy decided, is the app's;
- a ``CLICK``: its point lies inside one of the app's windows, and the focus is on the app's window at the
  next observation (a click on a window that is not in front focuses what is in front there).
"""

from __future__ import annotations

from typing import Any

from osgym.episodes.trajectory import Step, Trajectory
from osgym.replicas.observation import Window
from osgym.tasks.spec import TaskSpec

KEYS = {"TYPING", "PRESS", "HOTKEY"}
NAMED_BY = ("title", "window")
"""Oracle op arguments that name a window."""


def target_title(task: TaskSpec) -> str | None:
    """The title the setup's last ``wait_window`` step waits for: the window of the app the task is about."""
    titles = [s.parameters.get("title") for s in task.config if s.type == "wait_window"]
    return str(titles[-1]) if titles and titles[-1] else None


def app_titles(task: TaskSpec) -> list[str]:
    """The titles of the task's apps' windows: every title a focused ``wait_window`` step of the setup waits
    for (once each, in setup order), else the last ``wait_window``'s. A setup waits for an app it opens with
    the focus on it, for a distractor without (:mod:`osgym.suites.variation`).

    >>> from osgym.suites.generators import wait
    >>> task = TaskSpec(id="t", instruction="i", evaluator={"func": "infeasible"},
    ...                 config=[wait("Calc"), wait("groceries-12", focused=False), wait("Shop"), wait("Shop")])
    >>> app_titles(task)
    ['Calc', 'Shop']
    """
    focused = [str(s.parameters["title"]) for s in task.config if s.type == "wait_window"
               and s.parameters.get("title") and s.parameters.get("focused", True)]
    if focused:
        return list(dict.fromkeys(focused))
    last = target_title(task)
    return [] if last is None else [last]


def focus_violations(task: TaskSpec, traj: Trajectory) -> list[str]:
    """One line per GUI input of ``traj`` that did not go to the task's app; [] if all did.

    >>> from datetime import UTC, datetime
    >>> from osgym.suites.generators import launch, wait
    >>> task = TaskSpec(id="t", instruction="i", evaluator={"func": "infeasible"},
    ...                 config=[launch(["gedit"]), wait("notes.txt")], oracle=[{"op": "type", "args": {"text": "x"}}])
    >>> app = Window(1, "notes.txt - gedit", 0, 0, 800, 600, wm_class="Gedit")
    >>> other = Window(2, "a - Mousepad", 0, 0, 9, 9)
    >>> def step(i, kind, focus, **action):
    ...     ws = tuple(Window(w.id, w.title, w.x, w.y, w.width, w.height, w.id == focus, w.wm_class)
    ...                for w in (app, other))
    ...     return Step(i, datetime.now(UTC), b"", "png", 8, 8, {"action_type": kind, **action}, kind, windows=ws)
    >>> focus_violations(task, Trajectory(steps=[step(0, "TYPING", 1), step(1, "DONE", 1)]))
    []
    >>> focus_violations(task, Trajectory(steps=[step(0, "TYPING", 2)]))
    ["step 0 (TYPING): keys went to 'a - Mousepad', not the app's window ('notes.txt')"]
    >>> focus_violations(task, Trajectory(steps=[step(0, "CLICK", 1, x=900, y=10), step(1, "DONE", 1)]))
    ["step 0 (CLICK): the click at (900, 10) is outside the app's windows ('notes.txt')"]

    A flow across apps waits for each of them, focused: keys and clicks may go to either, never elsewhere.

    >>> flow = TaskSpec(id="f", instruction="i", evaluator={"func": "infeasible"},
    ...                 config=[wait("Calc"), wait("a - Mousepad", focused=False), wait("Shop")])
    >>> calc = Window(3, "Untitled 1 - LibreOffice Calc", 0, 0, 900, 900)
    >>> shop = Window(4, "Shop - Chromium", 900, 0, 900, 900)
    >>> def step2(i, kind, focus, **action):
    ...     ws = tuple(Window(w.id, w.title, w.x, w.y, w.width, w.height, w.id == focus) for w in (calc, other, shop))
    ...     return Step(i, datetime.now(UTC), b"", "png", 8, 8, {"action_type": kind, **action}, kind, windows=ws)
    >>> focus_violations(flow, Trajectory(steps=[step2(0, "HOTKEY", 4), step2(1, "CLICK", 4, x=100, y=100),
    ...                                          step2(2, "TYPING", 3), step2(3, "DONE", 3)]))
    []
    >>> for v in focus_violations(flow, Trajectory(steps=[step2(0, "TYPING", 2), step2(1, "CLICK", 3, x=5, y=5),
    ...                                                   step2(2, "DONE", 2)])):
    ...     print(v)
    step 0 (TYPING): keys went to 'a - Mousepad', not the app's window ('Calc' or 'Shop')
    step 1 (CLICK): after the click at (5, 5) the focus was on 'a - Mousepad', not the app's
    """
    steps = traj.steps
    titles = app_titles(task)
    if not steps or not any(_inputs(s) for s in steps):
        return []
    if not titles:
        return ["the setup waits for no window, so no window is the app's"]
    title = " or ".join(repr(t) for t in titles)
    targets: dict[int, Window] = {}
    for t in titles:
        needle = t.lower()
        found = next((w for w in steps[0].windows if needle in w.title.lower() or needle in w.wm_class.lower()), None)
        if found is None:
            return [f"no window {t!r} at the first step; windows: {[w.title for w in steps[0].windows]}"]
        targets[found.id] = found
    beside = {w.id for w in steps[0].windows if w.id not in targets}
    classes = {w.wm_class for w in targets.values()}
    names = {str(o.args[k]).lower() for o in task.oracle or [] for k in NAMED_BY if o.args.get(k)}
    names |= {t.lower() for t in titles}

    def ours(w: Window) -> bool:
        if w.id in targets:
            return True
        return w.id not in beside and (w.wm_class in classes or any(n in w.title.lower() for n in names))

    out: list[str] = []
    for i, st in enumerate(steps):
        kinds = _inputs(st)
        where = f"step {st.step} ({st.action_type})"
        focused = next((w for w in st.windows if w.focused), None)
        if kinds & KEYS and (focused is None or not ours(focused)):
            got = "no window" if focused is None else repr(focused.title)
            out.append(f"{where}: keys went to {got}, not the app's window ({title})")
        for x, y in _clicks(st):
            if not any(ours(w) and w.x <= x < w.x + w.width and w.y <= y < w.y + w.height for w in st.windows):
                out.append(f"{where}: the click at ({x}, {y}) is outside the app's windows ({title})")
            after = next((w for w in steps[i + 1].windows if w.focused), None) if i + 1 < len(steps) else None
            if i + 1 < len(steps) and (after is None or not ours(after)):
                got = "no window" if after is None else repr(after.title)
                out.append(f"{where}: after the click at ({x}, {y}) the focus was on {got}, not the app's")
    return out


def _actions(st: Step) -> list[dict[str, Any]]:
    return list(st.action.get("actions", [st.action]))


def _inputs(st: Step) -> set[str]:
    return set(st.action_type.split(",")) & (KEYS | {"CLICK"})


def _clicks(st: Step) -> list[tuple[int, int]]:
    return [(int(a["x"]), int(a["y"])) for a in _actions(st)
            if a.get("action_type") == "CLICK" and a.get("x") is not None and a.get("y") is not None]
