"""Scenarios: what to simulate, validated once at the edge.

A scenario file (YAML, see the README) names a workload, a cluster, an
algorithm, timing choices and a stop condition. ``load_scenario`` reads it,
applies ``--set`` style overrides, resolves catalog names into full specs,
parses quantities into SI floats and returns an immutable, typed
:class:`Scenario`. Every mistake is gathered into one :class:`ScenarioError`
whose lines each name the file, the key path and what was expected, so the
command line can print it and exit 2 without a traceback.

A validated scenario dumps (``resolved_yaml``) to a file in the same format
with every default and catalog entry filled in; loading that file gives the
same scenario back, which is what makes a stored result reproducible.
"""

from __future__ import annotations

import difflib
import math
import re
from collections import Counter
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

import yaml
from pydantic import (BaseModel, BeforeValidator, ConfigDict, Discriminator, Field, StrictBool,
                      Tag, ValidationError, field_serializer, field_validator, model_serializer,
                      model_validator)

from . import catalog, safeyaml
from .algorithms import Algorithm
from .errors import ScenarioError
from .inputs import read_text
from .groups import NODE_KEYS, REPLACED, Group, fold_groups
from .memory import Footprint, footprint
from .precision import Layout, Precision, activation_bytes
from .specs import (NOT_BOOL, Bytes, BytesPerSecond, Count, EmpiricalSpec, GpuSpec, JitterSpec, LawSpec, Link,
                    LinkSpec, ModelSpec, Seconds, SecondsOrZero, StepLawSpec, _from_catalog, _model,
                    _Spec, catalog_model)

__all__ = ["Scenario", "ScenarioError", "load_scenario", "scenario_from_dict", "resolved_yaml",
           "LawSpec", "GpuSpec", "LinkSpec", "ModelSpec"]


class Workload(_Spec):
    model: Annotated[ModelSpec, BeforeValidator(_model)]
    dataset_samples: Count
    sub_batch: Count
    # bytes of one stored training sample read from disk (ImageNet JPEG, ~110 kB)
    sample_bytes: Bytes = 110e3
    #: real: each sub-batch is read from disk and copied to the GPU; cached:
    #: read from the node's memory instead (the page cache holds a dataset
    #: that fits, from its second pass on: a benchmark that repeats a few
    #: thousand samples); synthetic: the input already lives on the GPU
    #: (tf_cnn_benchmarks' synthetic data, a tf.Variable on the device), so
    #: neither happens
    input: Literal["real", "cached", "synthetic"] = "real"
    #: what crosses the host link for each sample: float32, the finished
    #: tensor at 4 bytes a value (the host decodes and preprocesses:
    #: tf.data, tf_cnn_benchmarks); uint8, the decoded crop at a byte a value,
    #: which the GPU normalises (DALI's CPU backend); encoded, the stored
    #: sample (``sample_bytes``), which the GPU decodes (DALI's GPU backend,
    #: nvJPEG; its decoding kernels are not priced)
    input_copy: Literal["float32", "uint8", "encoded"] = "float32"
    #: the step's kernels are captured in CUDA graphs and replayed (MXNet's
    #: MXNET_ENABLE_CUDA_GRAPHS, torch.cuda.graphs): the host no longer issues
    #: each kernel, so the framework's launch interval per kernel and its
    #: fixed cost per step are left out (overheads.py: all of the latter, an
    #: upper bound on the saving where a collective or the optimizer stays
    #: outside the graphs); the GPU's own cost of each kernel stays. Like
    #: precision and layout, it prices the kernel model's steps only: a
    #: compute law or measured steps are the step as given
    cuda_graphs: StrictBool = False
    #: fp32; tf32 (Ampere+ tensor cores); fp16 or bf16 mixed precision (see precision.py)
    precision: Precision = "fp32"
    #: the activations' memory layout: nhwc (channels last), or nchw, whose
    #: convolutions on tensor cores transpose their tensors (see compute.py)
    layout: Layout = "nhwc"

    @field_serializer("model")
    def _catalog_models_by_name(self, model: ModelSpec) -> Any:
        try:
            if catalog_model(model.name) == model:
                return model.name
        except catalog.CatalogError:
            pass
        return model.model_dump(mode="json", exclude_none=True)


#: a node's parts when no machine preset gives them (written into the
#: resolved scenario, so a result always shows what it assumed)
GENERIC_NODE = {"gpus_per_host_link": 1, "host_memory_bandwidth": "51.2 GB/s",
                "disk_bandwidth": "500 MB/s"}


class NonBlocking(_Spec):
    """One switch that every node's ports reach at their full rate: no
    transfer between nodes meets another but at the ports (the default)."""

    kind: Literal["non-blocking"] = "non-blocking"


