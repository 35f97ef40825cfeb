"""SPRINT's cycles seen by GPUs that start in phase and drift apart.

Every node's update thread swaps its accumulator at 0, T, 2T, ...: window w
holds the gradients that arrive in (wT, (w+1)T] and is published at
(w+2)T. An update is a window in which something arrived anywhere; its
mini-batch is what arrived in it. So everything the closed form predicts for
SPRINT follows from *when* the GPUs deliver, relative to that grid.

The GPUs do not deliver at independent, uniformly random phases. They all
start at 0, and GPUs with identical steps stay in step, staggered only by
what they queue for (the skeleton's periodic schedule, skeleton.py). Step
noise moves a GPU's k-th delivery by a random walk of variance k var(X).
GPUs that queue behind one another for a shared resource move together:
the one behind waits for the one ahead, so their offsets hold and only the
group drifts. The model, per node (all nodes alike and independent):

- a *unit* is a group of slots that move together (one GPU, or GPUs locked
  by queueing); its deliveries are at the skeleton's times a[i] plus one
  common shift Z ~ Normal(0, k var(X));
- a window is empty of a unit's deliveries exactly when it falls in a gap
  between two consecutive ones: P(empty) = sum over gaps (a[i], a[i+1]) of
  P(wT + T - a[i+1] < Z <= wT - a[i]) (exact for that model, and exact to
  the window with identical steps, where Z = 0);
- units are independent, so a window is an update with probability
  1 - prod over units of P(empty); its count has the units' means and
  variances;
- a gradient's staleness counts the non-empty windows from the one before
  its previous delivery's up to the one before its own: its own unit's
  deliveries in that span make their windows certainly non-empty (the
  offsets are fixed), every other window is non-empty with the probability
  that another unit (or another node's copy of its own) delivered there.

Once the phases have spread over a whole step the GPUs are as good as
independent and uniform: analytic.py then switches to the uniform-phase laws
(Poisson for exponential steps, binomial for nearly constant ones).

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

__all__ = ["SPREAD", "Deliveries", "Windows", "windows_of", "staleness_of", "expect"]

#: standard deviations of a delivery's spread that count as its support
SPREAD = 6.0
#: Gauss-Hermite nodes (probabilists') for expectations over a unit's shift
_GH_X, _GH_W = np.polynomial.hermite_e.hermegauss(16)
_GH_W = _GH_W / _GH_W.sum()


def _phi(z: np.ndarray) -> np.ndarray:
    return 0.5 * special.erfc(-z / math.sqrt(2.0))


#: a fixed delivery this close past a window's end, in windows, is at that
#: end: sums of fixed steps land a rounding error either side of a time that
#: is a whole number of cycles (70 ms steps, a 20 ms cycle: the 2nd at 140 ms)
TIE = 1e-12


def _cdf(x: np.ndarray, sd: np.ndarray, T: float) -> np.ndarray:
    """P(Z <= x) for Z ~ Normal(0, sd^2); where sd is 0, a step at 0 that
    takes a rounding error below it (TIE windows of ``T``) as 0, as
    :func:`_window` does: a fixed delivery is counted by a window's end
    exactly where it falls in a window up to it (a delivery the two placed
    apart fell in no cell and was lost: 231 gradients of 300 counted)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(sd > 0, _phi(x / np.where(sd > 0, sd, 1.0)),
                        (x >= -TIE * T).astype(float))


def _window(t: np.ndarray, T: float) -> np.ndarray:
    """Index of the window (wT, (w+1)T] that holds time t."""
    return np.ceil(np.asarray(t) / T - TIE).astype(np.int64) - 1


