"""Reading a user's input file: a regular file of bounded size, never read
past its bound.

A scenario, a user catalog, a kernel table or a file of measured steps is
named by the user, and the name may be a device (``/dev/zero`` never ends),
a pipe (its reader waits for a writer forever) or a file of gigabytes read
whole before any size is judged. Each is refused here, before a byte is
read, with an ``OSError`` whose ``strerror`` says why, which the callers
already answer as "cannot be read (why)".
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
    """The text of a regular file of at most ``limit`` bytes (UTF-8), read
    no further than the limit even if it grows meanwhile."""
    check_file(path, limit)
    with open(path, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"more than {limit:,} bytes", str(path))
    return data.decode("utf-8")
