"""Wiring: the only place that knows the cluster's topology.

``build_cluster`` creates the links, nodes, servers and learners of a
scenario and connects them; each algorithm has its own builder in the
``BUILDERS`` registry. Every learner gets its own random stream, spawned from
the scenario seed by its index, so adding a GPU does not change the draws of
the others.

Topology: ``nodes`` nodes of ``gpus_per_node`` GPUs. Within a node, every
``gpus_per_host_link`` GPUs share one host link (PCIe), and all share the
node's disk. With a parameter server, the server sits on a node of its own;
each node has one network port per direction. With ``communication: ideal``
no links exist at all.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import simpy

from .components.link import Link
from .components.server import AsyncServer, ServerLearner, ServerPorts, SyncServer
from .components.sprint import Allreduce, SprintLearner, SprintNode
from .components.weights import Weights
from .costs import Costs
from .recorder import Recorder
from .scenario import Scenario

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
    links: list[Link] = field(default_factory=list)
    #: things with a ``busy_s`` that serve the learners: update threads, servers
    servers: dict[str, list] = field(default_factory=dict)
    node_of_learner: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))

    def utilisation(self, elapsed_s: float) -> dict[str, float]:
        """Mean busy fraction of each kind of component over ``elapsed_s``."""
        def mean_busy(items: list) -> float:
            return float(np.mean([i.busy_s for i in items]) / elapsed_s) if items and elapsed_s else 0.0
        kinds: dict[str, list] = {"gpu": self.learners}
        for link in self.links:
            kinds.setdefault(link.name.split("[")[0], []).append(link)
        out = {kind: mean_busy(items) for kind, items in kinds.items()}
        out.update({kind: mean_busy(items) for kind, items in self.servers.items()})
        return out


Builder = Callable[[simpy.Environment, Scenario, Costs, Weights, Recorder, int], Cluster]


def _host_links(env: simpy.Environment, scenario: Scenario, node: int) -> list[Link]:
    c = scenario.cluster
    count = -(-c.gpus_per_node // c.gpus_per_host_link)
    return [Link(env, f"host_link[{node}.{i}]") for i in range(count)]


def _modelled(scenario: Scenario) -> bool:
    return scenario.timing.communication == "modelled"


def _node_gpus(scenario: Scenario, costs: Costs, node: int, host_links: list[Link] | None,
               seed: int):
    """(index, host link, compute stream) of each GPU of a node."""
    c = scenario.cluster
    for g in range(c.gpus_per_node):
        index = node * c.gpus_per_node + g
        link = host_links[g // c.gpus_per_host_link] if host_links else None
        yield index, link, costs.compute.sampler(learner_stream(seed, index))


def build_sprint(env: simpy.Environment, scenario: Scenario, costs: Costs, weights: Weights,
                 recorder: Recorder, seed: int) -> Cluster:
    c, sub_batch = scenario.cluster, scenario.workload.sub_batch
    cluster = Cluster(node_of_learner=np.repeat(np.arange(c.nodes), c.gpus_per_node))
    allreduce = Allreduce(env, c.nodes, costs.allreduce_s)
    nodes = []
    for n in range(c.nodes):
        disk = adder = host_links = None
        if _modelled(scenario):
            disk, host_links = Link(env, f"disk[{n}]"), _host_links(env, scenario, n)
            adder = Link(env, f"accumulator[{n}]")
            cluster.links += [disk, adder, *host_links]
        node = SprintNode(env, allreduce, weights, costs, disk, adder)
        nodes.append(node)
        for index, link, compute in _node_gpus(scenario, costs, n, host_links, seed):
            cluster.learners.append(
                SprintLearner(env, index, node, link, costs, compute, recorder, sub_batch))
    cluster.servers = {"allreduce": [allreduce], "node_update": nodes}
    return cluster


def _build_with_server(server_of: Callable[..., AsyncServer | SyncServer]) -> Builder:
    def build(env: simpy.Environment, scenario: Scenario, costs: Costs, weights: Weights,
              recorder: Recorder, seed: int) -> Cluster:
        c, sub_batch = scenario.cluster, scenario.workload.sub_batch
        cluster = Cluster(node_of_learner=np.repeat(np.arange(c.nodes), c.gpus_per_node))
        server = server_of(env, weights, recorder, costs.server_update_s, c.learners)
        cluster.servers = {"server": [server]}
        if _modelled(scenario):
            server_in, server_out = Link(env, "server_port_in"), Link(env, "server_port_out")
            cluster.links += [server_in, server_out]
        for n in range(c.nodes):
            disk = host_links = ports = None
            if _modelled(scenario):
                disk, host_links = Link(env, f"disk[{n}]"), _host_links(env, scenario, n)
                port_out, port_in = Link(env, f"port_out[{n}]"), Link(env, f"port_in[{n}]")
                ports = ServerPorts(push=[port_out, server_in], pull=[server_out, port_in])
                cluster.links += [disk, *host_links, port_out, port_in]
            for index, link, compute in _node_gpus(scenario, costs, n, host_links, seed):
                cluster.learners.append(ServerLearner(env, index, server, link, disk, ports,
                                                      costs, compute, sub_batch))
        return cluster
    return build


#: algorithm kind -> builder
BUILDERS: dict[str, Builder] = {
    "sprint": build_sprint,
    "async": _build_with_server(lambda env, w, r, update_s, learners: AsyncServer(env, w, r, update_s)),
    "sync": _build_with_server(SyncServer),
}


def build_cluster(env: simpy.Environment, scenario: Scenario, costs: Costs, weights: Weights,
                  recorder: Recorder, seed: int) -> Cluster:
    return BUILDERS[scenario.algorithm.kind](env, scenario, costs, weights, recorder, seed)