@dataclass(frozen=True)
class Deliveries:
    """When each slot's GPUs deliver: mean times, spread, and who moves together.

    ``mean[s, k]`` is the skeleton time of slot s's delivery k + 1 (k from
    0), ``sd[k]`` the spread of delivery k + 1, ``copies`` the GPUs per slot
    (the nodes), ``units`` the groups of slots that move together.
    """

    mean: np.ndarray
    sd: np.ndarray
    copies: int
    units: tuple[tuple[int, ...], ...]

    @property
    def slots(self) -> int:
        return self.mean.shape[0]

    def unit_deliveries(self, unit: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The unit's deliveries in time order: (time, sd, slot, step)."""
        times = self.mean[list(unit)].ravel()
        slot = np.repeat(np.array(unit), self.mean.shape[1])
        step = np.tile(np.arange(self.mean.shape[1]), len(unit))
        order = np.lexsort((slot, times))
        return times[order], self.sd[step[order]], slot[order], step[order]


@dataclass(frozen=True)
class Windows:
    """The cycle windows of a run, grouped into cells, with what happens in them.

    Cell c covers windows ``first[c]`` to ``first[c] + width[c] - 1``.
    ``per_gpu[s, c]`` is the expected deliveries of one GPU of slot s in one
    window of the cell; ``empty[u, c]`` the probability that unit u (one
    node's copy) delivers nothing in it; ``nonempty[c]`` that the window is
    an update; ``nonempty_out[u, c]`` the same with one copy of unit u left out.
    """

    T: float
    first: np.ndarray
    width: np.ndarray
    per_gpu: np.ndarray
    empty: np.ndarray
    nonempty: np.ndarray
    nonempty_out: np.ndarray
    copies: int
    units: tuple[tuple[int, ...], ...]

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

    def counts(self) -> tuple[np.ndarray, np.ndarray]:
        """Mean and variance of the gradients in a window of each cell.

        A unit's count is its expected deliveries m, in a window it is
        non-empty in with probability q: variance m^2 (1 - q) / q (all or
        nothing, exact for one GPU that delivers at most once), and at least
        the lattice's least where it delivers more than once."""
        mean = np.zeros(len(self.first))
        var = np.zeros(len(self.first))
        for u, unit in enumerate(self.units):
            m = self.per_gpu[list(unit)].sum(axis=0)
            q = 1.0 - self.empty[u]
            frac = m - np.floor(m)
            with np.errstate(divide="ignore", invalid="ignore"):
                burst = np.where(q > 1e-12, m**2 * (1.0 - q) / q, 0.0)
            mean += self.copies * m
            var += self.copies * np.maximum(burst, frac * (1.0 - frac))
        return mean, var

    def lookup(self, per_cell: np.ndarray, window: np.ndarray) -> np.ndarray:
        """A per-cell quantity at window indices (0 in the gaps between cells)."""
        cell = np.clip(np.searchsorted(self.first, window, side="right") - 1, 0, len(self.first) - 1)
        inside = (window >= self.first[cell]) & (window < self.first[cell] + self.width[cell])
        return np.where(inside, per_cell[cell], 0.0)


def _cells(d: Deliveries, T: float, end_window: int, max_cells: int) -> tuple[np.ndarray, np.ndarray]:
    """Cells (first window, width) tiling every window a delivery may fall in,
    up to ``end_window``; windows where nothing can arrive are left out."""
    sd = np.broadcast_to(d.sd, d.mean.shape)
    lo = _window(d.mean - SPREAD * sd, T).ravel()
    hi = _window(d.mean + SPREAD * sd, T).ravel()
    group = np.maximum(1, np.floor(sd / (4 * T))).astype(np.int64).ravel()
    order = np.argsort(lo, kind="stable")
    lo, hi, group = np.maximum(lo[order], 0), np.minimum(hi[order], end_window), group[order]
    keep = lo <= hi
    lo, hi, group = lo[keep], hi[keep], group[keep]
    if not len(lo):
        return np.array([0]), np.array([1])
    # merge overlapping supports; a merged range takes its finest grouping
    firsts, widths = [], []

    def emit(a: int, b: int, g: int) -> None:
        n = b - a + 1
        count = -(-n // g)
        firsts.append(a + g * np.arange(count))
        widths.append(np.minimum(g, n - g * np.arange(count)))

    start, stop, g = int(lo[0]), int(hi[0]), int(group[0])
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


def _expected_by(d: Deliveries, edges: np.ndarray, T: float) -> np.ndarray:
    """F[s, e]: expected deliveries of one GPU of slot s by time edges[e] (sorted)."""
    F = np.zeros((d.slots, len(edges)))
    sd = np.broadcast_to(d.sd, d.mean.shape[1:])
    for s in range(d.slots):
        mean = d.mean[s]
        lo = np.searchsorted(edges, mean - SPREAD * sd - TIE * T, side="left")
        hi = np.searchsorted(edges, mean + SPREAD * sd, side="right")
        full = np.zeros(len(edges) + 1)
        np.add.at(full, hi, 1.0)             # certainly delivered by every edge from hi on
        partial = np.zeros(len(edges))
        spans = hi - lo
        if spans.sum():
            k = np.repeat(np.arange(len(mean)), spans)
            e = _ranges(lo, hi)
            np.add.at(partial, e, _cdf(edges[e] - mean[k], sd[k], T))
        F[s] = np.cumsum(full)[:-1] + partial
    return F


def _ranges(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Concatenated aranges lo[i]..hi[i]-1, without a Python loop."""
    spans = hi - lo
    total = int(spans.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.repeat(lo - np.concatenate([[0], np.cumsum(spans)[:-1]]), spans)
    return starts + np.arange(total)


def _empty(d: Deliveries, unit: tuple[int, ...], T: float, first: np.ndarray,
           width: np.ndarray) -> np.ndarray:
    """P(the unit delivers nothing in a window) for each cell (at its middle window)."""
    a, sd, _, _ = d.unit_deliveries(unit)
    w = (first + (width - 1) // 2).astype(float)
    # gap i lies between a[i - 1] and a[i] (a[-1] = -inf, a[n] = +inf). Each
    # end keeps its own delivery's spread: near a[i] the window's emptiness
    # is about a[i]'s shift, near a[i + 1] about a[i + 1]'s
    lower = np.concatenate([[-np.inf], a])
    upper = np.concatenate([a, [np.inf]])
    lower_sd = np.concatenate([sd[:1], sd])
    upper_sd = np.concatenate([sd, sd[-1:]])
    # cells a gap reaches: from its lower end (less the spread) to its upper end
    lo = np.searchsorted(first * T + width * T, np.where(np.isfinite(lower), lower, -np.inf)
                         - SPREAD * lower_sd - T, side="left")
    hi = np.searchsorted(first * T, upper + SPREAD * upper_sd, side="right")
    lo = np.minimum(lo, hi)
    gap = np.repeat(np.arange(len(lower)), hi - lo)
    cell = _ranges(lo, hi)
    wT = w[cell] * T
    with np.errstate(invalid="ignore"):
        before = np.where(np.isfinite(lower[gap]), _cdf(wT - lower[gap], lower_sd[gap], T), 1.0)
        after = np.where(np.isfinite(upper[gap]), _cdf(wT + T - upper[gap], upper_sd[gap], T), 0.0)
    mass = before - after
    out = np.zeros(len(first))
    np.add.at(out, cell, np.maximum(mass, 0.0))
    return np.clip(out, 0.0, 1.0)


def windows_of(d: Deliveries, T: float, end_window: int, max_cells: int = 200_000) -> Windows:
    """The windows up to ``end_window`` and what the deliveries put in them."""
    first, width = _cells(d, T, end_window, max_cells)
    # expected deliveries per GPU in each cell, from the cumulative counts at
    # both ends of every cell (cells need not touch: the gaps hold nothing)
    edges, where = np.unique(np.concatenate([first, first + width]) * T, return_inverse=True)
    F = _expected_by(d, edges, T)[:, where.ravel()]
    per_gpu = np.maximum(F[:, len(first):] - F[:, :len(first)], 0.0) / width
    empty = np.array([_empty(d, unit, T, first, width) for unit in d.units])
    log_empty = np.log(np.clip(empty, 1e-300, 1.0))
    all_empty = d.copies * log_empty.sum(axis=0)
    nonempty = -np.expm1(all_empty)
    nonempty_out = -np.expm1(all_empty[None, :] - log_empty)
    return Windows(T, first, width, per_gpu, empty, nonempty, nonempty_out, d.copies, d.units)


def staleness_of(windows: Windows, d: Deliveries, t_from: float,
                 t_to: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, variance, weight) of the staleness of every delivery that
    arrives between ``t_from`` and ``t_to`` (weight: GPUs times probability).

    For delivery p of a unit, whose own previous one is p': given the unit's
    shift z, its window j and p''s window m' are known, and so are the
    windows of the unit's deliveries in between; every other window from
    m' - 1 to j - 1 is non-empty with probability q_out. The expectation
    over z uses Gauss-Hermite nodes.
    """
    T = windows.T
    means, variances, weights = [], [], []
    nodes, node_w = (_GH_X, _GH_W) if np.any(d.sd > 0) else (np.zeros(1), np.ones(1))
    for u, unit in enumerate(d.units):
        a, sd, slot, step = d.unit_deliveries(unit)
        weight = d.copies * _between(a, sd, t_from, t_to, T)
        own = np.flatnonzero(weight > 1e-12)
        if not len(own):
            continue
        # index of each delivery's own previous one (same slot, step - 1)
        index = np.full((d.slots, d.mean.shape[1] + 1), -1)
        index[slot, step + 1] = np.arange(len(a))
        prev = index[slot[own], step[own]]
        # the unit's deliveries that can fall in the span: from two windows
        # before the previous delivery up to the delivery itself (the unit
        # moves as one, so their offsets from it are fixed)
        start_t = np.where(prev < 0, -np.inf, a[np.maximum(prev, 0)] - 2 * T)
        lo = np.searchsorted(a, start_t, side="left")
        span = max(1, int((own - lo).max()))
        chunk = max(1, 2_000_000 // (len(nodes) * span))
        for c in range(0, len(own), chunk):
            sl = slice(c, c + chunk)
            mean, var = _staleness_chunk(windows, u, a, sd, own[sl], prev[sl], lo[sl], span,
                                         nodes, node_w, t_from, t_to)
            means.append(mean)
            variances.append(var)
        weights.append(weight[own])
    if not means:
        return np.zeros(0), np.zeros(0), np.zeros(0)
    return np.concatenate(means), np.concatenate(variances), np.concatenate(weights)


def _staleness_chunk(windows: Windows, u: int, a: np.ndarray, sd: np.ndarray, own: np.ndarray,
                     prev: np.ndarray, lo: np.ndarray, span: int, nodes: np.ndarray,
                     node_w: np.ndarray, t_from: float,
                     t_to: float) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance of the staleness of the deliveries ``own``, given
    that they arrive between t_from and t_to (the nodes outside count not)."""
    T, q_out = windows.T, windows.nonempty_out[u]
    first = prev < 0
    idx = lo[:, None] + np.arange(span)[None, :]
    valid = idx < own[:, None]
    idx = np.minimum(idx, len(a) - 1)
    z = sd[own][:, None] * nodes[None, :]                                      # (P, G)
    j = _window(a[own][:, None] + z, T)                                        # own window
    # no window before the first (a shifted delivery cannot fall before 0)
    lower = np.maximum(np.where(first[:, None], 0, _window(a[np.maximum(prev, 0)][:, None] + z, T) - 1), 0)
    mates = np.maximum(_window(a[idx][:, None, :] + z[:, :, None], T), 0)      # (P, G, M)
    in_span = valid[:, None, :] & (mates >= lower[:, :, None]) & (mates <= j[:, :, None] - 1)
    new = np.ones_like(in_span)
    new[:, :, 1:] = (mates[:, :, 1:] != mates[:, :, :-1]) | ~in_span[:, :, :-1]
    certain = ((1.0 - windows.lookup(q_out, mates)) * (in_span & new)).sum(axis=2)

    def cum(per_window: np.ndarray, w: np.ndarray) -> np.ndarray:
        return windows._cumulative(per_window, w.astype(float) * T)

    total = cum(q_out, j) - cum(q_out, lower) + certain                         # (P, G)
    at = a[own][:, None] + z
    inside = ((at > t_from) & (at <= t_to)) * node_w[None, :]
    weight = np.where(inside.sum(axis=1, keepdims=True) > 0, inside, node_w[None, :])
    weight = weight / weight.sum(axis=1, keepdims=True)
    mean = (total * weight).sum(axis=1)
    var = np.maximum(((total - mean[:, None]) ** 2 * weight).sum(axis=1), 0.0) + \
        ((cum(q_out * (1 - q_out), j) - cum(q_out * (1 - q_out), lower)) * weight).sum(axis=1)
    return mean, var


def _between(mu: np.ndarray, sd: np.ndarray, t_from: float, t_to: float, T: float) -> np.ndarray:
    """P(t_from < X <= t_to) for X ~ Normal(mu, sd^2) (a point mass where sd is 0)."""
    return _cdf(t_to - mu, sd, T) - _cdf(t_from - mu, sd, T)


def expect(f, mean: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """E[f(X)] for X ~ Normal(mean, sd^2), element-wise (Gauss-Hermite)."""
    x = np.asarray(mean)[..., None] + np.asarray(sd)[..., None] * _GH_X
    return (f(x) * _GH_W).sum(axis=-1)
