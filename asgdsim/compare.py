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

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from scipy import stats

from .plots import minibatch_figure, staleness_figure
from .pmf import Pmf, total_variation
from .simulation import Result

__all__ = ["comparison", "distances", "compare_figures"]


def distances(simulated: Pmf, analytic: Pmf) -> dict[str, float]:
    support = np.union1d(simulated.values, analytic.values)
    cdf = lambda pmf: np.cumsum([pmf.prob(int(v)) for v in support])  # noqa: E731
    return {
        "tv": total_variation(simulated, analytic),
        "ks": float(np.max(np.abs(cdf(simulated) - cdf(analytic)))),
        "wasserstein": float(stats.wasserstein_distance(simulated.values, analytic.values,
                                                        simulated.probs, analytic.probs)),
    }


def comparison(result: Result) -> pd.DataFrame:
    """One row per figure: simulated, closed form, relative error."""
    s, a = result.summary, result.summary["analytic"]
    rows = [("epoch time (s)", s["epoch_time_s"], a["epoch_time_s"]),
            ("throughput (samples/s)", s["throughput_samples_per_s"], a["throughput_samples_per_s"])]
    for block, label in (("staleness", "staleness"), ("minibatch", "mini-batch")):
        for stat in ("mean", "std", "p50", "p95"):
            rows.append((f"{label} {stat}", s[block][stat], a[block][stat]))
    table = pd.DataFrame(rows, columns=["figure", "simulated", "closed_form"])
    table["rel_err"] = (table["simulated"] - table["closed_form"]).abs() / \
        table["closed_form"].abs().where(table["closed_form"] != 0)
    simulated = {"staleness": Pmf.of_samples(result.gradients["staleness"].to_numpy()),
                 "mini-batch": Pmf.of_samples(result.updates["minibatch"].to_numpy())}
    analytic = {"staleness": result.prediction.staleness, "mini-batch": result.prediction.minibatch}
    extra = [(f"{name} {kind}", value, np.nan, np.nan)
             for name in simulated for kind, value in distances(simulated[name], analytic[name]).items()]
    return pd.concat([table, pd.DataFrame(extra, columns=table.columns)], ignore_index=True)


def _minibatch_over_time(result: Result) -> Figure:
    fig = Figure(figsize=(8, 3.6), layout="constrained")
    ax = fig.add_subplot()
    u = result.updates
    ax.plot(u["t"], u["minibatch"], ".", markersize=2, alpha=0.4, color="#3b6ea5",
            label="each update")
    window = max(1, len(u) // 100)
    ax.plot(u["t"], u["minibatch"].rolling(window, min_periods=1).mean(), color="#1f3b5c",
            label=f"running mean ({window} updates)")
    ax.axhline(result.prediction.minibatch.mean, color="#c0392b", linestyle="--",
               label=f"closed form mean {result.prediction.minibatch.mean:.3g}")
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel("mini-batch size (samples)")
    ax.set_title(f"{result.scenario.name}: mini-batch size per update")
    ax.legend(frameon=False, loc="upper right")
    return fig


def _utilisation(result: Result) -> Figure:
    fig = Figure(figsize=(7, 3.6), layout="constrained")
    ax = fig.add_subplot()
    names = list(result.utilisation)
    ax.barh(names, [100 * result.utilisation[n] for n in names], color="#7aa6d6")
    ax.set_xlim(0, 100)
    ax.set_xlabel("busy share of the simulated time (%), mean over components of a kind")
    ax.set_title(f"{result.scenario.name}: utilisation (closed form's bound: "
                 f"{result.prediction.bound})")
    return fig


def compare_figures(result: Result) -> dict[str, Figure]:
    sc = result.scenario
    return {
        "staleness.png": staleness_figure(result.gradients["staleness"].to_numpy(),
                                          result.prediction.staleness, sc.name),
        "minibatch.png": minibatch_figure(result.updates["minibatch"].to_numpy(),
                                          result.prediction.minibatch, sc.name,
                                          sc.workload.sub_batch),
        "minibatch_over_time.png": _minibatch_over_time(result),
        "utilisation.png": _utilisation(result),
    }
