"""Wiring: the only place that turns the cluster's structure into components.

``build_cluster`` takes the learner's loop and the topology of
:mod:`asgdsim.structure`, creates one FIFO :class:`Link` per resource
instance a stage holds, and connects learners, nodes and servers; each
algorithm has its own builder in the ``BUILDERS`` registry. Every learner
gets its own random stream, spawned from the scenario seed by its index, so
adding a GPU does not change the draws of the others.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
import simpy

from .components.link import Hold, Link
from .components.server import AsyncServer, LocalLearner, ServerLearner, SyncServer
from .components.sprint import Allreduce, SprintLearner, SprintNode
from .components.weights import Weights
from .costs import Costs
from .recorder import Recorder
from .scenario import Scenario
from .structure import Stage, Topology, loop_of, topology_of

__all__ = ["Cluster", "build_cluster", "BUILDERS", "learner_stream"]

#: first element of the spawn key of each component family's random streams
LEARNER_STREAMS = 0


def learner_stream(seed: int, learner: int) -> np.random.Generator:
    """The random stream of one learner: independent of how many there are."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(LEARNER_STREAMS, learner)))


@dataclass
class Cluster:
    """The built components, kept for utilisation figures after the run."""

    learners: list = field(default_factory=list)
    links: dict[str, Link] = field(default_factory=dict)
    #: things with a ``busy_s`` that serve the learners: update threads, servers
    servers: dict[str, list] = field(default_factory=dict)
    node_of_learner: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))

    def utilisation(self, elapsed_s: float) -> dict[str, float]:
        """Mean busy fraction of each kind of component over ``elapsed_s``."""
        def mean_busy(items: list) -> float:
            return float(np.mean([i.busy_s for i in items]) / elapsed_s) if items and elapsed_s else 0.0
        kinds: dict[str, list] = {"gpu": self.learners}
        for name, link in self.links.items():
            kinds.setdefault(name.split("[")[0], []).append(link)
        out = {kind: mean_busy(items) for kind, items in kinds.items()}
        out.update({kind: mean_busy(items) for kind, items in self.servers.items()})
        return out

    def resolve(self, env: simpy.Environment, topology: Topology, stages: tuple[Stage, ...],
                learner: int) -> tuple[Hold, ...]:
        """A learner's stages with the links of its node (created on first use)."""
        def link(kind: str) -> Link:
            name = topology.instance(kind, learner)
            if name not in self.links:
                self.links[name] = Link(env, name)
            return self.links[name]
        return tuple((tuple(link(kind) for kind in stage.holds), stage.duration_s)
                     for stage in stages)


Builder = Callable[[simpy.Environment, Scenario, Costs, Weights, Recorder, int], Cluster]


def _computes(scenario: Scenario, costs: Costs, seed: int) -> Iterator[tuple[int, Iterator[float]]]:
    """(index, compute-time stream) of every learner."""
    for index in range(scenario.cluster.learners):
        yield index, costs.compute.sampler(learner_stream(seed, index))


def build_sprint(env: simpy.Environment, scenario: Scenario, costs: Costs, weights: Weights,
                 recorder: Recorder, seed: int) -> Cluster:
    topology, loop = topology_of(scenario), loop_of(scenario, costs)
    cluster = Cluster(node_of_learner=np.repeat(np.arange(topology.nodes), topology.learners_per_node))
    allreduce = Allreduce(env, topology.nodes, costs.allreduce_s)
    nodes = [SprintNode(env, allreduce, weights, costs.node_update_s) for _ in range(topology.nodes)]
    for index, compute in _computes(scenario, costs, seed):
        cluster.learners.append(SprintLearner(
            env, index, nodes[topology.node_of(index)],
            cluster.resolve(env, topology, loop.before, index),
            cluster.resolve(env, topology, loop.after, index),
            compute, recorder, scenario.workload.sub_batch))
    cluster.servers = {"allreduce": [allreduce], "node_update": nodes}
    return cluster


def _build_with_server(server_of: Callable[..., AsyncServer | SyncServer],
                       name: str = "server") -> Builder:
    def build(env: simpy.Environment, scenario: Scenario, costs: Costs, weights: Weights,
              recorder: Recorder, seed: int) -> Cluster:
        topology, loop = topology_of(scenario), loop_of(scenario, costs)
        cluster = Cluster(node_of_learner=np.repeat(np.arange(topology.nodes),
                                                    topology.learners_per_node))
        server = server_of(env, weights, recorder, costs, topology.learners)
        cluster.servers = {name: [server]}
        for index, compute in _computes(scenario, costs, seed):
            cluster.learners.append(ServerLearner(
                env, index, server,
                cluster.resolve(env, topology, loop.before, index),
                cluster.resolve(env, topology, loop.after, index),
                cluster.resolve(env, topology, loop.reply, index),
                compute, scenario.workload.sub_batch))
        return cluster
    return build


def build_local_sgd(env: simpy.Environment, scenario: Scenario, costs: Costs, weights: Weights,
                    recorder: Recorder, seed: int) -> Cluster:
    """Learners that average their copies every ``period`` steps, in a round
    through the collective or the server."""
    topology, loop, algorithm = topology_of(scenario), loop_of(scenario, costs), scenario.algorithm
    cluster = Cluster(node_of_learner=np.repeat(np.arange(topology.nodes), topology.learners_per_node))
    by_collective = algorithm.average == "allreduce"
    rounds = SyncServer(env, weights, recorder,
                        costs.collective_s if by_collective else costs.server_update_s,
                        topology.learners)
    cluster.servers = {"collective" if by_collective else "server": [rounds]}
    for index, compute in _computes(scenario, costs, seed):
        cluster.learners.append(LocalLearner(
            env, index, rounds, algorithm.period,
            cluster.resolve(env, topology, loop.before, index),
            cluster.resolve(env, topology, loop.after, index),
            cluster.resolve(env, topology, loop.reply, index),
            compute, scenario.workload.sub_batch))
    return cluster


#: algorithm kind -> builder
BUILDERS: dict[str, Builder] = {
    "sprint": build_sprint,
    "async": _build_with_server(lambda env, w, r, costs, learners:
                                AsyncServer(env, w, r, costs.server_update_s)),
    "sync": _build_with_server(lambda env, w, r, costs, learners:
                               SyncServer(env, w, r, costs.server_update_s, learners)),
    # a round of all learners, then the collective: a barrier without a server
    "allreduce": _build_with_server(lambda env, w, r, costs, learners:
                                    SyncServer(env, w, r, costs.collective_s, learners), "collective"),
    "local-sgd": build_local_sgd,
}


def build_cluster(env: simpy.Environment, scenario: Scenario, costs: Costs, weights: Weights,
                  recorder: Recorder, seed: int) -> Cluster:
    return BUILDERS[scenario.algorithm.kind](env, scenario, costs, weights, recorder, seed)
