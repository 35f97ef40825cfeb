"""Events of several renewal processes started together: when the k-th
comes.

L learners start at once (or each at its own time) and each produces an
event at the end of every step, the steps independent draws of one law.
The k-th event of them all ends a round of ``k-batch-sync`` and a short
``downpour`` run. Exact for exponential steps (their superposition is
Poisson: k m / L) and fixed ones (ceil(k / L) m); for any other law,
P(N(t) < k) = P(sum of L renewal counts < k), each count's law from the
cdfs of sums of j steps, F_j (exact where ``Law.sum_of`` is).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

__all__ = ["kth_event_mean", "events_staggered"]


def kth_event_mean(law, learners: int, k: int) -> tuple[float, bool]:
    """(E[time of the k-th event of ``learners`` renewal processes of steps
    ~ ``law`` started together at 0], whether exact)."""
    if law.is_constant:
        return math.ceil(k / learners) * law.mean, True
    if law.name == "exponential":
        return k * law.mean / learners, True
    # P(N(t) < k) on a grid: each learner's count law from F_j, the L-fold
    # sum by FFT, truncated at k
    rounds = math.ceil(k / learners)
    most = rounds + 8 + int(6 * math.sqrt(rounds))
    # the grid at quantiles of one step and of the sums around the k-th
    # event's, so a long tail does not leave the answer between two points
    q = special.expit(np.linspace(-23.0, 23.0, 401))
    grid = np.unique(np.concatenate([[0.0], *([law.sum_of(j).ppf(p) for p in q]
                                              for j in sorted({1, rounds, rounds + 1}))]))
    at_least = np.stack([np.ones_like(grid)] + [law.sum_of(j).cdf(grid) for j in range(1, most + 1)])
    one = np.clip(at_least[:-1] - at_least[1:], 0.0, None).T          # (grid, counts 0..most-1)
    # the sum of L counts is within 12 standard deviations of its mean: far
    # from k, P(N(t) < k) is 0 or 1, and only the rows between need powers
    # (the mass not in ``one`` is at ``most`` events or more: counted at most)
    counts = np.arange(one.shape[1] + 1)
    pmf = np.column_stack([one, np.clip(1.0 - one.sum(axis=1), 0.0, None)])
    mean = learners * (pmf @ counts)
    spread = 12 * np.sqrt(learners * np.maximum(pmf @ counts**2 - (pmf @ counts) ** 2, 0.0)) + 1
    below = (mean + spread < k).astype(float)
    between = np.abs(mean - k) <= spread
    if between.any():
        rows = np.pad(one[between], ((0, 0), (0, max(0, k - one.shape[1]))))[:, :k]
        below[between] = np.clip(_power_below(rows, learners, k).sum(axis=1), 0.0, 1.0)
    return float(np.trapezoid(below, grid)), law.sums_exactly


def events_staggered(law, ready: np.ndarray, k: int) -> np.ndarray:
    """When the expected count of events reaches j - 1/2, for j = 1 .. k:
    learner i's renewal process of steps ~ ``law`` starts at ``ready[i]``,
    and E[N_i(t)] = sum over j of F_j(t - ready[i]).

    The sum over learners is a convolution: the start times spread on the
    grid (each split between its two nearest points), convolved with F_j,
    so thousands of learners cost what a few do."""
    lo = float(ready.min())
    # by then every learner has had ceil(k / L) steps, all but surely
    hi = float(ready.max()) + law.sum_of(math.ceil(k / len(ready))).ppf(1 - 1e-6)
    points = 2049
    grid = np.linspace(lo, hi, points)
    at = (ready - lo) / (grid[1] - grid[0])
    below = np.minimum(np.floor(at).astype(int), points - 2)
    share = at - below
    starts = (np.bincount(below, 1.0 - share, minlength=points)
              + np.bincount(below + 1, share, minlength=points))
    count = np.zeros(points)
    for j in range(1, k + 1):
        at_least = np.convolve(starts, law.sum_of(j).cdf(grid - lo))[:points]
        count += at_least
        if at_least[-1] < 1e-9:
            break
    return np.interp(np.arange(1, k + 1) - 0.5, count, grid)


def _power_below(pmf: np.ndarray, times: int, k: int) -> np.ndarray:
    """The law of the sum of ``times`` independent counts of law ``pmf``
    (each row its own), below k: by squaring, cut at k after each product."""
    size = 1 << int(math.ceil(math.log2(2 * k)))

    def times_(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.fft.irfft(np.fft.rfft(a, size) * np.fft.rfft(b, size), size)[:, :k]

    result, square = None, pmf
    while times:
        if times & 1:
            result = square if result is None else times_(result, square)
        times >>= 1
        if times:
            square = times_(square, square)
    return result
