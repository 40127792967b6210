"""Agents: what a policy sees, what it may do, and the policies themselves.

- :mod:`~osgym.agents.observation`: :class:`Observation`, a screenshot plus structured context.
- :mod:`~osgym.agents.actions`: the typed computer_13 actions (:class:`Click`, :class:`Typing`, ...).
- :mod:`~osgym.agents.parsers`: other agents' action formats (pyautogui, Anthropic, UI-TARS) to actions.
- :mod:`~osgym.agents.policies`: the :class:`Policy` protocol and its implementations.
"""

from osgym.agents.actions import Action, parse_action
from osgym.agents.observation import Observation, Window
from osgym.agents.policies.base import Decision, Policy

__all__ = ["Action", "Decision", "Observation", "Policy", "Window", "parse_action"]
