"""The planner: the fastest configuration that meets a target mini-batch size.

This is the use Oyama et al. made of their model. For a scenario (its
machine, model and algorithm), enumerate node counts (powers of two, within
the machine's size), GPUs per node (up to the machine's) and sub-batch sizes
within ``max_gpus``, and for the kinds between sync and async their knob
too (``Kind.knob``: K, n or the staleness bound, one more column); drop those that do not fit in GPU memory; predict the
rest with the closed form (milliseconds each); keep those whose mean
mini-batch is within ``tolerance`` of the target (and whose mean staleness is
at most ``max_staleness``); rank them by predicted epoch time.

The closed form proposes, the simulation decides: the best candidates are
simulated, and one whose simulation misses the target band is refuted and
the next one simulated in its place, until ``confirm`` are feasible by
simulation or the candidates run out. Confirmed configurations rank first
(by simulated epoch time), then those only the closed form vouches for, then
the refuted, then the rest.
"""

from __future__ import annotations

import math

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from . import budget, catalog
from .analytic import predict
from .memory import footprint
from .scenario import apply_overrides, scenario_from_dict
from .sweep import Point, check_points, raw_scenario, run_on_dask

__all__ = ["Plan", "plan", "SUB_BATCHES", "COLUMNS"]

SUB_BATCHES = (8, 16, 32, 64, 128, 256)
COLUMNS = ["rank", "nodes", "gpus_per_node", "sub_batch", "feasible", "predicted_epoch_time_s",
           "predicted_minibatch_mean", "simulated_epoch_time_s", "simulated_minibatch_mean",
           "predicted_staleness_mean", "gpu_hours_per_epoch", "fits_memory"]
KEYS = ("cluster.nodes", "cluster.gpus_per_node", "workload.sub_batch")


@dataclass(frozen=True)
class Plan:
    table: pd.DataFrame          # every candidate, ranked (plan.csv)
    target: float
    tolerance: float
    max_staleness: float | None
    wanted: int                  # how many confirmations were asked for
    simulated: int               # how many candidates were simulated
    confirmed: int               # how many of them the simulation found feasible
    order_agrees: bool           # simulation ranks the confirmed as the closed form does
    node_gpus: int               # GPUs a booked node holds (idle ones are paid for too)
    minibatch_is_sub_batch: bool  # the cluster cannot change the mini-batch (async)

    @property
    def best(self) -> pd.Series | None:
        first = self.table.iloc[0] if len(self.table) else None
        return first if first is not None and first["feasible"] else None

    @property
    def exhausted(self) -> bool:
        """Fewer than ``wanted`` confirmed: no candidate was left to simulate."""
        return self.confirmed < self.wanted


def _machine(scenario) -> tuple[int, int | None]:
    """GPUs per node and the largest node count the machine has."""
    cluster = scenario.cluster
    if cluster.machine is None:
        return cluster.gpus_per_node, None
    preset = catalog.lookup("machines", cluster.machine)
    return preset["gpus_per_node"], preset.get("max_nodes")


def _candidates(per_node: int, max_nodes: int | None, max_gpus: int) -> list[tuple[int, int, int]]:
    out = []
    for gpus in range(1, per_node + 1):
        nodes = 1
        while nodes * gpus <= max_gpus and (max_nodes is None or nodes <= max_nodes):
            out += [(nodes, gpus, b) for b in SUB_BATCHES]
            nodes *= 2
    return out


