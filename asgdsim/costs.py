"""The cost model: how long every activity in the cluster takes.

One place turns a scenario into durations: a learner's compute step (a time
law), copies over the host link, reading a sub-batch from disk, network
transfers, the Allreduce and the CPU's accumulation and momentum update. The
simulator holds its components busy for exactly these durations and the
closed-form model reasons about the same numbers, so with noise off the two
agree by construction.

Compute cost sits behind a small interface, :class:`ComputeCost`, keyed by
the scenario's ``timing.compute`` name: per-layer kernel tables and a
calibrated roofline (:mod:`asgdsim.compute`), without the simulator knowing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from . import overheads
from .compute import KernelModel
from .distributions import Empirical, Law, Mixture, law_from_spec, slowest_of, straggling
from .specs import EmpiricalSpec, GpuSpec, LawSpec, LinkSpec, ModelSpec

if TYPE_CHECKING:
    from .scenario import Scenario

__all__ = ["BYTES_PER_PARAMETER", "ComputeCost", "COMPUTE_COSTS", "Costs", "cost_model",
           "kernel_cost", "transfer_time", "ring_allreduce_time", "tree_allreduce_time",
           "hierarchical_allreduce_time", "ALLREDUCE", "cpu_pass_time", "costs_of",
           "learner_classes", "learner_laws"]

#: FP32 weights, gradients and momentum
BYTES_PER_PARAMETER = 4
#: bytes of one decoded input value copied to the GPU (workload.input_copy)
BYTES_PER_INPUT_VALUE = {"float32": 4, "uint8": 1}


class ComputeCost(Protocol):
    """Seconds of forward + backward for one sub-batch on one GPU."""

    def step_time(self, gpu: GpuSpec, model: ModelSpec, batch: int,
                  precision: str = "fp32", layout: str = "nhwc") -> float: ...


#: timing.compute name -> cost implementation (see compute.py)
COMPUTE_COSTS: dict[str, ComputeCost] = {"table": KernelModel(use_tables=True),
                                         "roofline": KernelModel(use_tables=False)}


def transfer_time(link: LinkSpec, nbytes: float) -> float:
    """Latency plus serialisation: the alpha-beta model of one message."""
    return link.latency + nbytes / link.bandwidth


def ring_allreduce_time(link: LinkSpec, nbytes: float, members: int) -> float:
    """Ring Allreduce: 2 (n - 1) steps, each moving nbytes / n over every link."""
    if members <= 1:
        return 0.0
    return 2 * (members - 1) * transfer_time(link, nbytes / members)


def tree_allreduce_time(link: LinkSpec, nbytes: float, members: int) -> float:
    """Binary-tree reduce then broadcast: 2 ceil(log2 n) steps of the whole message."""
    if members <= 1:
        return 0.0
    return 2 * math.ceil(math.log2(members)) * transfer_time(link, nbytes)


def hierarchical_allreduce_time(intra: LinkSpec, inter: LinkSpec, nbytes: float,
                                per_node: int, nodes: int) -> float:
    """GPU-level Allreduce on multi-GPU nodes: reduce-scatter inside each node
    (ring over ``intra``), Allreduce across nodes (ring over ``inter``; the
    node's one port carries all its GPUs' shards), all-gather inside the node."""
    inside = (per_node - 1) * transfer_time(intra, nbytes / per_node) if per_node > 1 else 0.0
    return 2 * inside + ring_allreduce_time(inter, nbytes, nodes)


#: algorithm.allreduce (SPRINT, across nodes) or algorithm.collective (allreduce) name -> time
ALLREDUCE = {"ring": ring_allreduce_time, "tree": tree_allreduce_time}


def cpu_pass_time(nbytes: float, memory_bandwidth: float, streams: int) -> float:
    """A memory-bound CPU loop touching ``streams`` arrays of ``nbytes`` each."""
    return streams * nbytes / memory_bandwidth


@dataclass(frozen=True)
class Costs:
    """Every duration the cluster's components spend, in seconds.

    ``compute`` is a law (one draw per step); the rest are constants. With
    ``communication: ideal`` every one but ``compute`` and ``cycle_s`` is 0.
    In a mixed cluster ``group_computes`` holds each group's law and
    ``compute`` is a learner's drawn at random (the groups' mixture by
    learners): the mean law, which cluster-wide estimates read.
    """

    compute: Law
    weights_bytes: float
    weights_to_gpu_s: float      # newest weights, host -> GPU, host link
    batch_read_s: float          # sub-batch from the node's disk (or its page cache: input cached)
    batch_to_gpu_s: float        # decoded sub-batch, host -> GPU, host link
    gradient_to_host_s: float    # gradient, GPU -> host, host link
    accumulate_s: float          # add one gradient into the node's sum (CPU)
    allreduce_s: float           # SPRINT: sum the nodes' gradients
    node_update_s: float         # SPRINT: momentum update on each node's CPU
    cycle_s: float               # SPRINT: one update cycle
    network_s: float             # parameter server: one gradient or weights message
    server_update_s: float       # parameter server: apply one gradient or one round (each
                                 # shard its part, all at once: the time of one part)
    collective_s: float = 0.0    # allreduce: the collective's exposed part and the GPU update
    group_computes: tuple = ()   # cluster.groups: each group's step law, in order
    group_costs: tuple = ()      # groups of different node shapes: each group's Costs

    @property
    def gpu_overhead_s(self) -> float:
        """A SPRINT learner's step time outside compute, with no contention."""
        return (self.weights_to_gpu_s + self.batch_read_s + self.batch_to_gpu_s
                + self.gradient_to_host_s + self.accumulate_s)


