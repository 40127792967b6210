"""Policies: the :class:`Policy` protocol, its implementations and their registry.

- :mod:`~osgym.agents.policies.base`: :class:`Policy` and the :class:`Decision` it returns.
- :mod:`~osgym.agents.policies.registry`: :func:`register_policy` and :func:`make_policy`.
- one module per policy: ``scripted``, ``noop``, ``random``, ``openai``.

A new policy is a new module here whose class carries ``@register_policy("name")``.
"""

from osgym.agents.policies.base import Decision, Policy
from osgym.agents.policies.registry import check_options, make_policy, policy_class, policy_names, register_policy

__all__ = ["Decision", "Policy", "check_options", "make_policy", "policy_class", "policy_names", "register_policy"]
