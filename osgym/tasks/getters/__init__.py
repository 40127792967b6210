"""Getters: functions that fetch a value from the replica (or the task file) for a metric to score.

Each family lives in its own module and registers its getters here with :func:`getter`:
:mod:`~osgym.tasks.getters.files` (files fetched from the replica or the task-files directory, the
directory tree, the wallpaper), :mod:`~osgym.tasks.getters.general` (commands, the terminal, the
accessibility tree, screen and windows, rules), :mod:`~osgym.tasks.getters.chromium` (Chromium's
tabs through the DevTools protocol inside the replica), :mod:`~osgym.tasks.getters.chromium_profile`
(Chromium's profile files) and :mod:`~osgym.tasks.getters.apps` (VLC, GIMP, VS Code, slides).

A task file names a getter in ``evaluator.result``/``expected`` as ``{"type": ..., ...options}``.
Both are checked when the task is loaded (:func:`check`): the type must be registered (no name
without a function), and the options must fit the model the getter declares (a getter that declares
none takes no options). A getter is called as ``func(ctx, options, where)``: the evaluation's
:class:`Context`, the validated model (or None), and ``"task <id>: evaluator.result[0]"`` for errors.

Names OSWorld uses that osgym refuses on purpose are in :data:`REFUSED`, with the reason: they need
an account, or read a live third-party website (replicas are offline).

>>> check("vm_file", {"path": "/home/user/a.txt", "dest": "a.txt"}, where="evaluator.result")
>>> check("vm_file", {"path": "/home/user/a.txt", "colour": "red"}, where="evaluator.result")
Traceback (most recent call last):
...
ValueError: evaluator.result.colour: Extra inputs are not permitted (getter 'vm_file')
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from osgym.errors import ConfigError
from osgym.registry import Registry
from osgym.replicas.client import Replica
from osgym.tasks.files import Scratch

__all__ = ["FAMILIES", "GETTERS", "REFUSED", "Context", "GetterDef", "check", "fetch", "get", "getter"]

FAMILIES = ("files", "general", "chromium", "chromium_profile", "apps")

REFUSED: dict[str, str] = {
    "googledrive_file": "it reads a file from a Google Drive account",
    "info_from_website": "it reads a live third-party website",
    "gotoRecreationPage_and_get_html_content": "it reads a live third-party website (recreation.gov)",
    "number_of_search_results": "it reads a live search engine's results",
    "pdf_from_url": "it prints a live third-party website to PDF",
    "calc_insensitive_md5": "OSWorld defines no such getter (its task cannot run there either)",
}
"""Getter types OSWorld uses that osgym refuses at load, and why (accounts, live third-party websites)."""

F = TypeVar("F", bound=Callable[..., Any])


class Context:
    """One evaluation: the replica, and the scratch directory getters write fetched files into.

    File metrics receive only files inside :attr:`scratch` (see :mod:`osgym.tasks.files`).
    """

    def __init__(self, replica: Replica) -> None:
        self.replica = replica
        self.scratch = Scratch("osgym-eval-")

    def close(self) -> None:
        self.scratch.close()


@dataclass(frozen=True)
class GetterDef:
    """A registered getter: its function and the model of its options (``None``: it takes none)."""

    name: str
    func: Callable[[Context, Any, str], Any]
    options: type[BaseModel] | None = None

    def parse(self, options: dict[str, Any], where: str = "getter") -> BaseModel | None:
        """The validated options.

        Raises:
            ValueError: naming ``where``, this getter and the first bad option.
        """
        if self.options is None:
            if options:
                raise ValueError(f"{where}: getter {self.name!r} takes no options, actual {sorted(options)}")
            return None
        try:
            return self.options.model_validate(options)
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(str(p) for p in err["loc"])
            msg = str(err["msg"]).removeprefix("Value error, ")
            # The field's full name first ("evaluator.expected.dest: ..."), as the loader names others.
            raise ValueError(f"{where}{'.' + loc if loc else ''}: {msg} (getter {self.name!r})") from None


def _load_families() -> None:
    for family in FAMILIES:
        importlib.import_module(f"{__name__}.{family}")


GETTERS: Registry[GetterDef] = Registry("getter", load=_load_families)


def getter(name: str, options: type[BaseModel] | None = None) -> Callable[[F], F]:
    """Decorator: register the function as getter ``name``, taking ``options`` (a pydantic model) if given.

    Raises:
        ValueError: if the name is malformed, refused on purpose, or registered to another function.
    """
    if name in REFUSED:
        raise ValueError(f"getter {name!r} is refused on purpose: {REFUSED[name]}")

    def register(func: F) -> F:
        GETTERS.add(name, GetterDef(name, func, options))
        return func
    return register


def get(name: str) -> GetterDef:
    """The getter registered as ``name``.

    Raises:
        ValueError: naming the getter and why it is refused, or the registered ones.
    """
    if name in REFUSED:
        raise ValueError(f"unsupported getter type {name!r}: {REFUSED[name]}, which osgym's offline "
                         "replicas cannot do")
    try:
        return GETTERS.get(name)
    except ConfigError:
        raise ValueError(f"unsupported getter type {name!r} (supported: {', '.join(GETTERS.names())})") from None


def check(name: str, options: dict[str, Any], *, where: str) -> None:
    """Check at load time that getter ``name`` is registered and ``options`` fit it.

    Raises:
        ValueError: naming ``where`` (``evaluator.result[1]``), the getter and what is wrong.
    """
    try:
        g = get(name)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
    g.parse(options, where)


def fetch(ctx: Context, name: str, options: dict[str, Any], where: str) -> Any:
    """The value of getter ``name`` with ``options`` (checked again: a task may be built in code).

    Raises:
        EvaluatorError: naming ``where``, if the value cannot be fetched (see each getter).
        ValueError: if the getter is unknown or its options are bad.
        ReplicaError: if the replica fails while being inspected.
    """
    g = get(name)
    return g.func(ctx, g.parse(options, where), where)
