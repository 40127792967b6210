"""``TaskSpec``: a pydantic model of OSWorld's task JSON.

OSWorld task files load unchanged. Setup step types, getters and metrics that
osgym does not implement are rejected when the task is loaded, naming the type
and the task id, never in the middle of an episode. So are host paths a task file
may not name (it is untrusted input): a getter's ``dest`` that is absolute or climbs
out with ``..``, and a file source that is neither an http(s) URL, a ``file://`` URL
nor a path (:mod:`osgym.tasks.files`, which confines them again when they are used).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from osgym.errors import TaskLoadError
from osgym.tasks import getters, metrics
from osgym.tasks.browse_history import HistoryEntry
from osgym.tasks.commands import check_command, shell_flag
from osgym.tasks.files import check_relative_name, check_source
from osgym.tasks.offline import BROWSER_STEPS, live_urls, marketplace_extensions

SETUP_TYPES = frozenset({
    "execute", "command", "launch", "open", "upload_file", "sleep", "activate_window", "close_window",
    "download", "wait_window", "change_wallpaper", "chrome_open_tabs", "chrome_close_tabs", "update_browse_history",
})
SETUP_REFUSED: dict[str, str] = {
    "googledrive": "it fills a Google Drive account",
    "login": "it signs in to a third-party account",
}
"""Setup step types OSWorld uses that osgym refuses on purpose, and why (accounts, live third-party websites)."""
COMMAND_STEPS = frozenset({"execute", "command", "launch"})
"""Setup step types that run a ``command`` (with an optional ``shell`` flag)."""


class SetupStep(BaseModel):
    """One entry of ``config[]``: ``{"type": ..., "parameters": {...}}``."""

    model_config = ConfigDict(extra="allow")
    type: str
    parameters: dict[str, Any] = Field(default_factory=dict)


class Getter(BaseModel):
    """A result or expected getter: ``{"type": ..., ...options}``."""

    model_config = ConfigDict(extra="allow")
    type: str

    @property
    def options(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class Evaluator(BaseModel):
    """OSWorld's evaluator block. ``func``, ``result`` and ``expected`` may be single or lists."""

    model_config = ConfigDict(extra="allow")
    func: str | list[str]
    result: Getter | list[Getter | None] | None = None
    expected: Getter | list[Getter | None] | None = None
    options: dict[str, Any] | list[dict[str, Any]] | None = None
    conj: str = "and"
    postconfig: list[SetupStep] = Field(default_factory=list)

    @field_validator("result", "expected", mode="before")
    @classmethod
    def _empty_is_none(cls, v: Any) -> Any:
        """OSWorld runs no getter for an empty object (``"result": {}``)."""
        if isinstance(v, dict) and not v:
            return None
        if isinstance(v, list):
            return [None if isinstance(g, dict) and not g else g for g in v]
        return v

    @property
    def funcs(self) -> list[str]:
        return [self.func] if isinstance(self.func, str) else list(self.func)

    def _listed(self, value: Any) -> list[Any]:
        n = len(self.funcs)
        if isinstance(value, list):
            return value
        return [value] * n if isinstance(self.func, list) else [value]

    @property
    def results(self) -> list[Getter | None]:
        return self._listed(self.result)

    @property
    def expecteds(self) -> list[Getter | None]:
        return self._listed(self.expected)

    @property
    def option_list(self) -> list[dict[str, Any]]:
        return [o or {} for o in self._listed(self.options)]

    @field_validator("conj")
    @classmethod
    def _conj(cls, v: str) -> str:
        if v not in ("and", "or"):
            raise ValueError(f"expected 'and' or 'or', actual {v!r}")
        return v


class OracleStep(BaseModel):
    """One step of a scripted solution; see :mod:`osgym.agents.policies.scripted`."""

    model_config = ConfigDict(extra="forbid")
    op: str
    args: dict[str, Any] = Field(default_factory=dict)


