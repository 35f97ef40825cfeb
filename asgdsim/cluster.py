"""Wiring: what every algorithm's components are wired with.

``build_cluster`` hands the scenario to its algorithm (:mod:`asgdsim.algorithms`),
whose builder connects learners, nodes and servers. They share
:class:`Cluster`, which creates one FIFO :class:`Link` per resource instance
a stage of the learner's loop holds (:mod:`asgdsim.structure`) and reports
utilisation, and the learners' random streams: every learner gets its own,
spawned from the scenario seed by its index, so adding a GPU does not change
the draws of the others.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import simpy

from .components.link import Hold, Link, Path, StageSeconds

if TYPE_CHECKING:
    from .components.weights import Weights
    from .costs import Costs
    from .recorder import Recorder
    from .scenario import Scenario
    from .structure import Stage, Topology

__all__ = ["Cluster", "build_cluster", "computes", "learner_stream"]

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
    #: other components the learners share that must hear of failures (ssp's clock)
    shared: list = field(default_factory=list)
    node_of_learner: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))

    @classmethod
    def of(cls, topology: Topology) -> Cluster:
        """An empty cluster of the topology's nodes, its learners placed node by node."""
        if topology.blocks:
            return cls(node_of_learner=np.array(topology.node_of_learners()))
        return cls(node_of_learner=np.repeat(np.arange(topology.nodes), topology.learners_per_node))

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
        """A learner's stages with the links of its node (created on first use);
        a stage that stays inside the node (a colocated shard's part) is dropped.
        A stage across a fat tree's leaves holds one :class:`Path`: its ports,
        and the leaves' links it crosses at their share of the port's time."""
        from .structure import is_fabric

        def link(name: str) -> Link:
            if name not in self.links:
                self.links[name] = Link(env, name)
            return self.links[name]

        def hold(names: tuple[str, ...]) -> tuple:
            if not is_fabric(names[-1]):
                return tuple(link(name) for name in names)
            ports = [link(n) for n in names if not is_fabric(n)]
            fabric = [link(n) for n in names if is_fabric(n)]
            return (Path(env, ports, fabric, topology.fabric_share),)
        resolved = ((topology.holds(stage, learner),
                     StageSeconds(topology.duration_s(stage, learner), stage.name))
                    for stage in stages)
        return tuple((hold(names), duration) for names, duration in resolved if names is not None)


def computes(scenario: Scenario, costs: Costs, seed: int) -> Iterator[tuple[int, Iterator[float]]]:
    """(index, compute-time stream) of every learner, each from its own law
    (costs.learner_laws: its group's, scaled where it is persistently slow)."""
    from .costs import learner_laws

    for index, law in enumerate(learner_laws(scenario, costs)):
        yield index, law.sampler(learner_stream(seed, index))


def build_cluster(env: simpy.Environment, scenario: Scenario, costs: Costs, weights: Weights,
                  recorder: Recorder, seed: int) -> Cluster:
    """The scenario's components, wired by its algorithm (asgdsim.algorithms)."""
    from .algorithms import KINDS

    return KINDS[scenario.algorithm.kind].build(env, scenario, costs, weights, recorder, seed)
