"""A suite's variants as OSWorld task files (``osgym suites export``).

Each variant becomes ``<dir>/examples/<domain>/<id>.json`` with OSWorld's fields (``id``, ``snapshot``,
``instruction``, ``source``, ``config``, ``trajectory``, ``related_apps``, ``evaluator``) and an index
``<dir>/test_all.json`` (``{domain: [id, ...]}``), the layout OSWorld's runner and a recipe's
``task_dir``/``task_index`` read. The id is a UUID derived from suite, template and variant seed, so
the same variant always gets the same id.

OSWorld's setup controller calls ``_<type>_setup(**parameters)``, so a step type it lacks or a
parameter it does not take stops its run. osgym's own setup extensions are therefore written in
OSWorld's terms in ``config`` (:func:`osworld_steps`): ``wait_window`` becomes a shell loop over
``wmctrl -l`` and an ``activate_window``; parameters OSWorld's steps do not take (``execute``'s ``check``)
are dropped. osgym's exact task
(its own ``config`` and ``evaluator`` where they differ, the scripted ``oracle``, template, variant,
difficulty) goes under the namespaced key ``osgym``, which OSWorld ignores and
:func:`osgym.tasks.spec.load_task` reads back, so an exported file runs in osgym as generated.

Writing is atomic: files go to a scratch directory next to ``dir`` that is renamed into place only
once every variant is written.
"""

from __future__ import annotations

import json
import shlex
import shutil
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from osgym import suites
from osgym.errors import ConfigError
from osgym.tasks.spec import SetupStep, TaskSpec

NAMESPACE = uuid.UUID("5b0c3f0e-7d1a-4c53-9a51-0f2d6c1e5a17")
"""uuid5 namespace of exported task ids (fixed: ids must not change between osgym versions)."""
OSGYM_KEY = "osgym"
OSWORLD_SETUP_PARAMS: dict[str, frozenset[str]] = {
    "execute": frozenset({"command", "stdout", "stderr", "shell", "until"}),
    "launch": frozenset({"command", "shell"}),
    "open": frozenset({"path"}),
    "sleep": frozenset({"seconds"}),
    "activate_window": frozenset({"window_name", "strict", "by_class"}),
    "close_window": frozenset({"window_name", "strict", "by_class"}),
    "download": frozenset({"files"}),
    "upload_file": frozenset({"files"}),
    "change_wallpaper": frozenset({"path"}),
    "chrome_open_tabs": frozenset({"urls_to_open"}),
    "chrome_close_tabs": frozenset({"urls_to_close"}),
}
"""The keyword parameters OSWorld's (desktop-env 1.0.2) ``_<type>_setup`` functions take, for the step types
that take no others; osgym's own (``execute``'s ``check`` and ``timeout``, say) are left out of ``config``."""


def task_uuid(suite: str, template: str, variant: str) -> str:
    """The exported id of a variant: the same for the same suite, template and variant seed.

    >>> task_uuid("apps-smoke", "calc-enter-table", "7") == task_uuid("apps-smoke", "calc-enter-table", "7")
    True
    >>> task_uuid("apps-smoke", "calc-enter-table", "7") != task_uuid("apps-smoke", "calc-enter-table", "8")
    True
    """
    return str(uuid.uuid5(NAMESPACE, f"{suite}/{template}/{variant}"))


def _wait_loop(title: str, timeout: float) -> str:
    polls = max(1, int(timeout / 0.2))
    return (f"for i in $(seq {polls}); do wmctrl -l | grep -qiF -- {shlex.quote(title)} && exit 0; sleep 0.2; done; "
            "exit 1")


def osworld_steps(steps: list[SetupStep]) -> list[dict[str, Any]]:
    """``steps`` as OSWorld's setup controller takes them (osgym's extensions written in its terms).

    >>> [s["type"] for s in osworld_steps([SetupStep(type="wait_window", parameters={"title": "Calc"})])]
    ['execute', 'activate_window']
    """
    out: list[dict[str, Any]] = []
    for step in steps:
        p = dict(step.parameters)
        if step.type == "wait_window":
            out.append({"type": "execute", "parameters": {"command": _wait_loop(str(p.get("title", "")),
                                                                                 float(p.get("timeout", 15))),
                                                          "shell": True}})
            if p.get("focused", True):
                out.append({"type": "activate_window", "parameters": {"window_name": p.get("title", "")}})
            continue
        takes = OSWORLD_SETUP_PARAMS.get(step.type)
        kept = p if takes is None else {k: v for k, v in p.items() if k in takes}
        out.append({"type": step.type, "parameters": kept})
    return out


def _getters(value: Any) -> Any:
    """A getter or list of getters as OSWorld reads them: ``{}`` where there is none in a list."""
    if isinstance(value, list):
        return [g or {} for g in value]
    return value


