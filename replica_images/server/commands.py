"""A request's command and ``shell`` flag, read the native API's way or OSWorld's.

The native API is strict: ``shell`` is a JSON boolean, and a list with ``shell`` runs as one quoted
shell line. OSWorld's server hands ``shell`` to ``subprocess`` as it came, so its clients (and its task
files, whose ``execute`` steps it forwards unchanged) also send ``"shell": "true"``; there, and only in
the compatibility routes, a flag means its Python truth value, and a list with ``shell`` is what
``subprocess.Popen(list, shell=True)`` makes of it on POSIX: the first item is the shell's script, the
rest its ``$0``, ``$1``, ... (OSWorld's own SetupController sends ``["echo ... | sudo -S ..."]`` so).

Standard library only, so the host's unit tests load it as it is.
"""

import shlex

from protocol import bad

HOME = "/home/user"


def expand_home(arg):
    """``~`` and a leading ``~/`` as the user's home (the native API's rule for argv items and paths).

    >>> expand_home("~/a"), expand_home("~"), expand_home("a~/b")
    ('/home/user/a', '/home/user', 'a~/b')
    """
    return HOME + arg[1:] if arg == "~" or arg.startswith("~/") else arg


def _argv(cmd):
    """``cmd`` if it is a non-empty list of strings without NUL bytes, else None."""
    if isinstance(cmd, list) and cmd and all(isinstance(c, str) for c in cmd) and "\x00" not in "".join(cmd):
        return cmd
    return None


def _split(cmd):
    try:
        return shlex.split(cmd)
    except ValueError as exc:
        raise bad(f"command: cannot split {cmd!r:.100}: {exc}") from None


def command_of(data, default_shell=None):
    """(argv or shell string, shell) from a native request's ``command`` and ``shell`` (a JSON boolean).

    A string without ``shell`` runs through the shell when ``default_shell`` is None and is split like a
    shell would when it is False.

    >>> command_of({"command": "echo hi"}), command_of({"command": "ls ~/x", "shell": False})
    (('echo hi', True), (['ls', '/home/user/x'], False))
    >>> command_of({"command": ["a b", "c"], "shell": True})
    ("'a b' c", True)
    """
    cmd = data.get("command")
    shell = data.get("shell", default_shell)
    if shell is not None and not isinstance(shell, bool):
        raise bad(f"shell: expected true or false, actual {shell!r:.40}")
    if isinstance(cmd, str) and cmd.strip():
        if shell is None:
            shell = True
        if shell:
            return cmd, True
        return [expand_home(a) for a in _split(cmd)], False
    argv = _argv(cmd)
    if argv is not None:
        if shell:
            return " ".join(shlex.quote(c) for c in argv), True
        return [expand_home(a) for a in argv], False
    raise bad("command: expected a non-empty string or list of strings")


def truthy(value, key):
    """A flag as OSWorld's server reads it: the JSON value's Python truth value (``"false"`` and ``"0"`` are
    true, as they are to ``subprocess``); a list or an object is refused.

    >>> [truthy(v, "shell") for v in (True, "true", "false", "", 1, 0, 0.0, None)]
    [True, True, True, False, True, False, False, False]
    """
    if value is None or isinstance(value, (bool, int, float, str)):
        return bool(value)
    raise bad(f"{key}: expected true or false (or a string or number, read as Python's truth value), "
              f"actual {value!r:.40}")


def osworld_command_of(data):
    """(argv or shell string, shell) as OSWorld's server reads ``/execute`` and ``/setup/launch``.

    ``shell`` is a truth value, false when absent. A string without it is split like a shell would; a list
    with it runs its first item as the script (``/bin/sh -c ITEM0 ITEM1 ...``). Items of an argv that start
    with ``~/`` name the user's home, as OSWorld expands them; a shell string is left to the shell.

    >>> osworld_command_of({"command": "echo hi > /tmp/x", "shell": "true"})
    ('echo hi > /tmp/x', True)
    >>> osworld_command_of({"command": ["echo $0 ~/a", "x"], "shell": 1})
    (['/bin/sh', '-c', 'echo $0 ~/a', 'x'], False)
    >>> osworld_command_of({"command": "ls ~/x ~"})
    (['ls', '/home/user/x', '~'], False)
    """
    shell = truthy(data.get("shell"), "shell")
    cmd = data.get("command")
    if isinstance(cmd, str) and cmd.strip():
        if shell:
            return cmd, True
        argv = _split(cmd)
    else:
        argv = _argv(cmd)
        if argv is None:
            raise bad("command: expected a non-empty string or list of strings")
    argv = [HOME + a[1:] if a.startswith("~/") else a for a in argv]
    return (["/bin/sh", "-c", *argv], False) if shell else (argv, False)
