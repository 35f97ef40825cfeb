"""The summary of a run: the contract's headline figures, side by side with
the closed form.

Epoch time (DESIGN.md, "Words"): simulated seconds until the samples of
applied gradients reach the dataset size, per epoch. A run that reached its
``epochs`` reports the time the last one was reached divided by the epochs;
a run stopped otherwise scales the time of its last update by the epochs it
applied, and ``epoch_time_basis`` says which of the two the figure is.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .analytic import Prediction
from .errors import ScenarioError
from .groups import group_figures
from .pmf import Pmf, total_variation
from .scenario import Scenario

__all__ = ["summarize", "epoch_time", "agreement", "first_measured_version", "measured"]


def epoch_time(scenario: Scenario, updates: pd.DataFrame) -> tuple[float, str]:
    """(seconds per epoch, how they were had)."""
    dataset = scenario.workload.dataset_samples
    if updates.empty:
        return float("nan"), "no update was applied"
    cumulative = updates["minibatch"].to_numpy().cumsum()
    epochs = scenario.stop.epochs
    # the time of the update that reaches the stop (the last), over the
    # epochs applied by it: the update that passes the stop applies more
    # than asked (one update of 32 samples ends a stop of 10)
    applied = float(cumulative[-1]) / dataset
    seconds = float(updates["t"].iloc[-1]) / applied
    # an epoch shorter than an update: said, or the figure reads as an error
    longer = cumulative[0] > dataset
    why = (f", the first update alone applying {cumulative[0] / dataset:.3g} (its mini-batch "
           f"of {int(cumulative[0]):,} samples exceeds the dataset of {dataset:,})") if longer else ""
    # (one word for one computation, whichever stop ended the run)
    if epochs and epochs >= 1 and not longer and cumulative[-1] >= epochs * dataset:
        return seconds, f"measured over {epochs:g} {'epoch' if epochs == 1 else 'epochs'}"
    return seconds, f"scaled from {applied:.3g} epochs applied{why}"


def _relative(simulated: float, analytic: float, floor: float = 0.0) -> float:
    scale = max(abs(analytic), floor)
    return abs(simulated - analytic) / scale if scale else abs(simulated - analytic)


def agreement(summary: dict, prediction: Prediction, staleness: Pmf, minibatch: Pmf) -> dict:
    """Relative errors of the means and total-variation distances of the pmfs.

    The staleness error is relative to at least one version, so a fresh
    (zero) prediction compares in versions rather than dividing by zero.
    """
    return {
        "epoch_time_rel_err": _relative(summary["epoch_time_s"], prediction.epoch_time_s),
        "staleness_mean_rel_err": _relative(staleness.mean, prediction.staleness.mean, floor=1.0),
        "minibatch_mean_rel_err": _relative(minibatch.mean, prediction.minibatch.mean),
        "staleness_tv": total_variation(staleness, prediction.staleness),
        "minibatch_tv": total_variation(minibatch, prediction.minibatch),
    }


def first_measured_version(scenario: Scenario, updates: pd.DataFrame) -> int:
    """The first update the statistics count: the first after the warm-up
    (version 1 without one)."""
    warmup = scenario.stop.warmup
    if warmup is None or updates.empty:
        return 1
    if warmup.updates is not None:
        return warmup.updates + 1
    if warmup.time is not None:
        after = np.flatnonzero(updates["t"].to_numpy() >= warmup.time)
    else:
        reached = updates["minibatch"].to_numpy().cumsum() >= warmup.epochs * scenario.workload.dataset_samples
        after = np.flatnonzero(reached) + 1
    return int(updates["version"].iloc[after[0]]) if len(after) and after[0] < len(updates) \
        else int(updates["version"].iloc[-1]) + 1


def measured(gradients: pd.DataFrame, updates: pd.DataFrame,
             first_version: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The gradients and updates the statistics count: those applied from
    ``first_version`` on."""
    if first_version <= 1:
        return gradients, updates
    return (gradients[gradients["version_applied"] >= first_version],
            updates[updates["version"] >= first_version])


def summarize(scenario: Scenario, gradients: pd.DataFrame, updates: pd.DataFrame,
              simulated_time_s: float, prediction: Prediction, utilisation: dict[str, float],
              wall_time_s: float, cancelled_steps: int | None = None,
              faults: dict | None = None) -> dict:
    """The contract's summary; ``cancelled_steps`` for kinds that cancel
    steps (never applied, so in no other figure); ``faults`` where learners
    fail (failures, lost gradients and samples, GPU-seconds down)."""
    samples = int(updates["minibatch"].sum())
    first = first_measured_version(scenario, updates)
    kept_gradients, kept_updates = measured(gradients, updates, first)
    if scenario.stop.warmup is not None and (kept_gradients.empty or kept_updates.empty):
        # (budget.py refuses a warm-up the closed form says covers the run,
        # before simulating; this is a run that came out shorter than it said)
        raise ScenarioError(scenario.name, [("stop.warmup", (
            f"expected a warm-up shorter than the run, which ended after "
            f"{simulated_time_s:.4g} s and {len(updates):,} updates, all within the warm-up: "
            "no gradient was left to measure"))])
    staleness = (Pmf.of_samples(kept_gradients["staleness"].to_numpy()) if len(kept_gradients)
                 else Pmf.point(0))
    minibatch = (Pmf.of_samples(kept_updates["minibatch"].to_numpy()) if len(kept_updates)
                 else Pmf.point(0))
    summary = {
        "scenario": scenario.name,
        "seed": scenario.seed,
        "algorithm": scenario.algorithm.kind,
        "learners": scenario.cluster.learners,
        "gradients": int(len(gradients)),
        "updates": int(len(updates)),
        "samples": samples,
        **({} if cancelled_steps is None else {"cancelled_steps": int(cancelled_steps)}),
        **({} if faults is None else {"faults": faults}),
        **({} if scenario.cluster.groups is None
           else {"groups": group_figures(scenario.cluster, gradients)}),
        "simulated_time_s": float(simulated_time_s),
        "epoch_time_s": (epoch := epoch_time(scenario, updates))[0],
        "epoch_time_basis": epoch[1],
        "throughput_samples_per_s": samples / simulated_time_s if simulated_time_s else 0.0,
        "staleness": staleness.describe(),
        "minibatch": minibatch.describe(),
        "utilisation": utilisation,
        "analytic": prediction.summary,
    }
    if scenario.stop.warmup is not None:
        summary["warmup"] = {
            "first_version": first,
            "excluded_until_s": float(updates["t"].iloc[first - 2]) if first > 1 else 0.0,
            "excluded_updates": int(len(updates) - len(kept_updates)),
            "excluded_gradients": int(len(gradients) - len(kept_gradients)),
        }
    summary["agreement"] = agreement(summary, prediction, staleness, minibatch)
    summary["wall_time_s"] = wall_time_s
    return summary
