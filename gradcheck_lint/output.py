"""Write a report to a file atomically: readers see the old file or the whole new one, never half."""

from __future__ import annotations

import os
import tempfile


def _new_file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_atomic(path: str, text: str) -> None:
    """Write `text` (UTF-8) to `path` through a temporary file in the same directory and `os.replace`.

    Raises:
        OSError: the directory does not exist or is not writable, or `path` is a directory.
    """
    write_bytes_atomic(path, text.encode("utf-8"))


def write_bytes_atomic(path: str, data: bytes, suffix: str = ".tmp") -> None:
    """Write `data` to `path` atomically, keeping the file's mode (a new file gets the umask's).

    The temporary file sits in the same directory (so the rename is atomic) and is removed on any
    failure, including an interrupt.

    Raises:
        OSError: the directory does not exist or is not writable, or `path` is a directory.
    """
    directory = os.path.dirname(os.path.abspath(path))
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        mode = _new_file_mode()
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=suffix)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
