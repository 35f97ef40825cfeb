"""Events of several renewal processes started together: when the k-th
comes.

L learners start at once (or each at its own time) and each produces an
event at the end of every step, the steps independent draws of one law.
The k-th event of them all ends a round of ``k-batch-sync`` and a short
``downpour`` run. Exact for exponential steps (their superposition is
Poisson: k m / L) and fixed ones (ceil(k / L) m); for any other law,
P(N(t) < k) = P(sum of L renewal counts < k), each count's law from the
cdfs of sums of j steps, F_j (exact where ``Law.sum_of`` is). Beyond
``EXACT_LEARNERS`` processes (more than the simulator holds) the sum of
their counts is taken as normal with its mean and variance (the central
limit theorem, with a half-count continuity correction; the error falls as
1/sqrt(L)), so a million learners cost what a few do.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

__all__ = ["EXACT_LEARNERS", "kth_event_mean", "kth_event_of_laws", "events_staggered"]

#: processes up to which the law of the summed counts is computed exactly
EXACT_LEARNERS = 16_384


def sums_needed(learners: int, k: int) -> int:
    """The most steps of one learner whose sum :func:`kth_event_mean` reads."""
    rounds = math.ceil(k / learners)
    return rounds + 8 + int(6 * math.sqrt(rounds))


def _points(law, rounds: int) -> np.ndarray:
    """Quantiles of one step and of the sums around the ``rounds``-th event,
    so a long tail does not leave the answer between two grid points."""
    q = special.expit(np.linspace(-23.0, 23.0, 401))
    return np.concatenate([[law.sum_of(j).ppf(p) for p in q] for j in sorted({1, rounds, rounds + 1})])


def _grid(points: list[np.ndarray]) -> np.ndarray:
    """The points, 0, and each just below itself: a law with atoms (a fixed
    step that straggles) steps there, and the trapezoids must not slope
    across a step."""
    grid = np.unique(np.concatenate([[0.0], *points]))
    return np.unique(np.concatenate([grid, grid * (1.0 - 1e-9)]))


def _counts(law, grid: np.ndarray, most: int) -> np.ndarray:
    """P(one process has had exactly j events by t), t on the grid (rows),
    j = 0 .. most - 1 (columns): F_j(t) - F_{j+1}(t), F_j the cdf of j steps."""
    at_least = np.stack([np.ones_like(grid)] + [law.sum_of(j).cdf(grid) for j in range(1, most + 1)])
    return np.clip(at_least[:-1] - at_least[1:], 0.0, None).T


def kth_event_mean(law, learners: int, k: int) -> tuple[float, bool]:
    """(E[time of the k-th event of ``learners`` renewal processes of steps
    ~ ``law`` started together at 0], whether exact)."""
    if law.is_constant:
        return math.ceil(k / learners) * law.mean, True
    if law.name == "exponential":
        return k * law.mean / learners, True
    # P(N(t) < k) on a grid: each learner's count law from F_j, the L-fold
    # sum by FFT, truncated at k
    grid = _grid([_points(law, math.ceil(k / learners))])
    one = _counts(law, grid, sums_needed(learners, k))                # (grid, counts 0..most-1)
    # the sum of L counts is within 12 standard deviations of its mean: far
    # from k, P(N(t) < k) is 0 or 1, and only the rows between need powers
    # (the mass not in ``one`` is at ``most`` events or more: counted at most)
    counts = np.arange(one.shape[1] + 1)
    pmf = np.column_stack([one, np.clip(1.0 - one.sum(axis=1), 0.0, None)])
    mean = learners * (pmf @ counts)
    spread = 12 * np.sqrt(learners * np.maximum(pmf @ counts**2 - (pmf @ counts) ** 2, 0.0)) + 1
    below = (mean + spread < k).astype(float)
    between = np.abs(mean - k) <= spread
    if between.any() and learners > EXACT_LEARNERS:
        sd = np.sqrt(learners * np.maximum(pmf @ counts**2 - (pmf @ counts) ** 2, 0.0))
        below[between] = special.ndtr((k - 0.5 - mean[between]) / np.maximum(sd[between], 1e-300))
    elif between.any():
        rows = np.pad(one[between], ((0, 0), (0, max(0, k - one.shape[1]))))[:, :k]
        below[between] = np.clip(_power_below(rows, learners, k).sum(axis=1), 0.0, 1.0)
    return float(np.trapezoid(below, grid)), law.sums_exactly


#: the most events a round of processes of several laws is computed for
#: (kth_event_of_laws holds a grid of a few thousand points by K counts)
MIXED_EVENTS = 2048


def kth_event_of_laws(laws: dict, k: int) -> tuple[float, bool] | None:
    """:func:`kth_event_mean` for processes of several laws, n_j of law j
    ({law: n_j}): each law's counts summed over its processes, the laws'
    sums then convolved (both cut at k), and P(N(t) < k) integrated on the
    union of their grids; None beyond ``MIXED_EVENTS`` events."""
    if k > MIXED_EVENTS:
        return None
    rate = sum(n / law.mean for law, n in laws.items())
    reach, points = {}, []
    for law in laws:
        # a law's processes give about its share of the k events
        rounds = max(1, math.ceil(k / (law.mean * rate)))
        reach[law] = min(k, rounds + 8 + int(6 * math.sqrt(rounds)))
        points.append(_points(law, rounds))
        if law.is_constant:
            points.append(law.mean * np.arange(1, reach[law] + 1))
    grid = _grid(points)
    size = 1 << int(math.ceil(math.log2(2 * k)))
    total = None
    for law, n in laws.items():
        one = _counts(law, grid, reach[law])
        rows = np.pad(one, ((0, 0), (0, max(0, k - one.shape[1]))))[:, :k]
        mine = _power_below(rows, n, k)
        total = mine if total is None else np.fft.irfft(
            np.fft.rfft(total, size) * np.fft.rfft(mine, size), size)[:, :k]
    below = np.clip(total.sum(axis=1), 0.0, 1.0)
    return float(np.trapezoid(below, grid)), all(law.sums_exactly for law in laws)


def events_staggered(law, ready: np.ndarray | tuple[float, float, int], k: int) -> np.ndarray:
    """E[time of the j-th event], j = 1 .. k: learner i's renewal process of
    steps ~ ``law`` starts at ``ready[i]``. ``ready`` may be a progression
    (first, spacing, learners): learner i (from 0) at first + i spacing.

    E[T_j] = lo + integral of P(N(t) < j) dt, N(t) the sum of the learners'
    counts (the mean count alone crossing j - 1/2 put the first of L
    exponential steps at half its time, m / (2 L)). For the first
    HEAD_EVENTS events of up to EXACT_HEAD_LEARNERS learners, N(t)'s law
    itself; else N(t) taken as normal with its mean and variance and a
    half-count continuity correction, P(N(t) < j) = Phi((j - 1/2 - E N) /
    sd N): exact for fixed steps (sd 0: the mean count crossing j - 1/2)
    and, in the mean, for Poisson counts (the integral is j m / L).

    Both moments of the sum are convolutions: the start times spread on the
    grid (each split between its two nearest points; a progression's
    counted at its nearest points in closed form), convolved with one
    learner's mean count and its variance, so thousands of learners (or a
    million in a progression) cost what a few do."""
    points = 2049
    if isinstance(ready, tuple):
        first, spacing, learners = ready
        lo, top = first, first + (learners - 1) * spacing
    else:
        learners, lo, top = len(ready), float(ready.min()), float(ready.max())
    # by then every learner has had ceil(k / L) steps, all but surely
    hi = top + law.sum_of(math.ceil(k / learners)).ppf(1 - 1e-6)
    grid = np.linspace(lo, hi, points)
    if isinstance(ready, tuple):
        # the learners at or below each midpoint between grid points
        edges = np.concatenate([(grid[1:] + grid[:-1]) / 2, [math.inf]])
        upto = learners if spacing == 0 else np.clip(
            np.floor((edges - first) / spacing) + 1, 0, learners)
        starts = np.diff(np.concatenate([[0.0], np.broadcast_to(upto, edges.shape)]))
    else:
        at = (ready - lo) / (grid[1] - grid[0])
        below = np.minimum(np.floor(at).astype(int), points - 2)
        share = at - below
        starts = (np.bincount(below, 1.0 - share, minlength=points)
                  + np.bincount(below + 1, share, minlength=points))
    if learners > EXACT_LEARNERS:
        mean, var = _renewal_function(law, grid - lo)
    else:
        # sums over j of F_j and of (2 j - 1) F_j (E[N] and E[N^2]), until
        # the j-th events of all the learners together are fewer than 1e-9
        # by the grid's end
        mean, second = np.zeros(points), np.zeros(points)
        for j in range(1, k + 1):
            at_least = law.sum_of(j).cdf(grid - lo)
            mean += at_least
            second += (2 * j - 1) * at_least
            if learners * at_least[-1] < 1e-9:
                break
        var = np.maximum(second - mean**2, 0.0)
    count = np.convolve(starts, mean)[:points]
    variance = np.convolve(starts, var)[:points]
    if law.std == 0:
        # fixed steps: the count is sure, and the j-th event comes where it
        # crosses j - 1/2 (linear between grid points)
        return np.interp(np.arange(1, k + 1) - 0.5, count, grid)
    # the first events, where the learners are still starting and the count
    # curves: the law of the summed counts itself (a normal one beyond the
    # simulator's learners)
    head = min(k, HEAD_EVENTS)
    # (all but surely by the time the count is 12 sd past them)
    sure = np.flatnonzero(count - 12 * np.sqrt(variance) - 1 >= head)
    until = grid[sure[0]] if len(sure) else hi
    if not isinstance(ready, tuple) and learners <= EXACT_HEAD_LEARNERS:
        events = _first_events(law, ready, head, until)
    else:
        # on a grid of their own (the first of many learners' events may
        # all come within the whole grid's first point)
        fine = np.linspace(lo, until, 1025)
        gap = np.arange(1, head + 1)[:, None] - 0.5 - np.interp(fine, grid, count)[None, :]
        sd = np.sqrt(np.interp(fine, grid, variance))
        below = np.where(sd > 0, special.ndtr(gap / np.maximum(sd, 1e-300)),
                         (gap > 0).astype(float))
        events = lo + np.trapezoid(below, fine, axis=1)
    if k == head:
        return events
    # later ones, where the count grows at a steady rate and its variance
    # with it: the integral of Phi((a - c) / sqrt(v(c))) over c is a + v' / 2
    # for v linear in c (v' = 1 for Poisson counts, cv^2 for any renewal
    # count in the long run, 0 for fixed steps), so the j-th event is where
    # the count crosses j - 1/2 + v' / 2
    # (v' over the count's unit step about j - 1/2; where the count rises
    # by less than rounding, it is flat)
    rising = np.concatenate([[True], np.diff(count) > 1e-12 * count[-1]])
    c, v, t = count[rising], variance[rising], grid[rising]
    j = np.arange(head + 1, k + 1) - 0.5
    slope = np.interp(j + 0.5, c, v) - np.interp(j - 0.5, c, v)
    return np.concatenate([events, np.interp(j + slope / 2, c, t)])


#: events whose expected times events_staggered integrates, not reads off the count
HEAD_EVENTS = 64
#: learners up to which events_staggered takes the first events' law exactly
#: (beyond, each count is a sum of many learners', nearly normal)
EXACT_HEAD_LEARNERS = 32


def _first_events(law, ready: np.ndarray, most: int, hi: float) -> np.ndarray:
    """E[T_j], j = 1 .. ``most``, for renewal processes started at ``ready``,
    all but surely ``most`` events by ``hi``: the integral of P(N(t) < j),
    the law of N(t) the product of the learners' count laws (by FFT, cut at
    ``most``) at each grid time, each learner's that of one started at 0
    moved by its start (rounded to the grid)."""
    points = 1025
    lo = float(ready.min())
    grid = np.linspace(lo, hi, points)
    shifts, sizes = np.unique(np.rint((ready - lo) / (grid[1] - grid[0])).astype(int),
                              return_counts=True)
    # one learner's P(exactly j events by t), j < most; sums whose cdf is
    # nil by the grid's end add nothing
    at_least = [np.ones(points)]
    for j in range(1, most + 1):
        at_least.append(law.sum_of(j).cdf(grid - lo))
        if at_least[-1][-1] < 1e-15:
            break
    at_least += [np.zeros(points)] * (most + 1 - len(at_least))
    one = np.clip(np.stack(at_least[:-1]) - np.stack(at_least[1:]), 0.0, None).T
    size = 1 << int(math.ceil(math.log2(2 * most)))
    total = None
    for shift, n in zip(shifts, sizes):
        rows = np.zeros((points, most))
        # not started: no events yet (one that starts past the grid's end,
        # after the first ``most`` events of the others, adds none)
        rows[:shift, 0] = 1.0
        rows[shift:] = one[:max(0, points - shift)]
        mine = _power_below(rows, int(n), most)
        # (cut at ``most`` after each product, as the FFT's circle wraps)
        total = mine if total is None else np.fft.irfft(
            np.fft.rfft(total, size) * np.fft.rfft(mine, size), size)[:, :most]
    below = np.clip(np.cumsum(total, axis=1), 0.0, 1.0)
    return lo + np.trapezoid(below, grid, axis=0)


#: sums of steps whose cdfs the renewal function adds one by one
SUMMED_STEPS = 64


def _renewal_function(law, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(E[N(t)], Var N(t)) for t >= 0. E[N(t)] = sum over j of F_j(t): the first SUMMED_STEPS
    terms as they are, the rest (a learner that has run many steps, as the
    first of a million learners queued for their weights has) as sums of
    many steps are, normal, summed as an integral over j: (1/m) E[(x - Z)+]
    with x = t - (J + 1/2) m and Z ~ Normal(0, sd^2 t / m), plus the cv^2 / 2
    of renewal theory's expansion as that tail sets in. One convolution
    then spreads it over the learners' start times (the sum over j of the
    convolutions, by linearity). The variance: E[N^2] = sum over j of
    (2 j - 1) F_j(t) while the first terms hold it, cv^2 t / m (the renewal
    central limit theorem) once the tail sets in."""
    total, second = np.zeros_like(t), np.zeros_like(t)
    for j in range(1, SUMMED_STEPS + 1):
        at_least = law.sum_of(j).cdf(t)
        total += at_least
        second += (2 * j - 1) * at_least
        if at_least[-1] < 1e-12:
            return total, np.maximum(second - total**2, 0.0)
    m, sd = law.mean, law.std
    x = t - (SUMMED_STEPS + 0.5) * m
    spread = sd * np.sqrt(np.maximum(t, m) / m)
    if sd == 0:
        return total + np.maximum(x, 0.0) / m, np.zeros_like(t)
    z = x / spread
    # the integral over j with the spread at its value at t leaves out what
    # the spread's growth with j adds, cv^2 / 2 once the tail is under way
    # (so that E[N(t)] = t / m + (cv^2 - 1) / 2 + o(1), as renewal theory has it)
    tail = (spread * np.exp(-z**2 / 2) / math.sqrt(2 * math.pi) + x * special.ndtr(z)) / m
    # the variance from the sums while they hold the count (the last one
    # all but nil), the renewal CLT's beyond (off by a constant, not a
    # share of the count)
    var = np.where(at_least < 1e-6, np.maximum(second - total**2, 0.0), law.cv**2 * t / m)
    return total + tail + law.cv**2 / 2 * special.ndtr(z), var


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
