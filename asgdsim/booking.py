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
(skeleton.py) both book through :func:`slot` and :func:`book`, so the two
cannot serve a transfer differently (nor can the agreement suite catch a
mistake here: tests/test_booking.py checks it against a brute force), and
:func:`crossing` places a transfer across a fat tree's leaves for both.
Requests come in time order (a SimPy clock, a walk's heap), so a gap that
ends before ``now`` is of no use and is dropped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

__all__ = ["Booking", "slot", "earliest", "book", "crossing", "book_crossing"]


class Booking:
    """A resource's bookings: free from ``free_at`` on, and in its ``gaps``
    (idle (start, end) intervals before it, in time order)."""

    __slots__ = ("free_at", "gaps")

    def __init__(self) -> None:
        self.free_at = 0.0
        self.gaps: list[tuple[float, float]] = []


def slot(bookings: Sequence, now: float, duration: float,
         end_of: Callable[[float], float] | None = None) -> tuple[float, float]:
    """(start, end) of the earliest transfer from ``now`` on that every one of
    ``bookings`` (objects with ``free_at`` and ``gaps``) is free for.
    ``end_of(start)`` is when a transfer that starts then ends (``start +
    duration`` by default; later on a slowed link, or where a fat tree's leaf
    links stretch it): it takes a gap only if it fits whole."""
    latest = now
    for b in bookings:
        if b.free_at > latest:
            latest = b.free_at
        if b.gaps and b.gaps[0][1] <= now:
            del b.gaps[:_passed(b.gaps, now)]
    ends = end_of or (lambda start: start + duration)
    # a start before ``latest`` lies in a gap of every booking busy then, and
    # one with no gap wide enough rules out every start before its free_at
    floor = now
    for b in bookings:
        if b.free_at > floor and not any(_fits((lo if lo > now else now) + duration, hi)
                                         for lo, hi in b.gaps):
            floor = b.free_at
    if floor < latest:
        candidates = {floor}
        for b in bookings:
            candidates.update(lo for lo, _ in b.gaps if floor < lo < latest)
            if floor < b.free_at < latest:
                candidates.add(b.free_at)
        for start in sorted(candidates):
            end = ends(start)
            if all(_free(b, start, end) for b in bookings):
                return start, end
    return latest, ends(latest)


def earliest(bookings: Sequence, now: float, duration: float) -> float:
    """When a transfer of ``duration`` over every one of ``bookings`` asked
    for ``now`` starts (see :func:`slot`)."""
    return slot(bookings, now, duration)[0]


def _passed(gaps: list[tuple[float, float]], now: float) -> int:
    """How many of the first gaps (in time order) end by ``now``."""
    count = 0
    for _, hi in gaps:
        if hi > now:
            break
        count += 1
    return count


def _free(b, start: float, end: float) -> bool:
    if start >= b.free_at:
        return True
    # a transfer that fills a gap exactly fits: its end and the gap's are
    # one sum taken from different origins (a round's, a run's), which may
    # round apart in the last bits
    return any(lo <= start and _fits(end, hi) for lo, hi in b.gaps)


def _fits(end: float, hi: float) -> bool:
    """Whether a transfer that ends at ``end`` fits a gap that ends at ``hi``."""
    return end <= hi + SLACK_ULPS * math.ulp(hi)


#: rounding (units in the last place) a transfer may overrun its gap by
SLACK_ULPS = 64


def book(b, now: float, start: float, end: float) -> None:
    """Hold ``b`` from ``start`` to ``end`` (it is free then: see
    :func:`slot`); idle time it leaves before ``start`` is a gap."""
    if b.gaps and b.gaps[0][1] <= now:
        del b.gaps[:_passed(b.gaps, now)]
    if start < b.free_at:
        for i, (lo, hi) in enumerate(b.gaps):
            if lo <= start <= hi:
                before = (lo if lo > now else now, start)
                b.gaps[i:i + 1] = [gap for gap in (before, (end, hi)) if gap[1] > gap[0]]
                return
        # (not in a gap: :func:`slot` never asks this; queue it after the rest)
        start, end = b.free_at, b.free_at + (end - start)
    idle = b.free_at if b.free_at > now else now
    if start > idle:
        b.gaps.append((idle, start))
    b.free_at = end


def _spans(fabric: Sequence, start: float, work: float) -> list[tuple[float, float]]:
    """Each fat-tree leaf link's (begin, done) of its ``work`` in a transfer
    that starts at ``start``: in its own FIFO order (a slowed one at its pace)."""
    spans = []
    for link in fabric:
        begin = link.free_at if link.free_at > start else start
        profile = getattr(link, "profile", None)
        spans.append((begin, begin + work if profile is None else profile.end(begin, work)))
    return spans


def crossing(ports: Sequence, fabric: Sequence, now: float, duration: float, share: float,
             end_of: Callable[[float], float] | None = None) -> tuple[float, float]:
    """:func:`slot` of a transfer across a fat tree's leaves: it holds its
    ``ports`` from end to end (``end_of``: their own end) and each leaf link
    of ``fabric`` serves ``share`` of its time; it ends when all are done."""
    ports_end = end_of or (lambda start: start + duration)
    work = duration * share
    return slot(ports, now, duration, lambda start: max(
        [ports_end(start), *(done for _, done in _spans(fabric, start, work))]))


def book_crossing(ports: Sequence, fabric: Sequence, now: float, start: float, end: float,
                  duration: float, share: float) -> list[tuple[float, float]]:
    """Book a transfer that :func:`crossing` placed; each leaf link's span."""
    spans = _spans(fabric, start, duration * share)
    for link, (_, done) in zip(fabric, spans):
        link.free_at = done
    for port in ports:
        book(port, now, start, end)
    return spans
