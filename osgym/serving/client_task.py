"""What a client may send as a task: :func:`load_client_task`, the collected tasks' loader with the server's checks.

A served task file is untrusted input, and its sender holds only a token: it is loaded as a collected task is
(confined, its URLs in the operator's asset cache), and what would take it past the agent's rights in its own
replica is refused unless the operator allowed it.
"""

from __future__ import annotations

from typing import Any

from osgym.errors import TaskLoadError
from osgym.settings import settings
from osgym.tasks.asset_urls import missing_assets
from osgym.tasks.assets import cache_from_settings
from osgym.tasks.privilege import local_sources, root_steps
from osgym.tasks.spec import TaskSpec, load_task

__all__ = ["load_client_task"]


def load_client_task(data: Any) -> TaskSpec:
    """Load a task a client sent: the collected tasks' loader, then the asset cache's check.

    The task file is untrusted input: :func:`~osgym.tasks.spec.load_task` refuses unsupported steps,
    getters, metrics and host paths; every http(s) URL it fetches must be in the operator's asset
    cache (``OSGYM_ASSET_CACHE``), as for a collected task; local sources stay confined to
    ``OSGYM_TASK_FILES_DIR`` when used (:mod:`osgym.tasks.files`).

    A client holds only a token, so what would take it past the agent's rights in its own replica is
    refused unless the operator allowed it: commands with ``sudo`` (root steps;
    ``OSGYM_SERVE_ALLOW_ROOT_STEPS``) and files of the host's task-files directory
    (``OSGYM_SERVE_ALLOW_TASK_FILES``; :mod:`osgym.tasks.privilege`).

    Raises:
        TaskLoadError: naming what is wrong, or the first URL the cache lacks.
    """
    if not isinstance(data, dict):
        raise TaskLoadError(f"task: expected a JSON object, actual {type(data).__name__}")
    task = load_task(data)
    cfg = settings()
    roots = [] if cfg.serve_allow_root_steps else root_steps(task)
    if roots:
        raise TaskLoadError(f"task {task.id}: {roots[0]}: runs a command with sudo (a root step), which this server "
                            "does not run for its clients (the operator allows it with OSGYM_SERVE_ALLOW_ROOT_STEPS)")
    local = [] if cfg.serve_allow_task_files else local_sources(task)
    if local:
        raise TaskLoadError(f"task {task.id}: {local[0]}: reads a file of the server's host, which this server does "
                            "not do for its clients (the operator allows it with OSGYM_SERVE_ALLOW_TASK_FILES)")
    missing = missing_assets(task, cache_from_settings())
    if missing:
        raise TaskLoadError(f"task {task.id}: asset not cached: {missing[0]} (the operator stages assets with "
                            "`osgym tasks fetch-assets`)")
    return task
