"""The scripted policy: replays a task's oracle through GUI actions, optionally with noise.

An oracle is a list of ops (``TaskSpec.oracle``). Ops that need the screen's
state are resolved against the observation at the moment they run:

- ``click_window {title, anchor="center", fx, fy, dx=0, dy=0, button="left", num_clicks=1}``: click a window
  at an anchor of its client area (``center``, ``top_left``, ``top``, ``top_right``, ``left``, ``right``,
  ``bottom_left``, ``bottom``, ``bottom_right``), or at fractions ``fx``, ``fy`` (0 to 1) of its width and
  height, plus an offset in pixels; the title bar buttons sit above the client area, e.g.
  ``anchor="top_right", dx=-10, dy=-11`` is openbox's close. Window-relative, so it survives the seeded
  window geometry of :mod:`osgym.suites.variation`
- ``click_element {window, name, role="", button="left", num_clicks=1, timeout=10}``: wait until an element
  called ``name`` (exactly; of ``role``, if given) is shown with a size inside the window whose title contains
  ``window``, then click the centre of its on-screen extents, read from the accessibility tree (``cp:screencoord``
  and ``cp:size``). Finds a button or a cell wherever the theme, the zoom and the window's geometry put it
- ``wait_element {window, name, role="", timeout=10}``: wait until such an element is shown (e.g. a dialog's
  field before typing into it)
- ``wait_window {title, focused=false, timeout=10}``: wait until a window whose title or class contains ``title``
  exists (and, with ``focused``, is the active one). A dialog maps before the window manager hands it the focus,
  so keys sent the moment it appears may reach no window: a person waits for it to come to the front
- ``wait_gone {title, timeout=10}``: wait until no window's title contains ``title``
- ``wait_enabled {window, control, role="push-button", timeout=10}``: wait until the control named ``control`` in the
  window whose title contains ``window`` is shown and sensitive, read from the accessibility tree. A careful
  person does not press Enter on a dialog whose default button is still greyed out: GTK's file chooser,
  for one, enables Save only 150 ms after the last keystroke in its Name field, and ignores Enter until then
- ``wait_focused {window, role="", timeout=10}``: wait until the window whose title contains ``window`` is the
  active one and an element inside it (of ``role``, if given) has the keyboard focus, read from the accessibility
  tree. An application's window maps before it takes keys: LibreOffice drops what is typed in the ~0.6 s between
  its window mapping and its document taking the focus, so a person waits for the caret before typing
- ``type {text}``, ``press {key}``, ``hotkey {keys}``, ``click {x, y}``, ``wait {seconds}``
- ``done``, ``fail``

Any op may carry ``noise: false`` to keep noise away from it (e.g. type-ahead in a file manager).

The ``wait_*`` ops poll: each poll is a ``waiting`` decision, which the episode runner does not count
as a step (the whole wait is recorded as one ``WAIT`` step). A wait is bounded by its own ``timeout``
in seconds of wall-clock time, so it ends as a ``PolicyError`` naming the task, the oracle step and
the windows on screen, never by running silently into ``max_steps``.

Noise (``ScriptedPolicy(noise=0.2)``) makes the data hold corrections as well as
perfect runs. Before an eligible op, with probability ``noise``, the policy
inserts a wrong action and then recovers from it:

- before ``type``: a typo (a prefix of the text plus a wrong character), then ``backspace``,
  then the rest of the text;
- before ``click_window``, ``press`` and ``hotkey``: a stray pointer move to a random point
  (harmless: the next op puts things right).

The noise is deterministic for a task variant and episode seed.
"""

from __future__ import annotations

import random
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from osgym.agents.policies.base import Decision, PastStep
from osgym.agents.policies.registry import describe_validation_error, register_policy
from osgym.errors import PolicyError
from osgym.replicas.actions import Action, Click, Done, Fail, Hotkey, MoveTo, Press, Typing, Wait
from osgym.replicas.hollow.protocol import (  # the replica's own request rules (one file)
    A11yFind,
    is_find_name,
    is_find_role,
    is_window_filter,
)
from osgym.replicas.observation import Observation
from osgym.tasks.spec import OracleStep, TaskSpec

