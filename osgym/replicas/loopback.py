"""Loopback addresses of compatibility replicas: each publishes its ports on a 127.0.0.N of its own.

OSWorld's client reaches a VM by address at fixed ports (its server on 5000, Chromium's DevTools on
9222), so each compat replica gets an address nobody else on this machine uses, with both ports free.
"""

from __future__ import annotations

import ipaddress
import socket
import threading

from osgym.errors import PoolError

__all__ = ["CONTROL_PORT", "DEVTOOLS_PORT", "allocate_loopback", "free_loopback"]

CONTROL_PORT = 5000
DEVTOOLS_PORT = 9222
"""Chromium's DevTools in a replica, published by compatibility replicas for OSWorld's client (its
``chrome_open_tabs`` connects to the VM's 9222, where OSWorld's tasks start socat in front of Chromium)."""

_lock = threading.Lock()
_used: set[str] = set()


def allocate_loopback() -> str:
    """An unused 127.0.0.N (N >= 2, then 127.0.1.x, ...) whose control and DevTools ports are free here.

    Raises:
        PoolError: if there is none.
    """
    with _lock:
        for n in range(2, 2**16):
            addr = str(ipaddress.IPv4Address(0x7F000000 + n))
            if addr.endswith((".0", ".255")) or addr in _used:
                continue
            with socket.socket() as control, socket.socket() as devtools:
                try:
                    control.bind((addr, CONTROL_PORT))
                    devtools.bind((addr, DEVTOOLS_PORT))
                except OSError:
                    continue
            _used.add(addr)
            return addr
    raise PoolError("no free loopback address for a compatibility-mode replica")


def free_loopback(addr: str | None) -> None:
    if addr:
        with _lock:
            _used.discard(addr)
