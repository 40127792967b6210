"""Seeded task templates: one template, many distinct :class:`TaskSpec` variants (as AndroidWorld does).

A :class:`Template` holds a ``build(rng)`` function that draws the variant's
parameters (names, contents, paths, counts) from a seeded ``random.Random`` and
returns the task as OSWorld-shaped JSON plus a scripted ``oracle``. The same
template and seed always give the same task:

>>> t = Template("demo", "terminal", "write a word", lambda rng: {
...     "instruction": f"say {rng.choice(['hi', 'yo'])}",
...     "evaluator": {"func": "infeasible"}})
>>> t.variant(3) == t.variant(3)
True

The helpers below build the JSON pieces the suites repeat: setup steps
(:func:`execute`, :func:`launch`, :func:`wait`), getters (:func:`cmd`,
:func:`rule`) and oracle ops (:func:`op`).
"""

from __future__ import annotations

import hashlib
import json
import random
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from osgym.errors import TaskLoadError
from osgym.tasks.spec import TaskSpec, load_task

Builder = Callable[[random.Random], dict[str, Any]]


@dataclass(frozen=True)
class Template:
    """A task template with a seeded generator.

    Attributes:
        id: the id every variant carries (variants differ by ``TaskSpec.variant``).
        domain: terminal, files, editor, windows, settings or infeasible.
        description: one line for ``osgym suites show``.
        build: draws one variant's task JSON (without ``id``/``variant``/``domain``) from an RNG.
        infeasible: the right answer is FAIL.
        difficulty: 1 (a few steps in one app) to 3 (many steps, several dialogs or apps), for
            selecting and reporting; it does not change what the template builds.
        vary: rewrites the built JSON from an RNG of its own (seeded by the template id and seed, apart
            from ``build``'s), e.g. :class:`osgym.suites.variation.Variation`; apps-tier suites get the
            default variation at registration unless a template sets this.
    """

    id: str
    domain: str
    description: str
    build: Builder
    infeasible: bool = False
    difficulty: int = 1
    vary: Callable[[dict[str, Any], random.Random], dict[str, Any]] | None = None

    def variant(self, seed: int) -> TaskSpec:
        """The task for ``seed``: deterministic, with ``variant=str(seed)``.

        Raises:
            TaskLoadError: if the template builds an invalid task.
        """
        data = self.build(random.Random(f"{self.id}/{seed}"))
        if self.vary is not None:
            data = self.vary(data, random.Random(f"{self.id}/{seed}/vary"))
        data = {"source": "osgym", **data, "id": self.id, "domain": self.domain, "variant": str(seed)}
        try:
            return load_task(data)
        except TaskLoadError as exc:
            raise TaskLoadError(f"template {self.id} seed {seed}: {exc}") from exc


def content_key(task: TaskSpec) -> str:
    """A digest of everything that makes a variant distinct (all but its variant id).

    >>> t = Template("k", "x", "", lambda rng: {"instruction": "i", "evaluator": {"func": "infeasible"}})
    >>> content_key(t.variant(1)) == content_key(t.variant(2))
    True
    """
    body = task.model_dump(mode="json", exclude={"variant"})
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


# ---- JSON helpers --------------------------------------------------------------------------
def q(s: str) -> str:
    """Shell-quote ``s``.

    >>> q("a b")
    "'a b'"
    """
    return shlex.quote(s)


def execute(command: str) -> dict[str, Any]:
    """A setup step running ``command`` through the shell; a non-zero exit fails the setup (``check``,
    osgym's own: OSWorld's task files go on after a failed command)."""
    return {"type": "execute", "parameters": {"command": command, "shell": True, "check": True}}


def write_file(path: str, content: str) -> dict[str, Any]:
    """A setup step writing ``content`` (exact bytes) to ``path``, creating parent directories."""
    parent = path.rsplit("/", 1)[0]
    return execute(f"mkdir -p {q(parent)} && printf '%s' {q(content)} > {q(path)}")


def launch(command: list[str] | str, *, shell: bool = False) -> dict[str, Any]:
    return {"type": "launch", "parameters": {"command": command, "shell": shell}}


def launch_until_window(command: list[str], title: str, *, env: dict[str, str] | None = None,
                        tries: int = 3, per_try_s: float = 6.0) -> list[dict[str, Any]]:
    """Setup steps that start a GUI app and wait, focused, for a window whose title contains ``title``.

    A GTK app started in the first seconds of a fresh desktop sometimes never maps its
    window. The launcher polls the window list and restarts the app (its own process
    only) if no window has appeared within ``per_try_s``, at most ``tries`` times.
    """
    env_prefix = " ".join(f"{k}={q(v)}" for k, v in (env or {}).items())
    argv = " ".join(q(c) for c in command)
    polls = max(1, int(per_try_s / 0.2))
    script = (f"for i in $(seq {tries}); do {env_prefix} setsid {argv} >/dev/null 2>&1 </dev/null & "
              f"for j in $(seq {polls}); do wmctrl -l | grep -qiF -- {q(title)} && exit 0; sleep 0.2; done; "
              f"kill $! 2>/dev/null; sleep 0.3; done; exit 1")
    return [execute(script.replace("do  setsid", "do setsid")), wait(title)]


def wait(title: str, focused: bool = True, timeout: float = 15) -> dict[str, Any]:
    return {"type": "wait_window", "parameters": {"title": title, "focused": focused, "timeout": timeout}}


def cmd(command: str) -> dict[str, Any]:
    """A ``vm_command_line`` getter running ``command`` through the shell."""
    return {"type": "vm_command_line", "command": command, "shell": True}


def vm_file(path: str, dest: str | None = None) -> dict[str, Any]:
    return {"type": "vm_file", "path": path, "dest": dest or path.rsplit("/", 1)[-1]}


def rule(**rules: Any) -> dict[str, Any]:
    return {"type": "rule", "rules": rules}


def op(name: str, /, **args: Any) -> dict[str, Any]:
    """One oracle op, e.g. ``op("type", text="ls\\n")``. ``name`` is positional-only: an op's own
    arguments may include a ``name`` (``op("click_element", window="gedit", name="Save")``)."""
    return {"op": name, "args": args} if args else {"op": name}