POLL_S = 0.2
WAITS = ("wait_window", "wait_gone", "wait_enabled", "wait_focused", "wait_element", "click_element")
"""Ops that poll until a state holds (``click_element`` then clicks)."""
A11Y_WAITS = ("wait_enabled", "wait_focused", "wait_element", "click_element")
"""Waits that read the accessibility tree."""
OPS = ("click_window", *WAITS, "type", "press", "hotkey", "click", "wait", "done", "fail")
A11Y_STATE = "{https://accessibility.ubuntu.example.org/ns/state}"
A11Y_COMPONENT = "{https://accessibility.ubuntu.example.org/ns/component}"
ANCHORS = {"center": (0.5, 0.5), "top_left": (0, 0), "top": (0.5, 0), "top_right": (1, 0), "left": (0, 0.5),
           "right": (1, 0.5), "bottom_left": (0, 1), "bottom": (0.5, 1), "bottom_right": (1, 1)}
"""``click_window``'s anchors, as fractions of the client area's width and height."""
TYPO_CHARS = "qxzjkvw"


class ScriptedOptions(BaseModel):
    """The ``scripted`` policy's options (a recipe's ``policy.options``); checked when the recipe loads.

    >>> ScriptedOptions(noise=0.2)
    ScriptedOptions(noise=0.2)
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    noise: float = 0.0
    """Probability, per eligible oracle op, of inserting a wrong action and recovering."""

    @field_validator("noise")
    @classmethod
    def _probability(cls, v: float) -> float:
        if not 0.0 <= v <= 1.0:
            raise ValueError(f"expected a probability in [0, 1], actual {v!r}")
        return v


@register_policy("scripted")
class ScriptedPolicy:
    """Runs ``task.oracle`` one GUI action per step.

    Args:
        noise: probability, per eligible oracle op, of inserting a wrong action and recovering.

    Raises:
        PolicyError: if ``noise`` is not a probability; (from ``act``) if an op cannot be resolved,
            e.g. its window never appears.
    """

    name = "scripted"
    options_model: ClassVar[type[BaseModel]] = ScriptedOptions

    def __init__(self, noise: float = 0.0) -> None:
        try:
            options = ScriptedOptions(noise=noise)
        except ValidationError as exc:
            raise PolicyError(describe_validation_error(exc)) from exc
        self.noise = options.noise
        self._ops: list[OracleStep] = []
        self._i = 0
        self._wait_since: float | None = None
        self._element: tuple[int, int] | None = None  # where the last element op's poll found it
        self._task_id = ""
        self._rng = random.Random(0)
        self._pending: list[tuple[Action, str]] = []
        self._noised = -1

    def config(self) -> dict[str, Any]:
        return {"noise": self.noise}

    def reset(self, task: TaskSpec, *, seed: int) -> None:
        if not task.oracle:
            raise PolicyError(f"task {task.id} has no oracle, so the scripted policy cannot solve it")
        self._ops = list(task.oracle)
        self._i = 0
        self._wait_since = None
        self._task_id = task.id
        self._rng = random.Random(f"{task.id}/{task.variant}/{seed}")
        self._pending = []
        self._noised = -1

    def act(self, observation: Observation, history: Sequence[PastStep]) -> Decision:
        decision = self._next(observation)
        reads = self._a11y_op()
        if reads is not None:
            decision.needs_a11y = True
            window = reads.args.get("window")
            if is_window_filter(window):
                # the op only looks inside the top-level windows whose title contains it (_top_windows):
                # the replica leaves the others out (else the whole tree; _poll says what is wrong)
                decision.a11y_window = window
                decision.a11y_find = _find_for(reads)
        return decision

    def _next(self, observation: Observation) -> Decision:
        if self._pending:
            queued, thought = self._pending.pop(0)
            return Decision([queued], thought=thought)
        while self._i < len(self._ops):
            op = self._ops[self._i]
            noisy = self._maybe_noise(op, observation)
            if noisy is not None:
                return noisy
            if op.op in WAITS:
                waiting = self._poll(op, observation)
                if waiting is not None:
                    return waiting
                if op.op == "click_element" and self._element is not None:  # the element is there: click it
                    (x, y), a = self._element, op.args
                    self._i += 1
                    return Decision([Click(x=x, y=y, button=a.get("button", "left"),
                                           num_clicks=int(a.get("num_clicks", 1)))],
                                    thought=f"oracle {self._i}/{len(self._ops)}: {op.op} {a.get('name')!r}")
                self._i += 1  # the state it waited for is there
                continue
            action = self._resolve(op, observation)
            self._i += 1
            return Decision([action], thought=f"oracle {self._i}/{len(self._ops)}: {op.op}")
        return Decision([Done()], thought="oracle finished")

    def _a11y_op(self) -> OracleStep | None:
        """The op that will read the next observation's tree, if one will: the next op (so a ready control costs
        no extra poll), or the one a waiting decision polls for."""
        if not self._pending and self._i < len(self._ops) and self._ops[self._i].op in A11Y_WAITS:
            return self._ops[self._i]
        return None

    def _poll(self, op: OracleStep, obs: Observation) -> Decision | None:
        """None once the state ``op`` waits for holds; else a waiting decision, or PolicyError past its timeout."""
        a = op.args
        try:
            if op.op == "wait_window":
                shown, front = obs.window(a["title"]) is not None, obs.focused_window
                if a.get("focused", False):
                    held = front is not None and front.matches(a["title"])
                    what = f"window {a['title']!r} never {'had the focus' if shown else 'appeared'}"
                else:
                    held, what = shown, f"window {a['title']!r} never appeared"
            elif op.op == "wait_gone":
                held = not any(a["title"].lower() in w.title.lower() for w in obs.windows)
                what = f"window {a['title']!r} never went away"
            elif obs.a11y is None:
                return self._waiting(op, seconds=0.0)
            elif op.op in ("wait_element", "click_element"):
                # kept for the click: a Calc window's tree is ~850 KB of XML, parsed once per observation
                self._element = _element_center(obs.a11y, a["window"], a["name"], a.get("role", ""))
                held = self._element is not None
                what = (f"{a.get('role') or 'element'} {a['name']!r} in window {a['window']!r} was never shown "
                        "with a size")
            elif op.op == "wait_focused":
                held = _focus_in(obs.a11y, a["window"], a.get("role", ""))
                what = f"window {a['window']!r} never had the focus on {a.get('role') or 'an element'}"
            else:
                held = _control_enabled(obs.a11y, a["window"], a["control"], a.get("role", "push-button"))
                what = f"{a.get('role', 'push-button')} {a['control']!r} in window {a['window']!r} never became enabled"
        except KeyError as exc:
            raise PolicyError(f"oracle op {op.op} of {self._task_id} is missing {exc}") from exc
        if held:
            self._wait_since = None
            return None
        now = time.monotonic()
        if self._wait_since is None:
            self._wait_since = now
        timeout = float(a.get("timeout", 10))
        if now - self._wait_since > timeout:
            self._wait_since = None
            raise PolicyError(f"oracle for {self._task_id}, step {self._i + 1}/{len(self._ops)} ({op.op}): {what} "
                              f"within {timeout:g} s; windows on screen: {[w.title for w in obs.windows]}")
        return self._waiting(op, seconds=POLL_S)

    def _waiting(self, op: OracleStep, *, seconds: float) -> Decision:
        """A decision that waits for ``op``'s state (:meth:`act` asks for the tree an op in A11Y_WAITS reads)."""
        return Decision([Wait(seconds=seconds)], thought=f"oracle {self._i + 1}/{len(self._ops)}: {op.op}",
                        waiting=True)

    def _maybe_noise(self, op: OracleStep, obs: Observation) -> Decision | None:
        """A wrong action (plus queued recovery) before ``op``, at most once per op."""
        if self.noise <= 0 or self._noised == self._i or op.args.get("noise", True) is False:
            return None
        if op.op not in ("type", "click_window", "click_element", "press", "hotkey"):
            return None
        self._noised = self._i
        if self._rng.random() >= self.noise:
            return None
        where = f"noise before oracle {self._i + 1}/{len(self._ops)}"
        if op.op == "type":
            text = str(op.args.get("text", ""))
            line_end = text.find("\n")
            k = self._rng.randint(0, len(text) if line_end < 0 else line_end)
            wrong = self._rng.choice([c for c in TYPO_CHARS if not text[k:k + 1] == c])
            self._i += 1  # the recovery below replaces the op
            self._pending = [(Press(key="backspace"), f"{where}: correct the typo")]
            if text[k:]:
                self._pending.append((Typing(text=text[k:]), f"{where}: type the rest"))
            return Decision([Typing(text=text[:k] + wrong)], thought=f"{where}: typo")
        w, h = max(obs.width, 2), max(obs.height, 2)
        return Decision([MoveTo(x=self._rng.randrange(w), y=self._rng.randrange(h))],
                        thought=f"{where}: stray pointer move")

    def _resolve(self, op: OracleStep, obs: Observation) -> Action:
        a = op.args
        try:
            if op.op == "click_window":
                w = obs.window(a["title"])
                if w is None:
                    raise PolicyError(f"oracle for {self._task_id}: no window {a['title']!r} to click; have "
                                      f"{[x.title for x in obs.windows]}")
                anchor = a.get("anchor", "center")
                if anchor not in ANCHORS:
                    raise PolicyError(f"click_window anchor: expected one of {', '.join(ANCHORS)}, actual {anchor!r}")
                fx, fy = float(a.get("fx", ANCHORS[anchor][0])), float(a.get("fy", ANCHORS[anchor][1]))
                if not (0 <= fx <= 1 and 0 <= fy <= 1):
                    raise PolicyError(f"click_window fx, fy: expected fractions in [0, 1], actual {fx!r}, {fy!r}")
                x, y = w.x + round(fx * w.width), w.y + round(fy * w.height)
                return Click(x=max(0, x + int(a.get("dx", 0))), y=max(0, y + int(a.get("dy", 0))),
                             button=a.get("button", "left"), num_clicks=int(a.get("num_clicks", 1)))
            if op.op == "type":
                return Typing(text=a["text"])
            if op.op == "press":
                return Press(key=a["key"])
            if op.op == "hotkey":
                return Hotkey(keys=a["keys"])
            if op.op == "click":
                return Click(x=a["x"], y=a["y"], button=a.get("button", "left"), num_clicks=a.get("num_clicks", 1))
            if op.op == "wait":
                return Wait(seconds=float(a.get("seconds", 1)))
            if op.op == "done":
                return Done()
            if op.op == "fail":
                return Fail()
        except KeyError as exc:
            raise PolicyError(f"oracle op {op.op} of {self._task_id} is missing {exc}") from exc
        raise PolicyError(f"oracle op: expected one of {', '.join(OPS)}, actual {op.op!r}")


