"""Agents: the policies that choose actions, and the action formats models speak.

- :mod:`~osgym.agents.policies`: the :class:`Policy` protocol, its :class:`Decision`, the built-in
  policies and their registry.
- :mod:`~osgym.agents.formats`: the action formats models write (pyautogui, computer_13 JSON, Anthropic,
  UI-TARS, OSGym's strings), one module each holding its parser, renderer and prompt, and their registry.

What a policy sees and may do is the replica's: :class:`~osgym.replicas.observation.Observation`
and the actions of :mod:`osgym.replicas.actions`, re-exported here for convenience.
"""

from __future__ import annotations

from osgym.agents.policies.base import Decision, Policy
from osgym.replicas.actions import Action, parse_action
from osgym.replicas.observation import Observation, Window

__all__ = ["Action", "Decision", "Observation", "Policy", "Window", "parse_action"]