def compute_law(scenario: Scenario, gpu: GpuSpec | None = None,
                compute: LawSpec | EmpiricalSpec | None = None) -> Law:
    """The law of one learner step's compute time, stragglers included: on
    ``gpu`` (default the cluster's) by ``compute`` (default ``timing.compute``)."""
    stragglers = scenario.faults.stragglers
    law = _step_law(scenario, gpu or scenario.cluster.gpu, compute or scenario.timing.compute)
    return law if stragglers is None else straggling(law, stragglers.probability,
                                                      stragglers.slowdown)


def _step_law(scenario: Scenario, gpu: GpuSpec, compute: LawSpec | EmpiricalSpec | str) -> Law:
    timing = scenario.timing
    if isinstance(compute, LawSpec):
        return law_from_spec(compute)     # a law is the step: jitter is for modelled steps
    if isinstance(compute, EmpiricalSpec):
        from .measured import read_steps

        return Empirical.of(read_steps(compute.empirical))
    cost, cluster = cost_model(scenario, compute), scenario.cluster
    k = cluster.gpus_per_learner
    if timing.jitter != "none" and k > 1 and cluster.learner_split == "data":
        # each GPU of a data-split learner draws its own step, and their ring
        # waits for the slowest: the learner straggles as k sync learners would
        gpu_step, ring = data_split(scenario, cost, gpu)
        return slowest_of(law_from_spec(timing.jitter), k).scaled(gpu_step).plus(ring)
    step = learner_step_time(scenario, cost, gpu)
    if timing.jitter == "none":
        return Law.constant(step)
    return law_from_spec(timing.jitter).scaled(step)


def group_laws(scenario: Scenario) -> tuple:
    """Each group's step law (cluster.groups): its GPU's by the cost model,
    or its own ``compute``."""
    return tuple(compute_law(scenario, g.gpu, g.compute) for g in scenario.cluster.groups or ())


def mean_law(laws: tuple, learners: list[int]):
    """The law of a learner drawn at random: the one law where all are
    alike, else the laws' mixture weighted by their learners."""
    if all(law == laws[0] for law in laws):
        return laws[0]
    total = sum(learners)
    return Mixture("mixture of the groups' laws", tuple(n / total for n in learners), laws)


def learner_laws(scenario: Scenario, costs: Costs) -> list:
    """Each learner's step law: its group's (the one ``costs.compute``
    without groups), times its slowdown where it is persistently slow."""
    cluster, slow = scenario.cluster, scenario.faults.slow_learners
    if costs.group_computes:
        laws = [law for learners, law in zip(cluster.group_learners, costs.group_computes)
                for _ in range(learners)]
    else:
        laws = [costs.compute] * cluster.learners
    for index in sorted(set(slow.learners)) if slow is not None else ():
        laws[index] = laws[index].scaled(slow.slowdown)
    return laws


