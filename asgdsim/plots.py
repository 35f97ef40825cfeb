"""Figures: simulated histograms with the closed-form pmf drawn over them.

Functions return a :class:`matplotlib.figure.Figure` built without pyplot,
so they work headless, in notebooks (the figure displays itself) and in
worker processes alike.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from .pmf import Pmf

__all__ = ["figure_text", "pmf_figure", "staleness_figure", "minibatch_figure"]

#: the share of either law's mass a histogram's axis may leave out (start-up outliers)
TAIL = 0.01


def pmf_figure(simulated: Pmf, analytic: Pmf, *, xlabel: str, title: str, unit: int = 1) -> Figure:
    """Bars: the simulated pmf; dots and line: the closed form's.

    Bars are one ``unit`` apart at most 0.8 of it wide, however few values
    there are; the axis spans both laws without their outer 1 % (a
    synchronised start can put a few updates far out), and says so."""
    fig = Figure(figsize=(7, 4.2), layout="constrained")
    ax = fig.add_subplot()
    ax.bar(simulated.values, simulated.probs, width=0.8 * unit, color="#7aa6d6",
           edgecolor="#3b6ea5", label=f"simulated (mean {figure_text(simulated.mean)})")
    ax.plot(analytic.values, analytic.probs, "o-", color="#c0392b", markersize=3.5, linewidth=1.2,
            label=f"closed form (mean {figure_text(analytic.mean)})")
    lo = min(simulated.quantile(TAIL / 2), analytic.quantile(TAIL / 2))
    hi = max(simulated.quantile(1 - TAIL / 2), analytic.quantile(1 - TAIL / 2))
    hidden = float(simulated.probs[(simulated.values < lo) | (simulated.values > hi)].sum())
    # at least 8 units wide, so that a law of one or two values stays narrow;
    # counts are never negative
    left = max(lo - max(unit, (8 * unit - (hi - lo)) / 2), -unit)
    ax.set_xlim(left, max(hi + unit, left + 8 * unit))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if hidden > 0:
        xlabel += f"\n({100 * hidden:.2g} % of the simulated mass lies beyond the axis)"
    ax.set_xlabel(xlabel)
    ax.set_ylabel("probability")
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(frameon=False)
    return fig


def figure_text(x: float) -> str:
    """A mean as a figure's legend shows it."""
    return f"{x:,.1f}" if abs(x) >= 100 else f"{x:.2f}"


def staleness_figure(gradients_staleness: np.ndarray, analytic: Pmf, name: str) -> Figure:
    return pmf_figure(Pmf.of_samples(gradients_staleness), analytic,
                      xlabel="staleness (updates between read and apply)",
                      title=f"{name}: gradient staleness")


def minibatch_figure(minibatch: np.ndarray, analytic: Pmf, name: str, sub_batch: int) -> Figure:
    return pmf_figure(Pmf.of_samples(minibatch), analytic, unit=sub_batch,
                      xlabel="mini-batch size of an update (samples)",
                      title=f"{name}: effective mini-batch size")
