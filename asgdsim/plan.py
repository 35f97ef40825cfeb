"""The planner: the fastest configuration that meets a target mini-batch size.

This is the use Oyama et al. made of their model. For a scenario (its
machine, model and algorithm), enumerate node counts (every one up to 16,
then a quarter apart at most, within the machine's size), GPUs per node (up to the machine's) and sub-batch sizes
within ``max_gpus``, and for the kinds between sync and async their knob
too (``Kind.knob``: K, n or the staleness bound, one more column); drop
those that do not fit in GPU memory; predict the rest with the closed form
(milliseconds each); keep those whose mean mini-batch is within
``tolerance`` of the target (and whose mean staleness is at most
``max_staleness``); rank them by predicted epoch time.

A mixed cluster (``cluster.groups``) says what the user has: group i has
N_i nodes of its shape. The plan books from each group 0, 1, 2, 4, ... or
N_i of its nodes (at least one node in all); a group booked at 0 is left
out of the candidate's scenario altogether (should the slow nodes be added
at all?). One cap g on GPUs per node is searched, and a group's nodes use
min(g, the GPUs its node holds). Memory must fit on every booked group's
GPU, ``max_gpus`` bounds the GPUs used, and a booked node's idle GPUs are
paid for, as a uniform cluster's are. plan.csv gains a column per group,
``cluster.groups.<i>.nodes``: the nodes booked of it (0: left out).

The closed form proposes, the simulation decides: the best candidates are
simulated, and one whose simulation misses the target band is refuted and
the next one simulated in its place, until ``confirm`` are feasible by
simulation or the candidates run out. Confirmed configurations rank first
(by simulated epoch time), then those only the closed form vouches for, then
the refuted, then the rest.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import re

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from . import budget, catalog
from .analytic import predict
from .errors import ScenarioError
from .groups import leave_out
from .scenario import apply_overrides, scenario_from_dict
from .specs import GpuSpec
from .sweep import (Point, check_points, dask_client, naming, point_scenario, raw_scenario,
                    run_on_dask)

__all__ = ["Plan", "Shape", "plan", "candidate_raw", "SUB_BATCHES", "COLUMNS", "MAX_BOOKINGS"]

SUB_BATCHES = (8, 16, 32, 64, 128, 256)
COLUMNS = ["rank", "nodes", "gpus_per_node", "sub_batch", "feasible", "predicted_epoch_time_s",
           "predicted_minibatch_mean", "simulated_epoch_time_s", "simulated_minibatch_mean",
           "predicted_staleness_mean", "gpu_hours_per_epoch", "fits_memory", "seed"]
#: the most combinations of the groups' node counts a mixed plan ranks (each
#: with every cap on GPUs per node, sub-batch and knob value, by the closed form)
MAX_BOOKINGS = 1024
#: epoch times this close (relative to the faster) count as equally fast by
#: default: finer than the closed form can tell apart
SAME_SPEED = 0.01
_GROUP_NODES = re.compile(r"cluster\.groups\.(\d+)\.nodes")


@dataclass(frozen=True)
class Shape:
    """A kind of node the plan books: a uniform cluster's, or one group's."""

    gpu: GpuSpec
    node_gpus: int                 # GPUs a node holds (idle ones are paid for too)
    counts: tuple[int, ...]        # node counts the plan may book (0: the group left out)


@dataclass(frozen=True)
class Plan:
    """What ``plan`` found: every candidate ranked (plan.csv), with what the
    search was asked and what its simulations settled."""

    table: pd.DataFrame          # every candidate, ranked (plan.csv)
    target: float
    tolerance: float
    max_staleness: float | None
    wanted: int                  # how many confirmations were asked for
    simulated: int               # how many candidates were simulated
    confirmed: int               # how many of them the simulation found feasible
    order_agrees: bool           # simulation ranks the confirmed as the closed form does
    node_gpus: int               # GPUs a booked node holds (a mixed cluster's first group's)
    minibatch_is_sub_batch: bool  # the cluster cannot change the mini-batch (async)
    knob: str | None = None      # the kind's searched key (its column), if it has one
    groups: tuple[Shape, ...] = ()  # a mixed cluster's groups, in the file's order

    @property
    def best(self) -> pd.Series | None:
        first = self.table.iloc[0] if len(self.table) else None
        return first if first is not None and first["feasible"] else None

    @property
    def exhausted(self) -> bool:
        """Fewer than ``wanted`` confirmed: no candidate was left to simulate."""
        return self.confirmed < self.wanted

    @property
    def group_columns(self) -> list[str]:
        """plan.csv's column of booked nodes per group (none for a uniform cluster)."""
        return [f"cluster.groups.{i}.nodes" for i in range(len(self.groups))]

    def booked(self, row) -> list[tuple[int, Shape, int]]:
        """A mixed row's booked groups: (nodes, group, GPUs used per node)."""
        cap = int(row["gpus_per_node"])
        return [(int(row[c]), g, min(cap, g.node_gpus))
                for c, g in zip(self.group_columns, self.groups) if row[c]]

    def describe(self, row) -> str:
        """A configuration in words: "8 x 4 GPUs, sub-batch 32", or for a
        mixed cluster "4 K80 nodes x 8 + 2 P100 nodes x 4 GPUs, sub-batch 32"."""
        if self.groups:
            nodes = " + ".join(f"{n} {g.gpu.name} node{'s' * (n != 1)} x {used}"
                               for n, g, used in self.booked(row)) + " GPUs"
        else:
            nodes = f"{int(row['nodes'])} x {int(row['gpus_per_node'])} GPUs"
        knob = f", {self.knob} {int(row[self.knob])}" if self.knob else ""
        return f"{nodes}, sub-batch {int(row['sub_batch'])}{knob}"


