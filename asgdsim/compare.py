"""Simulated against closed form: the side-by-side table and its figures.

``comparison`` lines up every headline figure of a run with the closed
form's, with relative errors, and the distances between the simulated
histograms and the predicted pmfs: total variation, Kolmogorov-Smirnov
(largest gap between the cdfs) and Wasserstein-1 (area between the cdfs, in
the figure's own unit). ``compare_figures`` draws the histograms with the
pmfs over them, the mini-batch of every update over time, and the busy
share of each kind of component.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from scipy import stats

from .plots import figure_text, minibatch_figure, staleness_figure
from .pmf import Pmf, total_variation
from .simulation import Result
from .names import COMPONENTS, component_name

__all__ = ["CHECKED", "comparison", "distances", "compare_figures"]


def distances(simulated: Pmf, analytic: Pmf) -> dict[str, float]:
    if not len(simulated.values) or not len(analytic.values) or not simulated.probs.sum():
        # a run that applied nothing (a stop before the first update) has no law
        return {"tv": math.nan, "ks": math.nan, "wasserstein": math.nan}
    support = np.union1d(simulated.values, analytic.values)
    cdf = lambda pmf: np.cumsum([pmf.prob(int(v)) for v in support])  # noqa: E731
    return {
        "tv": total_variation(simulated, analytic),
        "ks": float(np.max(np.abs(cdf(simulated) - cdf(analytic)))),
        "wasserstein": float(stats.wasserstein_distance(simulated.values, analytic.values,
                                                        simulated.probs, analytic.probs)),
    }


#: the figures ``compare --check`` holds to its tolerance: summary.json's "agreement"
CHECKED = {"epoch time (s)": "epoch_time_rel_err", "staleness mean": "staleness_mean_rel_err",
           "mini-batch mean": "minibatch_mean_rel_err", "staleness tv": "staleness_tv",
           "mini-batch tv": "minibatch_tv"}


def comparison(result: Result) -> pd.DataFrame:
    """One row per figure: simulated, closed form, relative error, and
    whether ``compare --check`` holds it to the tolerance (the five figures
    of summary.json's "agreement", with their values there: the staleness
    error is relative to at least one version). Spreads and quantiles get no
    relative error: a closed-form spread near zero would make it huge and
    meaningless."""
    s, a = result.summary, result.summary["analytic"]
    rows = [("epoch time (s)", s["epoch_time_s"], a["epoch_time_s"]),
            ("throughput (samples/s)", s["throughput_samples_per_s"], a["throughput_samples_per_s"])]
    for block, label in (("staleness", "staleness"), ("minibatch", "mini-batch")):
        for stat in ("mean", "std", "p50", "p95"):
            rows.append((f"{label} {stat}", s[block][stat], a[block][stat]))
    table = pd.DataFrame(rows, columns=["figure", "simulated", "closed_form"])
    relative = table["figure"].isin(["throughput (samples/s)"])
    table["rel_err"] = ((table["simulated"] - table["closed_form"]).abs()
                        / table["closed_form"].abs()).where(relative)
    gradients, updates = result.measured
    simulated = {"staleness": Pmf.of_samples(gradients["staleness"].to_numpy()),
                 "mini-batch": Pmf.of_samples(updates["minibatch"].to_numpy())}
    analytic = {"staleness": result.prediction.staleness, "mini-batch": result.prediction.minibatch}
    extra = [(f"{name} {kind}", value, np.nan, np.nan)
             for name in simulated for kind, value in distances(simulated[name], analytic[name]).items()]
    table = pd.concat([table, pd.DataFrame(extra, columns=table.columns),
                       *([_group_rows(result)] if "groups" in s else [])], ignore_index=True)
    table["checked"] = table["figure"].isin(list(CHECKED))
    for figure, key in CHECKED.items():
        if not figure.endswith(" tv"):      # the distances are already in "simulated"
            table.loc[table["figure"] == figure, "rel_err"] = s["agreement"][key]
    return table


def _group_rows(result: Result) -> pd.DataFrame:
    """A mixed cluster's lines, group by group: learners, mean step, share
    of the applied samples and mean staleness, simulated and the closed
    form's where it has them, with their relative errors."""
    predicted = result.prediction.groups or [{} for _ in result.summary["groups"]]
    staleness = result.measured[0].groupby("group")["staleness"].mean()
    rows = []
    for i, (sim, closed) in enumerate(zip(result.summary["groups"], predicted)):
        name = f"group {i} ({sim['gpu']})"
        for label, simulated, key in (
                ("learners", sim["learners"], "learners"),
                ("mean step (s)", sim["mean_step_s"], "mean_step_s"),
                ("throughput share", sim["throughput_share"], "throughput_share"),
                ("staleness mean", staleness.get(i, np.nan), "staleness_mean")):
            value = closed.get(key)
            rows.append((f"{name} {label}", np.nan if simulated is None else simulated,
                         np.nan if value is None else value))
    table = pd.DataFrame(rows, columns=["figure", "simulated", "closed_form"])
    relative = table["figure"].str.endswith(("mean step (s)", "throughput share", "staleness mean"))
    table["rel_err"] = ((table["simulated"] - table["closed_form"]).abs()
                        / table["closed_form"].abs()).where(relative)
    return table


