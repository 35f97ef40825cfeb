"""The planner: the fastest configuration that meets a target mini-batch size.

This is the use Oyama et al. made of their model. For a scenario (its
machine, model and algorithm), enumerate node counts (powers of two), GPUs
per node (up to the machine's) and sub-batch sizes within ``max_gpus``;
predict each with the closed form (milliseconds each); keep those whose mean
mini-batch is within ``tolerance`` of the target; rank them by predicted
epoch time; confirm the best ``confirm`` by simulation on the sweep engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from . import catalog
from .analytic import predict
from .scenario import apply_overrides, scenario_from_dict
from .sweep import Point, raw_scenario, run_on_dask

__all__ = ["Plan", "plan", "SUB_BATCHES"]

SUB_BATCHES = (8, 16, 32, 64, 128, 256)
COLUMNS = ["rank", "nodes", "gpus_per_node", "sub_batch", "feasible", "predicted_epoch_time_s",
           "predicted_minibatch_mean", "simulated_epoch_time_s", "simulated_minibatch_mean"]


@dataclass(frozen=True)
class Plan:
    table: pd.DataFrame          # every candidate, ranked (plan.csv)
    target: float
    tolerance: float
    order_agrees: bool           # simulation ranks the confirmed candidates as the closed form does

    @property
    def best(self) -> pd.Series | None:
        feasible = self.table[self.table["feasible"]]
        return None if feasible.empty else feasible.iloc[0]


def _candidates(scenario, max_gpus: int) -> list[dict]:
    cluster = scenario.cluster
    per_node = cluster.gpus_per_node
    max_nodes = None
    if cluster.machine is not None:
        preset = catalog.lookup("machines", cluster.machine)
        per_node = preset["gpus_per_node"]
        max_nodes = preset.get("max_nodes")
    out = []
    for gpus in range(1, per_node + 1):
        nodes = 1
        while nodes * gpus <= max_gpus and (max_nodes is None or nodes <= max_nodes):
            out += [{"cluster.nodes": nodes, "cluster.gpus_per_node": gpus,
                     "workload.sub_batch": b} for b in SUB_BATCHES]
            nodes *= 2
    return out


def plan(scenario: str | Path, target: float, tolerance: float = 0.1, max_gpus: int = 1024,
         confirm: int = 3, workers: int = 1, scheduler: str | None = None,
         overrides: dict | None = None) -> Plan:
    """Rank every configuration by the closed form; simulate the best ``confirm``.

    ``overrides`` (dotted keys, as ``--set``) change the scenario first."""
    raw, source = raw_scenario(scenario)
    raw = apply_overrides(raw, overrides or {}, source)
    base = scenario_from_dict(raw, source=source)
    rows = []
    for overrides in _candidates(base, max_gpus):
        summary = predict(scenario_from_dict(raw, overrides, source=source)).summary
        rows.append({"nodes": overrides["cluster.nodes"],
                     "gpus_per_node": overrides["cluster.gpus_per_node"],
                     "sub_batch": overrides["workload.sub_batch"],
                     "predicted_epoch_time_s": summary["epoch_time_s"],
                     "predicted_minibatch_mean": summary["minibatch"]["mean"]})
    table = pd.DataFrame(rows)
    table["feasible"] = (table["predicted_minibatch_mean"] - target).abs() <= tolerance * target
    table = table.sort_values(["feasible", "predicted_epoch_time_s"], ascending=[False, True],
                              ignore_index=True)
    table.insert(0, "rank", np.arange(1, len(table) + 1))
    table["simulated_epoch_time_s"] = np.nan
    table["simulated_minibatch_mean"] = np.nan

    chosen = table[table["feasible"]].head(confirm)
    points = {Point((("cluster.nodes", int(r.nodes)), ("cluster.gpus_per_node", int(r.gpus_per_node)),
                     ("workload.sub_batch", int(r.sub_batch))), 0): i
              for i, r in chosen.iterrows()}

    def finished(point: Point, row: dict | None, error: BaseException | None) -> None:
        if error is not None:
            raise error
        i = points[point]
        table.loc[i, "simulated_epoch_time_s"] = row["epoch_time_s"]
        table.loc[i, "simulated_minibatch_mean"] = row["minibatch_mean"]

    run_on_dask(raw, source, list(points), finished, workers=workers, scheduler=scheduler)
    confirmed = table.loc[list(points.values())]
    order_agrees = list(confirmed.sort_values("simulated_epoch_time_s").index) == list(confirmed.index)
    return Plan(table[COLUMNS], target, tolerance, order_agrees)


def plan_figure(result: Plan, name: str) -> Figure:
    """Epoch time against mean mini-batch for every candidate; the feasible
    band shaded, the choice marked."""
    t = result.table
    fig = Figure(figsize=(8, 4.8), layout="constrained")
    ax = fig.add_subplot()
    lo, hi = result.target * (1 - result.tolerance), result.target * (1 + result.tolerance)
    ax.axvspan(lo, hi, color="#2e8b57", alpha=0.12, label=f"target {result.target:g} ± {result.tolerance:.0%}")
    ax.scatter(t["predicted_minibatch_mean"], t["predicted_epoch_time_s"] / 3600, s=10,
               c=np.where(t["feasible"], "#2e8b57", "#9aa5b1"), label="candidates (closed form)")
    simulated = t.dropna(subset=["simulated_epoch_time_s"])
    ax.scatter(simulated["simulated_minibatch_mean"], simulated["simulated_epoch_time_s"] / 3600,
               marker="s", facecolors="none", edgecolors="#1f3b5c", s=40, label="simulated")
    if result.best is not None:
        b = result.best
        ax.scatter([b["predicted_minibatch_mean"]], [b["predicted_epoch_time_s"] / 3600], marker="*",
                   s=220, color="#c0392b", zorder=5,
                   label=f"choice: {b['nodes']} x {b['gpus_per_node']} GPUs, sub-batch {b['sub_batch']}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("mean mini-batch size (samples)")
    ax.set_ylabel("epoch time (h)")
    ax.set_title(f"{name}: configurations for a mini-batch of {result.target:g}")
    ax.legend(frameon=False, fontsize=8)
    return fig
