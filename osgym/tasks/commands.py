"""A task file's command and ``shell`` flag, read as OSWorld reads them.

OSWorld's server hands ``shell`` to ``subprocess`` as the task file gives it, so ``"shell": "true"`` (two
Chrome tasks' postconfig, several ``multi_apps`` tasks) runs through the shell there, and so does any
value Python holds true, ``"false"`` included. A list with ``shell`` is what ``subprocess.Popen(list,
shell=True)`` makes of it on POSIX: its first item is the script, the rest ``$0``, ``$1``, ...

One difference is osgym's on purpose: a string command *without* ``shell`` runs through ``/bin/sh``
(osgym's own task files rely on it), where OSWorld splits it into words. No task file of OSWorld's
gives such a string with shell syntax in it, so none can tell.
"""

from __future__ import annotations

from typing import Any

__all__ = ["check_command", "shell_flag", "step_command"]


def shell_flag(value: Any, *, where: str = "shell") -> bool | None:
    """``shell`` as OSWorld reads it: a boolean, or a string or number as Python's truth value; None
    (absent or null) leaves osgym's default.

    >>> [shell_flag(v) for v in (True, "true", "false", "", 1, 0, None)]
    [True, True, True, False, True, False, None]

    Raises:
        ValueError: for a list or an object (what OSWorld would hand ``subprocess`` is no flag).
    """
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int | float | str):
        return bool(value)
    raise ValueError(f"{where}: expected true or false (or a string or number, read as Python's truth value), "
                     f"actual {value!r:.60}")


def check_command(command: Any, *, where: str = "command") -> None:
    """Refuse a command that is not a non-empty string or a non-empty list of strings.

    Raises:
        ValueError: naming ``where`` and what it got.
    """
    if isinstance(command, str) and command.strip():
        return
    if isinstance(command, list) and command and all(isinstance(c, str) for c in command):
        return
    raise ValueError(f"{where}: expected a non-empty string or list of strings, actual {command!r:.80}")


def step_command(command: str | list[str], shell: Any) -> tuple[str | list[str], bool | None]:
    """The command and flag to send to the replica (its native API: a strict boolean) for a task file's
    ``command`` and ``shell``.

    >>> step_command("echo hi > /tmp/x", "true")
    ('echo hi > /tmp/x', True)
    >>> step_command(["echo password | sudo -S id"], True)
    (['/bin/sh', '-c', 'echo password | sudo -S id'], False)
    >>> step_command(["ls", "-l"], None)
    (['ls', '-l'], None)

    Raises:
        ValueError: if ``shell`` is no flag (see :func:`shell_flag`).
    """
    flag = shell_flag(shell)
    if flag and isinstance(command, list):
        return ["/bin/sh", "-c", *command], False
    return command, flag
