"""The scripted policy: replays a task's oracle through GUI actions.

An oracle is a list of ops (``TaskSpec.oracle``). Ops that need the screen's
state are resolved against the observation at the moment they run:

- ``click_window {title, dx=0, dy=0, button="left"}``: click a window's centre (plus offset)
- ``wait_window {title, timeout=10}``: wait until a window whose title or class contains ``title`` exists
- ``type {text}``, ``press {key}``, ``hotkey {keys}``, ``click {x, y}``, ``wait {seconds}``
- ``done``, ``fail``
"""

from __future__ import annotations

from typing import Any

from osgym.actions import Click, Done, Fail, Hotkey, Press, Typing, Wait, _Action
from osgym.errors import PolicyError
from osgym.observation import Observation
from osgym.policies.base import Decision
from osgym.specs.task import OracleStep, TaskSpec
from osgym.trajectory import Step

POLL_S = 0.2


class ScriptedPolicy:
    """Runs ``task.oracle`` one GUI action per step."""

    name = "scripted"

    def __init__(self) -> None:
        self._ops: list[OracleStep] = []
        self._i = 0
        self._waited = 0.0
        self._task_id = ""

    def config(self) -> dict[str, Any]:
        return {}

    def reset(self, task: TaskSpec, *, seed: int) -> None:
        if not task.oracle:
            raise PolicyError(f"task {task.id} has no oracle, so the scripted policy cannot solve it")
        self._ops = list(task.oracle)
        self._i = 0
        self._waited = 0.0
        self._task_id = task.id

    def act(self, observation: Observation, history: list[Step]) -> Decision:
        while self._i < len(self._ops):
            op = self._ops[self._i]
            action = self._resolve(op, observation)
            if action is None:  # a wait that is already satisfied
                self._i += 1
                self._waited = 0.0
                continue
            if not isinstance(action, Wait) or op.op == "wait":
                self._i += 1
            return Decision([action], thought=f"oracle {self._i}/{len(self._ops)}: {op.op}")
        return Decision([Done()], thought="oracle finished")

    def _resolve(self, op: OracleStep, obs: Observation) -> _Action | None:
        a = op.args
        try:
            if op.op == "click_window":
                w = obs.window(a["title"])
                if w is None:
                    raise PolicyError(f"oracle for {self._task_id}: no window {a['title']!r} to click; have "
                                      f"{[x.title for x in obs.windows]}")
                cx, cy = w.center
                return Click(x=cx + int(a.get("dx", 0)), y=cy + int(a.get("dy", 0)), button=a.get("button", "left"))
            if op.op == "wait_window":
                if obs.window(a["title"]) is not None:
                    return None
                self._waited += POLL_S
                if self._waited > float(a.get("timeout", 10)):
                    raise PolicyError(f"oracle for {self._task_id}: window {a['title']!r} never appeared")
                return Wait(seconds=POLL_S)
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
        raise PolicyError(f"oracle op: expected click_window, wait_window, type, press, hotkey, click, wait, done "
                          f"or fail, actual {op.op!r}")
