"""A parameter server on a node of its own: each learner pushes its
gradient and takes the reply's weights. ``async`` applies each gradient on
arrival (GPU A-SGD); ``sync`` waits for every learner and applies their sum
as one update (BSP). Two of TensorFlow's ways are sync's keys: ``overlap:
backward`` sends the gradient while the backward pass computes it, and
``split`` places whole tensors on the shards (round-robin or greedy) rather
than even parts.

In a fat tree (``cluster.topology``) the server's node, or shard s's, is
numbered after the learners' nodes: node ``nodes + s``, under leaf
``(nodes + s) // nodes_per_switch`` (a colocated shard sits on its host
node, under that node's leaf); see structure.Topology.server_node."""

from __future__ import annotations

from typing import Literal

import numpy as np

from ..specs import Parts, _Spec
from ..structure import Loop, stages
from .kind import Kind


class AsyncSpec(_Spec):
    kind: Literal["async"]


class Shards(_Spec):
    """Where the server's weights live: split over ``servers`` shards (sync
    may split them as whole tensors: its ``split``), on nodes of their own
    or on the learners' nodes."""

    servers: Parts = 1
    placement: Literal["dedicated", "colocated"] = "dedicated"


class SyncSpec(Shards):
    kind: Literal["sync"]
    #: backward: each learner's gradient leaves for the server as the
    #: backward pass starts and goes while it computes, as TensorFlow's
    #: dataflow sends each variable's gradient once it has it (none: after)
    overlap: Literal["none", "backward"] = "none"
    #: how the weights are split over the shards: evenly, or as whole
    #: tensors (each layer's), dealt in turn (round-robin: TensorFlow's
    #: replica_device_setter) or each to the least loaded shard (greedy)
    split: Literal["even", "round-robin", "greedy"] = "even"


def overlap_shares(scenario) -> np.ndarray | None:
    """Each learner's part of its step that its gradient's way to the server
    runs beside: the backward pass's share of a step on its GPU (None
    without ``overlap: backward``). The last layers' gradients (the
    network's first layers, a sliver of its weights) are taken to leave with
    the rest."""
    cluster = scenario.cluster
    # (allreduce's ``overlap`` is its collective's, in its aggregate_s)
    if scenario.algorithm.kind != "sync" or scenario.algorithm.overlap != "backward":
        return None
    from .allreduce import backward_share
    if not cluster.groups:
        return np.full(cluster.learners, backward_share(scenario))
    return np.repeat([backward_share(scenario, group.gpu) for group in cluster.groups],
                     cluster.group_learners)


def message_part_s(scenario, c) -> float:
    """One shard's part of a gradient or weights message over the network."""
    from ..costs import transfer_time

    servers = getattr(scenario.algorithm, "servers", 1)
    if servers == 1 or c.network_s == 0:
        return c.network_s
    return transfer_time(scenario.cluster.network, c.weights_bytes / servers)


def loop(scenario, c) -> Loop:
    """Push the gradient, take the reply's weights: a message part to and
    from each shard, one after another through the node's port."""
    part_s, servers = message_part_s(scenario, c), getattr(scenario.algorithm, "servers", 1)
    return Loop(
        before=stages(("batch_read", ("disk",), c.batch_read_s),
                      ("batch_to_gpu", ("host_link",), c.batch_to_gpu_s)),
        after=stages(("gradient_to_host", ("host_link",), c.gradient_to_host_s),
                     *(("push", ("server_port_in", "port_out"), part_s, part)
                       for part in range(servers))),
        reply=stages(*(("pull", ("server_port_out", "port_in"), part_s, part)
                       for part in range(servers)),
                     ("weights_to_gpu", ("host_link",), c.weights_to_gpu_s)))


def wire(env, scenario, costs, seed, name: str, server, learner):
    """A cluster of one server-like component (a server, a round, a
    collective), kept under ``name``, and one learner per GPU:
    ``learner(env, index, server, before, after, reply, compute, sub_batch)``
    on its stages resolved to its node's links."""
    from ..cluster import Cluster, computes
    from ..structure import loops_of, topology_of

    # each learner its block's loop (a mixed cluster's group's durations)
    topology, loops = topology_of(scenario), loops_of(scenario, costs)
    cluster = Cluster.of(topology)
    cluster.servers = {name: [server]}
    for index, compute in computes(scenario, costs, seed):
        stages_ = loops[topology.block_of(index)]
        holds = (cluster.resolve(env, topology, part, index)
                 for part in (stages_.before, stages_.after, stages_.reply))
        cluster.learners.append(learner(env, index, server, *holds, compute,
                                        scenario.workload.sub_batch))
    return cluster


def build_with(server_of, name: str = "server"):
    """The builder of learners that push and wait for the reply of one
    server-like round (``server_of(env, weights, recorder, costs, learners)``)."""
    def build(env, scenario, costs, weights, recorder, seed):
        from ..components.server import ServerLearner

        server = server_of(env, weights, recorder, costs, scenario.cluster.learners)
        cluster = wire(env, scenario, costs, seed, name, server, ServerLearner)
        shares = overlap_shares(scenario)
        if shares is not None:
            for learner, share in zip(cluster.learners, shares):
                learner.overlap_share = float(share)
        return cluster
    return build


def _async_server(env, weights, recorder, costs, learners):
    from ..components.server import AsyncServer
    return AsyncServer(env, weights, recorder, costs.server_update_s)


def _sync_server(env, weights, recorder, costs, learners):
    from ..components.server import SyncServer
    return SyncServer(env, weights, recorder, costs.server_update_s, learners, whole=True)


def predict_async(scenario, costs):
    from ..analytic import predict_async as closed_form
    return closed_form(scenario, costs)


def predict_sync(scenario, costs):
    from ..analytic import predict_rounds
    return predict_rounds(scenario, costs, costs.server_update_s)


ASYNC = Kind(AsyncSpec, loop, build_with(_async_server), predict_async,
             draw=lambda rng, ideal, learners: ({}, {}, lambda learners: 1))
def busy_port(loop_, topology, per_update_s: float, pulls: float, pushes: float) -> str | None:
    """Outside the closed form once either direction of the server's port is
    a quarter busy with an update's ``pulls`` and ``pushes``: the kinds that
    use this leave the queueing of a batch's messages out."""
    from ..analytic import OUTSIDE

    def busy(port: str, messages: float) -> float:
        # (a message across a fat tree's leaves at their links' pace where slower)
        return messages * topology.message_s(loop_, port) / per_update_s
    most = max(busy("server_port_out", pulls), busy("server_port_in", pushes))
    if most < 0.25:
        return None
    return (f"{OUTSIDE}: the server's port is {most:.0%} busy with an update's messages, "
            "whose queueing is left out")


def draw_shards(rng) -> dict:
    """Where a random scenario's server lives: mostly one shard, as users write."""
    servers = int(rng.choice([1, 1, 1, 2, 4]))
    return {} if servers == 1 else {"servers": servers,
                                    "placement": str(rng.choice(["dedicated", "colocated"]))}


SYNC = Kind(SyncSpec, loop, build_with(_sync_server), predict_sync,
            draw=lambda rng, ideal, learners: (draw_shards(rng), {}, lambda learners: learners))
