"""Reading a user's input file: a regular file of bounded size, never read
past its bound.

A scenario, a user catalog, a kernel table or a file of measured steps is
named by the user, and the name may be a device (``/dev/zero`` never ends),
a pipe (its reader waits for a writer forever) or a file of gigabytes read
whole before any size is judged. A YAML file may come through a pipe
(``/dev/stdin``, a shell's ``<(...)``), read no further than its bound; a
table must be a regular file of bounded size. The rest is refused with an
``OSError`` whose ``strerror`` says why, which the callers already answer
as "cannot be read (why)".
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

__all__ = ["check_file", "read_text"]

#: what a CSV of measurements may hold (a kernel table of every layer of
#: every model is about a megabyte; a step file of a million steps 10 MB)
MAX_TABLE_BYTES = 100_000_000


def check_file(path: str | Path, limit: int) -> int:
    """Refuse ``path`` unless it is a regular file of at most ``limit``
    bytes; return its size."""
    info = os.stat(path)       # FileNotFoundError etc. are the callers' to answer
    if not stat.S_ISREG(info.st_mode):
        kind = "a folder" if stat.S_ISDIR(info.st_mode) else "a device, pipe or socket"
        raise OSError(errno.EINVAL, f"it is {kind}, not a regular file", str(path))
    if info.st_size > limit:
        raise OSError(errno.EFBIG, f"{info.st_size:,} bytes; expected at most {limit:,}",
                      str(path))
    return info.st_size


def read_text(path: str | Path, limit: int) -> str:
    """The text (UTF-8) of a file of at most ``limit`` bytes, read no
    further than the limit: a regular file judged by its size first, or a
    pipe or character device (``/dev/stdin``, a shell's ``<(...)``) read up
    to the limit (``/dev/zero`` is refused at it). A named pipe nobody
    writes to reads as empty rather than waiting forever."""
    info = os.stat(path)
    if stat.S_ISREG(info.st_mode):
        check_file(path, limit)
    elif not (stat.S_ISFIFO(info.st_mode) or stat.S_ISCHR(info.st_mode)):
        check_file(path, limit)        # refuses it, saying what it is
    # opened without waiting for a writer (a FIFO's open blocks until one
    # comes), then read as usual: with no writer, at its end at once
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"more than {limit:,} bytes", str(path))
    return data.decode("utf-8")
