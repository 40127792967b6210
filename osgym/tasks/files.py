"""Host paths that task files name, confined: task files are untrusted input.

A task file (OSWorld's JSON, a generated variant, a suite from elsewhere) names host paths in
two places, and each is confined here or refused with a :class:`~osgym.errors.TaskError` that
names the task and the field:

- **Where a getter puts what it fetched** (``vm_file`` and ``cloud_file``'s ``dest``): a relative
  name inside the evaluation's own scratch directory (:class:`Scratch`). The file is created by
  walking the name one component at a time from the directory's descriptor with ``O_NOFOLLOW``,
  so neither an absolute name, nor ``..``, nor a symlink met on the way leads out of it.
- **Which files a metric opens**: ``compare_text_file`` compares only files a getter put in the
  scratch directory, never a path a ``rule`` getter hands it (``/dev/zero`` would exhaust memory,
  a secret would be compared).
- **Which local file a step reads** (``download``/``upload_file``'s ``url``/``local_path`` and
  ``cloud_file``'s ``path``, as a plain path or a ``file://`` URL): only files under the directory
  the operator set as ``OSGYM_TASK_FILES_DIR`` (:func:`read_task_file`); unset, no local file at all.
  The path is resolved (``realpath``) and must stay inside that directory, the file is opened with
  ``O_NOFOLLOW`` and must be a regular file, and the file actually opened is checked again to lie
  inside the directory (a symlink swapped in between the check and the open is caught).

Remote ``http(s)`` URLs are never fetched at run time (replicas are offline): they are read from the
operator's asset cache, ``OSGYM_ASSET_CACHE``, which ``osgym tasks fetch-assets`` fills beforehand
(:mod:`osgym.tasks.assets`); a URL it lacks is refused, naming the task, the field and the URL.
Nothing a task file names reaches the replica or the host's disk before these checks.

>>> check_relative_name("result.txt", where="task t: evaluator.result.dest")
('result.txt',)
>>> check_relative_name("/etc/cron.d/x", where="task t: evaluator.result.dest")
Traceback (most recent call last):
...
osgym.errors.TaskLoadError: task t: evaluator.result.dest: expected a relative path inside the evaluator's \
scratch directory (like 'result.txt'), actual '/etc/cron.d/x' (an absolute path)
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlparse

from osgym.errors import TaskError, TaskLoadError
from osgym.settings import settings
from osgym.tasks.assets import REMOTE_SCHEMES, read_asset

__all__ = ["LOCAL_SCHEMES", "REMOTE_SCHEMES", "Scratch", "check_relative_name", "check_source", "read_task_file"]

LOCAL_SCHEMES = frozenset({"", "file"})
_TASK_FILES_VAR = "OSGYM_TASK_FILES_DIR"


def check_relative_name(name: object, *, where: str, error: type[TaskError] = TaskLoadError) -> tuple[str, ...]:
    """The components of ``name``, a relative path that cannot leave the directory it is joined to.

    Pure: it looks at the string only (:class:`Scratch` also refuses symlinks when it writes).

    >>> check_relative_name("sub/./a.txt", where="x")
    ('sub', 'a.txt')
    >>> check_relative_name("../a.txt", where="task t: evaluator.expected.dest")
    Traceback (most recent call last):
    ...
    osgym.errors.TaskLoadError: task t: evaluator.expected.dest: expected a relative path inside the evaluator's \
scratch directory (like 'result.txt'), actual '../a.txt' (it climbs out with '..')

    Raises:
        TaskError: ``error`` (default :class:`TaskLoadError`), naming ``where`` and what is wrong.
    """
    def refuse(why: str) -> TaskError:
        return error(f"{where}: expected a relative path inside the evaluator's scratch directory "
                     f"(like 'result.txt'), actual {name!r:.200} ({why})")

    if not isinstance(name, str):
        raise refuse(f"a {type(name).__name__}, not a string")
    if not name or "\x00" in name:
        raise refuse("empty" if not name else "it holds a NUL byte")
    path = PurePosixPath(name)
    if path.is_absolute():
        raise refuse("an absolute path")
    if name.startswith("~"):
        raise refuse("'~' is not expanded here")
    if ".." in path.parts:
        raise refuse("it climbs out with '..'")
    if not path.parts or path.parts == (".",):
        raise refuse("it names the directory itself")
    return path.parts


def check_source(source: object, *, where: str, error: type[TaskError] = TaskLoadError) -> str:
    """The scheme of a file source (``''`` for a plain path), if it is one osgym reads at all.

    Whether a local source lies inside ``OSGYM_TASK_FILES_DIR`` is decided when it is read
    (:func:`read_task_file`): the operator's settings on the worker, not where the task loads, rule.

    >>> check_source("https://example.org/a.docx", where="x"), check_source("/srv/tasks/a.txt", where="x")
    ('https', '')
    >>> check_source("ftp://example.org/a", where="task t: config[0].parameters.files[0].url")
    Traceback (most recent call last):
    ...
    osgym.errors.TaskLoadError: task t: config[0].parameters.files[0].url: expected an http(s) URL, a file:// \