class FatTree(_Spec):
    """A two-level fat tree: nodes numbered into leaf switches of
    ``nodes_per_switch``; each leaf's up-link to the spine carries, each
    direction, the ports under it (rails x nodes_per_switch x a port's
    bandwidth) divided by ``oversubscription`` (see topology.py)."""

    kind: Literal["fat-tree"]
    nodes_per_switch: Count
    oversubscription: Annotated[float, NOT_BOOL, Field(ge=1, le=1e6, allow_inf_nan=False)] = 1.0

    @field_validator("oversubscription", mode="before")
    @classmethod
    def _a_number(cls, value: Any) -> Any:
        # "2:1" is how data sheets write it; a bool is no number
        if isinstance(value, bool):
            raise ValueError(f"expected a number >= 1, got {value!r}")
        if isinstance(value, str) and re.fullmatch(r"\s*[0-9.]+\s*:\s*1\s*", value):
            return value.split(":")[0].strip()
        return value


#: ``cluster.topology``: how the nodes' ports reach each other
TopologySpec = Annotated[NonBlocking | FatTree, Field(discriminator="kind")]


class Cluster(_Spec):
    nodes: Count
    gpus_per_node: Count
    gpu: Annotated[GpuSpec, _from_catalog("gpus")]
    network: Link
    machine: str | None = None
    host_link: Link
    gpus_per_host_link: Count
    host_memory_bandwidth: BytesPerSecond
    disk_bandwidth: BytesPerSecond
    #: what a node's GPUs exchange over directly (NVLink); none: their host links
    gpu_link: Link | None = None
    #: network ports per node, each direction (dual-rail InfiniBand: 2)
    rails: Count = 1
    #: the switches between the nodes' ports: one non-blocking switch, or a fat tree
    topology: TopologySpec = NonBlocking()
    #: network ports the GPUs send through directly (GPUDirect RDMA; a DGX
    #: has one per GPU or GPU pair), which GPU collectives stripe over;
    #: none: the rails. The host's own traffic (SPRINT, servers) uses the rails
    gpu_nics: Count | None = None
    #: GPUs one learner spans (GPU A-SGD's learners), and how they share its work:
    #: data, the sub-batch split and the gradients summed over the node's GPU
    #: link once the slowest GPU is done (each GPU its own jitter); layers,
    #: the network cut into consecutive stages
    gpus_per_learner: Count = 1
    learner_split: Literal["data", "layers"] = "data"
    #: a mixed cluster: nodes of different GPUs or shapes, in place of nodes,
    #: gpus_per_node, gpu and machine, which then hold the total and the first
    #: group's (see groups.py)
    groups: Annotated[tuple[Group, ...], Field(min_length=1)] | None = None

    @model_validator(mode="before")
    @classmethod
    def _fill_from_preset(cls, data: Any) -> Any:
        """A machine preset fills what the scenario leaves out; explicit keys win."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        grouped = data.get("groups") is not None
        if grouped:
            data = fold_groups(data)     # (each group's count is checked there)
        if isinstance(data.get("machine"), str):
            try:
                preset = catalog.lookup("machines", data["machine"])
            except catalog.CatalogError:
                return data  # the machine key's own check says what is wrong
            count = data.get("gpus_per_node")
            if not grouped and isinstance(count, int) and count > preset["gpus_per_node"]:
                raise KeyedError("cluster.gpus_per_node",
                                 f"expected at most {preset['gpus_per_node']} (a {preset['name']} "
                                 f"node holds {preset['gpus_per_node']} GPUs), got {count}")
            data["machine"] = preset.pop("name")
            for about_the_machine in ("source", "max_nodes"):
                preset.pop(about_the_machine, None)
            data = {**preset, **data}
        if "host_link" not in data:
            gpu = data.get("gpu")
            try:
                gpu = catalog.lookup("gpus", gpu) if isinstance(gpu, str) else gpu
                data["host_link"] = gpu["host_link"]
            except (catalog.CatalogError, KeyError, TypeError):
                pass  # the gpu key's own error says what is wrong
        return {**GENERIC_NODE, **data}

    @field_validator("machine")
    @classmethod
    def _known_machine(cls, name: str | None) -> str | None:
        return None if name is None else catalog.lookup("machines", name)["name"]

    @model_serializer(mode="wrap")
    def _groups_alone(self, handler) -> Any:
        """With groups, the keys they replace are theirs to give: the
        resolved cluster names the groups, as the user wrote it."""
        data = handler(self)
        if self.groups is not None and isinstance(data, dict):
            # each group carries its node's parts: loading gives them back as they were
            for key in (*REPLACED, *NODE_KEYS):
                data.pop(key, None)
        return data

    @model_validator(mode="after")
    def _learners_fill_nodes(self) -> Cluster:
        for key, count in ([(f"groups.{i}.gpus_per_node", g.gpus_per_node)
                            for i, g in enumerate(self.groups)] if self.groups
                           else [("gpus_per_node", self.gpus_per_node)]):
            if count % self.gpus_per_learner:
                raise KeyedError("cluster.gpus_per_learner",
                                 f"expected a divisor of {key} ({count}), "
                                 f"got {self.gpus_per_learner}")
        return self

    @property
    def learners_per_node(self) -> int:
        """A node's learners (a mixed cluster's first group's: see group_learners)."""
        return self.gpus_per_node // self.gpus_per_learner

    @property
    def group_learners(self) -> tuple[int, ...]:
        """Each group's learners, in order (a cluster without groups: one)."""
        if self.groups is None:
            return (self.nodes * self.learners_per_node,)
        return tuple(g.nodes * (g.gpus_per_node // self.gpus_per_learner) for g in self.groups)

    @property
    def learners(self) -> int:
        if self.groups is None:
            return self.nodes * self.learners_per_node
        return sum(self.group_learners)

    @property
    def mixed_shapes(self) -> bool:
        """Whether the groups' nodes differ in shape (GPUs per node, links,
        disk, memory, network): each group then has a block of the topology
        and durations of its own."""
        return self.groups is not None and len({g.shape for g in self.groups}) > 1

    def group_cluster(self, index: int) -> Cluster:
        """Group ``index``'s nodes as a cluster of their own, without groups."""
        group = self.groups[index]
        return self.model_copy(update={
            "nodes": group.nodes, "gpus_per_node": group.gpus_per_node, "gpu": group.gpu,
            "machine": group.machine, "groups": None,
            **{key: getattr(group, key) for key in NODE_KEYS}})

    @property
    def gpu_to_gpu(self) -> LinkSpec:
        """What a node's GPUs exchange over: their GPU link, else their host links."""
        return self.gpu_link or self.host_link

    @property
    def node_network(self) -> LinkSpec:
        """What a node's collective traffic sees: its rails striped together
        (through a fat tree's up-links, see :meth:`across_leaves`)."""
        if self.rails == 1:
            return self.across_leaves(self.network)
        return self.across_leaves(self.network.model_copy(
            update={"name": f"{self.network.name} x {self.rails}",
                    "bandwidth": self.rails * self.network.bandwidth}))

    def across_leaves(self, link: LinkSpec) -> LinkSpec:
        """A node's link as a collective over every node sees it in a fat
        tree whose nodes span several leaves: its hops between leaves share
        the up-links, so the ring's (or tree's) bandwidth term is priced at
        the up-link's share per node, ``link.bandwidth / oversubscription``
        (the up-link carries rails x nodes_per_switch ports over the
        oversubscription; where the GPUs have NICs of their own, the fabric
        is taken as sized for those), where that is below the port's. As if
        the collective's ranks sat without regard to the leaves, so that
        every node's hop may leave its leaf: an ordered ring would cross each
        up-link once, and this is its worst case, not its best."""
        tree = self.topology
        if tree.kind != "fat-tree" or self.nodes <= tree.nodes_per_switch \
                or tree.oversubscription == 1:
            return link
        return link.model_copy(update={
            "name": f"{link.name} across {tree.oversubscription:g}:1 leaves",
            "bandwidth": link.bandwidth / tree.oversubscription})


    @property
    def collective_gpu_link(self) -> LinkSpec:
        """The node's GPU link as a GPU collective (NCCL) sees it."""
        return self.gpu_to_gpu.for_collectives()

    @property
    def collective_network(self) -> LinkSpec:
        """The node's network as a GPU collective sees it, at the collectives'
        achieved rate: its GPUs' own ports, each GPU driving one at most
        (without ``gpu_nics``, the rails, as the host's traffic sees them)."""
        ports = min(self.gpu_nics, self.gpus_per_node) if self.gpu_nics else self.rails
        return self.across_leaves(self.network.for_collectives(ports))


def default_jitter() -> dict:
    """The step-to-step noise of a real GPU's training step, from the catalog
    (``variability.yaml``, with its source): what a scenario that names no
    ``jitter`` gets on table or roofline compute."""
    entry = catalog.variability("gpu_step")
    return {k: entry[k] for k in ("distribution", "cv", "shape") if k in entry}


class Timing(_Spec):
    compute: Annotated[
        Annotated[Literal["table", "roofline"], Tag("name")] | Annotated[StepLawSpec, Tag("law")],
        Discriminator(lambda v: "name" if isinstance(v, str) else "law"),
    ] = "table"
    #: multiplicative noise on table or roofline steps; "none" for identical steps
    jitter: JitterSpec | Literal["none"] = "none"
    communication: Literal["modelled", "ideal"] = "modelled"
    update_interval: Seconds | None = None
    # a kernel table of your own (asgdsim profile), used with compute: table
    kernel_table: str | None = None

    @field_validator("kernel_table")
    @classmethod
    def _readable_table(cls, path: str | None) -> str | None:
        if path is not None:
            from .compute import read_user_table   # the compute model owns the format
            read_user_table(path)
        return path

    @model_validator(mode="before")
    @classmethod
    def _default_jitter(cls, data: Any) -> Any:
        """Real GPUs do not repeat a step to the nanosecond: table and roofline
        steps get the catalog's measured noise unless the scenario says otherwise."""
        if not isinstance(data, dict):
            return data
        if "jitter" not in data and data.get("compute", "table") in ("table", "roofline"):
            data = {**data, "jitter": default_jitter()}
        elif "jitter" in data and data["jitter"] is None:     # YAML null: no noise
            data = {**data, "jitter": "none"}
        return data

    @model_validator(mode="after")
    def _jitter_needs_a_model(self) -> Timing:
        if self.jitter != "none" and isinstance(self.compute, (LawSpec, EmpiricalSpec)):
            raise ValueError("jitter applies to table or roofline compute; "
                             "a distribution already is the compute-time law")
        return self


class Warmup(_Spec):
    """The start of a run that its statistics leave out: a time, a number of
    updates, or epochs (of applied samples); exactly one."""

    time: Seconds | None = None
    updates: Count | None = None
    epochs: Annotated[float, NOT_BOOL, Field(gt=0, allow_inf_nan=False)] | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> Warmup:
        if sum(v is not None for v in (self.time, self.updates, self.epochs)) != 1:
            raise ValueError("expected exactly one of time, updates, epochs")
        return self


def _warmup(value: Any) -> Any:
    """A plain quantity is a time: ``warmup: 30 s``."""
    return {"time": value} if isinstance(value, (str, int, float)) and not isinstance(value, bool) \
        else value


class Stragglers(_Spec):
    """Each step, independently with ``probability``, takes ``slowdown`` times as long."""

    probability: Annotated[float, NOT_BOOL, Field(gt=0, le=1, allow_inf_nan=False)]
    slowdown: Annotated[float, NOT_BOOL, Field(ge=1, le=1e6, allow_inf_nan=False)]


class SlowLearners(_Spec):
    """The learners listed (by index) always take ``slowdown`` times as long
    (at least 1, as for stragglers: learners on faster GPUs are a group of
    their own, ``cluster.groups``)."""

    learners: Annotated[list[Annotated[int, Field(ge=0, strict=True)]], Field(min_length=1)]
    slowdown: Annotated[float, NOT_BOOL, Field(ge=1, le=1e6, allow_inf_nan=False)]

    @field_validator("learners")
    @classmethod
    def _each_once(cls, learners: list[int]) -> list[int]:
        if repeated := sorted(i for i, n in Counter(learners).items() if n > 1):
            raise ValueError(f"expected each learner once, got {', '.join(map(str, repeated))} "
                             "more than once")
        return learners


class FailuresSpec(_Spec):
    """Each learner (or node) fails after an exponential time of mean
    ``mtbf`` up, and is down for ``repair``."""

    mtbf: Seconds
    repair: Seconds
    scope: Literal["learner", "node"] = "learner"


class LinkSlowdown(_Spec):
    """The links of one kind go at ``factor`` times their rate from ``from``
    to ``to`` (simulated time): ``network`` (every node's and server's port,
    and the collectives across nodes), ``host_link`` or ``disk``."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    links: Literal["network", "host_link", "disk"]
    from_: Annotated[SecondsOrZero, Field(alias="from")]
    to: Seconds
    factor: Annotated[float, NOT_BOOL, Field(gt=0, allow_inf_nan=False)]

    @model_validator(mode="after")
    def _ordered(self) -> LinkSlowdown:
        if self.to <= self.from_:
            raise ValueError(f"expected 'to' after 'from' ({self.to:g} s is not after {self.from_:g} s)")
        return self


class Faults(_Spec):
    """What goes wrong: stragglers (per step), persistently slow learners,
    learners or nodes that fail, links that slow down for a while."""

    stragglers: Stragglers | None = None
    slow_learners: SlowLearners | None = None
    failures: FailuresSpec | None = None
    link_slowdowns: Annotated[list[LinkSlowdown], Field(min_length=1)] | None = None


#: the keys of ``stop`` that end a run (the first reached does)
STOP_CONDITIONS = ("epochs", "gradients", "updates", "time")


class Stop(_Spec):
    """Stop at the first condition reached; ``warmup`` is left out of the
    staleness and mini-batch statistics (not of the epoch time)."""

    # a million epochs is already years of simulation; beyond it the
    # closed form's sums overflow before the cost estimate can refuse the run
    epochs: Annotated[float, NOT_BOOL, Field(gt=0, le=1e6, allow_inf_nan=False)] | None = None
    gradients: Count | None = None
    updates: Count | None = None
    time: Seconds | None = None
    warmup: Annotated[Warmup | None, BeforeValidator(_warmup)] = None

    @model_validator(mode="after")
    def _at_least_one(self) -> Stop:
        if all(getattr(self, key) is None for key in STOP_CONDITIONS):
            raise ValueError(f"expected at least one of {', '.join(STOP_CONDITIONS)}")
        return self


#: the most learners a simulation may have (budget.check_learners): the
#: simulator holds a process and random streams per learner, and beyond this
#: it takes minutes before the first event
MAX_LEARNERS = 16_384
#: the most learners any scenario may have, predicted or simulated: the closed
#: form's cost does not grow with the learners, but its counts (gradients,
#: versions) are floats, exact to 2**53, and a run's gradients are counted
#: per learner
MAX_CLOSED_FORM_LEARNERS = 10**9


class Scenario(_Spec):
    name: str
    seed: Annotated[int, Field(ge=0, strict=True)] = 0
    workload: Workload
    cluster: Cluster
    algorithm: Algorithm
    timing: Timing = Field(default_factory=Timing)
    stop: Stop = Stop(epochs=1)
    faults: Faults = Field(default_factory=Faults)

    def __str__(self) -> str:
        # what it is in a line; repr stays every key (a failing test's report)
        nodes = self.cluster.nodes
        return (f"Scenario({self.name!r}: {self.algorithm.kind}, {self.cluster.learners:,} "
                f"learners on {nodes:,} node{'s' * (nodes != 1)}, {self.workload.model.name} "
                f"at sub-batch {self.workload.sub_batch})")

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(str(self))      # a notebook cell ending in one shows the line

    @field_validator("name")
    @classmethod
    def _one_folder_name(cls, name: str) -> str:
        # the default output folder is runs/<name>: a name is one folder's
        if not name.strip() or name in (".", "..") or any(c in name for c in "/\\\0"):
            raise ValueError(f"expected a name that is one folder's: not empty, '.' or '..', "
                             f"without / or \\ (the default output folder is runs/<name>), "
                             f"got {name!r}")
        if len(name.encode("utf-8")) > MAX_NAME_BYTES:
            # a file system's names end at 255 bytes; the run's staging
            # folder beside runs/<name> adds its own few
            raise ValueError(f"expected a name of at most {MAX_NAME_BYTES} bytes (it names the "
                             f"output folder runs/<name>), got {len(name.encode('utf-8')):,}; "
                             "give a shorter name")
        return name

    @model_validator(mode="after")
    def _learners_within_reach(self) -> Scenario:
        # only this bound holds for every command: ``predict`` answers a
        # million learners in milliseconds; a simulation's own, lower bound
        # (MAX_LEARNERS) is checked before it starts (budget.check_learners)
        if self.cluster.learners > MAX_CLOSED_FORM_LEARNERS:
            raise KeyedError("cluster.nodes",
                             f"expected at most {MAX_CLOSED_FORM_LEARNERS:,} learners in all, got "
                             f"{self.cluster.learners:,} ({self.cluster.nodes:,} nodes of "
                             f"{self.cluster.learners_per_node:,})")
        return self

    @model_validator(mode="after")
    def _slow_learners_exist(self) -> Scenario:
        slow = self.faults.slow_learners
        if slow is not None and max(slow.learners) >= self.cluster.learners:
            raise KeyedError("faults.slow_learners.learners",
                             f"expected learner indices below {self.cluster.learners} "
                             f"(the cluster's learners), got {max(slow.learners)}")
        return self

    @model_validator(mode="after")
    def _sprint_cycle_has_a_length(self) -> Scenario:
        if self.algorithm.kind != "sprint" and self.timing.update_interval is not None:
            raise KeyedError("timing.update_interval",
                             f"only sprint has an update cycle to fix; {self.algorithm.kind} "
                             "updates when its gradients arrive (remove the key)")
        if (self.algorithm.kind == "sprint" and self.timing.communication == "ideal"
                and self.timing.update_interval is None):
            raise KeyedError("timing.update_interval",
                             "sprint with ideal communication needs an update_interval (with no "
                             "Allreduce or update time the cycle would take no time)")
        return self

    @model_validator(mode="after")
    def _counts_within_learners(self) -> Scenario:
        learners = self.cluster.learners
        for key in getattr(type(self.algorithm), "at_most_learners", ()):
            if getattr(self.algorithm, key) > learners:
                raise KeyedError(f"algorithm.{key}",
                                 f"expected at most the cluster's {learners} learners, "
                                 f"got {getattr(self.algorithm, key)}")
        return self

    @model_validator(mode="after")
    def _layers_to_split(self) -> Scenario:
        if (self.cluster.learner_split == "layers" and self.cluster.gpus_per_learner > 1
                and self.workload.model.graph is None):
            raise KeyedError("cluster.learner_split",
                             "layers needs a model with layers to cut (this one is given by its "
                             "totals); use data")
        return self

    @model_validator(mode="after")
    def _tensors_to_deal(self) -> Scenario:
        if getattr(self.algorithm, "split", "even") != "even" and self.workload.model.graph is None:
            raise KeyedError("algorithm.split",
                             f"{self.algorithm.split} deals the model's weight tensors to the "
                             "shards, and this model is given by its totals; use even")
        return self

    @model_validator(mode="after")
    def _fits_in_gpu_memory(self) -> Scenario:
        # a mixed cluster's smallest GPU is the one that must hold the step
        gpus = [g.gpu for g in self.cluster.groups] if self.cluster.groups else [self.cluster.gpu]
        gpu = min(gpus, key=lambda g: math.inf if g.memory is None else g.memory)
        need = self.footprint_on(gpu)
        if not need.fits:
            # weights that alone overflow the GPU are the model's fault, not the sub-batch's
            key = "workload.model" if need.capacity and need.weights > need.capacity \
                else "workload.sub_batch"
            raise KeyedError(key,
                             f"{self.workload.model.name} at sub-batch {self.workload.sub_batch} "
                             f"does not fit in the {gpu.memory / 1e9:.3g} GB of a {gpu.name}: "
                             f"{need.describe(self.workload.sub_batch)}")
        return self

    @property
    def footprint(self) -> Footprint:
        """GPU memory one GPU of a learner needs at the least (see memory.py):
        a k-th of the sub-batch where a learner of k GPUs splits the data, a
        k-th of weights and activations where it splits the layers."""
        return self.footprint_on(self.cluster.gpu)

    def footprint_on(self, gpu: GpuSpec, sub_batch: int | None = None) -> Footprint:
        """:attr:`footprint` on one of the cluster's GPUs (a group's), at
        the workload's sub-batch or at ``sub_batch`` (the planner asks
        before it builds a scenario, which one that does not fit would not be)."""
        model, cluster = self.workload.model, self.cluster
        sub_batch = self.workload.sub_batch if sub_batch is None else sub_batch
        k = cluster.gpus_per_learner
        per_gpu = -(-sub_batch // k) if cluster.learner_split == "data" else sub_batch
        need = footprint(model.parameters, model.input_shape, model.graph, per_gpu, gpu.memory,
                         activation_bytes(self.workload.precision))
        if cluster.learner_split == "layers" and k > 1:
            need = Footprint(need.weights / k, need.activations / k, need.backward, need.capacity)
        return need


class KeyedError(ValueError):
    """A check across sections that names the key the user should change."""

    def __init__(self, key: str, message: str):
        super().__init__(message)
        self.key = key


def load_scenario(path: str | Path, overrides: dict[str, Any] | None = None) -> Scenario:
    """Read, override and validate the scenario file at ``path``.

    ``overrides`` maps dotted key paths to values, as ``--set`` does:
    ``{"workload.sub_batch": 64}``.
    """
    path = Path(path)
    source = str(path)
    try:
        text = read_text(path, safeyaml.MAX_BYTES)
    except FileNotFoundError:
        raise ScenarioError(source, [("", "no such file")]) from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise ScenarioError(source, [("", f"cannot be read ({reason})")]) from None
    try:
        data = safeyaml.load(text)
    except safeyaml.YamlProblem as exc:
        where = f"line {exc.line}: " if exc.line else ""
        raise ScenarioError(source, [(exc.key, f"{where}{exc.message}")]) from None
    if data is None:
        raise ScenarioError(source, [("", "the file is empty; expected a scenario mapping "
                                          "with workload, cluster and algorithm")])
    if not isinstance(data, dict):
        raise ScenarioError(source, [("", f"expected a mapping of scenario keys at the top, "
                                          f"got {type(data).__name__}")])
    data.setdefault("name", path.stem)
    resolve_paths(data, path.parent)
    scenario = scenario_from_dict(data, overrides, source=source,
                                  resolved=text.startswith(RESOLVED_HEADER))
    _check_kernel_table(scenario, source)
    return scenario


def _check_kernel_table(scenario: Scenario, source: str) -> None:
    """Refuse a user's kernel table that would price none of the GPUs whose
    steps it is for (dropped without a word otherwise). The user's file
    only: a plan's candidate that books none of the table's GPUs, or a
    sweep's point on the roofline, is the user's own variation."""
    path, timing = scenario.timing.kernel_table, scenario.timing
    if path is None or timing.compute != "table":
        return
    from .compute import table_gpus, table_prices

    cluster = scenario.cluster
    gpus = ([g.gpu for g in cluster.groups if g.compute is None] if cluster.groups
            else [cluster.gpu])
    if gpus and not any(table_prices(path, gpu) for gpu in gpus):
        raise ScenarioError(source, [("timing.kernel_table", (
            f"{path} holds kernels of {', '.join(sorted(table_gpus(path)))}, which price none of "
            f"this cluster's GPUs ({', '.join(sorted({g.name for g in gpus}))}: neither their "
            "kernels nor their architecture's); profile them (asgdsim profile --gpu NAME) or "
            "remove kernel_table"))])


def resolve_paths(data: dict, folder: Path) -> None:
    """A file a scenario names (a kernel table, measured steps, a group's
    measured steps) is found beside it: made absolute in place, in the
    parsed mapping, so that it is found from anywhere (a sweep's worker)."""
    timing = data.get("timing") if isinstance(data.get("timing"), dict) else {}
    cluster = data.get("cluster") if isinstance(data.get("cluster"), dict) else {}
    groups = cluster.get("groups") if isinstance(cluster.get("groups"), list) else []
    for holder, key in [(timing, "kernel_table"), (timing.get("compute"), "empirical"),
                        *((g.get("compute"), "empirical") for g in groups if isinstance(g, dict))]:
        if isinstance(holder, dict) and isinstance(holder.get(key), str) \
                and not Path(holder[key]).is_absolute():
            holder[key] = str((Path(folder) / holder[key]).resolve())


def scenario_from_dict(data: dict, overrides: dict[str, Any] | None = None,
                       source: str = "<scenario>", resolved: bool = False) -> Scenario:
    """Validate a scenario given as a mapping (the parsed YAML); ``resolved``:
    one asgdsim wrote (a Scenario's dump, a resolved file), whose plain
    numbers are base units however small (units.parse_quantity)."""
    # a broken user catalog is reported at its own file and key, not at the
    # scenario key that happens to name one of its entries
    catalog.check()
    data = apply_overrides(data, overrides or {}, source)
    if isinstance(data, dict) and "name" not in data:
        # a file's name defaults to its stem; a mapping's to this
        data = {"name": "scenario", **data}
    try:
        return Scenario.model_validate(data, context={"resolved": resolved})
    except ValidationError as exc:
        problems = [_describe(error, data) for error in exc.errors()]
        cluster = data.get("cluster") if isinstance(data, dict) else None
        if isinstance(cluster, dict) and cluster.get("groups") is not None:
            # the keys groups replace are derived from them (the first
            # group's, folded into the cluster): the groups' own errors say
            # what is wrong
            derived = {"cluster", "cluster.host_link", *(f"cluster.{r}" for r in REPLACED)}
            if any(k == "cluster.groups" for k, _ in problems):
                # the list itself is wrong: what its groups would give is not news
                problems = [(k, w) for k, w in problems if k not in derived and not (
                    k.startswith("cluster.") and not k.startswith("cluster.groups")
                    and w.startswith("required key"))]
            elif any(k.startswith("cluster.groups.") for k, _ in problems):
                problems = [(k, w) for k, w in problems if k not in derived]
            else:
                problems = [(k, w) for k, w in problems if k not in derived - {"cluster"}]
        if any(key == "cluster.machine" for key, _ in problems):
            # an unknown preset fills nothing: its missing keys are not news
            problems = [(k, w) for k, w in problems if not w.startswith("required key")]
        # nor does an unknown GPU give its host link (the cluster's, a group's)
        unknown_gpu = {k.removesuffix(".gpu") for k, _ in problems if k.endswith(".gpu")}
        problems = [(k, w) for k, w in problems if not (
            k.endswith(".host_link") and k.removesuffix(".host_link") in unknown_gpu
            and w.startswith("required key"))]
        # a misspelt key is one problem, not also its correct spelling missing
        meant = {key.rsplit(".", 1)[0] + "." + m.group(1) if "." in key else m.group(1)
                 for key, what in problems if (m := re.search(r"did you mean '([^']+)'", what))}
        problems = [(k, w) for k, w in problems if not (k in meant and w.startswith("required key"))]
        raise ScenarioError(source, problems) from None


def apply_overrides(data: dict, overrides: dict[str, Any], source: str) -> dict:
    """A copy of the raw scenario mapping with dotted-key overrides set. A
    stop condition set (``stop.gradients``) replaces the file's others
    (its warm-up stays): the run stops at the first reached, so a file's
    ``epochs: 1`` kept beside ``--set stop.gradients=80074`` would end the
    run at half of what was asked, without a word (a new user's trial)."""
    if not isinstance(overrides, dict):
        raise TypeError(f"overrides: expected a mapping of dotted keys to values, such as "
                        f"{{'workload.sub_batch': 64}}, got {type(overrides).__name__}")
    data = _deep_copy(data)
    conditions = {str(k)[len("stop."):] for k in overrides
                  if str(k).startswith("stop.")} & set(STOP_CONDITIONS)
    if conditions and isinstance(data.get("stop"), dict):
        data["stop"] = {k: v for k, v in data["stop"].items()
                        if k not in STOP_CONDITIONS or k in conditions}
    for dotted, value in overrides.items():
        keys = str(dotted).split(".")
        if not all(key.strip() for key in keys):
            raise ScenarioError(source, [("", f"cannot set {dotted!r}: expected a dotted key such "
                                              "as stop.epochs or cluster.groups.1.nodes")])
        node = data
        for depth, key in enumerate(keys):
            where = ".".join(keys[:depth])
            if isinstance(node, list):
                # a list's entry by its index: cluster.groups.1.nodes
                if not (key.isdigit() and int(key) < len(node)):
                    raise ScenarioError(source, [(dotted, f"cannot set: {where} has {len(node)} "
                                                          f"entries, numbered from 0; got {key!r}")])
                key = int(key)
            if depth == len(keys) - 1:
                node[key] = value
                break
            child = node[key] if isinstance(node, list) else node.setdefault(key, {})
            if not isinstance(child, (dict, list)):
                where = ".".join(keys[:depth + 1])
                raise ScenarioError(source, [(dotted, f"cannot set: {where} is {child!r}, "
                                                      "not a mapping")])
            node = child
    return data


def _deep_copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _deep_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_deep_copy(v) for v in value]
    return value


