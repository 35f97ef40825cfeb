"""What each component was doing when: intervals, recorded only for a trace.

The recorder (:mod:`asgdsim.recorder`) keeps what the statistics need: one
row per gradient and per update. A timeline (``asgdsim run --trace``) also
needs how long each compute step, transfer, collective and update took, and
on which component; a :class:`Timeline` records those as typed columns
while the run is traced, and nothing at all otherwise: components hold a
``trace`` of None and test it once per transfer or cycle, and learners'
compute streams are wrapped only when tracing.

A timeline is bounded: it keeps intervals that end at or after ``since``
and start up to ``until`` (simulated seconds) and, once it holds ``limit``
intervals, moves ``until`` back to the start of the last one it kept. What
it holds is then every interval that overlaps [since, until]: a whole
stretch of the run, never a sample.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import simpy

    from .cluster import Cluster

__all__ = ["Intervals", "Timeline"]


class _Bound:
    """The window shared by every track of a timeline."""

    __slots__ = ("since", "until", "left")

    def __init__(self, since: float, until: float, limit: int):
        self.since, self.until, self.left = since, until, limit


class Intervals:
    """One track's intervals: start, end (simulated seconds) and a value
    whose meaning is the track's (a transfer's asked-for duration, which
    phase of a cycle), and the stage a transfer serves where its duration
    names it (components.link.StageSeconds), else ''."""

    __slots__ = ("start", "end", "value", "stage", "bound")

    def __init__(self, bound: _Bound):
        self.start, self.end, self.value = array("d"), array("d"), array("d")
        self.stage: list[str] = []
        self.bound = bound

    def add(self, start: float, end: float, value: float) -> None:
        bound = self.bound
        if start > bound.until or end < bound.since:
            return
        self.start.append(start)
        self.end.append(end)
        self.value.append(value)
        self.stage.append(getattr(value, "stage", ""))
        bound.left -= 1
        if bound.left == 0:
            # full: keep only what starts up to here, so the kept part is a
            # whole prefix (a transfer asked for later that fills an idle gap
            # may start earlier; it starts before ``until`` and is kept)
            bound.until = start

    def __len__(self) -> int:
        return len(self.start)

    def columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(start, end, value) as arrays, in the order recorded."""
        return tuple(np.frombuffer(c, dtype=np.float64).copy() if len(c) else np.zeros(0)
                     for c in (self.start, self.end, self.value))


class Timeline:
    """Every traced track of one run, by component.

    - ``steps[learner]``: compute steps (value 0)
    - ``links[name]``: transfers on a link, disk, mutex or port direction
      (value: the duration asked for, before any slow-down)
    - ``updaters[(kind, index)]``: a server's or round's updates (value: the
      duration asked for), or a SPRINT node's cycle (value 0: its
      Allreduce, 1: its update)
    """

    def __init__(self, until: float = math.inf, limit: int = 1_000_000, since: float = 0.0):
        if limit < 1:
            raise ValueError("a timeline holds at least one interval")
        self.bound = _Bound(since, until, limit)
        self.steps: dict[int, Intervals] = {}
        self.links: dict[str, Intervals] = {}
        self.updaters: dict[tuple[str, int], Intervals] = {}
        self.node_of_learner = np.zeros(0, dtype=np.int32)
        #: what the cluster's update components are kept under (cluster.servers)
        self.kinds: tuple[str, ...] = ()

    @property
    def until(self) -> float:
        """Every interval that starts up to this time is held."""
        return self.bound.until

    @property
    def intervals(self) -> int:
        return sum(len(t) for group in (self.steps, self.links, self.updaters)
                   for t in group.values())

    def _track(self) -> Intervals:
        return Intervals(self.bound)

    def instrument(self, env: simpy.Environment, cluster: Cluster) -> None:
        """Give the built cluster's components their tracks (before it runs):
        links and update components record into them, and each learner's
        compute stream is wrapped so that each step is recorded as it starts."""
        self.node_of_learner = np.asarray(cluster.node_of_learner, dtype=np.int32)
        for index, learner in enumerate(cluster.learners):
            track = self.steps[index] = self._track()
            learner.compute = _traced(env, learner.compute, track)
        for name, link in cluster.links.items():
            link.trace = self.links[name] = self._track()
        self.kinds = tuple(cluster.servers)
        for kind, parts in cluster.servers.items():
            for index, part in enumerate(parts):
                cpu = getattr(part, "cpu", None)
                target = cpu if cpu is not None else part
                if hasattr(target, "trace"):
                    target.trace = self.updaters[(kind, index)] = self._track()


def _traced(env: simpy.Environment, compute: Iterator[float], track: Intervals) -> Iterator[float]:
    """The compute stream, recording each step when the learner draws it:
    every learner draws its step the moment the step starts."""
    add = track.add
    for step in compute:
        now = env.now
        add(now, now + step, 0.0)
        yield step
