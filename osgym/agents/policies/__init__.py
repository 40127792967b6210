"""Policies: the :class:`Policy` protocol, its implementations and their registry.

- :mod:`~osgym.agents.policies.base`: :class:`Policy`, the :class:`Decision` it returns and the
  :class:`PastStep` its history holds.
- :mod:`~osgym.agents.policies.registry`: :func:`register_policy`, :func:`policy_class`, :func:`check_options`.
- :mod:`~osgym.agents.policies.spec`: :class:`PolicySpec`, a recipe's policy, and :func:`make_policy`.
- one module per policy: ``scripted``, ``noop``, ``random``, ``openai``.

A new policy is a new module here whose class carries ``@register_policy("name")``.
"""

from __future__ import annotations

from osgym.agents.policies.base import Decision, PastStep, Policy
from osgym.agents.policies.registry import check_options, policy_class, policy_names, register_policy
from osgym.agents.policies.spec import PolicySpec, make_policy

__all__ = ["Decision", "PastStep", "Policy", "PolicySpec", "check_options", "make_policy", "policy_class",
           "policy_names", "register_policy"]