URL or a path, actual 'ftp://example.org/a'

    Raises:
        TaskError: ``error`` (default :class:`TaskLoadError`), naming ``where``.
    """
    if not isinstance(source, str) or not source or "\x00" in source:
        raise error(f"{where}: expected a URL or a path (a non-empty string), actual {source!r:.200}")
    parsed = urlparse(source)
    if parsed.scheme not in LOCAL_SCHEMES | REMOTE_SCHEMES:
        raise error(f"{where}: expected an http(s) URL, a file:// URL or a path, actual {source!r:.200}")
    if parsed.scheme == "file" and parsed.netloc not in ("", "localhost"):
        raise error(f"{where}: a file:// URL names this machine only (file:///path), actual {source!r:.200}")
    return parsed.scheme


def _inside(root: str, path: str) -> bool:
    return os.path.commonpath([root, path]) == root


def read_task_file(source: str, *, where: str, error: type[TaskError], root: Path | None = None) -> bytes:
    """The bytes of a file a task names: a local file under the operator's task-files directory, or an
    http(s) URL's copy in the asset cache (:func:`osgym.tasks.assets.read_asset`; never the network).

    Args:
        source: a path (relative ones are taken from the directory), a ``file://`` URL or an http(s) URL.
        where: ``"task <id>: <field>"``, for the error message.
        error: the error class to raise (:class:`~osgym.errors.SetupError` in setup,
            :class:`~osgym.errors.EvaluatorError` in a getter).
        root: the directory local files may come from; default ``OSGYM_TASK_FILES_DIR`` (unset: none).

    Raises:
        TaskError: ``error``, naming ``where``, when a remote URL is not in the asset cache (or no cache
            is set), local files are not allowed, the path leaves the directory (itself or through a
            symlink), or it is not a readable regular file.
    """
    scheme = check_source(source, where=where, error=error)
    if scheme in REMOTE_SCHEMES:
        return read_asset(source, where=where, error=error)
    root = root if root is not None else settings().task_files_dir
    if root is None:
        raise error(f"{where}: local files are not allowed: the operator has not set {_TASK_FILES_VAR} "
                    f"(the one directory task files may read from), actual {source!r:.200}")
    path = unquote(urlparse(source).path) if scheme == "file" else source
    base = os.path.realpath(root)
    # os.path.join keeps an absolute path as it is: it must then lie under the directory by itself.
    target = os.path.realpath(os.path.join(base, path))
    outside = error(f"{where}: {source!r:.200} is outside {_TASK_FILES_VAR}, itself or through a symlink; task "
                    "files may read only files under it")
    if not _inside(base, target):
        raise outside
    try:
        # O_NONBLOCK: a FIFO placed in the directory must not hang the episode before fstat refuses it.
        fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        raise error(f"{where}: cannot read {source!r:.200}: {exc.strerror}") from exc
    try:
        # realpath and open are two steps: check that what was opened is still inside.
        opened = os.readlink(f"/proc/self/fd/{fd}")
        if not _inside(base, opened):
            raise outside
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise error(f"{where}: {source!r:.200} is not a regular file")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read()
    except OSError as exc:
        raise error(f"{where}: cannot read {source!r:.200}: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)


class Scratch:
    """A fresh private directory for one evaluation's fetched files; every name stays inside it.

    >>> with Scratch() as s:
    ...     p = s.write("sub/a.txt", b"hi", where="task t: evaluator.result.dest", error=TaskError)
    ...     p.read_bytes(), p.parent.parent == s.root
    (b'hi', True)
    """

    def __init__(self, prefix: str = "osgym-eval-") -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix=prefix)
        self.root = Path(os.path.realpath(self._tmp.name))

    def __enter__(self) -> Scratch:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._tmp.cleanup()

    def holds(self, path: object) -> bool:
        """True if ``path`` is a regular file inside this directory (what a file getter returned).

        >>> with Scratch() as s:
        ...     s.holds(s.write("a.txt", b"", where="x", error=TaskError)), s.holds("/etc/hostname")
        (True, False)
        """
        if not isinstance(path, str | os.PathLike):
            return False
        real = os.path.realpath(path)
        return _inside(str(self.root), real) and os.path.isfile(real)

    def write(self, name: object, data: bytes, *, where: str, error: type[TaskError]) -> Path:
        """Write ``data`` as ``name`` inside the directory (replacing a file of that name); its path.

        Raises:
            TaskError: ``error``, naming ``where``, if ``name`` is absolute, climbs out with ``..``,
                meets a symlink or a non-directory on its way, or cannot be written.
        """
        parts = check_relative_name(name, where=where, error=error)
        flags = os.O_NOFOLLOW | os.O_CLOEXEC
        dir_fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | flags)
        try:
            for part in parts[:-1]:
                try:
                    os.mkdir(part, 0o700, dir_fd=dir_fd)
                except FileExistsError:
                    pass
                next_fd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | flags, dir_fd=dir_fd)
                os.close(dir_fd)
                dir_fd = next_fd
            fd = os.open(parts[-1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC | flags, 0o600, dir_fd=dir_fd)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise error(f"{where}: {name!r:.200} leads through a symlink or a file; expected a plain "
                            "relative path inside the evaluator's scratch directory") from exc
            raise error(f"{where}: cannot write {name!r:.200} in the evaluator's scratch directory: "
                        f"{exc.strerror or exc}") from exc
        finally:
            os.close(dir_fd)
        return self.root.joinpath(*parts)
