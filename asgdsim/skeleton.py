"""The deterministic skeleton: learners with identical, fixed-time steps.

Learners whose every duration is fixed do not drift apart: they start
together and stay in a periodic schedule, staggered only where they queue
for a shared resource. The closed form cannot assume independent, uniform
phases for them; it needs that schedule. This module computes it, the way a
timed event graph is solved: each learner walks its stages (structure.py)
in order; a stage starts when the learner is ready and every resource it
holds is free for it (first come, first served, ties in the order the
requests were made, and idle gaps taken by a stage that fits: booking.py)
and lasts its fixed time. That is max-plus algebra on a handful of
learners, with no randomness and no SimPy: apart from the bookings, which it
shares with the simulator's links (and tests/test_booking.py checks against
a brute force), it is independent of the simulator, so the agreement suite
can catch either one's mistakes.

``Skeleton.walk`` moves a group of learners through a list of stages from
given start times and returns when each stage ended; callers chain walks
(a synchronous round's pull, compute and push) or walk many steps at once
(SPRINT's node) and read the period off the result.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from .booking import Booking, book, book_crossing, crossing, slot

__all__ = ["Skeleton", "Walk", "period_of", "queued_behind", "busiest"]

#: a resolved stage: the resource instances it holds (none: the learner's own
#: GPU) and its fixed duration
Walk = tuple[tuple[str, ...], float]


class Skeleton:
    """Resources booked as the simulator's links are (booking.py): FIFO,
    and the gaps a transfer over several leaves idle taken by one that fits.

    A fat tree's up- and down-links (structure.FABRIC, named after the ports
    in a stage) serve a transfer in ``share`` of its time, each in its own
    FIFO order from the moment the ports start it, as the simulator's
    link.Path does.

    Stages that end at one instant go on in the order they were scheduled,
    as the simulator's events do; ``last_first`` takes them the other way,
    which tells whether a schedule hangs on its ties."""

    def __init__(self, share: float = 0.0, last_first: bool = False) -> None:
        #: each resource's bookings (booking.py: the simulator's links book alike)
        self.booked: dict[str, Booking] = defaultdict(Booking)
        self.share = share
        self._seq, self._order = 0, -1 if last_first else 1

    def walk(self, starts: Sequence[float], stages: Sequence[Sequence[Walk]]) -> np.ndarray:
        """Learner i starts at ``starts[i]`` (ties in index order) and goes
        through ``stages[i]``; ``ends[i, k]`` is when its stage k ended."""
        heap = [(float(t), self._next(), i, 0) for i, t in enumerate(starts)]
        heapq.heapify(heap)
        ends = np.full((len(starts), max(map(len, stages), default=0)), np.nan)
        booked = self.booked
        while heap:
            now, _, i, k = heapq.heappop(heap)
            if k == len(stages[i]):
                continue
            holds, duration = stages[i][k]
            if holds and holds[-1].startswith("leaf_"):
                # as the simulator's link.Path: the ports free for the whole
                # transfer, each leaf link's share in its own FIFO order
                ports = [booked[r] for r in holds if not r.startswith("leaf_")]
                fabric = [booked[r] for r in holds[len(ports):]]
                start, end = crossing(ports, fabric, now, duration, self.share)
                book_crossing(ports, fabric, now, start, end, duration, self.share)
                end = now + (end - now)
            elif holds:
                held = [booked[r] for r in holds]
                start, end = slot(held, now, duration)
                for resource in held:
                    book(resource, now, start, end)
                # the same arithmetic as a SimPy timeout of (end - now): fixed-
                # time learners meet in ties, and a tie must break the same way
                end = now + (end - now)
            else:
                end = now + duration
            ends[i, k] = end
            heapq.heappush(heap, (end, self._next(), i, k + 1))
        return ends

    def _next(self) -> int:
        self._seq += self._order
        return self._seq


def period_of(times: np.ndarray, longest: int = 8, rtol: float = 1e-9) -> tuple[int, np.ndarray] | None:
    """The repeating pattern at the end of a schedule.

    ``times[i, k]`` is when learner i finished step k. Returns (p, shift):
    every learner's last steps repeat with a period of p steps, each p steps
    later by ``shift[i]``; or None if no period of at most ``longest`` steps
    shows in the last three repetitions.
    """
    steps = times.shape[1]
    for p in range(1, longest + 1):
        if 3 * p >= steps:
            break
        last = times[:, -1] - times[:, -1 - p]
        before = times[:, -1 - p] - times[:, -1 - 2 * p]
        earlier = times[:, -1 - 2 * p] - times[:, -1 - 3 * p]
        scale = np.maximum(np.abs(last), 1e-300)
        if np.all(np.abs(last - before) <= rtol * scale + 1e-12) and \
                np.all(np.abs(before - earlier) <= rtol * scale + 1e-12):
            return p, last
    return None


def queued_behind(stages: Sequence[Sequence[Walk]],
                  ends: np.ndarray) -> dict[tuple[str, int, int], list[tuple[float, float]]]:
    """Who follows whom at a shared resource: {(resource, ahead, behind):
    [(idle gap, ``behind``'s use)]} for consecutive uses by two learners
    (gap 0 where ``behind`` waited for ``ahead``). Two learners cannot come
    closer than a use: a drift makes one wait for the other."""
    served: dict[str, list[tuple[float, float, int]]] = defaultdict(list)
    for i, walk in enumerate(stages):
        for k, (holds, duration) in enumerate(walk):
            end = float(ends[i, k])
            if holds:
                served[holds[0]].append((end - duration, end, i))
    pairs: dict[tuple[str, int, int], list[tuple[float, float]]] = defaultdict(list)
    for resource, uses in served.items():
        uses.sort()
        for (_, end_a, a), (start_b, end_b, b) in zip(uses, uses[1:]):
            if a != b:
                pairs[(resource, a, b)].append((max(0.0, start_b - end_a), end_b - start_b))
    return pairs


def busiest(stages: Sequence[Sequence[Walk]], ends: np.ndarray) -> tuple[str, float]:
    """The resource instance busy the largest share of the walk, and that share."""
    busy: dict[str, float] = defaultdict(float)
    for i, walk in enumerate(stages):
        for k, (holds, duration) in enumerate(walk):
            if holds:
                busy[holds[0]] += duration
    if not busy:
        return "", 0.0
    span = float(np.nanmax(ends) - np.nanmin(ends[:, 0]))
    name = max(busy, key=busy.get)
    return name, busy[name] / span if span > 0 else 0.0
