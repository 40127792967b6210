"""A named registry of plugins (policies, action formats): validated names, clear look-up errors.

>>> colours = Registry[str]("colour")
>>> colours.add("red", "#f00")
'#f00'
>>> colours.names(), colours.get("red")
(('red',), '#f00')
>>> colours.get("blue")
Traceback (most recent call last):
...
osgym.errors.ConfigError: unknown colour 'blue': expected one of red
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

from osgym.errors import ConfigError

__all__ = ["Registry"]

T = TypeVar("T")
_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


class Registry(Generic[T]):
    """Items of one ``kind`` by name; ``load`` runs before the first look-up (to import built-ins)."""

    def __init__(self, kind: str, load: Callable[[], None] | None = None) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}
        self._load = load
        self._loaded = load is None
        # Reentrant: ``load`` imports modules whose registrations may look names up themselves.
        self._lock = threading.RLock()

    def check_name(self, name: str) -> str:
        """Raises ValueError unless ``name`` is made of letters, digits, ``_ . -``."""
        if not isinstance(name, str) or not _NAME.match(name):
            raise ValueError(f"{self.kind} name: expected letters, digits, '_', '.' or '-', actual {name!r}")
        return name

    def add(self, name: str, item: T, same: Callable[[T, T], bool] = lambda a, b: a == b) -> T:
        """Register ``item`` as ``name``; registering an item ``same`` as the known one again is allowed.

        Raises:
            ValueError: if the name is malformed or taken by another item.
        """
        known = self._items.get(self.check_name(name))
        if known is not None and not same(known, item):
            raise ValueError(f"{self.kind} {name!r} is already registered to {known!r}")
        self._items[name] = item
        return item

    def names(self) -> tuple[str, ...]:
        """The registered names, sorted."""
        self._ensure_loaded()
        return tuple(sorted(self._items))

    def get(self, name: str) -> T:
        """The item registered as ``name``.

        Raises:
            ConfigError: naming the known items, if none is registered as ``name``.
        """
        self._ensure_loaded()
        try:
            return self._items[name]
        except (KeyError, TypeError):
            raise ConfigError(f"unknown {self.kind} {name!r}: expected one of {', '.join(self.names())}") from None

    def _ensure_loaded(self) -> None:
        """Run ``load`` once; a thread that looks up while another is loading waits for it to finish
        (episodes and task variants are built in worker threads: the second one's first look-up used to
        see a half-filled registry and refuse a built-in name)."""
        if self._loaded:
            return
        with self._lock:
            load, self._load = self._load, None
            if load is None:
                return  # loaded by another thread meanwhile, or being loaded by this one (a registration looking up)
            try:
                load()
            finally:
                self._loaded = True
