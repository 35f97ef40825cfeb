"""Parameter-server clusters: learners that push gradients and pull weights.

A :class:`ServerLearner` loops: compute on its weights, copy the gradient to
its host and send it over the network to the server, wait for the server's
reply, receive the weights and copy them to the GPU. The reply carries the
version the learner computes from next.

- :class:`AsyncServer` applies each gradient as it arrives, one at a time on
  its CPU, and replies with the version that update produced (GPU A-SGD,
  Downpour with n_fetch = n_push = 1, Rudra's async).
- :class:`SyncServer` waits until every learner has pushed, applies their
  sum as one update and replies to all (BSP).
- :class:`DownpourLearner` pushes the sum of its last ``n_push`` gradients
  as one message and fetches the weights every ``n_fetch`` steps, without
  waiting for its pushes to be applied (Dean et al. 2012).

A server split into shards applies each message's parts on every shard at
once, after the whole message has arrived: its shards keep in step, so
they are one server whose update takes its largest part's time (parts are
even, or whole tensors: sync's ``split``). With sync's ``overlap:
backward`` a learner's gradient leaves as its backward pass starts, and
the learner is in the round once both are done.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator, Sequence

import simpy

from ..recorder import Recorder
from .failures import _defuse_interrupt
from .link import Hold, Link, run_stages
from .weights import Weights

__all__ = ["AsyncServer", "DownpourLearner", "LocalLearner", "SyncServer", "ServerLearner"]


class AsyncServer:
    """The parameter server of ``async``: applies each gradient on arrival,
    one at a time on its CPU, and replies with the version it produced."""

    def __init__(self, env: simpy.Environment, weights: Weights, recorder: Recorder,
                 update_s: float):
        self.env, self.weights, self.recorder, self.update_s = env, weights, recorder, update_s
        #: the server's CPU applies one gradient at a time, in arrival order
        self.cpu = Link(env, "server_cpu")
        #: applies a gradient in no time: learners call ``apply`` directly
        self.instant = update_s == 0

    @property
    def busy_s(self) -> float:
        return self.cpu.busy_s

    def apply(self, learner: int, version_read: int, t_start: float, samples: int) -> int:
        """Apply one gradient now; return the version the learner continues from."""
        return self.weights.apply_single(learner, version_read, t_start, samples)

    def exchange(self, learner: int, version_read: int, t_start: float, samples: int) -> Generator:
        """Queue for the CPU, apply one gradient; return the learner's next version."""
        row = self.recorder.gradient(learner, version_read, t_start, self.env.now, samples)
        yield from self.cpu.transfer(self.update_s)
        return self.weights.apply([row])

    def push(self, rows: list[int]) -> None:
        """Queue a message's recorded gradients for the CPU, to be applied
        as one update when its turn ends; the sender does not wait."""
        if self.instant:
            self.weights.apply(rows)
            return
        self.cpu.hold(self.update_s).callbacks.append(lambda _: self.weights.apply(rows))

    def fetch_wait_s(self) -> float:
        """How long a fetch waits: until every message queued before it is applied."""
        return max(0.0, self.cpu.free_at - self.env.now)