def plan(scenario: str | Path, target: float, tolerance: float = 0.1, max_gpus: int = 1024,
         confirm: int = 3, workers: int = 1, scheduler: str | None = None,
         overrides: dict | None = None, max_staleness: float | None = None,
         max_events: float = budget.DEFAULT_MAX_EVENTS,
         max_memory: float = budget.DEFAULT_MAX_MEMORY, progress=None) -> Plan:
    """Rank every configuration by the closed form; confirm by simulation.

    ``overrides`` (dotted keys, as ``--set``) change the scenario first.
    Every candidate that confirming may simulate (the feasible ones, in
    turn) has its run estimated first, and one beyond ``max_events`` or
    ``max_memory`` (budget.py) is refused before any simulation starts.
    ``progress`` is called with (confirmed, refuted, simulations wanted) as
    each confirming simulation ends."""
    raw, source = raw_scenario(scenario)
    raw = apply_overrides(raw, overrides or {}, source)
    base = scenario_from_dict(raw, source=source)
    if base.cluster.groups is not None:
        from .errors import ScenarioError
        # the search's axes are one count of nodes and one of GPUs per node;
        # a mixed cluster has a count per group, and which group should grow
        # is a question of what the user can book, not of the model
        raise ScenarioError(source, [("cluster.groups", "plan searches one count of nodes and "
                                      "one of GPUs per node, and a mixed cluster has a count per "
                                      "group: plan each group's GPU as a cluster of its own, then "
                                      "compare or sweep the mixed cluster (--grid "
                                      "cluster.groups.1.nodes=...)")])
    per_node, max_nodes = _machine(base)
    model, memory = base.workload.model, base.cluster.gpu.memory

    def within(minibatch: float, staleness: float) -> bool:
        return (abs(minibatch - target) <= tolerance * target
                and (max_staleness is None or staleness <= max_staleness))

    from .algorithms import KINDS

    knob = KINDS[base.algorithm.kind].knob
    knob_key = knob(1)[0] if knob else None
    keys = KEYS + ((f"algorithm.{knob_key}",) if knob else ())
    columns = COLUMNS + ([knob_key] if knob else [])
    rows = []
    for nodes, gpus, sub_batch in _candidates(per_node, max_nodes, max_gpus):
        learners = nodes * (gpus // base.cluster.gpus_per_learner)
        fits = footprint(model.parameters, model.input_shape, model.graph, sub_batch, memory).fits
        for value in (knob(learners)[1] if knob and learners else [None]):
            row = {"nodes": nodes, "gpus_per_node": gpus, "sub_batch": sub_batch,
                   "fits_memory": fits, **({knob_key: value} if knob else {})}
            if fits:
                values = (nodes, gpus, sub_batch) + ((value,) if knob else ())
                p = predict(scenario_from_dict(raw, dict(zip(keys, values)), source=source))
                row.update(predicted_epoch_time_s=p.epoch_time_s,
                           predicted_minibatch_mean=p.minibatch.mean,
                           predicted_staleness_mean=p.staleness.mean,
                           gpu_hours_per_epoch=nodes * per_node * p.epoch_time_s / 3600)
            rows.append(row)
    table = pd.DataFrame(rows, columns=[c for c in columns if c not in ("rank", "feasible")])
    table["feasible"] = [bool(f) and within(m, st) for f, m, st in zip(
        table["fits_memory"], table["predicted_minibatch_mean"], table["predicted_staleness_mean"])]
    # epoch times within 1 % count as equally fast (finer than the model can
    # tell apart): of those, the one that costs fewer GPU-hours first
    table["speed"] = _speed_class(table["predicted_epoch_time_s"])
    table = table.sort_values(["feasible", "speed", "gpu_hours_per_epoch"],
                              ascending=[False, True, True], ignore_index=True)

    # confirm in closed-form order; each refuted candidate hands its turn on
    queue = list(table.index[table["feasible"]])
    point_of = lambda i: Point(tuple(zip(keys, (int(table.loc[i, c])  # noqa: E731
                                                for c in ("nodes", "gpus_per_node", "sub_batch",
                                                          *([knob_key] if knob else []))))), 0)
    index_of = {point_of(i): i for i in queue}
    if confirm:
        # any feasible candidate may be simulated (a refuted one hands its
        # turn on): all are estimated before the first simulation starts
        check_points(raw, source, [point_of(i) for i in queue], "candidate",
                     max_events=max_events, max_memory=max_memory)
    first, queue = queue[:confirm], queue[confirm:]
    confirmed, refuted = [], []
    launched = [len(first)]         # simulations asked for so far

    def finished(point: Point, row: dict | None, error: BaseException | None) -> list[Point]:
        if error is not None:
            raise error
        i = index_of[point]
        table.loc[i, "simulated_epoch_time_s"] = row["epoch_time_s"]
        table.loc[i, "simulated_minibatch_mean"] = row["minibatch_mean"]
        table.loc[i, "feasible"] = within(row["minibatch_mean"], row["staleness_mean"])
        if table.loc[i, "feasible"]:
            confirmed.append(i)
        else:
            refuted.append(i)
        # each refuted candidate hands its turn to the next, while any is left
        more = [point_of(queue.pop(0))] if queue and not table.loc[i, "feasible"] else []
        launched[0] += len(more)
        if progress:
            progress(len(confirmed), len(refuted), launched[0])
        return more

    if progress and first:
        progress(0, 0, len(first))
    run_on_dask(raw, source, [point_of(i) for i in first], finished, workers=workers,
                scheduler=scheduler)
    simulated = table["simulated_epoch_time_s"].notna()
    group = np.select([simulated & table["feasible"], table["feasible"], simulated], [0, 1, 2], 3)
    time = table["simulated_epoch_time_s"].where(simulated & table["feasible"],
                                                 table["predicted_epoch_time_s"])
    order = np.lexsort((table["gpu_hours_per_epoch"].fillna(np.inf).to_numpy(),
                        _speed_class(time).to_numpy(), group))
    table = table.iloc[order].reset_index(drop=True)
    table.insert(0, "rank", np.arange(1, len(table) + 1))
    ok = table[simulated.iloc[order].to_numpy() & table["feasible"].to_numpy()]
    order_agrees = ok["predicted_epoch_time_s"].is_monotonic_increasing
    fitting = table[table["fits_memory"]]
    return Plan(table[columns], target, tolerance, max_staleness, confirm, int(simulated.sum()),
                len(confirmed), bool(order_agrees), per_node,
                bool(len(fitting)) and bool(np.allclose(fitting["predicted_minibatch_mean"],
                                                        fitting["sub_batch"])))


def _speed_class(epoch_time_s: pd.Series) -> pd.Series:
    """Epoch times in classes 1 % wide (unknown times last)."""
    return np.floor(np.log(epoch_time_s.fillna(np.inf)) / math.log1p(0.01))


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
                   label=f"choice: {b['nodes']} x {b['gpus_per_node']} GPUs, sub-batch {b['sub_batch']}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("mean mini-batch size (samples)")
    ax.set_ylabel("epoch time (s)")
    fig.suptitle(f"{name}: configurations for a mini-batch of {result.target:g}"
                 + (f"\n({int(too_big.sum())} more do not fit in GPU memory)" if too_big.any() else ""),
                 fontsize=10)
    ax.legend(frameon=False, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    return fig
