"""A policy as a recipe names it, :class:`PolicySpec` (a registered name and its options), and
:func:`make_policy`, which builds one for an episode.

The spec is checked when the recipe loads, before any replica starts: the name against the registry
(:func:`~osgym.agents.policies.registry.policy_class`), the options by the class
(:func:`~osgym.agents.policies.registry.check_options`). A recipe is untrusted input and is stored in the
dataset manifest and Prefect's flow parameters, so options whose name says they hold a secret are refused.

>>> make_policy(PolicySpec(name="noop")).name
'noop'
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from osgym.agents.policies.registry import check_options, policy_class
from osgym.errors import ConfigError

if TYPE_CHECKING:
    from osgym.agents.policies.base import Policy

__all__ = ["SECRET_OPTION", "PolicySpec", "make_policy", "secret_options"]

SECRET_OPTION = re.compile(r"(^|[_-])(api[_-]?key|apikey|secret|password|passwd|token|credentials?)$", re.I)
"""Option names that hold secrets, which a recipe may not carry (``max_tokens`` is not one)."""


def secret_options(options: Mapping[str, Any], where: str = "") -> list[str]:
    """Dotted names of the options (at any depth) whose name says they hold a secret.

    >>> secret_options({"model": "m", "api_key": "sk-1", "max_tokens": 9, "extra_body": {"auth_token": "x"}})
    ['api_key', 'extra_body.auth_token']
    """
    found = []
    for name, value in options.items():
        path = f"{where}{name}"
        if SECRET_OPTION.search(str(name)):
            found.append(path)
        elif isinstance(value, Mapping):
            found.extend(secret_options(value, f"{path}."))
    return found


class PolicySpec(BaseModel):
    """Which policy acts, with its options; ``name`` is a registered policy.

    >>> PolicySpec(name="telepathy")
    Traceback (most recent call last):
    ...
    pydantic_core._pydantic_core.ValidationError: 1 validation error for PolicySpec
    name
      Value error, unknown policy 'telepathy': expected one of ...
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = "scripted"
    """A name in :func:`osgym.agents.policies.policy_names`."""
    options: dict[str, Any] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _known(cls, v: str) -> str:
        try:
            policy_class(v)
        except ConfigError as exc:
            raise ValueError(str(exc)) from exc
        return v

    @model_validator(mode="after")
    def _options(self) -> PolicySpec:
        carried = secret_options(self.options)
        if carried:
            raise ValueError(f"options {', '.join(carried)}: a recipe may not carry secrets (they would be stored in "
                             "the dataset manifest and Prefect's flow parameters): give the openai policy its key "
                             "with OPENAI_API_KEY in the worker's environment")
        try:
            check_options(self.name, self.options)
        except ConfigError as exc:
            raise ValueError(str(exc)) from exc
        return self


def make_policy(spec: PolicySpec | str, options: Mapping[str, Any] | None = None) -> Policy:
    """A fresh policy instance for one episode, from a recipe's policy spec (or a name and options).

    Built as ``cls(**options)``, or ``cls.from_options(options)`` when the class defines it.

    >>> make_policy("noop").name
    'noop'

    Raises:
        ConfigError: if the name is unknown or the policy rejects its options.
    """
    name = spec if isinstance(spec, str) else spec.name
    options = dict((options if isinstance(spec, str) else spec.options) or {})
    cls = policy_class(name)
    check_options(name, options)
    try:
        from_options = getattr(cls, "from_options", None)
        policy: Policy = from_options(options) if from_options is not None else cls(**options)
    except TypeError as exc:
        raise ConfigError(f"policy {name!r}: options {sorted(options)} rejected: {exc}") from exc
    return policy
