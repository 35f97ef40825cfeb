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
"""

from __future__ import annotations

from collections.abc import Generator, Iterator

import simpy

from ..costs import Costs
from ..recorder import Recorder
from .link import Link, transfer_over
from .weights import Weights

__all__ = ["AsyncServer", "SyncServer", "ServerLearner", "ServerPorts"]


class AsyncServer:
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


class SyncServer:
    def __init__(self, env: simpy.Environment, weights: Weights, recorder: Recorder,
                 update_s: float, learners: int):
        self.env, self.weights, self.recorder = env, weights, recorder
        self.update_s, self.learners = update_s, learners
        self.busy_s = 0.0
        self.instant = False    # a round always waits for every learner
        self._rows: list[int] = []
        self._published = env.event()

    def exchange(self, learner: int, version_read: int, t_start: float, samples: int) -> Generator:
        """Wait for the round to complete; return the version it produced."""
        self._rows.append(self.recorder.gradient(learner, version_read, t_start, self.env.now,
                                                 samples))
        published = self._published
        if len(self._rows) == self.learners:
            rows, self._rows, self._published = self._rows, [], self.env.event()
            if self.update_s:
                self.env.process(self._update(rows, published))
            else:
                published.succeed(self.weights.apply(rows))
        version = yield published
        return version

    def _update(self, rows: list[int], published: simpy.Event) -> Generator:
        yield self.env.timeout(self.update_s)
        self.busy_s += self.update_s
        published.succeed(self.weights.apply(rows))


class ServerPorts:
    """The network ports a learner's gradient (push) and weights (pull) cross."""

    __slots__ = ("push", "pull")

    def __init__(self, push: list[Link], pull: list[Link]):
        self.push, self.pull = push, pull


class ServerLearner:
    def __init__(self, env: simpy.Environment, index: int, server: AsyncServer | SyncServer,
                 host_link: Link | None, disk: Link | None, ports: ServerPorts | None,
                 costs: Costs, compute: Iterator[float], sub_batch: int):
        self.env, self.index, self.server = env, index, server
        self.host_link, self.disk, self.ports = host_link, disk, ports
        self.costs, self.compute, self.sub_batch = costs, compute, sub_batch
        self.busy_s = 0.0
        env.process(self.run())

    def run(self) -> Generator:
        env, server, link, costs = self.env, self.server, self.host_link, self.costs
        next_compute, index, sub_batch = self.compute.__next__, self.index, self.sub_batch
        timeout = env.timeout
        version, t_start = 0, env.now
        while True:
            if link is not None:
                yield from self.disk.transfer(costs.batch_read_s)
                yield from link.transfer(costs.batch_to_gpu_s)
            step = next_compute()
            yield timeout(step)
            self.busy_s += step
            if link is not None:
                yield from link.transfer(costs.gradient_to_host_s)
                yield from transfer_over(env, self.ports.push, costs.network_s)
            if server.instant:   # no event to wait for: skip the generator
                version = server.apply(index, version, t_start, sub_batch)
            else:
                version = yield from server.exchange(index, version, t_start, sub_batch)
            if link is not None:
                yield from transfer_over(env, self.ports.pull, costs.network_s)
                yield from link.transfer(costs.weights_to_gpu_s)
            t_start = env.now
