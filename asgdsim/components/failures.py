"""Learners and nodes that fail and come back (``faults.failures``).

Each failure unit (a learner, or a node with its learners) is up for an
exponential time of mean ``mtbf``, drawn from the unit's own random stream
(so a scenario and seed fail alike on any machine), then down for
``repair``. Failing interrupts its learners' processes: what a learner holds
that no server has yet (the step in progress; Downpour's unpushed
gradients; local SGD's local ones) is lost, counted, never applied. After
the repair each learner starts its loop again on the newest weights; where
rounds are of every learner up (sync, allreduce, local SGD) it joins at the
next round, on that round's weights.

What the learners share learns of it through :class:`Membership`, and
adapts in one method, ``member_changed(learner, up)``: rounds close with
the learners that are up (``sync``, ``allreduce``, local SGD's averaging,
and K of them where fewer than K are up: ``k-sync``, ``k-async``), SSP's
bound ignores the learners that are down, and SPRINT's Allreduce waits
for the nodes that are up (a node's update thread fails with its node).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence

import numpy as np
import simpy

__all__ = ["Membership", "Failures", "FAILURE_STREAMS", "Stalled"]

#: first element of the spawn key of the failure units' random streams
FAILURE_STREAMS = 1


class Membership:
    """Which learners are up, and who must hear when that changes."""

    def __init__(self, learners: int):
        self.up = [True] * learners
        self.count = learners
        self._listeners: list[Callable[[int, bool], None]] = []

    def listen(self, callback: Callable[[int, bool], None]) -> None:
        self._listeners.append(callback)

    def set(self, learner: int, up: bool) -> None:
        if self.up[learner] == up:
            return
        self.up[learner] = up
        self.count += 1 if up else -1
        for callback in self._listeners:
            callback(learner, up)


class Stalled(RuntimeError):
    """A cluster with failures that stopped applying gradients."""


def _defuse_interrupt(process: simpy.Process) -> None:
    """A learner's process ends by the interrupt of its failure: not an error."""
    def defuse(event: simpy.Event) -> None:
        if not event.ok and isinstance(event.value, simpy.Interrupt):
            event.defused = True
    process.callbacks.append(defuse)


class Failures:
    """Fails and repairs the cluster's units; counts what is lost."""

    def __init__(self, env: simpy.Environment, spec, cluster, weights, seed: int,
                 units: Sequence[Sequence[int]], node_threads: Sequence | None,
                 patience_s: float):
        self.env, self.spec, self.cluster, self.weights = env, spec, cluster, weights
        self.membership = Membership(len(cluster.learners))
        self.failures = 0
        self.lost_gradients = 0
        self.lost_samples = 0
        self._down_since: dict[int, float] = {}
        self._outages: list[tuple[int, float, float]] = []     # (learner, down, up)
        for learner in cluster.learners:
            _defuse_interrupt(learner.process)
        for part in [*(p for parts in cluster.servers.values() for p in parts), *cluster.shared]:
            if hasattr(part, "member_changed"):
                part.membership = self.membership
                self.membership.listen(part.member_changed)
        for unit, members in enumerate(units):
            rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(FAILURE_STREAMS, unit)))
            thread = node_threads[unit] if node_threads is not None else None
            env.process(self._unit(rng, members, thread))
        env.process(self._watch(patience_s))

    def _watch(self, patience_s: float) -> Generator:
        """Failure processes never end, so a cluster that could no longer
        apply anything would run on forever: stop it with a clear error
        once ``patience_s`` pass with learners up and nothing applied."""
        env, weights = self.env, self.weights
        while True:
            applied = weights.gradients_applied
            yield env.timeout(patience_s)
            if weights.gradients_applied == applied and self.membership.count:
                raise Stalled(f"no gradient applied in {patience_s:.3g} s of simulated time "
                              f"(at {env.now:.3g} s) with {self.membership.count} learners up: "
                              "the cluster is stuck")

    def outages(self, now: float):
        """Each time a learner was down: a DataFrame (learner, down_s, up_s),
        up_s NaN for those still down at ``now``."""
        import pandas as pd

        rows = self._outages + [(i, since, float("nan")) for i, since in self._down_since.items()]
        return pd.DataFrame(rows, columns=["learner", "down_s", "up_s"])

    def downtime_s(self, now: float) -> float:
        """GPU-seconds down so far (the learners still down counted until ``now``)."""
        return (sum(up - down for _, down, up in self._outages)
                + sum(now - since for since in self._down_since.values()))

    def _unit(self, rng: np.random.Generator, members: Sequence[int], thread) -> Generator:
        env, mtbf, repair = self.env, self.spec.mtbf, self.spec.repair
        while True:
            yield env.timeout(float(rng.exponential(mtbf)))
            self.failures += 1
            if thread is not None:
                _defuse_interrupt(thread.process)
                self._lose(thread.fail(), self.cluster.learners[members[0]].sub_batch)
            for index in members:
                self._fail(index)
            yield env.timeout(repair)
            if thread is not None:
                thread.rejoin()
            for index in members:
                self._rejoin(index)

    def _lose(self, gradients: int, sub_batch: int) -> None:
        self.lost_gradients += gradients
        self.lost_samples += gradients * sub_batch

    def _fail(self, index: int) -> None:
        learner = self.cluster.learners[index]
        self._lose(learner.unsent, learner.sub_batch)
        learner.unsent = 0
        self._down_since[index] = self.env.now
        self.membership.set(index, False)
        if learner.process.is_alive:
            learner.process.interrupt("failure")

    def _rejoin(self, index: int) -> None:
        learner = self.cluster.learners[index]
        self._outages.append((index, self._down_since.pop(index), self.env.now))
        learner.start_version = self.weights.version
        self.membership.set(index, True)
        learner.process = self.env.process(learner.run())
        _defuse_interrupt(learner.process)
