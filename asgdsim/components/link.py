"""Links: anything that serves transfers one at a time, first come first served.

A :class:`Link` is a host link (PCIe between a node's CPU and its GPUs), a
disk, the accumulator's mutex, or one direction of a network port. A
transfer holds the link for its duration (latency + bytes / bandwidth, from
the cost model); a transfer that finds the link busy waits its turn: that is
the contention.

Because every duration is known when a transfer is asked for, a link needs
no request queue: it remembers when it falls free, and a new transfer starts
then (or now) and ends a duration later. That is exactly a FIFO resource's
timeline, with one SimPy event per transfer instead of four. A transfer
over several links at once leaves idle gaps on those that were free before
the others, which a later transfer that fits takes (booking.py, shared with
the closed form's skeleton).

Where a run is traced (``asgdsim run --trace``) a link's ``trace`` is a
:class:`~asgdsim.timeline.Intervals` that gets each transfer's start, end and
asked-for duration; otherwise it is None and costs one test per transfer.

A :class:`Path` crosses a fat tree's fabric: the ports (node's and
server's) start the transfer together, as ``transfer_over`` does, while each
leaf up- or down-link on the way, which several ports share at a higher
rate, serves its part of the work (a ``share`` of the port's time) in its
own FIFO order from then on. The transfer ends when the ports and the
fabric are done; k transfers through one up-link of capacity C therefore
take the k x bytes / C that sharing C takes, and none waits for another's
whole port time.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence

import simpy

from ..booking import book, book_crossing, crossing, slot

__all__ = ["Link", "Path", "StageSeconds", "starts_at", "transfer_over", "Hold", "run_stages"]


class Link:
    """A server of transfers, one at a time, first come first served, but
    for idle gaps taken by a later transfer that fits (booking.py): a host
    link, a disk, a mutex, a port direction."""

    __slots__ = ("env", "name", "busy_s", "free_at", "gaps", "profile", "trace")

    def __init__(self, env: simpy.Environment, name: str):
        self.env = env
        self.name = name
        self.busy_s = 0.0        # of transfers completed
        self.free_at = 0.0       # when the last transfer booked at its end will end
        #: idle (start, end) before free_at that transfers over several links left
        self.gaps: list[tuple[float, float]] = []
        #: a slow-down's rate over time (slowdown.RateProfile), None at full rate
        self.profile = None
        #: where the run is traced: the transfers' intervals (timeline.Intervals)
        self.trace = None

    def _book(self, duration: float) -> tuple[float, float]:
        """(start, end) of a transfer asked for now, booked."""
        now = self.env.now
        start, end = slot((self,), now, duration, _ends((self,), duration))
        book(self, now, start, end)
        if self.trace is not None:
            self.trace.add(start, end, duration)
        return start, end

    def transfer(self, duration: float) -> Generator:
        now = self.env.now
        if self.gaps or self.profile is not None or self.trace is not None:
            start, end = self._book(duration)
        else:
            # the common case, inline: FIFO, nothing left idle
            start = self.free_at if self.free_at > now else now
            end = self.free_at = start + duration
        yield self.env.timeout(end - now)
        self.busy_s += end - start

    def hold(self, duration: float) -> simpy.Event:
        """Queue a transfer without waiting for it: the event fires when it ends."""
        start, end = self._book(duration)
        done = self.env.timeout(end - self.env.now)
        done.callbacks.append(lambda _: self._count(end - start))
        return done

    def _count(self, duration: float) -> None:
        self.busy_s += duration


def _ends(links: Sequence[Link], duration: float):
    """When a transfer over ``links`` that starts at a time ends: at the pace
    of the slowest (a slowed link's profile); None where none is slowed."""
    slowed = [link.profile for link in links if link.profile is not None]
    if not slowed:
        return None
    return lambda start: max(start + duration, *(p.end(start, duration) for p in slowed))


def starts_at(links: Sequence[Link], now: float, duration: float) -> float:
    """When a transfer of ``duration`` over all ``links`` (or one Path) asked
    for now starts."""
    if len(links) == 1 and isinstance(links[0], Path):
        return links[0].slot(now, duration)[0]
    return slot(links, now, duration, _ends(links, duration))[0]


def transfer_over(env: simpy.Environment, links: Sequence[Link], duration: float) -> Generator:
    """Hold every link of a path at once for ``duration`` (cut-through routing):
    the transfer starts when all of them are free."""
    now = env.now
    latest, plain = now, True
    for link in links:
        if link.free_at > latest:
            latest = link.free_at
        if link.gaps or link.profile is not None:
            plain = False
    # the common case without gaps or slow-downs: when the last falls free
    start, end = (latest, latest + duration) if plain else slot(links, now, duration,
                                                                 _ends(links, duration))
    for link in links:
        book(link, now, start, end)
        if link.trace is not None:
            link.trace.add(start, end, duration)
    yield env.timeout(end - now)
    for link in links:
        link.busy_s += end - start


class Path:
    """A transfer's way through a fat tree: the ports it holds from end to
    end, and the leaves' up- and down-links it crosses on the way (see the
    module's docstring). It stands in a stage for its links, as one."""

    __slots__ = ("env", "ports", "fabric", "share", "name")

    def __init__(self, env: simpy.Environment, ports: Sequence[Link], fabric: Sequence[Link],
                 share: float):
        self.env, self.ports, self.fabric, self.share = env, tuple(ports), tuple(fabric), share
        #: the first port's: what a learner looks for in its stages (family.py)
        self.name = self.ports[0].name

    def slot(self, now: float, duration: float) -> tuple[float, float]:
        """(start, end) of a transfer asked for now: its ports free for its
        whole length, the leaf links' shares included."""
        return crossing(self.ports, self.fabric, now, duration, self.share,
                        _ends(self.ports, duration))

    def transfer(self, duration: float) -> Generator:
        env = self.env
        now = env.now
        start, end = self.slot(now, duration)
        spans = book_crossing(self.ports, self.fabric, now, start, end, duration, self.share)
        yield env.timeout(end - now)
        for link in self.ports:
            link.busy_s += end - start
        for link, (begin, done) in zip(self.fabric, spans):
            link.busy_s += done - begin


class StageSeconds(float):
    """A stage's duration that carries the stage's name: a traced link
    records it beside the transfer (timeline.Intervals), so the trace names
    a transfer after its stage even where two stages of one size use the
    same link (a weights' pull and a gradient's push). Operators on it give
    plain floats; nothing but the trace reads the name."""

    __slots__ = ("stage",)

    def __new__(cls, seconds: float, stage: str) -> StageSeconds:
        value = super().__new__(cls, seconds)
        value.stage = stage
        return value

    def __reduce__(self):
        return StageSeconds, (float(self), self.stage)


#: one stage of a learner's loop, resolved: the links it holds and for how long
Hold = tuple[tuple[Link, ...], float]


def run_stages(env: simpy.Environment, stages: Sequence[Hold]) -> Generator:
    """Go through a learner's stages in order, each holding its links."""
    for links, duration in stages:
        if len(links) == 1:
            yield from links[0].transfer(duration)
        else:
            yield from transfer_over(env, links, duration)
