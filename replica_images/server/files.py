"""The replica's files as its API serves them: confined to the user's home and /tmp, opened without following
a symlink swapped in after the check, at most MAX_FILE bytes, written atomically.

Used by the native routes (api.py), OSWorld's routes (osworld.py) and the asset cache (asset_cache.py).
"""

import errno
import os
import stat

from protocol import HttpError, bad

HOME = "/home/user"
FILE_ROOTS = (HOME, "/tmp")
MAX_FILE = 256 * 2**20
"""Largest file (or recording) the server sends."""


def confine(path):
    """The real path of ``path`` if it lies under the user's home or /tmp."""
    if not isinstance(path, str) or not path or "\x00" in path:
        raise bad("path: expected a non-empty string")
    real = os.path.realpath(os.path.expanduser(path.replace("~", HOME, 1) if path.startswith("~") else path))
    if not any(real == root or real.startswith(root + "/") for root in FILE_ROOTS):
        raise HttpError(403, f"path {path!r} is outside {', '.join(FILE_ROOTS)}")
    return real


def _open_parent(path, create=False):
    """An fd of the directory holding ``path`` and the last component's name.

    ``path`` is what :func:`confine` returned: absolute, free of symlinks and inside a root.
    It is opened one component at a time with O_NOFOLLOW, so a symlink swapped in after
    ``confine`` checked it makes the open fail instead of leading outside the roots (the
    check and the use are on the same directories). With ``create``, missing directories
    are made on the way.
    """
    *parents, name = path.strip("/").split("/")
    fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parents:
            flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
            try:
                child = os.open(part, flags, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    os.mkdir(part, 0o777, dir_fd=fd)
                except FileExistsError:
                    pass
                child = os.open(part, flags, dir_fd=fd)
            os.close(fd)
            fd = child
    except OSError as exc:
        # O_DIRECTORY|O_NOFOLLOW on a symlink fails with ENOTDIR (ELOOP for a file); a plain file
        # on the way is the caller's mistake, a symlink is a swap after confine().
        swapped = exc.errno == errno.ELOOP or (exc.errno == errno.ENOTDIR and _is_symlink(part, fd))
        os.close(fd)
        if swapped:
            raise HttpError(403, f"path {path!r:.200} changed (a symlink appeared) while it was opened") from None
        raise
    return fd, name


def _is_symlink(name, dir_fd):
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def read_file(path):
    """The bytes of the regular file at ``path`` (confined), at most MAX_FILE of them."""
    dfd, name = _open_parent(path)
    try:
        # O_NONBLOCK: a FIFO opens at once (and is refused below) instead of hanging the thread.
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise HttpError(403, f"path {path!r:.200} changed (a symlink appeared) while it was opened") from None
        raise
    finally:
        os.close(dfd)
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise HttpError(400, f"{path!r:.200} is not a regular file")
        if st.st_size > MAX_FILE:
            raise HttpError(413, f"file {path!r:.200} is larger than {MAX_FILE} bytes")
        data = f.read(MAX_FILE + 1)  # the size seen above may have grown since
    if len(data) > MAX_FILE:
        raise HttpError(413, f"file {path!r:.200} is larger than {MAX_FILE} bytes")
    return data


def write_file(path, data):
    """Write atomically (temp file, then rename) at ``path`` (confined); the parent directories are created."""
    dfd, name = _open_parent(path, create=True)
    try:
        try:
            if stat.S_ISDIR(os.stat(name, dir_fd=dfd, follow_symlinks=False).st_mode):
                raise HttpError(409, f"{path!r:.200} is a directory")
        except FileNotFoundError:
            pass
        tmp = f"{name}.osgym-tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666, dir_fd=dfd)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except OSError as exc:
            try:
                os.unlink(tmp, dir_fd=dfd)
            except OSError:
                pass
            if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
                raise HttpError(507, f"cannot write {path!r:.200}: {exc.strerror}") from None
            raise
    finally:
        os.close(dfd)