class SyncServer:
    """The parameter server of ``sync``: one update per round of all
    learners (of ``k-async``: of the first ``learners`` to push).

    Where a round is of every learner up (``whole``: sync, allreduce, local
    SGD's averaging), a learner that comes back after a failure joins at the
    next round, as elastic trainers admit workers at a synchronisation
    point: it starts from that round's weights, and the round in progress
    does not wait for it. (Were it to wait, a local SGD round of many steps
    would wait for every learner repaired meanwhile, and a cluster that
    fails more often than a round takes would never close one.)"""

    def __init__(self, env: simpy.Environment, weights: Weights, recorder: Recorder,
                 update_s: float, learners: int, whole: bool = False):
        self.env, self.weights, self.recorder = env, weights, recorder
        self.update_s, self.learners, self.whole = update_s, learners, whole
        #: one update at a time: k-async's rounds may close while the last
        #: round's update is still being applied
        self.cpu = Link(env, "server_cpu")
        self.instant = False    # a round always waits for every learner
        self._rows: list[int] = []
        #: the learners, up, whose gradients are in this round, and how many it needs
        self._arrived: set[int] = set()
        self._need = learners
        self._published = env.event()
        #: who is up (failures.Membership), where learners fail; the learners
        #: up that wait to join at the next round (``whole`` only)
        self.membership = None
        self._joining: set[int] = set()

    def admission(self, learner: int) -> simpy.Event | None:
        """What a learner that came back waits for before its first step
        (the round in progress, giving its version), or None."""
        return self._published if learner in self._joining else None

    def exchange(self, learner: int, version_read: int, t_start: float, samples: int) -> Generator:
        """Wait for the round to complete; return the version it produced."""
        row = self.recorder.gradient(learner, version_read, t_start, self.env.now, samples)
        return (yield from self.exchange_rows([row], learner))

    def exchange_rows(self, rows: list[int], learner: int) -> Generator:
        """One learner's recorded gradients into the round; wait for it to
        complete and return the version it produced."""
        self._rows.extend(rows)
        arrived = self._arrived
        arrived.add(learner)
        published = self._published
        if len(arrived) >= self._need:
            self._close()
        version = yield published
        return version

    def member_changed(self, learner: int, up: bool) -> None:
        """A learner that fails leaves the round (its gradient, if it pushed
        one, stays in it): the round may now be complete. The round's size
        is its learners, or as many as are up (and not waiting to join)."""
        if up and self.whole and self.membership.count > 1 + len(self._joining):
            self._joining.add(learner)     # others are in a round: it joins the next
        elif not up:
            self._joining.discard(learner)
        self._count_need()
        if not up:
            self._arrived.discard(learner)
            if self._rows and len(self._arrived) >= self._need:
                self._close()
            elif self._joining and self._need == 0:
                # the round's last learner failed: nobody is left to close
                # it, so those waiting to join start now, on the weights as
                # they are
                published, self._published = self._published, self.env.event()
                self._joining = set()
                self._count_need()
                published.succeed(self.weights.version)

    def _count_need(self) -> None:
        if self.membership is not None:
            self._need = min(self.learners, self.membership.count - len(self._joining))

    def _close(self) -> None:
        published = self._published
        self._arrived = set()
        if self._joining:
            self._joining = set()
            self._count_need()
        rows, self._rows, self._published = self._rows, [], self.env.event()
        if self.update_s:
            self.env.process(self._update(rows, published))
        else:
            published.succeed(self.weights.apply(rows))

    @property
    def busy_s(self) -> float:
        return self.cpu.busy_s

    def _update(self, rows: list[int], published: simpy.Event) -> Generator:
        yield from self.cpu.transfer(self.update_s)
        published.succeed(self.weights.apply(rows))


class ServerLearner:
    """One GPU of a parameter-server cluster: compute, push, wait for the reply.

    ``before``, ``after`` and ``reply`` are its loop's stages (structure.py)
    resolved to links: reading and copying the sub-batch; copying the
    gradient out and pushing it through its node's port and the server's;
    pulling the weights back and copying them to the GPU. The other
    learners of a server (local SGD's, Downpour's) hold the same and loop
    their own way."""

    def __init__(self, env: simpy.Environment, index: int, server: AsyncServer | SyncServer,
                 before: Sequence[Hold], after: Sequence[Hold], reply: Sequence[Hold],
                 compute: Iterator[float], sub_batch: int):
        self.env, self.index, self.server = env, index, server
        self.before, self.after, self.reply = before, after, reply
        self.compute, self.sub_batch = compute, sub_batch
        self.busy_s = 0.0
        #: the version its loop starts from (the newest, after a failure)
        self.start_version = 0
        #: gradients it holds that no server has: lost if it fails
        self.unsent = 0
        self.process = env.process(self.run())

    #: ``ssp``'s clock (family.StalenessClock): each step waits for its leave
    clock = None
    #: the part of each step at whose end its after-stages may have started
    overlap_share = 0.0

    def run(self) -> Generator:
        env, server, before, after, reply = self.env, self.server, self.before, self.after, self.reply
        next_compute, index, sub_batch, clock = self.compute.__next__, self.index, self.sub_batch, self.clock
        timeout, share = env.timeout, self.overlap_share
        version = self.start_version
        admission = getattr(server, "admission", None)
        if admission is not None and (joined := admission(index)) is not None:
            version = yield joined
        t_start = env.now
        steps = clock.pushed[index] if clock is not None else 0
        while True:
            if clock is not None:
                held = clock.may_start(steps)
                if held is not None:
                    yield held
                steps += 1
            self.unsent = 1
            if before:
                yield from run_stages(env, before)
            step = next_compute()
            if share and after:
                lead = step * share
                # the gradient's way out beside the backward pass (sync's
                # ``overlap: backward``): the step is done when both are
                yield timeout(step - lead)
                pushing = env.process(run_stages(env, after))
                try:
                    yield timeout(lead)
                    self.busy_s += step
                    yield pushing
                except simpy.Interrupt:
                    # a failure: the gradient on its way is lost with the step
                    if pushing.is_alive:
                        pushing.interrupt("failure")
                        _defuse_interrupt(pushing)
                    raise
            else:
                yield timeout(step)
                self.busy_s += step
                if after:
                    yield from run_stages(env, after)
            self.unsent = 0
            if clock is not None:
                clock.push(index)
            if server.instant:   # no event to wait for: skip the generator
                version = server.apply(index, version, t_start, sub_batch)
            else:
                version = yield from server.exchange(index, version, t_start, sub_batch)
            if reply:
                yield from run_stages(env, reply)
            t_start = env.now


