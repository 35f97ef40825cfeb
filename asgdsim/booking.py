"""Bookings: when a resource is free, gaps included.

A resource serves one transfer at a time. Alone, it is FIFO: it falls free
at ``free_at`` and a new transfer starts then, or now. A transfer that holds
several resources at once (cut-through: a message holds its node's port and
a shard's port for its whole length) starts when all of them are free, and
a resource that is free before the others waits idle for them. That idle
time is a *gap*, and a later transfer that fits in it takes it: a network
card sends a part to one shard while another shard's port is still busy,
rather than holding everything behind the part that waits. (Without gaps,
a node's eight learners each sending four parts in turn to four busy shards
hold their port idle most of the time; a step noise of 0.2 % doubled such a
round, and 20 % took it below the noiseless one.)

The simulator's links (components/link.py) and the closed form's skeleton
(skeleton.py) both book through :func:`earliest` and :func:`book`, so the
two cannot serve a transfer differently. Requests come in time order (a
SimPy clock, a walk's heap), so a gap that ends before ``now`` is of no use
and is dropped.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["Booking", "earliest", "book"]


class Booking:
    """A resource's bookings: free from ``free_at`` on, and in its ``gaps``
    (idle (start, end) intervals before it, in time order)."""

    __slots__ = ("free_at", "gaps")

    def __init__(self) -> None:
        self.free_at = 0.0
        self.gaps: list[tuple[float, float]] = []


def earliest(bookings: Sequence, now: float, duration: float) -> float:
    """The earliest start from ``now`` on at which every one of ``bookings``
    (objects with ``free_at`` and ``gaps``) is free for ``duration``."""
    latest = max(b.free_at for b in bookings)
    if not any(b.gaps for b in bookings):
        return latest if latest > now else now
    for b in bookings:
        if b.gaps and b.gaps[0][1] <= now:
            b.gaps[:] = [gap for gap in b.gaps if gap[1] > now]
    # a feasible start is now, or when some resource falls free or a gap opens
    candidates = {now}
    for b in bookings:
        if b.free_at > now:
            candidates.add(b.free_at)
        candidates.update(start for start, _ in b.gaps if start > now)
    for start in sorted(candidates):
        if start >= latest:
            return start
        end = start + duration
        if all(_free(b, start, end) for b in bookings):
            return start
    return latest if latest > now else now


def _free(b, start: float, end: float) -> bool:
    if start >= b.free_at:
        return True
    # a transfer that fills a gap exactly fits: its end and the gap's are
    # one sum taken from different origins (a round's, a run's), which may
    # round apart in the last bits
    return any(lo <= start and end <= hi + SLACK * (1.0 + abs(hi)) for lo, hi in b.gaps)


#: relative rounding a transfer may overrun its gap by
SLACK = 1e-9


def book(b, now: float, start: float, end: float) -> None:
    """Hold ``b`` from ``start`` to ``end`` (it is free then: see
    :func:`earliest`); idle time it leaves before ``start`` is a gap."""
    if start >= b.free_at:
        idle = b.free_at if b.free_at > now else now
        if start > idle:
            b.gaps.append((idle, start))
        b.free_at = end
        return
    for i, (lo, hi) in enumerate(b.gaps):
        if lo <= start < hi:
            # (a fat tree's leaf links may stretch a transfer past its gap)
            before = (lo if lo > now else now, start)
            b.gaps[i:i + 1] = [gap for gap in (before, (end, hi)) if gap[1] > gap[0]]
            return
