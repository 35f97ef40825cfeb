"""SPRINT's cycles seen by GPUs that start in phase and drift apart.

Every node's update thread swaps its accumulator at 0, T, 2T, ...: window w
holds the gradients that arrive in (wT, (w+1)T] and is published at
(w+2)T. An update is a window in which something arrived anywhere; its
mini-batch is what arrived in it. So everything the closed form predicts for
SPRINT follows from *when* the GPUs deliver, relative to that grid.

The GPUs do not deliver at independent, uniformly random phases. They all
start at 0; GPUs with identical steps stay in step (staggered only by what
they queue for: the skeleton's periodic schedule, skeleton.py), and step
noise moves each GPU's k-th delivery by a random walk of variance k var(X).
So the k-th delivery of slot s (the GPU's place in its node; all nodes are
alike and independent) is modelled as Normal(a[s, k], k var(X)), a[s, k]
the skeleton's time. From that:

- per window and slot, the expected deliveries of one GPU, p; a window is
  empty with probability prod over GPUs of (1 - p) (deliveries of different
  GPUs are independent; one GPU delivers at most once per window where p <= 1);
- the mini-batch law is the mixture over windows of their count laws, given
  at least one; its mean is gradients over expected non-empty windows;
- a gradient's staleness is the number of non-empty windows between the one
  published before it read the weights and the one that applies it: the
  windows of its own previous gradient and of itself are certainly
  non-empty, the others with the probabilities above (its own GPU left out);
- the run ends at the window that holds the stop condition's gradient, found
  from the expected deliveries by time t.

Once the phases have spread over a whole step (k var(X) >= (P / 2)^2), the
GPUs are as good as independent and uniform: from there the uniform-phase
laws of analytic.py take over (Poisson for exponential steps, binomial for
nearly constant ones). Identical steps never spread: the schedule is then
exact and so is everything above, to the window.

Where deliveries are spread over many windows, windows are grouped into
cells of up to a quarter of the spread (the deliveries are smooth there), so
the cost follows the number of steps, not of windows, and never the number
of nodes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

__all__ = ["Deliveries", "Windows", "windows_of"]

#: standard deviations of a delivery's spread that count as its support
SPREAD = 6.0
#: Gauss-Hermite nodes (probabilists') for expectations over one delivery's time
_GH_X, _GH_W = np.polynomial.hermite_e.hermegauss(16)
_GH_W = _GH_W / _GH_W.sum()


def _phi(z: np.ndarray) -> np.ndarray:
    return 0.5 * special.erfc(-z / math.sqrt(2.0))


@dataclass(frozen=True)
class Deliveries:
    """When each slot's GPUs deliver: mean times and their spread.

    ``mean[s, k]`` is the skeleton time of slot s's delivery k + 1 (k from
    0), ``sd[k]`` the spread of delivery k + 1 (the same for every slot),
    ``copies`` the GPUs per slot (the nodes).
    """

    mean: np.ndarray
    sd: np.ndarray
    copies: int

    @property
    def slots(self) -> int:
        return self.mean.shape[0]

    @property
    def steps(self) -> int:
        return self.mean.shape[1]


@dataclass(frozen=True)
class Windows:
    """The cycle windows of a run, grouped into cells, with what happens in them.

    Cell c covers windows ``first[c]`` to ``first[c] + width[c] - 1``.
    ``per_gpu[s, c]`` is the expected deliveries of one GPU of slot s in one
    window of the cell; ``nonempty[c]`` the probability that a window of the
    cell is an update; ``nonempty_other[s, c]`` the same with one GPU of slot
    s left out.
    """

    T: float
    first: np.ndarray
    width: np.ndarray
    per_gpu: np.ndarray
    nonempty: np.ndarray
    nonempty_other: np.ndarray
    copies: int

    # -- cumulative counts over time -------------------------------------
    def _cumulative(self, per_window: np.ndarray, t: np.ndarray) -> np.ndarray:
        """Sum over windows that end by time t of a per-window quantity,
        linear inside a cell (exact at every window's end in cells of one),
        flat across the gaps between cells where nothing arrives."""
        totals = np.cumsum(per_window * self.width)
        x = np.column_stack([self.first, self.first + self.width]).ravel() * self.T
        y = np.column_stack([np.concatenate([[0.0], totals[:-1]]), totals]).ravel()
        return np.interp(t, x, y, left=0.0, right=totals[-1])

    def updates_by(self, t: np.ndarray | float) -> np.ndarray:
        """Expected non-empty windows among those that end by t."""
        return self._cumulative(self.nonempty, np.asarray(t, dtype=float))

    def gradients_by(self, t: np.ndarray | float) -> np.ndarray:
        """Expected deliveries in windows that end by t (all GPUs)."""
        return self._cumulative(self.copies * self.per_gpu.sum(axis=0), np.asarray(t, dtype=float))

    def others_by(self, slot: int, t: np.ndarray) -> np.ndarray:
        """Expected non-empty windows ending by t, one GPU of ``slot`` left out."""
        return self._cumulative(self.nonempty_other[slot], t)

    def variance_by(self, slot: int, t: np.ndarray) -> np.ndarray:
        q = self.nonempty_other[slot]
        return self._cumulative(q * (1.0 - q), t)

    def cell_of(self, t: np.ndarray) -> np.ndarray:
        window = np.ceil(np.asarray(t, dtype=float) / self.T) - 1
        return np.clip(np.searchsorted(self.first, window, side="right") - 1, 0, len(self.first) - 1)

    def inside(self, t: np.ndarray) -> np.ndarray:
        window = np.ceil(np.asarray(t, dtype=float) / self.T) - 1
        cell = self.cell_of(t)
        return (window >= self.first[cell]) & (window < self.first[cell] + self.width[cell])


def _window(t: np.ndarray, T: float) -> np.ndarray:
    """Index of the window (wT, (w+1)T] that holds time t."""
    return np.ceil(t / T - 1e-12).astype(np.int64) - 1


def _cells(d: Deliveries, T: float, end_window: int, max_cells: int) -> tuple[np.ndarray, np.ndarray]:
    """Cells (first window, width) tiling every window a delivery may fall in,
    up to ``end_window``; windows where nothing can arrive are left out."""
    lo = _window(d.mean - SPREAD * d.sd, T).ravel()
    hi = _window(d.mean + SPREAD * d.sd, T).ravel()
    group = np.maximum(1, np.floor(np.broadcast_to(d.sd / (4 * T), d.mean.shape).ravel())).astype(np.int64)
    order = np.argsort(lo, kind="stable")
    lo, hi, group = np.maximum(lo[order], 0), np.minimum(hi[order], end_window), group[order]
    keep = lo <= hi
    lo, hi, group = lo[keep], hi[keep], group[keep]
    # merge overlapping supports; a merged range takes its finest grouping
    firsts, widths = [], []
    start, stop, g = int(lo[0]), int(hi[0]), int(group[0])

    def emit(a: int, b: int, g: int) -> None:
        n = b - a + 1
        count = -(-n // g)
        firsts.append(a + g * np.arange(count))
        widths.append(np.minimum(g, n - g * np.arange(count)))

    for a, b, gg in zip(lo[1:].tolist(), hi[1:].tolist(), group[1:].tolist()):
        if a <= stop + 1:
            stop, g = max(stop, b), min(g, gg)
        else:
            emit(start, stop, g)
            start, stop, g = a, b, gg
    emit(start, stop, g)
    first, width = np.concatenate(firsts), np.concatenate(widths)
    while len(first) > max_cells:            # coarsen evenly: pairs of cells merge
        first, width = first[::2], np.add.reduceat(width, np.arange(0, len(width), 2))
    return first, width


def _expected_by(d: Deliveries, edges: np.ndarray) -> np.ndarray:
    """F[s, e]: expected deliveries of one GPU of slot s by time edges[e]."""
    F = np.zeros((d.slots, len(edges)))
    for s in range(d.slots):
        mean = d.mean[s]
        sd = np.broadcast_to(d.sd, mean.shape)
        lo = np.searchsorted(edges, mean - SPREAD * sd, side="left")
        hi = np.searchsorted(edges, mean + SPREAD * sd, side="right")
        full = np.zeros(len(edges) + 1)
        np.add.at(full, hi, 1.0)             # certainly delivered by every edge from hi on
        partial = np.zeros(len(edges))
        spans = hi - lo
        if spans.sum():
            k = np.repeat(np.arange(len(mean)), spans)
            e = np.concatenate([np.arange(a, b) for a, b in zip(lo[spans > 0], hi[spans > 0])])
            with np.errstate(divide="ignore", invalid="ignore"):
                z = (edges[e] - mean[k]) / sd[k]
            values = np.where(sd[k] > 0, _phi(z), (edges[e] >= mean[k]).astype(float))
            np.add.at(partial, e, values)
        F[s] = np.cumsum(full)[:-1] + partial
    return F


def windows_of(d: Deliveries, T: float, end_window: int, max_cells: int = 300_000) -> Windows:
    """The windows up to ``end_window`` and what the deliveries put in them."""
    first, width = _cells(d, T, end_window, max_cells)
    # expected deliveries per GPU in each cell, from the cumulative counts at
    # both ends of every cell (cells need not touch: the gaps hold nothing)
    edges, where = np.unique(np.concatenate([first, first + width]) * T, return_inverse=True)
    F = _expected_by(d, edges)[:, where.ravel()]
    per_cell = F[:, len(first):] - F[:, :len(first)]
    per_gpu = np.maximum(per_cell, 0.0) / width
    # one GPU delivers at most once in a window where it expects at most one
    log_empty = np.log(np.clip(1.0 - per_gpu, 1e-300, 1.0))
    all_empty = d.copies * log_empty.sum(axis=0)
    nonempty = -np.expm1(all_empty)
    nonempty_other = -np.expm1(all_empty[None, :] - log_empty)
    return Windows(T, first, width, per_gpu, nonempty, nonempty_other, d.copies)


def expect(f, mean: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """E[f(X)] for X ~ Normal(mean, sd^2), element-wise (Gauss-Hermite)."""
    x = mean[..., None] + np.asarray(sd)[..., None] * _GH_X
    return (f(x) * _GH_W).sum(axis=-1)