def _find_for(op: OracleStep) -> A11yFind | None:
    """The element ``op``'s check looks at first, for the replica to stop its walk there (None: read the windows'
    trees): the first shown element of the control's name and role for ``wait_enabled``, as
    :func:`_control_enabled` takes; the first with a size for the element ops, as :func:`_element_center` takes;
    a focused one in the active window for ``wait_focused``, as :func:`_focus_in` looks for. The check then reads
    the replica's answer exactly as it reads a tree.

    >>> _find_for(OracleStep(op="wait_enabled", args={"window": "Save", "control": "Save"}))
    A11yFind(name='Save', role='push-button', focused=False, sized=False)
    >>> _find_for(OracleStep(op="wait_focused", args={"window": "Calc"}))
    A11yFind(name=None, role='', focused=True, sized=False)
    """
    a = op.args
    role = a.get("role", "push-button" if op.op == "wait_enabled" else "")
    if role and not is_find_role(role):
        return None  # not a role as the tree names it: the check finds nothing either way, and says so
    if op.op == "wait_focused":
        return A11yFind(role=role, focused=True)
    name = a.get("control") if op.op == "wait_enabled" else a.get("name")
    if not is_find_name(name):
        return None
    return A11yFind(name=name, role=role, sized=op.op != "wait_enabled")