class LocalLearner(ServerLearner):
    """A learner of ``local-sgd``: ``period`` steps on its own copy (each
    reading and copying its sub-batch), then its part of the round that
    averages every learner's weights, through ``server`` (a collective or
    the parameter server)."""

    def __init__(self, *args, period: int):
        self.period = period
        super().__init__(*args)

    def run(self) -> Generator:
        env, server, recorder = self.env, self.server, self.server.recorder
        version = self.start_version
        if (joined := server.admission(self.index)) is not None:
            version = yield joined
        while True:
            rows = []
            for local_step in range(self.period):
                t_start = env.now
                self.unsent = local_step + 1
                if self.before:
                    yield from run_stages(env, self.before)
                step = next(self.compute)
                yield env.timeout(step)
                self.busy_s += step
                rows.append(recorder.local_gradient(self.index, version, t_start, env.now,
                                                    self.sub_batch, local_step))
            if self.after:
                yield from run_stages(env, self.after)
            self.unsent = 0
            version = yield from server.exchange_rows(rows, self.index)
            if self.reply:
                yield from run_stages(env, self.reply)


class DownpourLearner(ServerLearner):
    """A learner of ``downpour``: ``n_push`` steps per pushed message (each
    gradient keeps the version it read), the weights fetched after every
    ``n_fetch`` steps. ``after`` runs before each push, ``reply`` after each
    fetch; a push does not wait for its update, a fetch waits for the
    updates queued before it."""

    def __init__(self, *args, n_fetch: int, n_push: int):
        self.n_fetch, self.n_push = n_fetch, n_push
        super().__init__(*args)

    def run(self) -> Generator:
        env, server, recorder = self.env, self.server, self.server.recorder
        before, after, reply = self.before, self.after, self.reply
        n_fetch, n_push, index, sub_batch = self.n_fetch, self.n_push, self.index, self.sub_batch
        next_compute, timeout, gradient = self.compute.__next__, env.timeout, recorder.gradient
        version, step, busy = self.start_version, 0, self.busy_s
        unpushed: list[tuple[int, float]] = []    # (version read, step start) of each gradient
        while True:
            unpushed.append((version, env.now))
            self.unsent = len(unpushed)
            if before:
                yield from run_stages(env, before)
            duration = next_compute()
            yield timeout(duration)
            self.busy_s = busy = busy + duration
            step += 1
            if step % n_push == 0:
                if after:
                    yield from run_stages(env, after)
                now = env.now
                server.push([gradient(index, read, t_start, now, sub_batch)
                             for read, t_start in unpushed])
                unpushed = []
                self.unsent = 0
            if step % n_fetch == 0:
                wait = server.fetch_wait_s()
                if wait > 0:
                    yield env.timeout(wait)
                version = server.weights.version
                if reply:
                    yield from run_stages(env, reply)
