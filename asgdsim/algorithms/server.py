"""A parameter server on a node of its own: each learner pushes its
gradient and takes the reply's weights. ``async`` applies each gradient on
arrival (GPU A-SGD); ``sync`` waits for every learner and applies their sum
as one update (BSP)."""

from __future__ import annotations

from typing import Literal

from ..specs import _Spec
from ..structure import Loop, stages
from .kind import Kind


class AsyncSpec(_Spec):
    kind: Literal["async"]


class SyncSpec(_Spec):
    kind: Literal["sync"]


def loop(scenario, c) -> Loop:
    """Push the gradient, take the reply's weights."""
    return Loop(
        before=stages(("batch_read", ("disk",), c.batch_read_s),
                      ("batch_to_gpu", ("host_link",), c.batch_to_gpu_s)),
        after=stages(("gradient_to_host", ("host_link",), c.gradient_to_host_s),
                     ("push", ("server_port_in", "port_out"), c.network_s)),
        reply=stages(("pull", ("server_port_out", "port_in"), c.network_s),
                     ("weights_to_gpu", ("host_link",), c.weights_to_gpu_s)))


def build_with(server_of, name: str = "server"):
    """The builder of learners that exchange with one server-like round
    (``server_of(env, weights, recorder, costs, learners)``)."""
    def build(env, scenario, costs, weights, recorder, seed):
        from ..cluster import Cluster, computes
        from ..components.server import ServerLearner
        from ..structure import loop_of, topology_of

        topology, stages_ = topology_of(scenario), loop_of(scenario, costs)
        cluster = Cluster.of(topology)
        server = server_of(env, weights, recorder, costs, topology.learners)
        cluster.servers = {name: [server]}
        for index, compute in computes(scenario, costs, seed):
            cluster.learners.append(ServerLearner(
                env, index, server,
                cluster.resolve(env, topology, stages_.before, index),
                cluster.resolve(env, topology, stages_.after, index),
                cluster.resolve(env, topology, stages_.reply, index),
                compute, scenario.workload.sub_batch))
        return cluster
    return build


def _async_server(env, weights, recorder, costs, learners):
    from ..components.server import AsyncServer
    return AsyncServer(env, weights, recorder, costs.server_update_s)


def _sync_server(env, weights, recorder, costs, learners):
    from ..components.server import SyncServer
    return SyncServer(env, weights, recorder, costs.server_update_s, learners)


def predict_async(scenario, costs):
    from ..analytic import predict_async as closed_form
    return closed_form(scenario, costs)


def predict_sync(scenario, costs):
    from ..analytic import predict_rounds
    return predict_rounds(scenario, costs, costs.server_update_s)


ASYNC = Kind(AsyncSpec, loop, build_with(_async_server), predict_async,
             draw=lambda rng, ideal: ({}, {}, lambda learners: 1))
SYNC = Kind(SyncSpec, loop, build_with(_sync_server), predict_sync,
            draw=lambda rng, ideal: ({}, {}, lambda learners: learners))
