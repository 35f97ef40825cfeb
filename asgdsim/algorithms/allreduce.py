"""``allreduce``: synchronous data parallelism with a collective and no
server (Horovod, NCCL, PyTorch DDP). Each round every learner reads its
sub-batch and computes; after the slowest, the collective sums the
gradients and every GPU applies the same update to its copy."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ..specs import _Spec
from ..structure import Loop, stages
from .kind import Kind
from .server import build_with


class Spec(_Spec):
    kind: Literal["allreduce"]
    #: ring or tree over all learners (the slowest link sets the pace), or
    #: hierarchical: inside each node over its GPU link, then across nodes
    collective: Literal["ring", "tree", "hierarchical"] = "hierarchical"
    #: the fraction of the collective hidden behind the backward pass
    overlap: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] = 0.0


def loop(scenario, c) -> Loop:
    """The gradient and the weights stay on the GPU: the collective moves them."""
    return Loop(before=stages(("batch_read", ("disk",), c.batch_read_s),
                              ("batch_to_gpu", ("host_link",), c.batch_to_gpu_s)),
                after=())


def aggregate_s(scenario, weights: float) -> float:
    """After the slowest learner: the collective's exposed part, then every
    GPU's momentum update of its copy (read w, g, m; write m, w). GPUs of a
    node exchange over their ``gpu_link`` (NVLink), or through their host
    links where they have none."""
    from ..compute import MEMORY_EFFICIENCY
    from ..costs import ALLREDUCE, hierarchical_allreduce_time

    algorithm, cluster = scenario.algorithm, scenario.cluster
    inside = cluster.gpu_link or cluster.host_link
    if algorithm.collective == "hierarchical":
        collective = hierarchical_allreduce_time(inside, cluster.node_network, weights,
                                                 cluster.gpus_per_node, cluster.nodes)
    else:
        slowest = cluster.node_network if cluster.nodes > 1 else inside
        collective = ALLREDUCE[algorithm.collective](slowest, weights, cluster.learners)
    update = 5 * weights / (cluster.gpu.memory_bandwidth * MEMORY_EFFICIENCY)
    return (1 - algorithm.overlap) * collective + update


def _collective(env, weights, recorder, costs, learners):
    # a round of all learners, then the collective: a barrier without a server
    from ..components.server import SyncServer
    return SyncServer(env, weights, recorder, costs.collective_s, learners)


def predict(scenario, costs):
    from ..analytic import predict_rounds
    return predict_rounds(scenario, costs, costs.collective_s)


def draw(rng, ideal: bool):
    keys = {"collective": str(rng.choice(["ring", "tree", "hierarchical"])),
            "overlap": float(rng.choice([0.0, 0.0, 0.5, 0.9]))}
    return keys, {}, lambda learners: learners


KIND = Kind(Spec, loop, build_with(_collective, "collective"), predict, aggregate_s, draw)