def _describe(error: dict, data: Any) -> tuple[str, str]:
    """Turn one pydantic error into (key path as the user wrote it, expectation)."""
    path, node = [], data
    loc = list(error["loc"])
    if loc[:1] == ["algorithm"] and len(loc) > 2 and isinstance(node, dict) \
            and isinstance(node.get("algorithm"), dict) and loc[1] == node["algorithm"].get("kind"):
        del loc[1]    # the union's tag (the kind), which may also be a key's name
    for part in loc:
        # pydantic adds union branch names to loc; keep only the user's keys
        if isinstance(node, dict) and part in node:
            path.append(str(part))
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            path.append(str(part))
            node = node[part]
        elif error["type"] in ("extra_forbidden", "missing") and part == loc[-1]:
            path.append(str(part))
    key = ".".join(path)
    kind, message = error["type"], error["msg"]
    if kind == "extra_forbidden":
        parent_model = _model_at(path[:-1], data)
        known = list(parent_model.model_fields) if parent_model else []
        close = difflib.get_close_matches(path[-1], known, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        if path[:1] == ["algorithm"] and (owners := _kinds_with_key(path[-1])):
            hint = f" for {_kind_of(parent_model)} (a key of {', '.join(owners)})"
        return key, f"unknown key{hint}; expected one of {', '.join(known)}"
    if kind == "union_tag_invalid":
        tags = error.get("ctx", {}).get("expected_tags", "")
        return f"{key}.{error['ctx']['discriminator'].strip(chr(39))}" if key else key, \
            f"expected one of {tags} (got {error['ctx'].get('tag')!r})"
    if kind == "union_tag_not_found":
        # a mapping without the key that says which kind it is
        tag = error.get("ctx", {}).get("discriminator", "kind").strip("'")
        return f"{key}.{tag}" if key else tag, "required key is missing (it says which kind)"
    if kind == "missing":
        return key, "required key is missing"
    if kind == "value_error":
        cause = error.get("ctx", {}).get("error")
        if isinstance(cause, KeyedError):
            return cause.key, str(cause)
        message = message.removeprefix("Value error, ")
    if kind in ("literal_error",):
        message = message.replace("Input should be", "expected")
    elif kind in ("too_short", "too_long"):
        bound = error.get("ctx", {}).get("min_length" if kind == "too_short" else "max_length")
        message = (f"expected at {'least' if kind == 'too_short' else 'most'} {bound} "
                   f"entr{'y' if bound == 1 else 'ies'}")
    elif kind.startswith(("int_", "float_", "greater_than", "less_than", "string_", "model_",
                          "dict_", "tuple_", "bool_", "finite_")):
        message = "expected " + message.removeprefix("Input should be ")
        if kind.startswith("int_") and isinstance(given := error.get("input"), str) and \
                re.fullmatch(r"\s*[-+]?\d+(\.\d*)?[eE][-+]?\d+\s*", given):
            # YAML reads 1e3 as text, and a count is not a float
            message += " written out in digits (1000, not 1e3)"
    return key, f"{message} (got {_short(error.get('input'))})" if kind != "value_error" else message


def _kind_of(spec: type[BaseModel]) -> str:
    return get_args(spec.model_fields["kind"].annotation)[0]


def _kinds_with_key(key: str) -> list[str]:
    return [_kind_of(spec) for spec in _types_of(Algorithm) if key in spec.model_fields]


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _model_at(path: list[str], data: Any = None) -> type[BaseModel] | None:
    """The spec type at ``path``; of a union, the member whose ``kind`` the
    data names (an algorithm's keys are its kind's)."""
    model: Any = Scenario
    for key in path:
        field = model.model_fields.get(key) if model else None
        if field is None:
            return None
        data = data.get(key) if isinstance(data, dict) else None
        members = [t for t in _types_of(field.annotation)
                   if isinstance(t, type) and issubclass(t, BaseModel)]
        chosen = [t for t in members if isinstance(data, dict) and "kind" in t.model_fields
                  and data.get("kind") in _types_of(t.model_fields["kind"].annotation)]
        model = (chosen or members or [None])[0]
    return model


def _types_of(annotation: Any) -> list[Any]:
    args = getattr(annotation, "__args__", None)
    if getattr(annotation, "__metadata__", None) is not None:
        return _types_of(annotation.__origin__)
    if args:
        return [t for a in args for t in _types_of(a)]
    return [annotation]


#: the longest scenario name (runs/<name>, its staging folder ".<name>.*.partial")
MAX_NAME_BYTES = 200

#: the first line of a scenario asgdsim resolved (a run's scenario.yaml)
RESOLVED_HEADER = "# Resolved by asgdsim: every default and catalog entry filled in."


def resolved_yaml(scenario: Scenario) -> str:
    """The scenario with every default and catalog entry filled in, as YAML.

    Quantities are written as plain numbers in SI base units, which
    ``load_scenario`` reads back to the same scenario.
    """
    header = (RESOLVED_HEADER + "\n"
              "# Quantities are in SI base units (s, B, B/s, FLOP, FLOP/s).\n")
    data = scenario.model_dump(mode="json", exclude_none=True, by_alias=True)
    return header + yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
