"""Writing a run's results to a folder (the command line's job only).

A run appears whole or not at all: its files are written into a staging
folder and moved into place together. A folder that already holds files is
not written into unless the caller says so, so nothing a user kept there is
overwritten silently.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from .atomic import atomic_text, atomic_write
from .errors import OutputExists
from .scenario import resolved_yaml

if TYPE_CHECKING:
    from .simulation import Result
    from .trace import Trace

__all__ = ["COMPARE_FILES", "OutputExists", "RUN_FILES", "TRACE_FILE", "write_run"]

EVENT_FILES = ("gradients.parquet", "updates.parquet")
FIGURES = ("figures/staleness.png", "figures/minibatch.png", "figures/over_time.png",
           "figures/utilisation.png")
#: what ``run`` writes, and ``compare`` (the same without the event tables)
RUN_FILES = ("summary.json", *EVENT_FILES, "scenario.yaml", "comparison.csv", *FIGURES)
COMPARE_FILES = tuple(f for f in RUN_FILES if f not in EVENT_FILES)
#: what ``run --trace`` writes too
TRACE_FILE = "trace.json"
#: files made from a run's results, removed when the run is written anew
DERIVED_FILES = (TRACE_FILE, "report.html", "replay.csv", "figures/replay.png")


def check_writable(out: Path, overwrite: bool, files: tuple[str, ...] = (),
                   reads: tuple[str | Path, ...] = ()) -> None:
    """Refuse, before any work, an output folder that could not be written:
    one that is a file, under a file, in a folder that is not writable, or
    that holds files (unless ``overwrite``), or where one of the ``files``
    the command writes is a folder, or is a file it ``reads`` (the user's
    scenario, which no --overwrite may replace)."""
    out = Path(out)
    for name in files:
        for read in reads:
            if (out / name).is_file() and Path(read).is_file() \
                    and os.path.samefile(out / name, read):
                raise OutputExists(
                    f"{out / name} is the file this command reads, and the run writes its own "
                    f"{name} there; choose another folder with --out")
    if out.is_symlink() and not out.exists():
        raise OutputExists(f"{out} is a link to {os.readlink(out)}, which does not exist")
    if out.exists() and not out.is_dir():
        raise OutputExists(f"{out} exists and is not a folder")
    for name in files:
        if (out / name).exists() and not (out / name).is_file():
            raise OutputExists(f"{out / name} is a folder, where this command writes its file "
                               f"{name}; choose another folder with --out")
    # the nearest existing folder above is where the missing ones get made
    parent = out if out.exists() else next((p for p in out.absolute().parents if p.exists()), None)
    if parent is not None and not parent.is_dir():
        raise OutputExists(f"cannot make {out}: {parent} is a file, not a folder")
    if parent is not None and not os.access(parent, os.W_OK | os.X_OK):
        raise OutputExists(f"cannot write {out}: {parent} is not writable")
    if parent is not None:
        # permissions do not tell everything (a read-only or virtual file
        # system, /proc say, refuses even root): make a folder there, as
        # the run will make its own, and remove it
        try:
            probe = tempfile.mkdtemp(prefix=".asgdsim-probe.", dir=parent)
        except OSError as exc:
            why = exc.strerror or exc
            raise OutputExists(
                f"cannot write in {out}: the system refuses to make anything there ({why})"
                if parent == out else
                f"cannot make {out}: the system refuses to make a folder in {parent} ({why})"
            ) from None
        with contextlib.suppress(OSError):
            os.rmdir(probe)
    if out.is_dir() and any(out.iterdir()) and not overwrite:
        # a command that writes a few files names them; a run's are its files
        ours = " and ".join(files) if 0 < len(files) <= 2 else "this run's files"
        raise OutputExists(f"{out} already holds files; pass --overwrite to write {ours} there "
                           "(the others are kept), or choose another folder with --out")


def write_run(result: Result, out: Path, overwrite: bool = False,
              events: bool = True, trace: Trace | None = None) -> list[Path]:
    """Write the files of ``run`` (DESIGN.md) into ``out``, without the event
    tables if ``events`` is False, with ``trace.json`` if a ``trace`` is
    given; return their paths.

    The run is all or nothing: its files are written into a staging folder
    beside ``out`` and moved in together, with Ctrl-C held back for the
    moves (renames in one file system, microseconds), so an interrupted run
    leaves the previous files in ``out`` as they were, and whatever else
    the user keeps there is never touched."""
    # the figures' libraries load here, after check_writable has answered
    from .compare import compare_figures, comparison

    out = Path(out)
    check_writable(out, overwrite)
    sc = result.scenario
    names = (RUN_FILES if events else COMPARE_FILES) + ((TRACE_FILE,) if trace is not None else ())
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent))
    try:
        atomic_text(staging / "summary.json", json.dumps(result.summary, indent=2) + "\n")
        if events:
            atomic_write(staging / "gradients.parquet",
                         lambda tmp: result.gradients.to_parquet(tmp, index=False))
            atomic_write(staging / "updates.parquet",
                         lambda tmp: result.updates.to_parquet(tmp, index=False))
        atomic_text(staging / "scenario.yaml", resolved_yaml(sc))
        atomic_write(staging / "comparison.csv",
                     lambda tmp: comparison(result).to_csv(tmp, index=False))
        if trace is not None:
            from .trace import write_trace
            atomic_write(staging / TRACE_FILE, lambda tmp: write_trace(trace, result, tmp))
        for name, fig in compare_figures(result).items():
            atomic_write(staging / "figures" / name,
                         lambda tmp, fig=fig: fig.savefig(tmp, dpi=120, format="png"))
        with interrupts_held():
            for name in names:
                (out / name).parent.mkdir(parents=True, exist_ok=True)
                os.replace(staging / name, out / name)
            # what an earlier run here derived from its own results, and
            # its event tables where this one writes none (compare), would
            # now describe another run
            for path in [out / name for name in (*EVENT_FILES, *DERIVED_FILES)
                         if name not in names and _derived_here(out, name)]:
                path.unlink()
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return [out / f for f in names]


def _derived_here(out: Path, name: str) -> bool:
    """Whether ``out / name`` is a file an earlier run's command wrote, known
    by what it holds: a folder of that name, or a file the user wrote, is
    theirs and stays."""
    from .replay import COLUMNS
    from .report import is_ours
    from .trace import TRACE_HEAD

    path = out / name
    if not path.is_file():
        return False
    try:
        if name == TRACE_FILE:
            with path.open("rb") as f:
                return f.read(len(TRACE_HEAD)) == TRACE_HEAD
        if name == "replay.csv":
            with path.open(encoding="utf-8", errors="replace") as f:
                return f.readline().strip() == ",".join(COLUMNS)
        if name == "figures/replay.png":           # written with its table
            return _derived_here(out, "replay.csv")
        if name in EVENT_FILES:
            import pyarrow.parquet as pq

            from .recorder import GRADIENT_COLUMNS, UPDATE_COLUMNS
            wanted = GRADIENT_COLUMNS if name == "gradients.parquet" else UPDATE_COLUMNS
            return set(wanted) <= set(pq.read_schema(path).names)
    except (OSError, ValueError):       # unreadable, or not Parquet (ArrowInvalid)
        return False
    return is_ours(path)


@contextmanager
def interrupts_held():
    """Ctrl-C waits until the block is done, then interrupts as usual (only
    the main thread can hold it; elsewhere the block runs as it is)."""
    caught = []
    try:
        previous = signal.signal(signal.SIGINT, lambda *_: caught.append(True))
    except ValueError:       # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if caught:
            raise KeyboardInterrupt