def learner_classes(scenario: Scenario, costs: Costs) -> list[dict]:
    """The learners' laws as classes: for each group (one without groups),
    {law: how many of its learners have it}. What ``learner_laws`` lists
    learner by learner, in the size of the groups and the slow learners'
    list, not of the cluster: the closed form of a million learners reads
    this."""
    cluster, slow = scenario.cluster, scenario.faults.slow_learners
    if costs.group_computes:
        sizes = list(zip(cluster.group_learners, costs.group_computes))
    else:
        sizes = [(cluster.learners, costs.compute)]
    slowed = sorted(set(slow.learners)) if slow is not None else []
    out, first = [], 0
    for size, law in sizes:
        mine = sum(first <= i < first + size for i in slowed)
        classes = {law: size - mine} if size > mine else {}
        if mine:
            scaled = law.scaled(slow.slowdown)
            classes[scaled] = classes.get(scaled, 0) + mine
        out.append(classes)
        first += size
    return out


def kernel_cost(compute: str, kernel_table: str | None = None,
                cuda_graphs: bool = False) -> ComputeCost:
    """The kernel model named ``compute`` ("table" or "roofline"), with a
    user's kernel table (for "table"), and without the host's costs per
    kernel and per step where the steps replay CUDA graphs."""
    extra = kernel_table if compute == "table" else None
    if extra is None and not cuda_graphs:
        return COMPUTE_COSTS[compute]
    return KernelModel(use_tables=compute == "table", extra=extra,
                       overheads=overheads.NONE if cuda_graphs else None)


def cost_model(scenario: Scenario, compute: str) -> ComputeCost:
    """:func:`kernel_cost` as the scenario runs it."""
    return kernel_cost(compute, scenario.timing.kernel_table, scenario.workload.cuda_graphs)


def data_split(scenario: Scenario, cost: ComputeCost, gpu: GpuSpec) -> tuple[float, float]:
    """A data-split learner's two parts: each GPU's step on its k-th of the
    sub-batch, and the ring over the node's GPU link that sums them."""
    work, k = scenario.workload, scenario.cluster.gpus_per_learner
    return (cost.step_time(gpu, work.model, math.ceil(work.sub_batch / k), work.precision,
                           work.layout),
            ring_allreduce_time(scenario.cluster.gpu_to_gpu,
                                BYTES_PER_PARAMETER * work.model.parameters, k))


def learner_step_time(scenario: Scenario, cost: ComputeCost, gpu: GpuSpec | None = None) -> float:
    """One learner's forward and backward seconds over its sub-batch.

    A learner of k GPUs (``cluster.gpus_per_learner``) splits its work:
    ``data``, each GPU a k-th of the sub-batch, then their gradients summed
    by a ring over the node's GPU link (with jitter, the ring waits for the
    slowest GPU: :func:`_step_law`); ``layers``, the network cut where
    its step time is shared most evenly, each GPU one stage in turn, the
    activations crossing each cut forward and their gradients back."""
    cluster, work = scenario.cluster, scenario.workload
    gpu, model, k = gpu or cluster.gpu, work.model, cluster.gpus_per_learner
    if k == 1:
        return cost.step_time(gpu, model, work.sub_batch, work.precision, work.layout)
    inside = cluster.gpu_to_gpu
    if cluster.learner_split == "data":
        return sum(data_split(scenario, cost, gpu))
    layers = cost.breakdown(gpu, model, work.sub_batch, work.precision, work.layout)
    graph = [t for t in layers if t.op != "framework"]
    seconds = np.cumsum([t.forward_s + t.backward_s for t in graph])
    cuts = np.searchsorted(seconds, seconds[-1] * np.arange(1, k) / k)
    crossing = sum(2 * transfer_time(inside, BYTES_PER_PARAMETER * work.sub_batch
                                     * model.graph[min(i, len(model.graph) - 1)].out_values)
                   for i in cuts)
    return sum(t.forward_s + t.backward_s for t in layers) + crossing


def largest_shard(scenario: Scenario) -> float:
    """The largest shard's share of the weights (1 / servers where even)."""
    from .structure import shard_shares

    shares = shard_shares(scenario)
    return max(shares) if shares else 1 / getattr(scenario.algorithm, "servers", 1)