def _over_time(result: Result) -> Figure:
    """Mini-batch per update and staleness per gradient against simulated
    time, each with its running mean and the closed form's mean: where the
    start-up transient ends, and whether the run settles where predicted."""
    fig = Figure(figsize=(8, 5.6), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True)
    for ax, t, values, predicted, label, unit in (
            (top, result.updates["t"], result.updates["minibatch"],
             result.prediction.minibatch.mean, "mini-batch of an update (samples)", "updates"),
            (bottom, result.gradients["t_applied"], result.gradients["staleness"],
             result.prediction.staleness.mean, "staleness of a gradient", "gradients")):
        order = np.argsort(t.to_numpy(), kind="stable")
        t, values = t.to_numpy()[order], values.to_numpy()[order]
        ax.plot(t, values, ".", markersize=2, alpha=0.3, color="#7aa6d6", label="each")
        window = max(1, len(values) // 100)
        running = pd.Series(values).rolling(window, min_periods=1).mean()
        ax.plot(t, running, color="#1f3b5c", label=f"running mean of {window} {unit}")
        ax.axhline(predicted, color="#c0392b", linestyle="--",
                   label=f"closed form mean {figure_text(predicted)}")
        ax.set_ylabel(label)
        if "warmup" in result.summary:
            ax.axvspan(0, result.summary["warmup"]["excluded_until_s"], color="#dddddd", zorder=0,
                       label="warm-up (not in the statistics)")
        ax.legend(loc="best", fontsize=8, framealpha=0.85)
    bottom.set_xlabel("simulated time (s)")
    top.set_title(f"{result.scenario.name}: over the run")
    return fig


def _utilisation(result: Result) -> Figure:
    fig = Figure(figsize=(8, 3.8), layout="constrained")
    ax = fig.add_subplot()
    names = list(result.utilisation)
    ax.barh([COMPONENTS.get(n, n) for n in names], [100 * result.utilisation[n] for n in names],
            color="#7aa6d6")
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("busy share of the simulated time (%)\n(mean over the components of a kind)")
    ax.set_title(f"{result.scenario.name}: utilisation\n"
                 f"(the closed form's bound: {component_name(result.prediction.bound)})",
                 fontsize=10)
    return fig


def compare_figures(result: Result) -> dict[str, Figure]:
    sc = result.scenario
    gradients, updates = result.measured
    return {
        "staleness.png": staleness_figure(gradients["staleness"].to_numpy(),
                                          result.prediction.staleness, sc.name),
        "minibatch.png": minibatch_figure(updates["minibatch"].to_numpy(),
                                          result.prediction.minibatch, sc.name,
                                          sc.workload.sub_batch),
        "over_time.png": _over_time(result),
        "utilisation.png": _utilisation(result),
    }
