"""Mixed clusters: ``cluster.groups``, nodes of different GPUs or shapes in one cluster.

A group is some nodes of one GPU (named, or a machine preset's), its own
GPUs per node and node parts (host link, disk, memory, network ports) and,
optionally, its own step law (``compute``, in place of ``timing.compute``).
Learners are numbered group by group, node by node, so a learner's group
follows from its index.

A group's node is, key by key: the group's own key, else the cluster's (a
key given at the top of ``cluster`` is for every node), else the group's
machine preset's, else (host link) its GPU's, else what the cluster's
first group with a machine has (the node the group was added to: the
network is one fabric), else the generic node. Groups whose nodes come out
alike are one shape: only their step laws differ
(:func:`asgdsim.costs.learner_laws`) and the cluster runs exactly as a
uniform one. Groups of different shapes get one block of the topology each
(:mod:`asgdsim.structure`) and one set of durations each
(``Costs.group_costs``); what all share (the server, SPRINT's Allreduce, a
collective's ring) goes at the pace of its slowest member.

This module owns the group spec, folding groups into the cluster's own keys
(``nodes`` becomes the groups' total, ``gpus_per_node``, ``gpu`` and the
node's parts the first group's, which cluster-wide estimates read), leaving
groups out (the planner's), which group each learner is in, and the
summary's per-group figures.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import numpy as np
from pydantic import field_validator, model_validator

from . import catalog
from .specs import BytesPerSecond, Count, GpuSpec, Link, StepLawSpec, _from_catalog, _Spec

if TYPE_CHECKING:       # pandas is for the runs' tables, not every command's start
    import pandas as pd

__all__ = ["Group", "NODE_KEYS", "fold_groups", "group_of_learner", "group_figures",
           "group_scenario", "leave_out"]

#: the cluster keys that groups replace (a cluster gives one or the other)
REPLACED = ("nodes", "gpus_per_node", "gpu", "machine")
#: what a node is made of besides its GPUs: each group's own (see the module's docstring)
NODE_KEYS = ("network", "rails", "host_link", "gpus_per_host_link", "host_memory_bandwidth",
             "disk_bandwidth", "gpu_link", "gpu_nics")


class Group(_Spec):
    """Some nodes of a mixed cluster, all of one GPU and one node shape;
    ``compute`` (a step law) replaces ``timing.compute`` for its learners."""

    nodes: Count
    gpus_per_node: Count
    gpu: Annotated[GpuSpec, _from_catalog("gpus")]
    machine: str | None = None
    compute: StepLawSpec | None = None
    # the node's parts (fold_groups fills them; see the module's docstring)
    network: Link
    host_link: Link
    gpus_per_host_link: Count
    host_memory_bandwidth: BytesPerSecond
    disk_bandwidth: BytesPerSecond
    gpu_link: Link | None = None
    rails: Count = 1
    gpu_nics: Count | None = None

    @model_validator(mode="before")
    @classmethod
    def _gpu_of_machine(cls, data: Any) -> Any:
        """A machine preset gives the group its GPU and GPUs per node;
        explicit keys win."""
        if not isinstance(data, dict) or not isinstance(data.get("machine"), str):
            return data
        preset = _preset(data["machine"])
        if preset is None:
            return data      # the machine key's own check says what is wrong
        return {"gpu": preset["gpu"], "gpus_per_node": preset["gpus_per_node"],
                **data, "machine": preset["name"]}

    @field_validator("machine")
    @classmethod
    def _known_machine(cls, name: str | None) -> str | None:
        return None if name is None else catalog.lookup("machines", name)["name"]

    @property
    def shape(self) -> tuple:
        """What a node of this group is, besides its GPUs' speed: groups of
        one shape share a topology block and their durations."""
        return (self.gpus_per_node, *(getattr(self, key) for key in NODE_KEYS))


def _preset(name: str) -> dict | None:
    try:
        return catalog.lookup("machines", name)
    except catalog.CatalogError:
        return None


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _gpus_per_node(group: dict) -> Any:
    """A raw group's GPUs per node: its own, else its machine's."""
    if group.get("gpus_per_node") is None and isinstance(group.get("machine"), str):
        return (_preset(group["machine"]) or {}).get("gpus_per_node")
    return group.get("gpus_per_node")


def _gpu_host_link(group: dict) -> Any:
    """A raw group's GPU's host link, or None where its gpu key is wrong
    (that key's own error says what)."""
    gpu = group.get("gpu")
    if gpu is None and isinstance(group.get("machine"), str):
        gpu = (_preset(group["machine"]) or {}).get("gpu")
    try:
        gpu = catalog.lookup("gpus", gpu) if isinstance(gpu, str) else gpu
        return gpu["host_link"]
    except (catalog.CatalogError, KeyError, TypeError):
        return None


def fold_groups(data: dict) -> dict:
    """The raw cluster mapping with each group's node filled in (see the
    module's docstring) and the groups folded into the cluster's keys: the
    total ``nodes``, and the first group's ``gpus_per_node``, ``gpu`` and
    node parts. Raises a keyed error where a group asks for more GPUs per
    node than its machine holds."""
    from .scenario import GENERIC_NODE, KeyedError

    if given := [k for k in REPLACED if data.get(k) is not None]:
        raise KeyedError("cluster.groups",
                         f"give either groups or {', '.join(given)} at the top of cluster, not "
                         "both (each group names its own nodes, gpu or machine, gpus_per_node)")
    raw = data["groups"]
    if not isinstance(raw, list) or not raw or not all(isinstance(g, dict) for g in raw):
        return data          # the groups field's own check says what is wrong
    groups = [dict(g) for g in raw]
    presets = [_preset(g["machine"]) if isinstance(g.get("machine"), str) else None
               for g in groups]
    for i, (group, preset) in enumerate(zip(groups, presets)):
        if group.get("gpu") is None and group.get("machine") is None:
            raise KeyedError(f"cluster.groups.{i}",
                             "expected gpu (a catalog name or an inline spec) or machine (a "
                             "preset): what the group's nodes hold")
        count = group.get("gpus_per_node")
        if preset is not None and _is_count(count) and count > preset["gpus_per_node"]:
            raise KeyedError(f"cluster.groups.{i}.gpus_per_node",
                             f"expected at most {preset['gpus_per_node']} (a {preset['name']} "
                             f"node holds {preset['gpus_per_node']} GPUs), got {count}")
    # a group that gives no GPUs per node and no machine takes the first group's count
    counts = [c for g in groups if _is_count(c := _gpus_per_node(g))]
    for group in groups:
        if group.get("gpus_per_node") is None and counts and _gpus_per_node(group) is None:
            group["gpus_per_node"] = counts[0]
    # what a group without the key in any of its sources takes: the first
    # machine's (the node it was added to), else the generic node
    machines = {key: preset[key] for preset in reversed([p for p in presets if p])
                for key in NODE_KEYS if key in preset}
    fallback = {**GENERIC_NODE, **machines}
    for group, preset in zip(groups, presets):
        for key in NODE_KEYS:
            if key in group:
                continue
            if key in data:
                group[key] = data[key]        # the cluster's own key: for every node
            elif preset is not None and key in preset:
                group[key] = preset[key]
            elif key == "host_link" and (link := _gpu_host_link(group)) is not None:
                group[key] = link
            elif key in fallback:
                group[key] = fallback[key]
    # (a group whose machine is unknown has its own error to tell)
    if "network" not in data and not any("network" in g or "machine" in g for g in groups):
        raise KeyedError("cluster.network",
                         "required key is missing: no group names a machine or a network; give "
                         "the network at the top of cluster (every node's) or in each group")
    first = groups[0]
    out = {**{key: first[key] for key in NODE_KEYS if key in first}, **data, "groups": groups}
    nodes = [g.get("nodes") for g in groups]
    # a group's bad count is its own error; the total then only has to be valid
    out["nodes"] = sum(nodes) if all(_is_count(n) for n in nodes) else 1
    if _is_count(count := _gpus_per_node(first)):
        out["gpus_per_node"] = count
    first_gpu = first.get("gpu")
    if first_gpu is None and presets[0] is not None:
        first_gpu = presets[0].get("gpu")
    if first_gpu is not None:
        out["gpu"] = first_gpu
    return out


def leave_out(data: dict, indices) -> dict:
    """The raw cluster mapping without the groups at ``indices`` (the
    planner's candidates that book no node of them). Each group left keeps
    its node as it was: what it took from another group (the first
    machine's network, the first group's GPUs per node) is written into it
    before that group goes."""
    gone = set(indices)
    groups = fold_groups(data)["groups"]
    for group in groups:
        if group.get("gpus_per_node") is None:
            group["gpus_per_node"] = _gpus_per_node(group)
    return {**data, "groups": [g for i, g in enumerate(groups) if i not in gone]}


def group_scenario(scenario, index: int):
    """Group ``index`` as a scenario of its own: its nodes as a cluster
    without groups, with its step law; algorithm, timing and stop the
    scenario's. Persistently slow learners, numbered in the whole cluster,
    stay with it (costs.learner_laws)."""
    group = scenario.cluster.groups[index]
    timing = scenario.timing if group.compute is None else scenario.timing.model_copy(
        update={"compute": group.compute, "jitter": "none"})
    return scenario.model_copy(update={
        "cluster": scenario.cluster.group_cluster(index), "timing": timing,
        "faults": scenario.faults.model_copy(update={"slow_learners": None})})


def group_of_learner(cluster) -> np.ndarray:
    """Each learner's group (0-based): numbered group by group, node by node."""
    return np.repeat(np.arange(len(cluster.groups), dtype=np.int32), cluster.group_learners)


def group_figures(cluster, gradients: pd.DataFrame) -> list[dict]:
    """summary.json's ``groups``: each group's learners, GPU, mean step (a
    gradient's t_end - t_start: from taking the weights to reaching its
    aggregation point) and share of the applied samples."""
    which = gradients["group"].to_numpy()
    step = (gradients["t_end"] - gradients["t_start"]).to_numpy()
    samples = gradients["samples"].to_numpy()
    total = float(samples.sum())
    out = []
    for i, (group, learners) in enumerate(zip(cluster.groups, cluster.group_learners)):
        mine = which == i
        out.append({"learners": learners, "gpu": group.gpu.name,
                    "mean_step_s": float(step[mine].mean()) if mine.any() else None,
                    "throughput_share": float(samples[mine].sum()) / total if total else 0.0})
    return out
