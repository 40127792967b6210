"""The registry of policies: a recipe's ``policy.name`` to the class that acts.

A policy registers itself with one line, a decorator on its class::

    @register_policy("noop")
    class NoopPolicy: ...

:func:`make_policy` builds one from a recipe's :class:`~osgym.collection.recipe.PolicySpec`
as ``cls(**options)``, or ``cls.from_options(options)`` when the class defines it;
a class may also define ``check_options(options)``, which a recipe calls when it loads.
Every module of this package is imported on the first look-up, so a new built-in
policy is one new file here; a policy defined elsewhere (tests, another package)
is registered once its module is imported.

>>> {"noop", "openai", "random", "scripted"} <= set(policy_names())
True
>>> make_policy("noop").name
'noop'
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from osgym.errors import ConfigError
from osgym.registry import Registry

if TYPE_CHECKING:
    from osgym.agents.policies.base import Policy
    from osgym.collection.recipe import PolicySpec

__all__ = ["check_options", "make_policy", "policy_class", "policy_names", "register_policy"]

_C = TypeVar("_C", bound=type)
_NOT_POLICIES = frozenset({"base", "registry"})


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


def check_options(name: str, options: Mapping[str, Any]) -> None:
    """Validate a policy's options without building it, if its class defines ``check_options``.

    Raises:
        ConfigError: if the name is unknown or the options are not valid.
    """
    check = getattr(policy_class(name), "check_options", None)
    if check is not None:
        check(dict(options))


def make_policy(spec: PolicySpec | str, options: Mapping[str, Any] | None = None) -> Policy:
    """A fresh policy instance for one episode, from a recipe's policy spec (or a name and options).

    Raises:
        ConfigError: if the name is unknown or the policy rejects its options.
    """
    name = spec if isinstance(spec, str) else spec.name
    options = dict((options if isinstance(spec, str) else spec.options) or {})
    cls = policy_class(name)
    try:
        from_options = getattr(cls, "from_options", None)
        policy: Policy = from_options(options) if from_options is not None else cls(**options)
    except TypeError as exc:
        raise ConfigError(f"policy {name!r}: options {sorted(options)} rejected: {exc}") from exc
    return policy