def costs_of(scenario: Scenario) -> Costs:
    """Derive every duration from the scenario's hardware, model and timing."""
    cluster, work, timing = scenario.cluster, scenario.workload, scenario.timing
    weights = BYTES_PER_PARAMETER * work.model.parameters
    groups = group_laws(scenario)
    compute = mean_law(groups, cluster.group_learners) if groups else compute_law(scenario)
    if timing.communication == "ideal":
        # only a fixed SPRINT cycle takes time (validation requires one)
        cycle = timing.update_interval or 0.0
        return Costs(compute, weights, 0.0, 0.0, 0.0, 0.0, 0.0, cycle, 0.0, cycle, 0.0, 0.0,
                     group_computes=groups)
    host, memory_bw = cluster.host_link, cluster.host_memory_bandwidth
    sample_bytes = work.sub_batch * work.sample_bytes
    # the host link carries the stored samples where the GPU decodes them
    batch_input = sample_bytes if work.input_copy == "encoded" else \
        work.sub_batch * math.prod(work.model.input_shape) * BYTES_PER_INPUT_VALUE[work.input_copy]
    copied = work.input != "synthetic"      # synthetic input is neither read nor copied
    # from disk, or from the page cache: a copy in the node's memory (read and write)
    read_s = (sample_bytes / cluster.disk_bandwidth if work.input == "real" else
              cpu_pass_time(sample_bytes, memory_bw, streams=2) if work.input == "cached" else 0.0)
    # SPRINT's cycle; the other kinds have none and never read it
    # across every node, at the pace of the slowest node's network (mixed shapes)
    network = min((cluster.group_cluster(i).node_network for i in range(len(cluster.groups))),
                  key=lambda link: link.bandwidth) if cluster.mixed_shapes else cluster.node_network
    allreduce = ALLREDUCE[getattr(scenario.algorithm, "allreduce", "ring")](
        network, weights, cluster.nodes)
    node_update = cpu_pass_time(weights, memory_bw, streams=5)   # read w, g, m; write m, w
    if timing.update_interval is not None:
        # a fixed cycle replaces the modelled Allreduce and update
        allreduce, node_update, cycle = timing.update_interval, 0.0, timing.update_interval
    else:
        cycle = allreduce + node_update
    from .algorithms import KINDS
    aggregate = KINDS[scenario.algorithm.kind].aggregate_s
    whole = Costs(
        compute=compute,
        weights_bytes=weights,
        weights_to_gpu_s=transfer_time(host, weights),
        batch_read_s=read_s,
        batch_to_gpu_s=copied * transfer_time(host, batch_input),
        gradient_to_host_s=transfer_time(host, weights),
        accumulate_s=cpu_pass_time(weights, memory_bw, streams=3),   # read sum, g; write sum
        allreduce_s=allreduce,
        node_update_s=node_update,
        cycle_s=cycle,
        network_s=transfer_time(cluster.network, weights),
        # the shards apply their parts at once: the largest part's time
        server_update_s=cpu_pass_time(weights * largest_shard(scenario), memory_bw, streams=5),
        collective_s=aggregate(scenario, weights) if aggregate else 0.0,
        group_computes=groups,
    )
    return _with_group_costs(scenario, whole) if cluster.mixed_shapes else whole


def _with_group_costs(scenario: Scenario, whole: Costs) -> Costs:
    """The whole cluster's costs with each group's own (groups of different
    node shapes): its links, disk and memory give its loop's stages and its
    nodes' update; the server, the Allreduce and the collective are shared,
    and SPRINT's cycle waits for the slowest node's update."""
    from dataclasses import replace

    from .groups import group_scenario

    parts = [costs_of(group_scenario(scenario, i)) for i in range(len(scenario.cluster.groups))]
    slowest_update = max(p.node_update_s for p in parts)
    cycle = whole.cycle_s if scenario.timing.update_interval is not None \
        else whole.allreduce_s + slowest_update
    shared = {"allreduce_s": whole.allreduce_s, "cycle_s": cycle,
              "server_update_s": whole.server_update_s, "collective_s": whole.collective_s}
    return replace(whole, node_update_s=slowest_update, **shared, group_costs=tuple(
        replace(part, compute=law, **shared) for part, law in zip(parts, whole.group_computes)))
