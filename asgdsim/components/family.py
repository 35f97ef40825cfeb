"""The asynchronous family between ``sync`` and ``async``: servers that
apply a batch of K gradients, rounds that cancel the steps they no longer
need, and the clock of stale synchronous parallel.

- :class:`BatchServer` (``softsync``, ``k-batch-async``) applies an update
  each time it holds ``batch`` gradients, from any learners. Nobody waits
  for it but the learner whose push completes a batch: every pusher takes
  the newest weights, including the update its own push completed.
- ``k-async`` needs nothing new: a :class:`~.server.SyncServer` whose round
  is the first K learners to push applies the first K gradients from
  distinct learners; they wait for its update, the others go on with their
  steps and join the next round.
- :class:`CancellingRound` (``k-sync``, ``k-batch-sync``) closes a round at
  its K-th gradient: steps still reading their sub-batch or computing stop
  there, gradients still on their way are dropped (both counted in
  ``cancelled``, never applied), and after the update every learner
  restarts from the new weights (:class:`RoundLearner`). A step begins with
  the read of its sub-batch: a learner still pulling the weights when a
  round closes has begun none, and pulls the newest.
- :class:`StalenessClock` (``ssp``) holds a learner back from its step i
  until every learner has pushed i - s gradients.

A link already reserved cannot be given back (``link.py``), so a step is
cancelled while it computes, or dropped on arrival: a transfer that began
runs to its end.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import deque
from collections.abc import Generator

import simpy

from ..recorder import Recorder
from .link import Link, run_stages, starts_at, transfer_over
from .server import ServerLearner
from .weights import Weights

__all__ = ["BatchServer", "CancellingRound", "RoundLearner", "StalenessClock"]


class BatchServer:
    """Applies an update each time it holds ``batch`` gradients."""

    def __init__(self, env: simpy.Environment, weights: Weights, recorder: Recorder,
                 update_s: float, batch: int):
        self.env, self.weights, self.recorder = env, weights, recorder
        self.update_s, self.batch = update_s, batch
        self.cpu = Link(env, "server_cpu")
        #: with no update time nobody waits: learners call ``apply`` directly
        self.instant = update_s == 0
        self._rows: list[int] = []

    @property
    def busy_s(self) -> float:
        return self.cpu.busy_s

    def _held(self, learner: int, version_read: int, t_start: float, samples: int) -> list[int] | None:
        """Hold one gradient; the batch it completes, if it does."""
        self._rows.append(self.recorder.gradient(learner, version_read, t_start, self.env.now, samples))
        if len(self._rows) < self.batch:
            return None
        rows, self._rows = self._rows, []
        return rows

    def apply(self, learner: int, version_read: int, t_start: float, samples: int) -> int:
        rows = self._held(learner, version_read, t_start, samples)
        return self.weights.version if rows is None else self.weights.apply(rows)

    def exchange(self, learner: int, version_read: int, t_start: float, samples: int) -> Generator:
        """The newest weights; the pusher that completes a batch waits for its update."""
        rows = self._held(learner, version_read, t_start, samples)
        if rows is None:
            return self.weights.version
        yield from self.cpu.transfer(self.update_s)
        return self.weights.apply(rows)


class _Turn:
    __slots__ = ("event", "abandoned")

    def __init__(self, event: simpy.Event):
        self.event, self.abandoned = event, False

    def give_up(self) -> None:
        self.abandoned = True


class Turns:
    """One at a time, first come first served, and a waiter may leave the
    queue in no time: it is skipped when its turn comes (a ``simpy.Resource``
    removes a cancelled request from its list, which costs the queue's
    length, thousands of times a round at 4096 learners)."""

    def __init__(self, env: simpy.Environment):
        self.env, self.busy = env, False
        self._queue: deque[_Turn] = deque()

    def ask(self) -> _Turn:
        turn = _Turn(self.env.event())
        if self.busy:
            self._queue.append(turn)
        else:
            self.busy = True
            turn.event.succeed()
        return turn

    def done(self) -> None:
        while self._queue:
            turn = self._queue.popleft()
            if not turn.abandoned:
                turn.event.succeed()
                return
        self.busy = False


class CancellingRound:
    """The rounds of ``k-sync`` and ``k-batch-sync``: a round closes at its
    ``k``-th gradient; the update is published ``update_s`` later."""

    def __init__(self, env: simpy.Environment, weights: Weights, recorder: Recorder,
                 update_s: float, k: int, once: bool = False):
        self.env, self.weights, self.recorder = env, weights, recorder
        #: ``once``: a learner gives one gradient a round (k-sync), so a round
        #: of fewer learners up than K closes at all of theirs
        self.update_s, self.k, self.once = update_s, k, once
        #: who is up (failures.Membership), where learners fail; the gradients
        #: that close a round
        self.membership, self._need = None, k
        self.busy_s = 0.0
        #: steps cancelled or dropped: never applied
        self.cancelled = 0
        self._rows: list[int] = []
        #: the server's port, taken in turn by pushes that a closing round can
        #: still stop (a Link's transfers, once asked for, cannot be)
        self.port = Turns(env)
        #: where the run is traced (timeline.Intervals): each update's interval
        self.trace = None
        self.closed = env.event()       # this round has its k gradients
        self.published = env.event()    # ... and its update is applied: the version

    def arrive(self, closed: simpy.Event, row_of) -> None:
        """A gradient of the round ``closed`` reaches the server: held, or
        dropped if that round has closed. ``row_of()`` records it."""
        if closed.triggered:
            self.cancelled += 1
            return
        self._rows.append(row_of())
        self._close_if_complete()

    def _close_if_complete(self) -> None:
        if self._rows and len(self._rows) >= self._need:
            rows, self._rows = self._rows, []
            self.closed.succeed()
            self.env.process(self._update(rows))

    def member_changed(self, learner: int, up: bool) -> None:
        """With fewer learners up a k-sync round may be complete already."""
        if self.once:
            self._need = min(self.k, self.membership.count)
        if not up and not self.closed.triggered:
            self._close_if_complete()

    def _update(self, rows: list[int]) -> Generator:
        if self.update_s:
            if self.trace is not None:
                self.trace.add(self.env.now, self.env.now + self.update_s, self.update_s)
            yield self.env.timeout(self.update_s)
            self.busy_s += self.update_s
        published = self.published
        self.closed, self.published = self.env.event(), self.env.event()
        published.succeed(self.weights.apply(rows))


class RoundLearner(ServerLearner):
    """A learner of ``k-sync`` (``again`` False: one step per round) or
    ``k-batch-sync`` (``again`` True: after each push another step on the
    same weights, until the round closes)."""

    def __init__(self, *args, again: bool):
        self.again = again
        super().__init__(*args)

    def _push(self, closed: simpy.Event) -> Generator:
        """The stages up to the server; a push still queued for the server's
        port when its round closes is not sent. True if it was."""
        for links, duration in self.after:
            if links[0].name.startswith("server_port_in"):
                port = self.server.port
                turn = port.ask()
                try:
                    yield turn.event | closed
                    if closed.triggered:
                        return False
                    # a Path (across a fat tree's leaves) moves itself
                    yield from (links[0].transfer(duration) if len(links) == 1
                                else transfer_over(self.env, links, duration))
                finally:
                    # its turn, if it came, ends here (pushed, its round
                    # closed, or the learner failed); else it leaves the queue
                    if turn.event.triggered:
                        port.done()
                    else:
                        turn.give_up()
            else:
                yield from run_stages(self.env, ((links, duration),))
        return True

    def run(self) -> Generator:
        env, rounds, recorder = self.env, self.server, self.server.recorder
        index, sub_batch = self.index, self.sub_batch
        version = self.start_version
        while True:
            closed, published = rounds.closed, rounds.published
            t_start = env.now
            while True:
                self.unsent = 1
                if self.before:
                    yield from run_stages(env, self.before)
                if closed.triggered:
                    rounds.cancelled += 1
                    break
                began, step = env.now, next(self.compute)
                yield env.timeout(step) | closed
                if closed.triggered and env.now < began + step:
                    self.busy_s += env.now - began
                    rounds.cancelled += 1
                    break
                self.busy_s += step
                if self.after and not (yield from self._push(closed)):
                    rounds.cancelled += 1      # the round closed while it queued
                    break
                end = env.now
                rounds.arrive(closed, lambda: recorder.gradient(index, version, t_start, end, sub_batch))
                if not self.again or closed.triggered:
                    break
                t_start = env.now
            self.unsent = 0       # handed over, or cancelled: nothing to lose
            version = yield published
            while self.reply:
                # the server sends the weights it holds when the transfer
                # starts, so a pull queued behind later rounds gets theirs
                links, duration = self.reply[0]
                start = starts_at(links, env.now, duration)
                yield from run_stages(env, self.reply)
                version = max(version, bisect_right(recorder.update_t, start))
                if rounds.weights.version == version:
                    break
                # a round closed while the weights were on their way: pull
                # the newest (no step had begun, so none is cancelled)


class StalenessClock:
    """How many gradients each learner has pushed, and the events of learners
    held back until the slowest has pushed enough. Learners that are down
    do not hold anyone back; one that rejoins takes the slowest count of
    the others (it starts again from the newest weights)."""

    def __init__(self, env: simpy.Environment, learners: int, bound: int):
        self.env, self.bound = env, bound
        self.pushed = [0] * learners
        self.slowest = 0                     # min of pushed over the learners up
        self._at_slowest = learners          # learners up whose count is the min
        self._waiting: dict[int, simpy.Event] = {}
        #: when learners held back were last let go (:meth:`may_start`)
        self.released_at = -1.0
        #: who is up (failures.Membership), where learners fail
        self.membership = None

    def may_start(self, step: int) -> simpy.Event | None:
        """None if step ``step`` (from 0) may start now, else the event that
        lets it: every learner has pushed at least step - bound gradients.
        A learner whose push let others go at this instant starts after
        them, as it pushed after them: fixed steps then keep their order
        (it went first, and 11 of 12 learners were stale by 12, one by 0,
        where async's order gives each 11)."""
        need = step - self.bound
        if self.slowest >= need:
            return self.env.timeout(0) if self.released_at == self.env.now else None
        if need not in self._waiting:
            self._waiting[need] = self.env.event()
        return self._waiting[need]

    def push(self, learner: int) -> None:
        count = self.pushed[learner]
        self.pushed[learner] = count + 1
        if count != self.slowest:
            return
        self._at_slowest -= 1
        if self._at_slowest:
            return
        self._recount()

    def member_changed(self, learner: int, up: bool) -> None:
        if up:
            others = [c for i, c in enumerate(self.pushed) if self.membership.up[i] and i != learner]
            self.pushed[learner] = max(self.pushed[learner], min(others, default=self.slowest))
        self._recount()

    def _recount(self) -> None:
        """The slowest count over the learners up; release who waited for it."""
        up = self.membership.up if self.membership is not None else None
        counts = self.pushed if up is None else [c for c, on in zip(self.pushed, up) if on]
        if not counts:
            return
        self.slowest = min(counts)
        self._at_slowest = counts.count(self.slowest)
        for need in sorted(n for n in self._waiting if n <= self.slowest):
            self._waiting.pop(need).succeed()
            self.released_at = self.env.now