def _element_center(tree: str, window: str, name: str, role: str) -> tuple[int, int] | None:
    """The screen point at the centre of the first shown element called ``name`` (of ``role``, if not empty)
    with a non-empty size, inside a top-level window whose title contains ``window``; None if there is none.

    >>> st, cp = A11Y_STATE[1:-1], A11Y_COMPONENT[1:-1]
    >>> xml = (f'<desktop-frame xmlns:st="{st}" xmlns:cp="{cp}"><application name="gedit">'
    ...        '<frame name="notes.txt - gedit"><push-button name="Save" st:showing="true" '
    ...        'cp:screencoord="(985, 203)" cp:size="(59, 40)"/></frame></application></desktop-frame>')
    >>> _element_center(xml, "gedit", "Save", "push-button"), _element_center(xml, "gedit", "Save", "label")
    ((1014, 223), None)
    >>> _element_center(xml.replace('(59, 40)', '(0, 0)'), "gedit", "Save", "")
    """
    for top in _top_windows(tree, window):
        for el in top.iter(role) if role else top.iter():
            if el.get("name") != name or el.get(f"{A11Y_STATE}showing") != "true":
                continue
            try:
                x, y = (int(v) for v in (el.get(f"{A11Y_COMPONENT}screencoord") or "").strip("()").split(","))
                w, h = (int(v) for v in (el.get(f"{A11Y_COMPONENT}size") or "").strip("()").split(","))
            except ValueError:  # no extents: the replica dumps them only for visible, showing elements
                continue
            if w > 0 and h > 0:
                return x + w // 2, y + h // 2
    return None


