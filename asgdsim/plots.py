"""Figures: simulated histograms with the closed-form pmf drawn over them.

Functions return a :class:`matplotlib.figure.Figure` built without pyplot,
so they work headless, in notebooks (the figure displays itself) and in
worker processes alike.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from .pmf import Pmf

__all__ = ["pmf_figure", "staleness_figure", "minibatch_figure"]


def pmf_figure(simulated: Pmf, analytic: Pmf, *, xlabel: str, title: str, unit: int = 1) -> Figure:
    """Bars: the simulated pmf; dots and line: the closed form's."""
    fig = Figure(figsize=(7, 4.2), layout="constrained")
    ax = fig.add_subplot()
    ax.bar(simulated.values, simulated.probs, width=0.8 * unit, color="#7aa6d6",
           edgecolor="#3b6ea5", label=f"simulated (mean {simulated.mean:.3g})")
    ax.plot(analytic.values, analytic.probs, "o-", color="#c0392b", markersize=3.5, linewidth=1.2,
            label=f"closed form (mean {analytic.mean:.3g})")
    lo = min(simulated.quantile(0.0005), analytic.quantile(0.0005))
    hi = max(simulated.quantile(0.9995), analytic.quantile(0.9995))
    ax.set_xlim(lo - unit, hi + unit)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("probability")
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(frameon=False)
    return fig


def staleness_figure(gradients_staleness: np.ndarray, analytic: Pmf, name: str) -> Figure:
    return pmf_figure(Pmf.of_samples(gradients_staleness), analytic,
                      xlabel="staleness (updates between read and apply)",
                      title=f"{name}: gradient staleness")


def minibatch_figure(minibatch: np.ndarray, analytic: Pmf, name: str, sub_batch: int) -> Figure:
    return pmf_figure(Pmf.of_samples(minibatch), analytic, unit=sub_batch,
                      xlabel="mini-batch size of an update (samples)",
                      title=f"{name}: effective mini-batch size")
