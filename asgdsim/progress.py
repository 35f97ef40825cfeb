"""Progress bars on the terminal, for runs and for sets of runs.

``run`` and ``compare`` show how far the simulation is against its stop
condition (samples of the epochs, gradients, updates or simulated time),
at what rate and how long is left; ``sweep`` and ``plan`` show the points
finished. The bars are tqdm's (small, no dependencies of its own, rate and
time left included), drawn on stderr only when stderr is a terminal and
``--quiet`` is not given: a log or a pipe gets nothing. The simulation
reports from a SimPy process a few times a second (asgdsim.simulation),
never per event, so a bar costs nothing measurable.
"""

from __future__ import annotations

import math
import os
import shutil
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .simulation import Progress

__all__ = ["RunBar", "PointsBar", "shown"]

#: a stop condition's unit on the bar, and the Progress fields of its value and limit
UNITS = {"samples": ("samples", "stop_samples"), "gradients": ("gradients", "stop_gradients"),
         "updates": ("updates", "stop_updates"), "simulated s": ("now_s", "stop_time_s")}


def _size() -> dict:
    """tqdm's size arguments: follow the terminal's size, unless it says it
    has none (a pseudo-terminal nobody sized, as under some CI runners),
    where tqdm would hide its bar below a screen of no rows."""
    try:
        size = os.get_terminal_size(sys.stderr.fileno())
        if size.columns > 0 and size.lines > 0:
            return {"dynamic_ncols": True}
    except (AttributeError, OSError, ValueError):
        pass
    fallback = shutil.get_terminal_size((100, 24))
    return {"ncols": fallback.columns, "nrows": fallback.lines}


def shown(quiet: bool) -> bool:
    """Whether to draw progress: on a terminal, unless asked to be quiet."""
    if quiet:
        return False
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):      # replaced or closed
        return False


class RunBar:
    """A simulation's bar, in the unit of the stop condition nearest to done;
    call it with each :class:`~asgdsim.simulation.Progress`."""

    def __init__(self, label: str):
        self.label = label
        self.bar = None
        self.unit: str | None = None

    def _open(self, p: Progress) -> None:
        from tqdm import tqdm

        fractions = {unit: getattr(p, value) / getattr(p, limit)
                     for unit, (value, limit) in UNITS.items() if getattr(p, limit) < math.inf}
        # a run with no finite stop ends by the failure watch: show simulated time
        self.unit = max(fractions, key=fractions.get) if fractions else "simulated s"
        total = getattr(p, UNITS[self.unit][1])
        total = None if total == math.inf else total
        # every report is drawn: the simulation already spaces them (about
        # PROGRESS_EVERY_S), and tqdm's own 0.1 s left a run of a few tenths
        # of a second showing only its opening 0 %
        self.bar = tqdm(total=total, desc=self.label, unit=f" {self.unit}", unit_scale=True,
                        file=sys.stderr, leave=False, mininterval=0, **_size(),
                        # (tqdm's scaled counts: 13.1k/20.0k, not 1.311e+04/2e+04)
                        bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt}"
                        "{unit} [{elapsed}<{remaining}, {rate_fmt}{postfix}]")

    def __call__(self, p: Progress) -> None:
        if self.bar is None:
            self._open(p)
        value = getattr(p, UNITS[self.unit][0])
        # the postfix first: update() may redraw, and must show this call's time
        if self.unit != "simulated s":
            self.bar.set_postfix_str(f"{p.now_s:,.1f} s simulated", refresh=False)
        self.bar.update((value if self.bar.total is None else min(value, self.bar.total))
                        - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


class PointsBar:
    """A sweep's or plan's bar over its simulations: call it with
    (finished, failed, total); ``failed`` is what the others are called."""

    def __init__(self, label: str, unit: str = " points", failed: str = "failed"):
        self.label, self.unit, self.failed = label, unit, failed
        self.bar = None

    def __call__(self, done: int, failed: int, total: int) -> None:
        from tqdm import tqdm

        if self.bar is None:
            self.bar = tqdm(total=total, desc=self.label, unit=self.unit, file=sys.stderr,
                            leave=False, **_size())
        if total != self.bar.total:
            self.bar.total = total
        if failed:
            self.bar.set_postfix_str(f"{failed} {self.failed}", refresh=False)
        self.bar.update(done + failed - self.bar.n)
        self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
