"""SPRINT: GPUs that never wait, and per-node update threads with Allreduce.

Each GPU (:class:`SprintLearner`) loops: take the newest weights published on
its node, read a sub-batch from the node's disk, copy it to the GPU, compute,
copy the gradient to the host and add it, under the node's mutex, to the
node's accumulator. Each node's update thread (:class:`SprintNode`) loops:
swap the accumulator out, join the :class:`Allreduce` across all nodes, run
the momentum update on the CPU, publish the new version to its GPUs. So the
gradients that arrive during one cycle are applied at the end of the next.

The weights are replicated: every node applies the same summed gradient, so
a round produces one global version, taken by the first node to finish its
update (all finish at the same instant).
"""

from __future__ import annotations

from collections.abc import Generator, Iterator, Sequence

import simpy

from ..recorder import Recorder
from .link import Hold, run_stages
from .weights import Weights

__all__ = ["Allreduce", "SprintNode", "SprintLearner"]


class Round:
    """One Allreduce round: the gradients summed, and the version they made."""

    __slots__ = ("rows", "version", "started")

    def __init__(self) -> None:
        self.rows: list[int] = []
        self.version: int | None = None
        #: when the collective began (its last member joined)
        self.started = 0.0


class Allreduce:
    """The collective: done ``duration_s`` after the last member has joined."""

    def __init__(self, env: simpy.Environment, members: int, duration_s: float):
        self.env, self.duration_s = env, duration_s
        self.up = members         # members up (nodes fail, with their update thread)
        self.busy_s = 0.0
        #: a network slow-down's rate over time (slowdown.RateProfile), or None
        self.profile = None
        self._start_round()

    def _start_round(self) -> None:
        self._round, self._joined, self._done = Round(), set(), self.env.event()

    def join(self, rows: list[int], member: int) -> simpy.Event:
        """Contribute ``rows``; the event's value is the completed :class:`Round`."""
        self._round.rows.extend(rows)
        self._joined.add(member)
        done = self._done
        self._close_if_complete()
        return done

    def leave(self, member: int) -> None:
        """A member fails: the round goes on with the others (what it gave stays)."""
        self.up -= 1
        self._joined.discard(member)
        if self._joined:
            self._close_if_complete()

    def rejoin(self) -> None:
        self.up += 1

    def _close_if_complete(self) -> None:
        if len(self._joined) >= self.up:
            done, finished, now = self._done, self._round, self.env.now
            took = (self.duration_s if self.profile is None
                    else self.profile.end(now, self.duration_s) - now)
            finished.started = now
            self.env.timeout(took).callbacks.append(lambda _: self._finish(done, finished, took))
            self._start_round()

    def _finish(self, done: simpy.Event, finished: Round, took: float) -> None:
        self.busy_s += took
        done.succeed(finished)


class SprintNode:
    """A node's accumulator and update thread; ``version`` is what it published."""

    def __init__(self, env: simpy.Environment, allreduce: Allreduce, weights: Weights,
                 update_s: float, index: int = 0):
        self.env, self.allreduce, self.weights = env, allreduce, weights
        self.update_s, self.index = update_s, index
        self.version = 0
        self.accumulator: list[int] = []
        self.busy_s = 0.0
        self._applying: Round | None = None     # the round its update is applying
        #: where the run is traced (timeline.Intervals): each cycle's
        #: Allreduce (value 0) and update (value 1)
        self.trace = None
        self.process = env.process(self.update_thread())

    def fail(self) -> int:
        """The node goes down: its thread stops and leaves the Allreduce, and
        the gradients in its accumulator are lost; return how many."""
        lost, self.accumulator = len(self.accumulator), []
        if self.process.is_alive:
            self.process.interrupt("failure")
        self.allreduce.leave(self.index)
        # a summed round it was applying, with no other node up to apply it
        if self._applying is not None and self._applying.version is None and not self.allreduce.up:
            lost += len(self._applying.rows)
        self._applying = None
        return lost

    def rejoin(self) -> None:
        """Back up: the newest version, and a new thread."""
        self.version = self.weights.version
        self.allreduce.rejoin()
        self.process = self.env.process(self.update_thread())

    def update_thread(self) -> Generator:
        env = self.env
        while True:
            rows, self.accumulator = self.accumulator, []
            summed: Round = yield self.allreduce.join(rows, self.index)
            self._applying = summed
            began = env.now
            if self.update_s:
                yield env.timeout(self.update_s)
                self.busy_s += self.update_s
            if summed.version is None:
                summed.version = self.weights.apply(summed.rows)
            self.version, self._applying = summed.version, None
            if self.trace is not None:
                self.trace.add(summed.started, began, 0)
                self.trace.add(began, env.now, 1)


class SprintLearner:
    """One GPU running SPRINT's loop; it never waits for another GPU.

    ``before`` and ``after`` are its loop's stages (structure.py) resolved to
    the links of its node: taking the weights and the sub-batch, then copying
    the gradient out and adding it under the accumulator's mutex."""

    def __init__(self, env: simpy.Environment, index: int, node: SprintNode,
                 before: Sequence[Hold], after: Sequence[Hold], compute: Iterator[float],
                 recorder: Recorder, sub_batch: int):
        self.env, self.index, self.node = env, index, node
        self.before, self.after = before, after
        self.compute, self.recorder, self.sub_batch = compute, recorder, sub_batch
        self.busy_s = 0.0
        self.start_version = 0    # it reads its node's version anyway
        #: gradients it holds that its node's accumulator has not: lost if it fails
        self.unsent = 0
        self.process = env.process(self.run())

    def run(self) -> Generator:
        env, node, before, after = self.env, self.node, self.before, self.after
        next_compute, record = self.compute.__next__, self.recorder.gradient
        index, sub_batch = self.index, self.sub_batch
        while True:
            version, t_start = node.version, env.now
            self.unsent = 1
            if before:
                yield from run_stages(env, before)
            step = next_compute()
            yield env.timeout(step)
            self.busy_s += step
            if after:
                yield from run_stages(env, after)
            self.unsent = 0
            node.accumulator.append(record(index, version, t_start, env.now, sub_batch))
