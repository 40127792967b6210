"""Which remote URLs a task reads (setup steps and getters), and which of them an asset cache lacks.

Every remote URL a setup step or a getter fetches (``download``/``upload_file``'s
``files[].url``/``local_path``, ``cloud_file``'s ``path``) is read from the offline asset cache
(:mod:`osgym.tasks.assets`) at run time. The run planner asks :func:`missing_assets` before any
replica starts; ``osgym tasks fetch-assets`` asks :func:`urls_in_task_json` of each file's JSON.

>>> from types import SimpleNamespace as NS
>>> task = NS(config=[NS(type="download", parameters={"files": [
...     {"url": "https://example.org/a.xlsx", "path": "/home/user/a.xlsx"}]})],
...     evaluator=NS(postconfig=[], result=None, expected=NS(type="cloud_file", path="https://example.org/b.xlsx")))
>>> [url for _, url in asset_urls(task)]
['https://example.org/a.xlsx', 'https://example.org/b.xlsx']
>>> missing_assets(task, None)
['https://example.org/a.xlsx', 'https://example.org/b.xlsx']
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from osgym.tasks.assets import AssetCache, is_remote

if TYPE_CHECKING:
    from osgym.tasks.spec import TaskSpec

__all__ = ["asset_urls", "missing_assets", "urls_in_task_json"]

_FILE_STEPS = ("download", "upload_file")


def _get(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def _getter_field(getter: Any, name: str) -> Any:
    value = _get(getter, name)
    if value is None and not isinstance(getter, dict):  # a Getter model keeps its options as extras
        value = (getattr(getter, "model_extra", None) or {}).get(name)
    return value


def _walk(data: Any) -> Iterator[tuple[str, str]]:
    ev = _get(data, "evaluator")
    for field, steps in (("config", _get(data, "config")), ("evaluator.postconfig", _get(ev, "postconfig"))):
        for i, step in enumerate(steps if isinstance(steps, list) else []):
            if _get(step, "type") not in _FILE_STEPS:
                continue
            params = _get(step, "parameters")
            files = params.get("files") if isinstance(params, dict) else None
            for j, f in enumerate(files if isinstance(files, list) else [files]):
                for key in ("url", "local_path"):
                    if isinstance(f, dict) and is_remote(f.get(key)):
                        yield f"{field}[{i}].parameters.files[{j}].{key}", f[key]
    for key in ("result", "expected"):
        value = _get(ev, key)
        listed = isinstance(value, list)
        for i, g in enumerate(value if listed else [value]):
            if g is None or _get(g, "type") != "cloud_file":
                continue
            paths = _getter_field(g, "path")
            at = f"evaluator.{key}{f'[{i}]' if listed else ''}.path"
            for k, p in enumerate(paths if isinstance(paths, list) else [paths]):
                if is_remote(p):
                    yield (f"{at}[{k}]" if isinstance(paths, list) else at), p


def urls_in_task_json(data: Any) -> list[tuple[str, str]]:
    """The (field, URL) pairs of a task's JSON (a dict, loaded or not) that setup steps or getters fetch.

    >>> urls_in_task_json({"config": [{"type": "download", "parameters": {"files": [
    ...     {"url": "https://x.example/a.docx", "path": "/home/user/a.docx"}]}}],
    ...     "evaluator": {"func": ["f", "g"], "result": [{"type": "vm_file", "path": "/a"},
    ...     {"type": "cloud_file", "multi": True, "path": ["file:///srv/b", "https://x.example/c"]}]}})
    [('config[0].parameters.files[0].url', 'https://x.example/a.docx'), \
('evaluator.result[1].path[1]', 'https://x.example/c')]
    """
    return list(_walk(data)) if isinstance(data, dict) else []


def asset_urls(task: TaskSpec) -> list[tuple[str, str]]:
    """The (field, URL) pairs of a loaded task that setup steps or getters fetch, in task order."""
    return list(_walk(task))


def missing_assets(task: TaskSpec, cache: AssetCache | None) -> list[str]:
    """The URLs ``task`` needs that ``cache`` lacks (each once, in task order); without a cache, all of them.

    Pure apart from reading the cache's manifest (once per :class:`AssetCache`): the run planner
    calls it for every task before any replica starts and refuses those with a URL here. A URL counts as
    cached when the manifest lists it (a blob is always written before its entry).

    Raises:
        StoreError: if the cache's manifest cannot be read.
    """
    needed = list(dict.fromkeys(url for _, url in asset_urls(task)))
    if cache is None:
        return needed
    held = cache.manifest()
    return [url for url in needed if url not in held]
