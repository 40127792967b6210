"""Metrics: functions that score a getter's result against the expected value, in [0, 1].

Each family lives in its own module and registers its metrics here with :func:`metric`:
:mod:`~osgym.tasks.metrics.basic` (text, command output, windows), :mod:`~osgym.tasks.metrics.table`
(spreadsheets, CSV), :mod:`~osgym.tasks.metrics.docs` (Word documents) and :mod:`~osgym.tasks.metrics.docs_marks`
(highlighting, font colours), :mod:`~osgym.tasks.metrics.slides` (presentations) and
:mod:`~osgym.tasks.metrics.slides_compare` (``compare_pptx_files``), :mod:`~osgym.tasks.metrics.pdf`,
:mod:`~osgym.tasks.metrics.general` (JSON, lists, CSV records, text files), :mod:`~osgym.tasks.metrics.vscode`,
:mod:`~osgym.tasks.metrics.images` (GIMP), :mod:`~osgym.tasks.metrics.thunderbird`, :mod:`~osgym.tasks.metrics.vlc`,
:mod:`~osgym.tasks.metrics.chrome` (tabs, bookmarks, browser settings), :mod:`~osgym.tasks.metrics.basic_os`,
:mod:`~osgym.tasks.metrics.archives` (archives, SQLite), :mod:`~osgym.tasks.metrics.media` (ID3 tags),
:mod:`~osgym.tasks.metrics.accessibility` (selectors over the accessibility tree),
:mod:`~osgym.tasks.metrics.epub` (e-books), :mod:`~osgym.tasks.metrics.webpages` (HTML files),
:mod:`~osgym.tasks.metrics.pdf_images` (the images in PDFs),
:mod:`~osgym.tasks.metrics.video` (``compare_videos``), :mod:`~osgym.tasks.metrics.audio` (audio similarity),
:mod:`~osgym.tasks.metrics.ocr` (text in a picture),
:mod:`~osgym.tasks.metrics.office_settings` (LibreOffice's user settings).

A task file names a metric in ``evaluator.func`` and may give it ``options``. Both are checked when
the task is loaded (:func:`check`): the name must be registered, and the options must fit the model
the metric declares (a metric that declares none takes no options). Where the expected value is a
``rule`` getter's ``rules``, a metric may declare their model too, checked the same way. A metric is
called as ``func(result, expected)`` or ``func(result, expected, options)`` with the validated model.

>>> check("exact_match", {})
>>> check("compare_text_file", {"ignore_case": True, "colour": "red"})
Traceback (most recent call last):
...
ValueError: evaluator func 'compare_text_file': option colour: Extra inputs are not permitted
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from osgym.errors import ConfigError
from osgym.registry import Registry

__all__ = ["FAMILIES", "METRICS", "REFUSED", "Metric", "check", "get", "metric", "score"]

FAMILIES = ("basic", "table", "docs", "docs_marks", "slides", "slides_compare", "pdf", "general", "vscode", "images",
            "thunderbird", "vlc", "chrome", "basic_os", "archives", "media", "accessibility", "python_suite", "epub",
            "webpages", "pdf_images", "video", "ocr", "audio",
            "office_settings")

REFUSED: dict[str, str] = {
    "contains_mp4_video": "OSWorld defines no such function (its task cannot run there either)",
}
"""Metric names OSWorld's task files use that osgym refuses at load on purpose, and why."""

F = TypeVar("F", bound=Callable[..., float])