def osworld_evaluator(task: TaskSpec) -> dict[str, Any]:
    """The evaluator in OSWorld's form: no null fields (OSWorld takes ``len()`` of what is present)."""
    ev = task.evaluator.model_dump(mode="json", exclude_none=True, exclude={"postconfig", "conj"})
    for key in ("result", "expected"):
        if key in ev:
            ev[key] = _getters(ev[key])
    if isinstance(ev.get("options"), list):
        ev["options"] = [o or {} for o in ev["options"]]
    if len(task.evaluator.funcs) > 1 or isinstance(task.evaluator.func, list):
        ev["conj"] = task.evaluator.conj
    if task.evaluator.postconfig:
        ev["postconfig"] = osworld_steps(task.evaluator.postconfig)
    return ev


def to_osworld(suite: str, task: TaskSpec, difficulty: int | None = None) -> dict[str, Any]:
    """One variant as an OSWorld task file's JSON (osgym's exact task under ``"osgym"``)."""
    config = osworld_steps(task.config)
    evaluator = osworld_evaluator(task)
    native = [s.model_dump(mode="json") for s in task.config]
    native_ev = task.evaluator.model_dump(mode="json", exclude_none=True)
    block: dict[str, Any] = {"suite": suite, "template": task.id, "variant": task.variant, "domain": task.domain}
    if difficulty is not None:
        block["difficulty"] = difficulty
    if native != config:
        block["config"] = native
    if task.evaluator.postconfig and native_ev.get("postconfig") != evaluator.get("postconfig"):
        block["evaluator"] = native_ev
    if task.oracle is not None:
        block["oracle"] = [s.model_dump(mode="json", exclude_defaults=True) for s in task.oracle]
    return {
        "id": task_uuid(suite, task.id, task.variant),
        "snapshot": task.snapshot or task.domain,
        "instruction": task.instruction,
        "source": task.source or "osgym",
        "config": config,
        "trajectory": "trajectories/",
        "related_apps": list(task.related_apps),
        "evaluator": evaluator,
        OSGYM_KEY: block,
    }


def export_variants(name: str, n: int, seed: int = 0,
                    on_task: Callable[[int], None] | None = None) -> list[dict[str, Any]]:
    """``n`` distinct variants of suite ``name`` (as :func:`osgym.suites.generate` draws them) as OSWorld
    task JSON; ``on_task(k)`` after the ``k``-th is drawn.

    Raises:
        TaskLoadError: if there is no such suite.
        ConfigError: if ``n`` < 1 or the suite cannot give ``n`` distinct variants.
    """
    if n < 1:
        raise ConfigError(f"suites export --variants: expected at least 1, actual {n}")
    difficulty = {t.id: t.difficulty for t in suites.templates(name)}
    return [to_osworld(name, t, difficulty.get(t.id)) for t in suites.generate(name, n, seed, on_task=on_task)]


def write_export(directory: str | Path, tasks: list[dict[str, Any]],
                 on_file: Callable[[int], None] | None = None) -> list[Path]:
    """Write ``tasks`` (from :func:`export_variants`) in OSWorld's layout under ``directory``, atomically: it must
    not exist or be empty, and holds either every file or, on any error, nothing new. ``on_file(i)`` is called
    after the ``i``-th file is written. Returns the task files' final paths.

    Raises:
        ConfigError: if ``directory`` exists and is not an empty directory.
        OSError: if the files cannot be written (nothing is left behind).
    """
    root = Path(directory)
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise ConfigError(f"suites export --out: {str(root)!r} exists and is not an empty directory; "
                          "name a new one (export never mixes files into an existing folder)")
    root.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{root.name}.", suffix=".partial", dir=root.parent))
    try:
        index: dict[str, list[str]] = {}
        rel: list[Path] = []
        for i, task in enumerate(tasks, 1):
            domain = str(task[OSGYM_KEY]["domain"])
            path = Path("examples") / domain / f"{task['id']}.json"
            (scratch / path.parent).mkdir(parents=True, exist_ok=True)
            (scratch / path).write_text(json.dumps(task, indent=2, ensure_ascii=False) + "\n")
            index.setdefault(domain, []).append(str(task["id"]))
            rel.append(path)
            if on_file is not None:
                on_file(i)
        (scratch / "test_all.json").write_text(json.dumps(index, indent=2) + "\n")
        if root.exists():
            root.rmdir()  # empty (checked above); rename needs the name free
        scratch.rename(root)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    return [root / p for p in rel]


__all__ = ["NAMESPACE", "OSGYM_KEY", "OSWORLD_SETUP_PARAMS", "export_variants", "osworld_evaluator", "osworld_steps",
           "task_uuid", "to_osworld", "write_export"]
