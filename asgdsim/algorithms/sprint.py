"""``sprint`` (Oyama et al.): each GPU adds its gradient to its node's
accumulator; each node's update thread swaps it, Allreduces it across nodes
and applies it once per pipelined cycle."""

from __future__ import annotations

from typing import Literal

import numpy as np

from ..specs import _Spec
from ..structure import Loop, stages
from .kind import Kind


class Spec(_Spec):
    kind: Literal["sprint"]
    #: how the update threads sum their gradients across nodes
    allreduce: Literal["ring", "tree"] = "ring"


def loop(scenario, c) -> Loop:
    return Loop(
        before=stages(("weights_to_gpu", ("host_link",), c.weights_to_gpu_s),
                      ("batch_read", ("disk",), c.batch_read_s),
                      ("batch_to_gpu", ("host_link",), c.batch_to_gpu_s)),
        after=stages(("gradient_to_host", ("host_link",), c.gradient_to_host_s),
                     ("accumulate", ("accumulator",), c.accumulate_s)))


def build(env, scenario, costs, weights, recorder, seed):
    from ..cluster import Cluster, computes
    from ..components.sprint import Allreduce, SprintLearner, SprintNode
    from ..structure import loops_of, topology_of

    topology, loops = topology_of(scenario), loops_of(scenario, costs)
    cluster = Cluster.of(topology)
    allreduce = Allreduce(env, topology.nodes, costs.allreduce_s)
    # a node's update thread runs at its own CPU's pace (its group's, in a mixed cluster)
    update_s = [(costs.group_costs[topology.block_of_node(n)] if costs.group_costs
                 else costs).node_update_s for n in range(topology.nodes)]
    nodes = [SprintNode(env, allreduce, weights, update_s[n], n) for n in range(topology.nodes)]
    for index, compute in computes(scenario, costs, seed):
        stages_ = loops[topology.block_of(index)]
        cluster.learners.append(SprintLearner(
            env, index, nodes[topology.node_of(index)],
            cluster.resolve(env, topology, stages_.before, index),
            cluster.resolve(env, topology, stages_.after, index),
            compute, recorder, scenario.workload.sub_batch))
    cluster.servers = {"allreduce": [allreduce], "node_update": nodes}
    return cluster


def predict(scenario, costs):
    from ..analytic import predict_sprint
    return predict_sprint(scenario, costs)


def draw(rng, ideal: bool, learners: int):
    """A fixed cycle where communication is ideal (it needs one), sometimes otherwise."""
    timing = {}
    if ideal or rng.random() < 0.15:
        timing["update_interval"] = f"{float(np.exp(rng.uniform(np.log(2), np.log(3000)))):.4g} ms"
    return {}, timing, lambda learners: max(learners // 4, 1)


KIND = Kind(Spec, loop, build, predict, draw=draw)