class TaskSpec(BaseModel):
    """One task in OSWorld's JSON form, plus osgym's optional fields.

    osgym extras: ``domain``, ``variant``, ``oracle`` (a scripted GUI solution); in an exported file these
    (and osgym's own setup) sit under the key ``osgym``.
    """

    model_config = ConfigDict(extra="allow")
    id: str = Field(min_length=1)
    instruction: str
    snapshot: str | None = None
    source: str | list[str] | None = None  # OSWorld's task files name one page or several
    config: list[SetupStep] = Field(default_factory=list)
    related_apps: list[str] = Field(default_factory=list)
    evaluator: Evaluator
    domain: str = "os"
    variant: str = "0"
    oracle: list[OracleStep] | None = None

    @property
    def infeasible(self) -> bool:
        return "infeasible" in self.evaluator.funcs

    @model_validator(mode="before")
    @classmethod
    def _osgym_block(cls, data: Any) -> Any:
        """A file exported from a suite (:mod:`osgym.suites.export`) writes its setup in OSWorld's terms and
        keeps osgym's exact ``config``/``evaluator``, ``oracle``, ``variant`` and ``domain`` under ``"osgym"``
        (OSWorld ignores the key): osgym runs those. They are validated like any task's."""
        block = data.get("osgym") if isinstance(data, dict) else None
        if not isinstance(block, dict):
            return data
        return {**data, **{k: block[k] for k in ("config", "evaluator", "oracle", "variant", "domain") if k in block}}

    @model_validator(mode="after")
    def _supported(self, info: ValidationInfo) -> TaskSpec:
        live_ok = bool((info.context or {}).get("live_sites"))
        named = [*((f"config[{i}]", s) for i, s in enumerate(self.config)),
                 *((f"evaluator.postconfig[{i}]", s) for i, s in enumerate(self.evaluator.postconfig))]
        for where, step in named:
            if step.type in SETUP_REFUSED:
                raise ValueError(f"unsupported config type {step.type!r}: {SETUP_REFUSED[step.type]}")
            if step.type not in SETUP_TYPES:
                raise ValueError(f"unsupported config type {step.type!r} (supported: {', '.join(sorted(SETUP_TYPES))})")
            if step.type in COMMAND_STEPS:  # read as OSWorld reads them: "shell": "true" is true
                check_command(step.parameters.get("command"), where=f"{where}.parameters.command")
                shell_flag(step.parameters.get("shell"), where=f"{where}.parameters.shell")
            if step.type in BROWSER_STEPS:
                urls = step.parameters.get(BROWSER_STEPS[step.type])
                if not isinstance(urls, list) or not all(isinstance(u, str) and u for u in urls):
                    raise ValueError(f"{step.type}: parameters.{BROWSER_STEPS[step.type]}: expected a list of URLs, "
                                     f"actual {urls!r:.100}")
                if live_urls(urls) and not live_ok:
                    raise ValueError(f"unsupported config type {step.type!r} with {live_urls(urls)[0]!r:.100}: it "
                                     "opens a live third-party website (replicas are offline)")
            if step.type == "update_browse_history":
                entries = step.parameters.get("history")
                if not isinstance(entries, list) or not entries:
                    raise ValueError(f"update_browse_history: parameters.history: expected a list of "
                                     f"{{url, title, visit_time_from_now_in_seconds}}, actual {entries!r:.100}")
                for j, e in enumerate(entries):
                    try:
                        HistoryEntry.model_validate(e)
                    except ValidationError as exc:
                        err = exc.errors()[0]
                        loc = ".".join(str(x) for x in err["loc"])
                        raise ValueError(f"update_browse_history: parameters.history[{j}]{'.' + loc if loc else ''}: "
                                         f"{err['msg']}") from None
        steps = [(s.type, s.parameters) for s in [*self.config, *self.evaluator.postconfig]]
        extensions = marketplace_extensions(steps, [(g.type, g.options) for g in self.evaluator.results if g])
        if extensions and not live_ok:
            raise ValueError(f"it installs the VS Code extension {extensions[0]!r:.100} from the marketplace "
                             "(replicas are offline; a task may bring a .vsix file instead)")
        ev = self.evaluator
        for f, opts, expected in zip(ev.funcs, ev.option_list, ev.expecteds, strict=False):
            metrics.check(f, opts, expected)  # a registered metric, options (and rules) that fit it
        listed = isinstance(ev.func, list)
        for field, gs in (("result", ev.results), ("expected", ev.expecteds)):
            for i, g in enumerate(gs):
                if g is not None:  # a registered getter, options that fit it (dest names stay in scratch)
                    getters.check(g.type, g.options, where=f"evaluator.{field}{f'[{i}]' if listed else ''}")
        try:
            self._check_host_paths()
        except TaskLoadError as exc:
            raise ValueError(str(exc)) from exc
        return self

    def _check_host_paths(self) -> None:
        """Refuse, by their shape, host paths the task may not name (see :mod:`osgym.tasks.files`).

        Getters' ``dest`` and ``cloud_file``'s sources are checked by their options' models
        (:mod:`osgym.tasks.getters`); here: setup steps' sources, and a postconfig step's ``stdout``
        (a name in the evaluation's scratch directory, read back by a ``cache_file`` getter).
        """
        for field, steps in (("config", self.config), ("evaluator.postconfig", self.evaluator.postconfig)):
            for i, step in enumerate(steps):
                if step.type in ("execute", "command") and "stdout" in step.parameters:
                    check_relative_name(step.parameters["stdout"], where=f"{field}[{i}].parameters.stdout")
                if step.type not in ("download", "upload_file"):
                    continue
                files = step.parameters.get("files", [])
                for j, f in enumerate(files if isinstance(files, list) else []):
                    for key in ("local_path", "url"):
                        if isinstance(f, dict) and f.get(key):
                            check_source(f[key], where=f"{field}[{i}].parameters.files[{j}].{key}")


def load_task(source: str | Path | dict[str, Any], *, live_sites: bool = False) -> TaskSpec:
    """Load a task from a JSON file path or a dict.

    ``live_sites=True`` lets browser steps name live third-party websites. Nothing that runs tasks
    passes it (replicas are offline); ``osgym tasks check`` does, to tell a task that is refused only
    for its live websites from one that osgym cannot run at all.

    Raises:
        TaskLoadError: naming the task id and what is wrong or unsupported.
    """
    if isinstance(source, dict):
        data, where = source, "<dict>"
    else:
        where = str(source)
        try:
            data = json.loads(Path(source).read_text())
        except (OSError, ValueError) as exc:
            raise TaskLoadError(f"cannot read task file {where}: {exc}") from exc
    tid = data.get("id", "?") if isinstance(data, dict) else "?"
    try:
        return TaskSpec.model_validate(data, context={"live_sites": live_sites})
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "task"
        raise TaskLoadError(f"task {tid} ({where}): {loc}: {err['msg']}") from exc
