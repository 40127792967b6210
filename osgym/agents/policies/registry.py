"""The registry of policies: a recipe's ``policy.name`` to the class that acts.

A policy registers itself with one line, a decorator on its class::

    @register_policy("noop")
    class NoopPolicy: ...

:func:`~osgym.agents.policies.spec.make_policy` builds one from a recipe's
:class:`~osgym.agents.policies.spec.PolicySpec`.

A recipe's options are checked when it loads, before any replica starts
(:func:`check_options`): a policy declares them as a pydantic model, ``options_model``;
an unknown key is refused naming it and the allowed ones, then the model validates the
values, and a class's own ``check_options(options)`` (if it has one) runs last. A class
without ``options_model`` (nor ``from_options``) has its option names checked against its
``__init__`` signature.
Every module of this package is imported on the first look-up, so a new built-in
policy is one new file here; a policy defined elsewhere (tests, another package)
is registered once its module is imported.

>>> {"noop", "openai", "random", "scripted"} <= set(policy_names())
True
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from osgym.errors import ConfigError
from osgym.registry import Registry

__all__ = ["check_options", "describe_validation_error", "policy_class", "policy_names", "register_policy"]

_C = TypeVar("_C", bound=type)
_NOT_POLICIES = frozenset({"base", "registry", "spec"})


def _load_builtins() -> None:
    """Import every module of this package, so their decorators run."""
    package = importlib.import_module("osgym.agents.policies")
    for module in pkgutil.iter_modules(package.__path__):
        if module.name not in _NOT_POLICIES and not module.name.startswith("_"):
            importlib.import_module(f"{package.__name__}.{module.name}")


_POLICIES = Registry[type]("policy", _load_builtins)


def register_policy(name: str) -> Callable[[_C], _C]:
    """Class decorator: make the class available to recipes as ``policy: {name: <name>}``.

    Raises:
        ValueError: if the name is not made of letters, digits, ``_ . -``, or
            another class already has it.
    """
    _POLICIES.check_name(name)

    def register(cls: _C) -> _C:
        # The same class imported again (under another module name) is not a conflict.
        _POLICIES.add(name, cls, same=lambda a, b: a.__qualname__ == b.__qualname__)
        return cls

    return register


def policy_names() -> tuple[str, ...]:
    """The registered policy names, sorted."""
    return _POLICIES.names()


def policy_class(name: str) -> type:
    """The class registered as ``name``.

    Raises:
        ConfigError: naming the known policies, if none is registered as ``name``.
    """
    return _POLICIES.get(name)


def describe_validation_error(exc: ValidationError) -> str:
    """The first error of a pydantic validation as ``field: message`` (pydantic's prefix dropped).

    >>> from pydantic import Field, create_model
    >>> M = create_model("M", noise=(float, Field(0.0, le=1.0)))
    >>> try:
    ...     M(noise=2)
    ... except ValidationError as exc:
    ...     describe_validation_error(exc)
    'noise: Input should be less than or equal to 1 (got 2)'
    """
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"])
    msg = str(err["msg"]).removeprefix("Value error, ")
    shown = "" if err["type"] == "value_error" else f" (got {err.get('input')!r:.80})"
    return f"{where}: {msg}{shown}" if where else f"{msg}{shown}"


def _allowed(cls: type) -> tuple[list[str], bool] | None:
    """The option names ``cls`` takes and whether it takes any others, or None if it cannot say."""
    model = getattr(cls, "options_model", None)
    if isinstance(model, type) and issubclass(model, BaseModel):
        return sorted(model.model_fields), model.model_config.get("extra") == "allow"
    if getattr(cls, "from_options", None) is not None:
        return None  # it reads its options its own way; its __init__ does not say which
    try:
        params = inspect.signature(cls).parameters.values()
    except (TypeError, ValueError):
        return None
    names = [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    return sorted(names), any(p.kind is p.VAR_KEYWORD for p in params)


def check_options(name: str, options: Mapping[str, Any]) -> None:
    """Validate a policy's options without building it (a recipe calls this when it loads).

    An unknown key is refused first, naming it and the allowed ones; then the class's
    ``options_model`` validates the values, and its ``check_options`` (if any) runs.

    >>> check_options("scripted", {"noize": 0.2})
    Traceback (most recent call last):
    ...
    osgym.errors.ConfigError: policy 'scripted': options ['noize'] rejected: unknown option 'noize' (allowed: noise)

    Raises:
        ConfigError: if the name is unknown or the options are not valid.
    """
    cls = policy_class(name)
    options = dict(options)
    allowed = _allowed(cls)
    if allowed is not None and not allowed[1]:
        unknown = sorted(set(options) - set(allowed[0]))
        if unknown:
            listed = ", ".join(repr(k) for k in unknown)
            raise ConfigError(f"policy {name!r}: options {unknown} rejected: unknown option{'s' * (len(unknown) > 1)} "
                              f"{listed} (allowed: {', '.join(allowed[0]) or 'none'})")
    check = getattr(cls, "check_options", None)
    if check is not None:
        check(options)
        return
    model = getattr(cls, "options_model", None)
    if isinstance(model, type) and issubclass(model, BaseModel):
        try:
            model.model_validate(options)
        except ValidationError as exc:
            raise ConfigError(f"policy {name!r}: option {describe_validation_error(exc)}") from exc
