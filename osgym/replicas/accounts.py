"""The accounts of a replica image (replica_images/desktop/Dockerfile): the control server's and the agent's.

OSWorld's task files name the VM user's files under ``/home/user``; the images keep that user and home, so
the paths a task names mean the same on both.
"""

from __future__ import annotations

__all__ = ["AGENT_DISPLAY", "AGENT_GID", "AGENT_HOME", "AGENT_UID", "AGENT_XAUTHORITY", "SERVER_GID", "SERVER_UID"]

SERVER_UID = SERVER_GID = 990
"""`osgym`: the control server and Xvfb. It owns the replica's sockets in the run directory."""
AGENT_UID = AGENT_GID = 1000
"""`user`: the agent's session and every command it runs."""
AGENT_HOME = "/home/user"
"""The agent's home directory."""
AGENT_DISPLAY = ":0"
"""The X display of the agent's session."""
AGENT_XAUTHORITY = f"{AGENT_HOME}/.Xauthority"
"""The agent's X cookie (replica_images/server/osgym_replica.py writes it)."""
