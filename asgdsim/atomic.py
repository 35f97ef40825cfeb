"""Files appear whole or not at all, readable as the user's umask says.

Every file asgdsim writes is written under a temporary name in its folder
and moved into place, so an interrupted run never leaves half a file. The
temporary file is created private (``tempfile.mkstemp`` makes it 0600); it
gets the mode an ordinary ``open()`` would have given it (0666 less the
umask, 0644 under the usual 022) before it takes the real name.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

__all__ = ["atomic_write", "atomic_text"]


def _umask() -> int:
    mask = os.umask(0)      # reading the umask means setting it; put it back at once
    os.umask(mask)
    return mask


def atomic_write(path: Path, write: Callable[[str], None]) -> None:
    """Call ``write(temporary_path)``, then move the file to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_text(path: Path, text: str) -> None:
    atomic_write(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))