def _machine(node) -> tuple[int, int | None]:
    """GPUs a node holds (its machine's, else its own count) and the largest
    node count the machine has; ``node`` is a cluster or a group."""
    if node.machine is None:
        return node.gpus_per_node, None
    preset = catalog.lookup("machines", node.machine)
    return preset["gpus_per_node"], preset.get("max_nodes")


def _powers_of_two(limit: int) -> list[int]:
    return [1 << k for k in range(max(limit, 0).bit_length())]


#: node counts up to this are all tried; beyond, those of 3 significant bits
EVERY_NODE_COUNT = 16


def _node_counts(limit: int) -> list[int]:
    """A uniform cluster's node counts: every one up to EVERY_NODE_COUNT,
    then 16, 20, 24, 28, 32, 40, 48, ... (a quarter apart at most), up to
    ``limit`` and the limit itself. Powers of two alone left targets
    between them unmet: 16 nodes of 4 V100s, sync, a mini-batch of 1,280
    (5 nodes of sub-batch 256, or 10 of 4 GPUs at 32) came out as no
    configuration (a new user's trial)."""
    counts = set(range(1, min(limit, EVERY_NODE_COUNT) + 1))
    for power in _powers_of_two(limit):
        counts |= {n for n in (power, power * 5 // 4, power * 3 // 2, power * 7 // 4)
                   if power >= EVERY_NODE_COUNT and n <= limit}
    return sorted(counts | ({limit} if limit > 0 else set()))


def _shapes(cluster, max_gpus: int) -> tuple[Shape, ...]:
    """What the plan books: a uniform cluster's node, any of
    :func:`_node_counts` of them (within the machine and ``max_gpus``); or
    each group's node, 0, a power of two or all of the group's nodes."""
    if cluster.groups is None:
        per_node, max_nodes = _machine(cluster)
        limit = max_gpus if max_nodes is None else min(max_nodes, max_gpus)
        return (Shape(cluster.gpu, per_node, tuple(_node_counts(limit))),)
    return tuple(Shape(g.gpu, _machine(g)[0],
                       tuple(sorted({0, *_powers_of_two(g.nodes), g.nodes})))
                 for g in cluster.groups)


def _configurations(shapes: tuple[Shape, ...], step: int,
                    max_gpus: int) -> list[tuple[int, tuple[int, ...]]]:
    """Every (cap on GPUs per node, nodes booked of each shape) within
    ``max_gpus``, caps a multiple of ``step`` (GPUs per learner). A cap above
    every booked node's GPUs is the same configuration as the largest of
    them, so it is not repeated."""
    out = []
    for cap in range(step, max(s.node_gpus for s in shapes) + 1, step):
        used = [min(cap, s.node_gpus) for s in shapes]
        for booking in itertools.product(*(s.counts for s in shapes)):
            if (any(booking) and cap <= max(s.node_gpus for s, n in zip(shapes, booking) if n)
                    and sum(n * u for n, u in zip(booking, used)) <= max_gpus):
                out.append((cap, booking))
    return out


def _point(mixed: bool, cap: int, booking: tuple[int, ...], shapes: tuple[Shape, ...],
           sub_batch: int, knob: tuple[str, int] | None) -> Point:
    """A candidate as the overrides that make it (see candidate_raw): a
    uniform cluster's nodes and GPUs per node, or each group's nodes (0:
    left out) and the GPUs per node a booked group uses."""
    if not mixed:
        values = [("cluster.nodes", booking[0]), ("cluster.gpus_per_node", cap)]
    else:
        values = []
        for i, (n, shape) in enumerate(zip(booking, shapes)):
            values.append((f"cluster.groups.{i}.nodes", n))
            if n:
                values.append((f"cluster.groups.{i}.gpus_per_node", min(cap, shape.node_gpus)))
    values.append(("workload.sub_batch", sub_batch))
    if knob:
        values.append((f"algorithm.{knob[0]}", knob[1]))
    return Point(tuple((key, int(value)) for key, value in values), 0)


def candidate_raw(raw: dict, overrides: dict, source: str) -> dict:
    """The raw scenario of one candidate: its overrides set as ``--set``
    sets them, then the groups it books no node of
    (``cluster.groups.<i>.nodes`` 0) left out (groups.leave_out), and the
    persistently slow learners it still has (slow_learners_kept)."""
    data = apply_overrides(raw, overrides, source)
    out = [int(m.group(1)) for key, value in overrides.items()
           if (m := _GROUP_NODES.fullmatch(key)) and value == 0]
    if out:
        data["cluster"] = leave_out(data["cluster"], out)
    slow = (data.get("faults") or {}).get("slow_learners")
    if isinstance(slow, dict) and isinstance(slow.get("learners"), list):
        kept = _slow_learners_kept(raw, data, out, slow["learners"], source)
        data["faults"] = {**data["faults"], "slow_learners": {**slow, "learners": kept}}
        if not kept:
            del data["faults"]["slow_learners"]
    return data


def _slow_learners_kept(raw: dict, data: dict, left_out: list[int], listed: list,
                        source: str) -> list[int]:
    """The listed slow learners (numbered group by group, node by node, in
    the user's cluster) that a candidate books, numbered in its own cluster:
    a learner keeps its group and its place in it, and is gone where its
    group is left out or the candidate books fewer of the group's learners."""
    def per_group(d: dict) -> tuple[int, ...]:
        bare = {**d, "faults": {k: v for k, v in d["faults"].items() if k != "slow_learners"}}
        return scenario_from_dict(bare, source=source).cluster.group_learners
    before, after = per_group(raw), list(per_group(data))
    kept_groups = [g for g in range(len(before)) if g not in left_out]
    out = []
    for index in listed:
        if not isinstance(index, int) or index < 0:
            return listed        # the scenario's own check says what is wrong
        group, offset = 0, index
        while group < len(before) and offset >= before[group]:
            offset, group = offset - before[group], group + 1
        if group in kept_groups:
            position = kept_groups.index(group)
            if offset < after[position]:
                out.append(sum(after[:position]) + offset)
    return sorted(set(out))


def plan(scenario: str | Path, target: float, tolerance: float = 0.1, max_gpus: int = 1024,
         confirm: int = 3, workers: int = 1, scheduler: str | None = None,
         overrides: dict | None = None, max_staleness: float | None = None,
         max_events: float = budget.DEFAULT_MAX_EVENTS,
         max_memory: float = budget.DEFAULT_MAX_MEMORY, progress=None,
         same_speed: float = SAME_SPEED) -> Plan:
    """Rank every configuration by the closed form; confirm by simulation.

    ``overrides`` (dotted keys, as ``--set``) change the scenario first.
    Epoch times within ``same_speed`` (relative) of a class's fastest count
    as equally fast, and of those the fewest GPU-hours rank first: 0.1 books
    the cheapest configuration within 10 % of the fastest.
    Every candidate that confirming may simulate (the feasible ones, in
    turn) has its run estimated first, and one beyond ``max_events`` or
    ``max_memory`` (budget.py) is refused before any simulation starts.
    ``progress`` is called with (confirmed, refuted, simulations wanted) as
    each confirming simulation ends."""
    if not 0 <= same_speed < 1:
        raise ValueError(f"same_speed: expected a fraction at least 0 and below 1, got {same_speed}")
    raw, source = raw_scenario(scenario, overrides)
    raw = apply_overrides(raw, overrides or {}, source)
    base = scenario_from_dict(raw, source=source)
    cluster = base.cluster
    mixed = cluster.groups is not None
    shapes = _shapes(cluster, max_gpus)
    if mixed and math.prod(len(s.counts) for s in shapes) > MAX_BOOKINGS:
        counts = " x ".join(str(len(s.counts)) for s in shapes)
        raise ScenarioError(source, [("cluster.groups", (
            f"plan books 0, a power of two or all of each group's nodes: {counts} = "
            f"{math.prod(len(s.counts) for s in shapes):,} combinations of the groups, more "
            f"than the {MAX_BOOKINGS:,} it ranks (each with every GPU count per node, "
            "sub-batch and knob value); merge groups of one GPU and node, or plan fewer groups "
            "(--set their nodes lower)"))])

    def within(minibatch: float, staleness: float) -> bool:
        return (abs(minibatch - target) <= tolerance * target
                and (max_staleness is None or staleness <= max_staleness))

    from .algorithms import KINDS

    knob = KINDS[base.algorithm.kind].knob
    knob_key = knob(1)[0] if knob else None
    group_columns = [f"cluster.groups.{i}.nodes" for i in range(len(shapes))] if mixed else []
    columns = COLUMNS + group_columns + ([knob_key] if knob else [])
    step = cluster.gpus_per_learner
    fitting = {}     # (GPU memory, sub-batch): whether a GPU's share of the step fits in it

    def fits(gpu: GpuSpec, sub_batch: int) -> bool:
        if (gpu.memory, sub_batch) not in fitting:
            fitting[gpu.memory, sub_batch] = base.footprint_on(gpu, sub_batch).fits
        return fitting[gpu.memory, sub_batch]

    rows = []
    for cap, booking in _configurations(shapes, step, max_gpus):
        learners = sum(n * (min(cap, s.node_gpus) // step) for n, s in zip(booking, shapes))
        for sub_batch in SUB_BATCHES:
            fit = all(fits(s.gpu, sub_batch) for n, s in zip(booking, shapes) if n)
            for value in (knob(learners)[1] if knob and learners else [None]):
                point = _point(mixed, cap, booking, shapes, sub_batch,
                               (knob_key, value) if knob else None)
                rows.append({"nodes": sum(booking), "gpus_per_node": cap, "sub_batch": sub_batch,
                             "fits_memory": fit, **dict(zip(group_columns, booking)),
                             **({knob_key: value} if knob else {}), "point": point,
                             "gpus_booked": sum(n * s.node_gpus for n, s in zip(booking, shapes))})
    # more than one worker (or a cluster's): the closed forms too run there,
    # and the confirming simulations on the same workers
    parallel = workers > 1 or scheduler is not None
    with dask_client(workers, scheduler) if parallel else contextlib.nullcontext() as client:
        _predict(rows, raw, source, client)
        table = pd.DataFrame(rows, columns=[c for c in columns if c not in ("rank", "feasible")]
                             + ["point"])
        table["feasible"] = [bool(f) and within(m, st) for f, m, st in zip(
            table["fits_memory"], table["predicted_minibatch_mean"],
            table["predicted_staleness_mean"])]
        # epoch times within 1 % count as equally fast (finer than the model
        # can tell apart): of those, the one that costs fewer GPU-hours first
        # (classes among the feasible, and among the rest: an infeasible
        # candidate anchors no feasible one's class)
        table["speed"] = table.groupby("feasible")["predicted_epoch_time_s"].transform(
            _speed_class, same_speed)
        table = table.sort_values(["feasible", "speed", "gpu_hours_per_epoch"],
                                  ascending=[False, True, True], ignore_index=True)

        # confirm in closed-form order; each refuted candidate hands its turn on
        queue = list(table.index[table["feasible"]])
        index_of = {table.loc[i, "point"]: i for i in queue}
        if confirm:
            # any feasible candidate may be simulated (a refuted one hands its
            # turn on): all are estimated before the first simulation starts
            check_points(raw, source, [table.loc[i, "point"] for i in queue], "candidate",
                         max_events=max_events, max_memory=max_memory, apply=candidate_raw)
        first, queue = queue[:confirm], queue[confirm:]
        confirmed, refuted = [], []
        launched = [len(first)]         # simulations asked for so far

        def finished(point: Point, row: dict | None, error: BaseException | None) -> list[Point]:
            if error is not None:
                raise error
            i = index_of[point]
            table.loc[i, "simulated_epoch_time_s"] = row["epoch_time_s"]
            table.loc[i, "simulated_minibatch_mean"] = row["minibatch_mean"]
            # the simulation's own seed (the scenario's and the candidate's): a run
            # with --seed and the candidate's --set gives its figures again
            table.loc[i, "seed"] = row["seed"]
            table.loc[i, "feasible"] = within(row["minibatch_mean"], row["staleness_mean"])
            if table.loc[i, "feasible"]:
                confirmed.append(i)
            else:
                refuted.append(i)
            # each refuted candidate hands its turn to the next, while any is left
            more = ([table.loc[queue.pop(0), "point"]]
                    if queue and not table.loc[i, "feasible"] else [])
            launched[0] += len(more)
            if progress:
                progress(len(confirmed), len(refuted), launched[0])
            return more

        if progress and first:
            progress(0, 0, len(first))
        run_on_dask(raw, source, [table.loc[i, "point"] for i in first], finished,
                    workers=workers, scheduler=scheduler, apply=candidate_raw, client=client)

    table["seed"] = table["seed"].astype("Int64")
    simulated = table["simulated_epoch_time_s"].notna()
    group = np.select([simulated & table["feasible"], table["feasible"], simulated], [0, 1, 2], 3)
    time = table["simulated_epoch_time_s"].where(simulated & table["feasible"],
                                                 table["predicted_epoch_time_s"])
    speed = pd.Series(time).groupby(group).transform(_speed_class, same_speed)  # per rank group
    order = np.lexsort((table["gpu_hours_per_epoch"].fillna(np.inf).to_numpy(),
                        speed.to_numpy(), group))
    table = table.iloc[order].reset_index(drop=True)
    table.insert(0, "rank", np.arange(1, len(table) + 1))
    # the confirmed in the closed form's own order (its speed classes and
    # GPU-hours, as they were queued), not by raw predicted time: times
    # 0.0003 % apart are one class, and their order by GPU-hours is both's
    ok = simulated.iloc[order].to_numpy() & table["feasible"].to_numpy()
    order_agrees = bool(np.all(np.diff(order[ok]) > 0))
    fitting_rows = table[table["fits_memory"]]
    return Plan(table[columns], target, tolerance, max_staleness, confirm, int(simulated.sum()),
                len(confirmed), bool(order_agrees), shapes[0].node_gpus,
                bool(len(fitting_rows)) and bool(np.allclose(
                    fitting_rows["predicted_minibatch_mean"], fitting_rows["sub_batch"])),
                knob_key, shapes if mixed else ())


def _predict(rows: list[dict], raw: dict, source: str, client=None) -> None:
    """Each row that fits in memory gets its closed form's figures: on the
    client's workers where there is a client, else in this process."""
    candidates = [row for row in rows if row["fits_memory"]]
    points = [row["point"] for row in candidates]
    if client is None:
        figures = [predict_point(p, raw, source) for p in points]
    else:
        futures = client.map(predict_point, points, raw=raw, source=source, pure=False)
        try:
            figures = client.gather(futures)
        except BaseException:
            client.cancel(futures)     # Ctrl-C: the rest are not run, nor reported
            raise
    for row, figure in zip(candidates, figures):
        if figure is None:
            # refused: predicted again here, where its error is named
            with naming(source, row["point"], "candidate"):
                p = predict(point_scenario(raw, source, row["point"], candidate_raw))
            figure = p.epoch_time_s, p.minibatch.mean, p.staleness.mean
        epoch_time_s, minibatch, staleness = figure
        row.update(predicted_epoch_time_s=epoch_time_s, predicted_minibatch_mean=minibatch,
                   predicted_staleness_mean=staleness,
                   gpu_hours_per_epoch=row["gpus_booked"] * epoch_time_s / 3600)


def predict_point(point: Point, raw: dict, source: str) -> tuple[float, float, float] | None:
    """A candidate's closed form: (epoch time, mean mini-batch, mean
    staleness), or None where its scenario is refused (runs on a worker)."""
    try:
        p = predict(point_scenario(raw, source, point, candidate_raw))
    except ScenarioError:
        return None
    return p.epoch_time_s, p.minibatch.mean, p.staleness.mean


def _speed_class(epoch_time_s: pd.Series, same_speed: float = SAME_SPEED) -> pd.Series:
    """Epoch times in classes, fastest first: each class the times within
    ``same_speed`` of its fastest (fixed buckets 1 % wide would part two
    times 0.4 % apart at a bucket's edge); unknown times last."""
    times = epoch_time_s.fillna(np.inf).to_numpy(dtype=float)
    classes = np.empty(len(times))
    fastest, current = -np.inf, -1
    for i in np.argsort(times, kind="stable"):
        if not times[i] <= fastest * (1 + same_speed):
            fastest, current = times[i], current + 1
        classes[i] = current if np.isfinite(times[i]) else np.inf
    return pd.Series(classes, index=epoch_time_s.index)


def plan_figure(result: Plan, name: str) -> Figure:
    """Epoch time (s) against mean mini-batch for every candidate that fits
    in memory, by the closed form: the target band shaded, each kind of candidate in its own
    marker with its count in the legend, the simulated ones with their
    simulated figures, and the choice marked."""
    t = result.table
    fig = Figure(figsize=(8.5, 5), layout="constrained")
    ax = fig.add_subplot()
    lo, hi = result.target * (1 - result.tolerance), result.target * (1 + result.tolerance)
    ax.axvspan(lo, hi, color="#2e8b57", alpha=0.12, label=f"target {result.target:g} ± {result.tolerance:.0%}")
    too_big = ~t["fits_memory"]       # never predicted: nothing to draw
    limit = "" if result.max_staleness is None else f" or above staleness {result.max_staleness:g}"
    # what the closed form alone says (a refuted candidate was in it)
    predicted_ok = t["fits_memory"] & t["predicted_minibatch_mean"].between(lo, hi)
    if result.max_staleness is not None:
        predicted_ok &= t["predicted_staleness_mean"] <= result.max_staleness
    kinds = [(~too_big & ~predicted_ok, dict(s=8, color="#9aa5b1"),
              f"outside the band{limit}, by the closed form"),
             (predicted_ok, dict(s=28, color="#2e8b57", edgecolors="white", linewidths=0.5),
              f"in the band{' and under the staleness limit' if limit else ''}, by the closed form")]
    for rows, style, label in kinds:
        ax.scatter(t.loc[rows, "predicted_minibatch_mean"], t.loc[rows, "predicted_epoch_time_s"],
                   label=f"{label} ({int(rows.sum())})", zorder=3, **style)
    simulated = t.dropna(subset=["simulated_epoch_time_s"])
    for confirmed, style, label in ((True, dict(marker="s", edgecolors="#1f3b5c"), "confirmed by simulation"),
                                    (False, dict(marker="D", edgecolors="#c0392b"), "refuted by simulation")):
        rows = simulated[simulated["feasible"] == confirmed]
        if len(rows):
            ax.scatter(rows["simulated_minibatch_mean"], rows["simulated_epoch_time_s"], s=60,
                       facecolors="none", zorder=4, label=f"{label}, simulated figures ({len(rows)})",
                       **style)
    if result.best is not None:
        b = result.best
        ax.scatter([b["predicted_minibatch_mean"]], [b["predicted_epoch_time_s"]], marker="*",
                   s=260, color="#c0392b", edgecolors="white", zorder=5,
                   label=f"choice: {result.describe(b)}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("mean mini-batch size (samples)")
    ax.set_ylabel("epoch time (s)")
    fig.suptitle(f"{name}: configurations for a mini-batch of {result.target:g}"
                 + (f"\n({int(too_big.sum())} more do not fit in GPU memory)" if too_big.any() else ""),
                 fontsize=10)
    ax.legend(frameon=False, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    return fig