def _control_enabled(tree: str, window: str, name: str, role: str) -> bool:
    """Whether a shown ``role`` element called ``name``, inside a top-level window whose title contains
    ``window``, is sensitive, in an accessibility tree as the replica dumps it (``st:`` state attributes).

    >>> xml = (f'<desktop-frame xmlns:st="{A11Y_STATE[1:-1]}"><application name="mousepad">'
    ...        '<file-chooser name="Save As"><push-button name="Save" st:showing="true"/></file-chooser>'
    ...        '</application></desktop-frame>')
    >>> _control_enabled(xml, "Save As", "Save", "push-button")
    False
    >>> _control_enabled(xml.replace('st:showing', 'st:sensitive="true" st:showing'), "Save As", "Save", "push-button")
    True
    """
    for top in _top_windows(tree, window):
        for el in top.iter(role):
            if el.get("name") == name and el.get(f"{A11Y_STATE}showing") == "true":
                return el.get(f"{A11Y_STATE}sensitive") == "true"
    return False


def _focus_in(tree: str, window: str, role: str) -> bool:
    """Whether the top-level window whose title contains ``window`` is the active one and an element inside
    it (of ``role``, if not empty) is focused, in an accessibility tree as the replica dumps it.

    A window that is not active does not count even if an element in it says it is focused: LibreOffice
    keeps the focused state on the cell of a spreadsheet whose window is in the background.

    >>> st = A11Y_STATE[1:-1]
    >>> xml = (f'<desktop-frame xmlns:st="{st}"><application name="soffice">'
    ...        '<frame name="Untitled 1 - LibreOffice Writer" st:active="true"><document-text name="">'
    ...        '<paragraph name="" st:focused="true"/></document-text></frame></application></desktop-frame>')
    >>> _focus_in(xml, "LibreOffice Writer", "paragraph"), _focus_in(xml, "LibreOffice Writer", "table-cell")
    (True, False)
    >>> _focus_in(xml.replace('st:active="true"', ''), "LibreOffice Writer", "")
    False
    """
    for top in _top_windows(tree, window):
        if top.get(f"{A11Y_STATE}active") == "true" and any(
                el.get(f"{A11Y_STATE}focused") == "true" for el in (top.iter(role) if role else top.iter())):
            return True
    return False


def _top_windows(tree: str, window: str) -> Iterator[ET.Element]:
    """The top-level windows (children of the applications) whose title contains ``window``, any case.

    Raises:
        PolicyError: if ``tree`` is not XML.
    """
    try:
        root = ET.fromstring(tree)
    except ET.ParseError as exc:
        raise PolicyError(f"the accessibility tree is not XML: {exc}") from exc
    needle = window.lower()
    for app in root:
        yield from (top for top in app if needle in (top.get("name") or "").lower())
