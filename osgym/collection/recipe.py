"""``Recipe``: what to collect, how and where (YAML files under ``datasets/``).

A recipe is validated completely before any replica starts; a bad field fails
with a message naming it.

A recipe is untrusted input (it may come from anyone): it says what to collect, not
how this machine runs. It may *ask* for the privileged switches ``compat``,
``egress: open`` and ``force``, and a run refuses them unless the operator's settings
allow each (:meth:`Recipe.check_consent`); it cannot name Docker hosts (``OSGYM_HOSTS``)
or carry secrets such as API keys (they would be stored in the dataset manifest and in
Prefect's flow parameters).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from osgym.agents.policies.spec import SECRET_OPTION, PolicySpec
from osgym.errors import ConfigError
from osgym.replicas.client import SettleMode
from osgym.replicas.restore import restore_refusals
from osgym.replicas.warm import tier_problem

if TYPE_CHECKING:
    from osgym.settings import Settings

class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ObservationSpec(_Strict):
    """How screenshots are encoded inside the replica and stored as-is, and whether every step stores the
    accessibility tree (``a11y: true``; about half a second a step). Without it the ``a11y`` column is
    null, except at steps whose policy asked for the tree."""

    format: Literal["png", "jpeg"] = "png"
    quality: int = Field(80, ge=1, le=100)
    max_side: int | None = Field(None, ge=16, le=8192)
    a11y: bool = False


class Recipe(_Strict):
    """A dataset recipe.

    >>> Recipe(name="x", episodes=3).replicas, Recipe(name="x", episodes=3).suite
    (2, 'desktop-basics')
    >>> Recipe(name="x", episodes=3, task_dir="tasks/", suite="desktop-basics")
    Traceback (most recent call last):
    ...
    pydantic_core._pydantic_core.ValidationError: 1 validation error for Recipe
      Value error, task_dir and suite both name the tasks to run: a recipe takes either a suite ...
    """

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    dataset: str | None = Field(None, pattern=r"^[A-Za-z0-9_.-]+$")
    suite: str | None = None
    """A built-in suite (default ``desktop-basics``), or none when ``task_dir`` names the tasks."""
    tasks: list[str] | None = None
    """Only these templates of the suite."""
    suites: dict[str, float] | None = None
    """Several built-in suites mixed, ``{name: weight}``: each gets about ``weight / sum`` of the episodes,
    interleaved (:func:`osgym.suites.expand_mix`). Instead of ``suite``/``tasks``/``task_dir``."""
    task_dir: str | None = Field(None, min_length=1)
    """A folder of OSWorld-format task files (``<domain>/<id>.json``) instead of a suite; a relative path
    is taken from the working directory. Every file under it runs unless ``task_index`` is set."""
    task_index: str | None = Field(None, min_length=1)
    """An index in OSWorld's ``test_all.json`` shape, ``{domain: [task id, ...]}``: only these files run."""
    exclude: list[str] | None = None
    """Without ``task_index``: leave out the task files under a directory, or the files, of these names (as
    ``osgym tasks check --exclude`` does), e.g. ``[Windows]``."""
    on_refused: Literal["fail", "skip"] = "fail"
    """What a task file that does not load (or whose assets are missing) does to the run: ``fail`` it
    before any replica starts, or ``skip`` the file (the run's summary and manifest list it)."""
    episodes: int = Field(ge=1, le=1_000_000)
    seed: int = 0
    policy: PolicySpec = PolicySpec()
    tier: Literal["desktop", "apps"] = "desktop"
    image: str | None = None
    replicas: int = Field(2, ge=1, le=4096)
    replica_kind: Literal["container", "hollow"] = "container"
    """``hollow``: replicas with a synthetic screen and no container, served by one process on this machine, to
    load the control plane (pool, flow, writer) at scale (:mod:`osgym.replicas.hollow`). Their episodes are marked
    hollow, and ``osgym dataset export`` refuses them unless asked: never agent data. Never the default."""
    reset: Literal["cold", "restore"] | None = None
    """How each replica starts: ``cold`` boots it; ``restore`` restores it from a checkpoint of a warmed replica,
    made once per host (:mod:`osgym.replicas.restore`; needs root and ``make criu``). A failed restore starts the
    replica cold and is recorded in ``pool_events``. Unset: the worker's ``OSGYM_REPLICA_RESET`` (default cold)."""
    warm: Literal["auto", "desktop", "libreoffice"] = "auto"
    """With ``reset: restore``, the state checkpointed (:mod:`osgym.replicas.warm`); ``auto``: ``libreoffice``
    when every task is about LibreOffice alone (apps tier), else ``desktop``."""
    standby: int = Field(1, ge=0, le=1024)
    screen: tuple[int, int] = (1920, 1080)
    egress: Literal["none", "open"] = "none"
    """``open`` puts replicas on the fenced ``osgym-egress`` network; needs ``OSGYM_ALLOW_EGRESS``."""
    hosts: None = Field(None, exclude=True)
    """Not a recipe field: refused with a message pointing at ``OSGYM_HOSTS``."""
    compat: bool = False
    """OSWorld compatibility mode (tokenless, sudo); needs ``OSGYM_ALLOW_COMPAT``."""
    force: bool = False
    """Start past the hosts' planned capacity; needs ``OSGYM_ALLOW_FORCE``."""
    observation: ObservationSpec = ObservationSpec()
    max_steps: int = Field(15, ge=1, le=1000)
    episode_timeout_s: float = Field(300, gt=0)
    settle_s: float = Field(1.0, ge=0, le=30)
    settle_mode: SettleMode = "damage"
    """How a replica tells that the screen settled after a step: ``frames`` compares screenshots until
    none changed for 0.15 s; ``damage`` waits on the X server's reports of drawing, 0.1 s quiet and at
    least 0.2 s after the input (BENCHMARKS.md compares the two)."""
    retries: int = Field(2, ge=0, le=10)
    store: str = "./data"
    batch_size: int = Field(200, ge=1, le=10_000)
    episodes_per_task: int | None = Field(None, ge=1, le=100)
    """In the Prefect flow, how many of a batch's episodes one ``episodes`` task runs, one after another,
    each with the retry policy of the one-episode task; ``1``: a task run (and Prefect's retry states) per
    episode. Unset: as many as keep every replica busy, at most 10 (``flows/collect.py``), since each task
    run costs the Prefect server several state writes (BENCHMARKS.md, issue 42). ``osgym collect`` ignores it."""
    shard_max_age_s: float = Field(300, ge=1, le=86_400)
    """Finished episodes are committed to the store at most this many seconds after they end, so a
    crashed run loses at most this much work and a re-run with the same run_id skips the rest.
    Lower means less lost work but more, smaller shards."""

    @field_validator("hosts", mode="before")
    @classmethod
    def _no_hosts(cls, v: Any) -> None:
        if v is not None:
            raise ValueError("Docker hosts are the operator's choice, not a recipe's: the worker's OSGYM_HOSTS "
                             "setting lists them; remove hosts from the recipe")
        return None

    def check_consent(self, s: Settings) -> None:
        """Refuse the privileged switches this recipe asks for that the operator's settings do not allow.

        Raises:
            ConfigError: naming the first such field and the setting that would allow it.
        """
        asked = [("compat", self.compat, s.allow_compat, "OSGYM_ALLOW_COMPAT",
                  "OSWorld compatibility mode: tokenless replicas where sudo works"),
                 ("egress", self.egress == "open", s.allow_egress, "OSGYM_ALLOW_EGRESS",
                  "replicas with a network route out"),
                 ("force", self.force, s.allow_force, "OSGYM_ALLOW_FORCE",
                  "more replicas than the hosts' planned capacity")]
        for field, wanted, allowed, setting, what in asked:
            if wanted and not allowed:
                value = "open" if field == "egress" else "true"
                raise ConfigError(f"recipe {self.name}: field {field!r} ({field}: {value}) asks for {what}, which "
                                  f"this worker's operator has not allowed: set {setting}=1 in the worker's "
                                  f"environment, or remove {field} from the recipe")

    @field_validator("screen")
    @classmethod
    def _screen(cls, v: tuple[int, int]) -> tuple[int, int]:
        if not (320 <= v[0] <= 7680 and 240 <= v[1] <= 4320):
            raise ValueError(f"expected width 320..7680 and height 240..4320, actual {v[0]}x{v[1]}")
        return v

    @model_validator(mode="before")
    @classmethod
    def _source(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        if data.get("suites") is not None:
            both = [k for k in ("suite", "tasks", "task_dir", "task_index") if data.get(k) is not None]
            if both:
                raise ValueError(f"suites and {' and '.join(both)} both name the tasks to run: a recipe mixes "
                                 "built-in suites with suites: {name: weight}, or takes one suite (with tasks) or "
                                 "a folder of task files")
            return data
        if data.get("task_dir") is None:
            if data.get("task_index") is not None:
                raise ValueError("task_index lists files of a task_dir: add task_dir (the folder of task files)")
            if data.get("exclude") is not None:
                raise ValueError("exclude leaves out files of a task_dir: add task_dir (the folder of task files)")
            return {**data, "suite": data.get("suite") or "desktop-basics"}
        if data.get("task_index") is not None and data.get("exclude") is not None:
            raise ValueError("task_index and exclude both choose the files to run: an index lists them itself")
        both = [k for k in ("suite", "tasks") if data.get(k) is not None]
        if both:
            raise ValueError(f"task_dir and {' and '.join(both)} both name the tasks to run: a recipe takes either "
                             "a suite (with tasks) or a folder of task files (with task_index), not both")
        return data

    @field_validator("suites")
    @classmethod
    def _mix(cls, v: dict[str, float] | None) -> dict[str, float] | None:
        from osgym.suites import list_suites

        if v is None:
            return v
        if not v:
            raise ValueError("expected at least one {suite name: weight}")
        unknown = [n for n in v if n not in list_suites()]
        if unknown:
            raise ValueError(f"unknown suites {unknown}: expected names from {list_suites()}")
        bad = {n: w for n, w in v.items() if not (0 < w < float("inf"))}
        if bad:
            raise ValueError(f"weights must be positive numbers, actual {bad}")
        return v

    @model_validator(mode="after")
    def _suite_tier(self) -> Recipe:
        from osgym.suites import required_tier

        # Task files: the tier is the recipe's say (generated files may target desktop). An image named
        # outright is the operator's choice; otherwise a suite that needs a tier's apps would fail every
        # episode's setup (and retry it) on another tier: say so before any replica starts.
        for suite in self.suite_names:
            needed = required_tier(suite)
            if self.image is None and needed is not None and self.tier != needed:
                raise ValueError(f"suite {suite} runs on the {needed} tier (its tasks open that tier's apps), "
                                 f"actual tier {self.tier!r}: add 'tier: {needed}' to the recipe")
        return self

    @model_validator(mode="after")
    def _hollow(self) -> Recipe:
        if self.replica_kind == "hollow":
            given = [f for f, on in (("compat", self.compat), ("egress: open", self.egress == "open"),
                                     ("image", self.image is not None)) if on]
            if given:
                raise ValueError(f"replica_kind hollow has no container, network or OSWorld routes: remove "
                                 f"{', '.join(given)}")
        return self

    @model_validator(mode="after")
    def _restore(self) -> Recipe:
        refused = restore_refusals(self.replica_kind, "unix", self.compat, networked=self.egress == "open")
        if self.reset == "restore" and refused:
            raise ValueError(f"reset: restore starts container replicas without a network or compat, actual "
                             f"{', '.join(refused)}: remove replica_kind hollow, compat or egress: open")
        if self.warm != "auto" and (problem := tier_problem(self.warm, self.tier)):
            raise ValueError(problem)
        return self

    @property
    def suite_names(self) -> list[str]:
        """The built-in suites the recipe draws from (none for task files)."""
        return list(self.suites) if self.suites else [self.suite] if self.suite else []

    @field_validator("store")
    @classmethod
    def _store(cls, v: str) -> str:
        from osgym.storage import parse_uri

        parse_uri(v)  # its ValueError names what a store URI may be; probed for writing before replicas start
        return v

    @property
    def dataset_name(self) -> str:
        return self.dataset or self.name


def load_recipe(source: str | Path | dict[str, Any], **overrides: Any) -> Recipe:
    """Load and validate a recipe from a YAML file or a dict; ``overrides`` replace top-level fields.

    Raises:
        ConfigError: naming the file and the first bad field.
    """
    if isinstance(source, dict):
        data, where = dict(source), "<recipe>"
    else:
        where = str(source)
        try:
            data = yaml.safe_load(Path(source).read_text())
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"cannot read recipe {where}: {exc}") from exc
        if not isinstance(data, dict):
            raise ConfigError(f"recipe {where}: expected a mapping of fields, actual {type(data).__name__}")
    data.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return Recipe.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "recipe"
        got = err.get("input")
        # A mapping (the policy, say) or a secret-named field may hold a secret the recipe should not
        # carry: echo neither, and drop the pydantic error, whose text repeats the input (Prefect logs it).
        hide = isinstance(got, Mapping) or any(SECRET_OPTION.search(str(p)) for p in err["loc"])
        shown = "" if hide else f" (got {got!r:.80})"
        raise ConfigError(f"recipe {where}: field {loc!r}: {err['msg']}{shown}") from (None if hide else exc)
