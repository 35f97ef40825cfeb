"""``allreduce``: synchronous data parallelism with a collective and no
server (Horovod, NCCL, PyTorch DDP). Each round every learner reads its
sub-batch and computes; after the slowest, the collective sums the
gradients and every GPU applies the same update to its copy."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ..specs import NOT_BOOL, _Spec
from ..structure import Loop, stages
from .kind import Kind
from .server import build_with


class Spec(_Spec):
    kind: Literal["allreduce"]
    #: ring or tree over all learners (the slowest link sets the pace), or
    #: hierarchical: inside each node over its GPU link, then across nodes
    collective: Literal["ring", "tree", "hierarchical"] = "hierarchical"
    #: the fraction of the collective hidden behind the backward pass, or
    #: backward: as much of it as the backward pass lasts (Horovod's tensor
    #: fusion and DDP's buckets sum each gradient while the rest are computed)
    overlap: Annotated[float, NOT_BOOL, Field(ge=0, le=1, allow_inf_nan=False)] | Literal["backward"] = 0.0


def loop(scenario, c) -> Loop:
    """The gradient and the weights stay on the GPU: the collective moves them."""
    return Loop(before=stages(("batch_read", ("disk",), c.batch_read_s),
                              ("batch_to_gpu", ("host_link",), c.batch_to_gpu_s)),
                after=())


def collective_time(cluster, weights: float, collective: str) -> float:
    """Summing ``weights`` bytes over every GPU: a ring or tree whose slowest
    link sets the pace (NCCL pipelines its ring, so the GPU link and the
    network work at once), or hierarchical (Horovod's: one stage after the
    other), inside each node over its GPUs' link (NVLink, else their host
    links), then across nodes. Both links as a GPU collective sees them:
    the achieved rates and step latencies fitted to NCCL measurements
    (catalog/nccl_allreduce.csv). A mixed cluster's collective goes at its
    slowest member's pace: the slowest node's inside, the slowest network."""
    from ..costs import ALLREDUCE, hierarchical_allreduce_time

    if cluster.mixed_shapes:
        parts = [cluster.group_cluster(i) for i in range(len(cluster.groups))]
        across = min((p.collective_network for p in parts), key=lambda link: link.bandwidth)
        if collective == "hierarchical":
            return max(hierarchical_allreduce_time(p.collective_gpu_link, across, weights,
                                                   p.gpus_per_node, cluster.nodes) for p in parts)
        links = [p.collective_gpu_link for p in parts] + [across] * (cluster.nodes > 1)
        return ALLREDUCE[collective](min(links, key=lambda link: link.bandwidth), weights,
                                     cluster.learners)
    inside, across = cluster.collective_gpu_link, cluster.collective_network
    if collective == "hierarchical":
        return hierarchical_allreduce_time(inside, across, weights,
                                           cluster.gpus_per_node, cluster.nodes)
    slowest = min(inside, across, key=lambda link: link.bandwidth) if cluster.nodes > 1 else inside
    return ALLREDUCE[collective](slowest, weights, cluster.learners)


def aggregate_s(scenario, weights: float) -> float:
    """After the slowest learner: the collective's exposed part, then every
    GPU's momentum update of its copy (read w, g, m; write m, w): the round
    waits for the slowest GPU's."""
    from ..compute import gpu_pass_time

    algorithm, cluster = scenario.algorithm, scenario.cluster
    collective = collective_time(cluster, weights, algorithm.collective)
    if algorithm.overlap == "backward":
        exposed = max(0.0, collective - backward_s(scenario))
    else:
        exposed = (1 - algorithm.overlap) * collective
    return exposed + max(gpu_pass_time(weights, gpu, streams=5) for gpu in gpus(cluster))


def gpus(cluster) -> list:
    """The cluster's GPUs, one of each group (one without groups)."""
    return [g.gpu for g in cluster.groups] if cluster.groups else [cluster.gpu]


#: a backward pass computes the gradients of the data and of the weights,
#: each about the forward's work: its share of a step known only by its law
BACKWARD_SHARE = 2 / 3


def backward_s(scenario) -> float:
    """Seconds of one GPU's backward pass, by the cost model's layers; for a
    compute law (or measured steps), BACKWARD_SHARE of its mean."""
    from ..costs import _step_law

    timing, cluster = scenario.timing, scenario.cluster
    if not isinstance(timing.compute, str):
        return BACKWARD_SHARE * _step_law(scenario, cluster.gpu, timing.compute).mean
    return sum(t.backward_s for t in _layers(scenario, cluster.gpu))


def backward_share(scenario, gpu=None) -> float:
    """The backward pass's part of a step on ``gpu`` (the cluster's): of the
    cost model's layers and the framework's cost per step, or
    BACKWARD_SHARE for a compute law."""
    if not isinstance(scenario.timing.compute, str):
        return BACKWARD_SHARE
    layers = _layers(scenario, gpu or scenario.cluster.gpu)
    return sum(t.backward_s for t in layers) / sum(t.forward_s + t.backward_s for t in layers)


def _layers(scenario, gpu) -> list:
    """The cost model's layers of one GPU's share of the sub-batch."""
    from ..costs import cost_model

    work = scenario.workload
    cost = cost_model(scenario, scenario.timing.compute)
    per_gpu = -(-work.sub_batch // scenario.cluster.gpus_per_learner)
    return cost.breakdown(gpu, work.model, per_gpu, work.precision, work.layout)


def _collective(env, weights, recorder, costs, learners):
    # a round of all learners, then the collective: a barrier without a server
    from ..components.server import SyncServer
    return SyncServer(env, weights, recorder, costs.collective_s, learners, whole=True)


def predict(scenario, costs):
    from ..analytic import predict_rounds
    return predict_rounds(scenario, costs, costs.collective_s)


def draw(rng, ideal: bool, learners: int):
    keys = {"collective": str(rng.choice(["ring", "tree", "hierarchical"])),
            "overlap": float(rng.choice([0.0, 0.0, 0.5, 0.9]))}
    return keys, {}, lambda learners: learners


KIND = Kind(Spec, loop, build_with(_collective, "collective"), predict, aggregate_s, draw)
