"""Mixed clusters: ``cluster.groups``, nodes of different GPUs in one cluster.

A group is some nodes of one GPU (named, or a machine preset's) and,
optionally, its own step law (``compute``, in place of ``timing.compute``).
Learners are numbered group by group, node by node, so a learner's group
follows from its index. What differs between groups is each learner's step
law (:func:`asgdsim.costs.learner_laws`); every algorithm already draws each
learner's steps from a stream of its own, so nothing else in the simulator
changes and a cluster without groups runs exactly as before.

What the groups share is the node: GPUs per node, host links, disk, memory
and network. The topology describes nodes of one shape, so groups whose
nodes differ are refused (naming the group's key) until it learns more.

This module owns the group spec, folding groups into the cluster's own keys
(``nodes`` becomes the groups' total, ``gpus_per_node`` the shared one,
``gpu`` the first group's, which the cluster-wide estimates read), which
group each learner is in, and the summary's per-group figures.
"""

from __future__ import annotations

from typing import Annotated, Any

import numpy as np
import pandas as pd
from pydantic import field_validator, model_validator

from . import catalog
from .specs import Count, GpuSpec, StepLawSpec, _from_catalog, _Spec

__all__ = ["Group", "NODE_KEYS", "fold_groups", "group_of_learner", "group_figures"]

#: the cluster keys that groups replace (a cluster gives one or the other)
REPLACED = ("nodes", "gpus_per_node", "gpu", "machine")
#: what a node is made of besides its GPUs: shared by every group
NODE_KEYS = ("network", "rails", "host_link", "gpus_per_host_link", "host_memory_bandwidth",
             "disk_bandwidth", "gpu_link", "gpu_nics")


class Group(_Spec):
    """Some nodes of a mixed cluster, all of one GPU; ``compute`` (a step
    law) replaces ``timing.compute`` for its learners."""

    nodes: Count
    gpus_per_node: Count
    gpu: Annotated[GpuSpec, _from_catalog("gpus")]
    machine: str | None = None
    compute: StepLawSpec | None = None

    @model_validator(mode="before")
    @classmethod
    def _gpu_of_machine(cls, data: Any) -> Any:
        """A machine preset gives the group its GPU and GPUs per node;
        explicit keys win (its node's other parts are the cluster's)."""
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


def _node_parts(group: dict) -> tuple[str, dict]:
    """(the group key they come from, the node parts a group brings): its
    machine's, else its GPU's host link."""
    if isinstance(group.get("machine"), str) and (preset := _preset(group["machine"])):
        return "machine", {k: preset[k] for k in NODE_KEYS if k in preset}
    gpu = group.get("gpu")
    try:
        gpu = catalog.lookup("gpus", gpu) if isinstance(gpu, str) else gpu
        return "gpu", {"host_link": gpu["host_link"]}
    except (catalog.CatalogError, KeyError, TypeError):
        return "gpu", {}     # the gpu key's own error says what is wrong


def fold_groups(data: dict) -> dict:
    """The raw cluster mapping with its groups folded into the cluster's
    keys: the total ``nodes``, the shared ``gpus_per_node`` (a group that
    gives none takes the others'), the first group's ``gpu``, and the node's
    parts from the groups' machines (or GPUs' host links) where the cluster
    does not give them. Raises a keyed error where the groups' nodes differ."""
    from .scenario import KeyedError

    if given := [k for k in REPLACED if data.get(k) is not None]:
        raise KeyedError("cluster.groups",
                         f"give either groups or {', '.join(given)} at the top of cluster, not "
                         "both (each group names its own nodes, gpu or machine, gpus_per_node)")
    raw = data["groups"]
    if not isinstance(raw, list) or not raw or not all(isinstance(g, dict) for g in raw):
        return data          # the groups field's own check says what is wrong
    groups = [dict(g) for g in raw]
    counts = [(i, c) for i, g in enumerate(groups) if _is_count(c := _gpus_per_node(g))]
    shared_count = counts[0] if counts else None
    for i, count in counts[1:]:
        if count != shared_count[1]:
            raise KeyedError(f"cluster.groups.{i}.gpus_per_node",
                             f"expected {shared_count[1]} (the GPUs per node of group "
                             f"{shared_count[0]}), got {count}: groups whose nodes hold different "
                             "numbers of GPUs are not supported yet")
    shared: dict[str, tuple[int, Any]] = {}
    for i, group in enumerate(groups):
        if shared_count is not None and group.get("gpus_per_node") is None:
            group["gpus_per_node"] = shared_count[1]
        source, parts = _node_parts(group)
        for key, value in parts.items():
            if key in data:
                continue     # the cluster's own key: one value for every node
            first, seen = shared.setdefault(key, (i, value))
            if value != seen:
                raise KeyedError(
                    f"cluster.groups.{i}.{source}",
                    f"its nodes' {key} ({value}) differs from group {first}'s ({seen}): groups "
                    f"whose nodes differ are not supported yet (give cluster.{key} to use one "
                    "for every node)")
    out = {**data, **{key: value for key, (_, value) in shared.items()}, "groups": groups}
    nodes = [g.get("nodes") for g in groups]
    # a group's bad count is its own error; the total then only has to be valid
    out["nodes"] = sum(nodes) if all(_is_count(n) for n in nodes) else 1
    if shared_count is not None:
        out["gpus_per_node"] = shared_count[1]
    first_gpu = groups[0].get("gpu")
    if first_gpu is None and isinstance(groups[0].get("machine"), str):
        first_gpu = (_preset(groups[0]["machine"]) or {}).get("gpu")
    if first_gpu is not None:
        out["gpu"] = first_gpu
    return out


def group_of_learner(cluster) -> np.ndarray:
    """Each learner's group (0-based): numbered group by group, node by node."""
    per_node = cluster.learners_per_node
    return np.repeat(np.arange(len(cluster.groups), dtype=np.int32),
                     [g.nodes * per_node for g in cluster.groups])


def group_figures(cluster, gradients: pd.DataFrame) -> list[dict]:
    """summary.json's ``groups``: each group's learners, GPU, mean step (a
    gradient's t_end - t_start: from taking the weights to reaching its
    aggregation point) and share of the applied samples."""
    which = gradients["group"].to_numpy()
    step = (gradients["t_end"] - gradients["t_start"]).to_numpy()
    samples = gradients["samples"].to_numpy()
    total = float(samples.sum())
    out = []
    for i, group in enumerate(cluster.groups):
        mine = which == i
        out.append({"learners": group.nodes * cluster.learners_per_node, "gpu": group.gpu.name,
                    "mean_step_s": float(step[mine].mean()) if mine.any() else None,
                    "throughput_share": float(samples[mine].sum()) / total if total else 0.0})
    return out