@dataclass(frozen=True)
class Metric:
    """A registered metric: its function and the model of its options (``None``: it takes none)."""

    name: str
    func: Callable[..., float]
    options: type[BaseModel] | None = None
    rules: type[BaseModel] | None = None
    files: tuple[str, ...] = ()
    """The arguments (``"result"``, ``"expected"``) it opens as host files: the evaluator hands them only
    files a getter fetched into the evaluation's scratch directory, never a path a task file wrote."""
    in_replica: bool = False
    """It runs code inside the replica (the agent's Python), so it is called with ``replica=``."""

    def check_rules(self, rules: Any) -> None:
        """Check a ``rule`` getter's ``rules`` against the model this metric declares (if any).

        Raises:
            ValueError: naming this metric and the first bad entry.
        """
        if self.rules is None:
            return
        try:
            self.rules.model_validate(rules)
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(str(p) for p in err["loc"])
            raise ValueError(f"evaluator func {self.name!r}: rules{'.' + loc if loc else ''}: {err['msg']}") from None

    def parse(self, options: dict[str, Any]) -> BaseModel | None:
        """The validated options.

        Raises:
            ValueError: naming this metric and the first bad option.
        """
        if self.options is None:
            if options:
                raise ValueError(f"evaluator func {self.name!r} takes no options, actual {sorted(options)}")
            return None
        try:
            return self.options.model_validate(options)
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(str(p) for p in err["loc"]) or "options"
            raise ValueError(f"evaluator func {self.name!r}: option {loc}: {err['msg']}") from None


def _load_families() -> None:
    for family in FAMILIES:
        importlib.import_module(f"{__name__}.{family}")


METRICS: Registry[Metric] = Registry("evaluator func", load=_load_families)


def metric(name: str, options: type[BaseModel] | None = None, rules: type[BaseModel] | None = None, *,
           files: bool | tuple[str, ...] = False, in_replica: bool = False) -> Callable[[F], F]:
    """Decorator: register the function as metric ``name``, taking ``options`` (a pydantic model) if given,
    and, when its expected value comes from a ``rule`` getter, ``rules`` of that model. ``files``: the
    arguments it opens as files, ``True`` for both (see :attr:`Metric.files`); ``in_replica``: it runs code
    in the replica and takes it as ``replica=`` (see :attr:`Metric.in_replica`).

    Raises:
        ValueError: if the name is malformed, refused on purpose, or registered to another function.
    """
    if name in REFUSED:
        raise ValueError(f"evaluator func {name!r} is refused on purpose: {REFUSED[name]}")

    def register(func: F) -> F:
        opened = ("result", "expected") if files is True else () if files is False else files
        METRICS.add(name, Metric(name, func, options, rules, opened, in_replica))
        return func
    return register


def get(name: str) -> Metric:
    """The metric registered as ``name``.

    Raises:
        ValueError: naming the metric and why it is refused, or the registered ones, if none is
            registered as ``name``.
    """
    if name in REFUSED:
        raise ValueError(f"unsupported evaluator func {name!r}: {REFUSED[name]}")
    try:
        return METRICS.get(name)
    except ConfigError:
        raise ValueError(f"unsupported evaluator func {name!r} (supported: {', '.join(METRICS.names())})") from None


def check(name: str, options: dict[str, Any], expected: Any = None) -> None:
    """Check at load time that ``name`` is registered and ``options`` fit it, and so do the ``rules`` of
    ``expected`` when it is a ``rule`` getter (an object with ``type`` and ``options``).

    Raises:
        ValueError: naming the metric and what is wrong.
    """
    m = get(name)
    m.parse(options)
    if expected is not None and getattr(expected, "type", None) == "rule":
        m.check_rules(expected.options.get("rules"))


def score(name: str, result: Any, expected: Any, options: dict[str, Any], *, replica: Any = None) -> float:
    """Run metric ``name`` on a getter's result and expected value; ``replica``: the replica evaluated, for
    a metric that runs code in it.

    Raises:
        ValueError: if the metric is unknown, its options are bad, or it needs the replica and has none.
        Whatever the metric raises on inputs it cannot read (``OSError``, ``KeyError``, ...).
    """
    m = get(name)
    parsed = m.parse(options)
    if m.in_replica and replica is None:
        raise ValueError(f"evaluator func {name!r} runs code in the replica, and none was given")
    kw = {"replica": replica} if m.in_replica else {}
    return float(m.func(result, expected, **kw) if parsed is None else m.func(result, expected, parsed, **kw))
