"""``k-async`` (Dutta et al., AISTATS 2018): the server updates with the
first K gradients from distinct learners. A learner that has pushed waits
for that update; then those K take the new weights, while the others go on
with the steps they began on older ones.

It runs on ``sync``'s server with a round of K instead of L: a learner that
pushed is held until the round has K, and a learner still computing when a
round closes joins the next one. K = 1 is ``async``, on its components;
K = L is ``sync``, and its closed form is sync's.

Closed form, with ideal communication:

- exponential steps: after each update every learner is computing (the K
  released restart, the others are memoryless), so an update takes the
  K-th of L exponentials, m (H_L - H_{L-K}) (Dutta et al. Thm 5), and the K
  it applies are a uniform K-subset of the learners: a gradient waits a
  geometric number of updates, P(S = s) = p (1 - p)^s, p = K / L, mean
  L / K - 1; update u's gradients cannot be older than version 0, so a run
  of U updates mixes the laws truncated at u - 1;
- fixed steps: the learners keep in step. Every period of one step,
  b = floor(L / K) updates apply the L - r pushes of the period and the r
  = L mod K left over wait at the head of the next period's queue; the
  staleness of each place in the queue follows from the order of release
  (``_fixed_schedule``); steps steady enough (cv c) keep that schedule
  for about 1 / (4 c^2) steps before they drift to random order, so a run
  within a quarter of that is the schedule's, at the mean step;
- at least half the learners in each round (L <= 2K), any law: every
  learner starts again at a close, so nobody drifts; the mean round is the
  fixed point of the K-th of the left-out learners' residual steps and the
  K fresh ones (``_round_with_leftovers``), the harmonic formula for
  exponential steps; with modelled communication the step carries its
  stages and the K released learners' queues, at the server's port and
  at the node resources they share on the way to their compute
  (``_burst_s``);
- other step laws, and modelled communication (the step then being
  ``async``'s cycle with one update per K gradients): the exponential
  formulas at the law's mean, an approximation.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import ClassVar, Literal

import numpy as np

from ..distributions import Straggling, apart_from_stragglers
from ..specs import Count, _Spec
from ..structure import SCOPES
from .kind import Kind, draw_k, powers_of_two
from .ksync import SHARES
from .server import ASYNC, SYNC, busy_port, loop, predict_async, wire

#: steps steadier than this keep learners near the fixed-step schedule, in
#: lockstep, for about 1 / (4 cv^2) steps before they drift to random order
STEADY_CV = 0.3


class Spec(_Spec):
    kind: Literal["k-async"]
    #: an update applies the first k gradients from distinct learners
    k: Count
    at_most_learners: ClassVar[tuple[str, ...]] = ("k",)


def build(env, scenario, costs, weights, recorder, seed):
    from ..components.server import ServerLearner, SyncServer

    if scenario.algorithm.k == 1:
        return ASYNC.build(env, scenario, costs, weights, recorder, seed)
    first_k = SyncServer(env, weights, recorder, costs.server_update_s, scenario.algorithm.k)
    return wire(env, scenario, costs, seed, "server", first_k, ServerLearner)


def _harmonic_gap(L: int, k: int) -> float:
    """H_L - H_{L-K} = sum of 1 / (L - i) for i < K: summed for the K of a
    cluster the simulator holds, by digamma beyond (a million learners)."""
    if k <= 16_384:
        return sum(1.0 / (L - i) for i in range(k))
    from scipy import special
    return float(special.digamma(L + 1) - special.digamma(L - k + 1))


def _released_round(law, topology, loop_, learners: int, k: int, update_s: float) -> float:
    """Exponential steps with modelled communication: the mean time from a
    round's close to the K-th push of the next. The K released take the new
    weights once the update is applied, one after another at the server's
    port (the j-th after j pulls), then their reads, step, and the stages
    to the port. The L - K left out are where their cycle has them, in
    proportion to its parts' lengths: in a step (memoryless, so a fresh step
    from the close, then those stages), on the stages to the port (what is
    left of them, uniform) or at the port. The pushes queue there first come
    first served: done at max over j of (the j-th arrival, at its expected
    order statistic, + the K - j + 1 messages from it on, its own
    included). The harmonic formula at the mean cycle left the released
    learners' queue for the weights out (27 learners, K = 20, a 33 ms
    message: 2.69 s a round, simulated 2.94 s)."""
    from ..analytic import _fifo_done, _mixed_order_statistics
    from ..distributions import Law, Mixture

    out = topology.message_s(loop_, "server_port_out")
    to_port = topology.message_s(loop_, "server_port_in")
    on_way = max(0.0, topology.unhindered_s(loop_.after) - to_port)
    released = update_s + topology.unhindered_s(loop_.reply + loop_.before) + out * np.arange(k)
    cycle = law.mean + on_way + to_port
    left = Mixture("left out", (law.mean / cycle, on_way / cycle, to_port / cycle),
                   (law.plus(on_way), Law("uniform", "uniform", scale=max(on_way, 1e-12)),
                    Law.constant(0.0)))
    ready = np.concatenate([np.zeros(learners - k), released])
    laws = [left] * (learners - k) + [law.plus(on_way)] * k
    arrivals = np.sort(_mixed_order_statistics(ready, laws))[:k]
    return float(_fifo_done(arrivals, np.full(k, to_port)))


def _round_with_leftovers(law, learners: int, k: int) -> float:
    """The mean time between updates when at least half the learners make
    each one (L <= 2K), for any step law.

    At a round's close the K in it restart together, and the r = L - K left
    out are still computing. Where each round takes all the left-out of the
    one before (they started a round earlier), those r are the ones of the
    last release still running at the close, a round length R after it:
    independent draws of the law above R (order statistics), each with a
    residual Y = X - R | X > R. The next round closes at the K-th of the r
    residuals and the K fresh steps, and in the stationary state its mean
    is R again: the root of E[K-th of (r x Y_R, K x X)] = R, which falls as
    R grows (bisection). Memoryless steps make the residuals fresh, which is
    the harmonic formula; steady steps let nobody drift, since every learner
    starts again at a close. R enters as its mean (an approximation where
    rounds vary widely)."""
    r = learners - k
    t = np.linspace(0.0, law.ppf(1.0 - 1e-9), 1025)
    fresh = (k, np.clip(law.cdf(t), 0.0, 1.0))
    enough = _enough(k, r, fresh)

    def next_round(R: float) -> float:
        done_before = float(law.cdf(R))
        residual = (np.ones_like(t) if done_before >= 1.0 else
                    np.clip((law.cdf(R + t) - done_before) / (1.0 - done_before), 0.0, 1.0))
        closed = _at_least(k, (r, residual), enough, fresh)
        return float(np.trapezoid(1.0 - closed, t))

    lo, hi = 0.0, float(t[-1])
    while hi - lo > 1e-7 * hi:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if next_round(mid) > mid else (lo, mid)
    return (lo + hi) / 2


def _burst_s(law, topology, loop_, k: int) -> float:
    """The mean wait of the K learners a round releases together: their
    pulls leave the server's port one after another, a message apart; at
    each resource of a node they then share on the way to their compute
    (its disk, a shared host link), those released with them queue in the
    same order, each a use apart where a use outlasts the spacing they came
    with; their pushes come back at the order statistics of K fresh steps
    so spaced, queued first come first served where they come closer than
    a message apart."""
    out = topology.message_s(loop_, "server_port_out")
    to_port = topology.message_s(loop_, "server_port_in")
    gap, learners = out, topology.learners      # 1 < K < L: two learners at least
    for stage in loop_.reply[1:] + loop_.before:
        kind = stage.holds[0]
        if SCOPES[kind] == "shard" or stage.duration_s <= gap:
            continue
        # of the K - 1 released with a learner, the share that use its
        # instance of this resource (its node's disk, its host link)
        share = (learners / topology.instances(kind) - 1) / (learners - 1)
        gap += share * (stage.duration_s - gap)
    j = np.arange(k)
    arrivals = _expected_orders(law, k) + j * gap
    # the j-th push ends at max over i <= j of (i-th arrival + (j - i + 1) messages)
    ends = np.maximum.accumulate(arrivals - j * to_port) + (j + 1) * to_port
    return float(np.mean(j * gap + ends - arrivals - to_port))


#: beyond this many, order statistics are taken at their quantiles
EXACT_ORDERS = 64


def _expected_orders(law, n: int) -> np.ndarray:
    """E[i-th smallest of n steps], i = 1..n: by quadrature for a few, else
    the law's quantile at i / (n + 1), interpolated between 257 of them."""
    if n <= EXACT_ORDERS:
        return np.array([law.expected_order(i, n) for i in range(1, n + 1)])
    at = np.linspace(1, n, min(n, 257)) / (n + 1)
    return np.interp(np.arange(1, n + 1) / (n + 1), at, [law.ppf(q) for q in at])


#: steps more varied than this: rounds too unlike their mean for the
#: left-out learners' head start to be taken at it (_round_with_leftovers
#: is within 1 % of the simulator up to cv 0.5, and 2 to 8 % short at 1 to 1.5)
WIDE_ROUNDS_CV = 0.9

#: L = 2K: from this cv on, step laws other than these (bounded, few-valued)
#: alternate which half is left out, which _round_with_leftovers does not
#: follow (uniform steps of cv 0.5: 8 to 9 % long; of cv 0.3 within 3 %)
HALF_LEFT_OUT_CV, SMOOTH_TAILED = 0.4, ("gamma", "lognorm", "expon")

#: above this many draws, the count of those done is taken as normal
EXACT_COUNTS = 128


def _at_least(k: int, residuals: tuple[int, np.ndarray], fresh_enough: np.ndarray | None,
              fresh: tuple[int, np.ndarray]) -> np.ndarray:
    """P(at least k of the draws are done), at each point of a grid where a
    draw of group (n, p) is done with probability p: a sum of two binomials,
    exactly for small groups (``fresh_enough``, P(the fresh group has at
    least k - j done) for j = 0..r, from :func:`_enough`), else normal
    (with continuity)."""
    (r, p), (n, q) = residuals, fresh
    if fresh_enough is None:
        from scipy import special
        mean, var = r * p + n * q, r * p * (1 - p) + n * q * (1 - q)
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(var > 0, (mean - (k - 0.5)) / np.sqrt(var),
                         np.where(mean >= k, np.inf, -np.inf))
        return special.ndtr(z)
    return np.clip((_binomial_pmf(r, p) * fresh_enough).sum(axis=0), 0.0, 1.0)


def _enough(k: int, r: int, fresh: tuple[int, np.ndarray]) -> np.ndarray | None:
    """P(at least k - j of the fresh group done), j = 0..r, at each point;
    None where :func:`_at_least` takes counts as normal."""
    n, q = fresh
    if r + n > EXACT_COUNTS:
        return None
    tail = np.cumsum(_binomial_pmf(n, q)[::-1], axis=0)[::-1]     # P(count >= i)
    need = np.clip(k - np.arange(r + 1), 0, n + 1)
    return np.vstack([tail, np.zeros((1, q.size))])[need]


def _binomial_pmf(n: int, p: np.ndarray) -> np.ndarray:
    """P(count = j) for j = 0..n (rows) at each probability of ``p``, from
    log-gamma (scipy.stats' frozen machinery costs too much per call here)."""
    from scipy import special
    j = np.arange(n + 1)[:, None]
    ways = special.gammaln(n + 1) - special.gammaln(j + 1) - special.gammaln(n - j + 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        log = ways + special.xlogy(j, p) + special.xlog1py(n - j, -p)
    return np.exp(log)


def _truncated_geometric(p: float, updates: int):
    """Staleness over a run of ``updates`` updates: update u's gradients
    geometric(p) truncated at u - 1 (none read before version 0)."""
    from ..pmf import Pmf

    q = 1.0 - p
    top = min(updates, math.ceil(math.log(1e-13) / math.log(q)) + 2 if q > 0 else 1)
    s = np.arange(top)
    # sum over u of [s < u - 1] p q^s + [s = u - 1] q^s, then / updates
    probs = (np.maximum(updates - s - 1, 0) * p + 1.0) * q ** s / updates
    return Pmf.from_probs(0, probs)


def predict(scenario, costs):
    from ..analytic import OUTSIDE, Run, _ideal, _in_phase_nth, _is_exponential, _outside
    from ..structure import loop_of, topology_of
    from ..pmf import Pmf

    k, run, law = scenario.algorithm.k, Run.of(scenario), costs.compute
    L = scenario.cluster.learners
    if k == 1:
        return predict_async(scenario, costs)
    if k == L:
        return SYNC.predict(scenario, costs)     # every learner each round: sync
    base = predict_async(scenario, replace(costs, server_update_s=costs.server_update_s / k))
    exact = _ideal(scenario) and (_is_exponential(law) or law.is_constant)
    n = run.target_gradients
    fixed = law.is_constant and _ideal(scenario)
    # fixed steps: floor(L / K) updates each step; else m (H_L - H_{L-K})
    loop_ = loop_of(scenario, costs)
    # with modelled communication a step is its stages too, and the
    # server's port may set the pace instead, as in async
    step = law.mean + (0.0 if _ideal(scenario) else loop_.overhead_s)
    lockstep = step / (L // k)
    poisson = max(step * _harmonic_gap(L, k) if _ideal(scenario) or not _is_exponential(law)
                  else _released_round(law, topology_of(scenario), loop_, L, k,
                                       costs.server_update_s), k * base.t_update_s)
    # at least half the learners in each round: every learner restarts at a
    # round's close, so nobody drifts (see _round_with_leftovers)
    leftovers = L <= 2 * k and not fixed and not _is_exponential(law)
    if leftovers:
        burst = 0.0 if _ideal(scenario) else _burst_s(law, topology_of(scenario), loop_, k)
        round_s = _round_with_leftovers(law.plus(step + burst - law.mean), L, k)
        # a straggler out for more than two rounds is left out of several:
        # the left-out no longer all come from the last release, and the
        # schedule's form below holds them instead (with modelled
        # communication, whose bursts the rounds' length holds, too)
        leftovers = not isinstance(law, Straggling) or (
            _ideal(scenario) and law.parts[1].mean <= 2 * round_s)
        if leftovers:
            poisson = max(round_s, k * base.t_update_s)
    outside = None
    steady_cv = apart_from_stragglers(law).cv
    # steady steps keep the fixed-step schedule for about 1 / (4 cv^2) steps:
    # a run well within that (a quarter) is the schedule's, as fixed steps are
    # (the b K released learners step each period, the r left over wait)
    steps = (n if n != math.inf else run.updates * k if run.updates else run.time_s / lockstep * k) \
        / (k * (L // k))
    near_fixed = (_ideal(scenario) and not fixed and not leftovers
                  and not isinstance(law, Straggling)
                  and steady_cv > 0 and steps <= 1.0 / (16.0 * steady_cv ** 2))
    per_update = lockstep if fixed or near_fixed else poisson
    if not (fixed or near_fixed or leftovers) and steady_cv < STEADY_CV and abs(poisson / lockstep - 1) > 0.05:
        outside = (f"{OUTSIDE}: steps this steady (cv {steady_cv:.2g}"
                   f"{' apart from stragglers' if steady_cv != law.cv else ''}) keep the learners near "
                   f"the fixed-step schedule ({lockstep:.3g} s an update) for about "
                   f"1 / (4 cv^2) steps before they drift to random order "
                   f"({poisson:.3g} s), and the closed form has no law for the drift")
    if leftovers and law.cv > WIDE_ROUNDS_CV:
        outside = (f"{OUTSIDE}: steps this varied (cv {law.cv:.2g}) make rounds of widely "
                   "varied length, and the closed form takes the left-out learners' "
                   "head start at a round's mean length")
    elif leftovers and L == 2 * k and law.cv >= HALF_LEFT_OUT_CV \
            and getattr(law, "family", None) not in SMOOTH_TAILED:
        # (8 V100s, K = 4, uniform steps of cv 0.5: 7.7 to 9.1 % long; two-valued
        # measured steps 16 to 20 %; gamma and lognormal within 3 %; a hunt)
        outside = (f"{OUTSIDE}: half the learners left out of every round (L = 2K) under steps "
                   f"of a bounded or few-valued law (cv {law.cv:.2g}): a round can close on the "
                   "fresh steps and leave the same slow ones out again, an alternation the "
                   "closed form's left-out head start does not follow")
    if not _ideal(scenario):
        outside = outside or busy_port(loop_, topology_of(scenario), per_update, k, k)
    updates = math.ceil(n / k) if n != math.inf else run.updates
    if run.time_s is not None:
        by_time = math.floor(run.time_s / per_update)
        updates = by_time if updates is None else min(updates, by_time)
    updates = max(updates, 1)
    if fixed:
        t_last = step * math.ceil(updates / (L // k))
        staleness = _fixed_staleness(L, k, updates)
    elif near_fixed:
        # the schedule's bursts of floor(L / K) updates a step, each learner
        # drifting by its step noise: the update of the (U K)-th gradient
        # (257 learners, K = 4, steps of cv 0.1, a few updates past a step:
        # a whole step later said 8.7 % long; a hunt); a period's arrivals
        # are the b K released learners' (the r = L - b K left over wait at
        # the queue's head), so the n-th applied gradient is the (n - r)-th
        # arrival past the first period (12 learners, K = 5: 19 % short
        # counting all 12 a step; a hunt)
        released = k * (L // k)
        arrivals = updates * k - (L - released) * (updates * k > released)
        t_last = _in_phase_nth(step, step, 0.0, law.std, 1, released, arrivals)
        staleness = _fixed_staleness(L, k, updates)
    else:
        # the learners start together: the first update is the K-th of L
        # fresh steps, later ones the steady spacing (64 learners, K = 4,
        # lognormal steps of cv 0.5, 20 updates: 33 % short without it;
        # memoryless steps start as they go on)
        first = law.expected_order(k, L) + step - law.mean
        t_last = max(first, per_update) + (updates - 1) * per_update
        staleness = _truncated_geometric(k / L, updates)
    how = ("fixed steps: b = floor(L / K) updates a step, their schedule" if fixed
           else f"the fixed-step schedule (b = floor(L / K) updates a step): "
                f"the run's {steps:.3g} steps a learner are within a quarter of the "
                f"1 / (4 cv^2) = {1 / (4 * steady_cv ** 2):.3g} its steps take to drift out of it"
           if near_fixed else "m (H_L - H_{L-K}) per update")
    return replace(
        base, t_update_s=per_update, bound="first K learners",
        epoch_time_s=run.epoch_time(t_last, updates * k),
        steady_throughput_samples_per_s=k * scenario.workload.sub_batch / per_update,
        staleness=staleness, gradients_per_update=Pmf.point(k),
        laws={"epoch_time": ("exact: " if exact else "approximation: ") + how
              + ("" if exact else " at the mean of the step"
                 + ("" if _ideal(scenario) else
                    " and its stages, or async's pace at the server if slower")),
              "staleness": ("exact: " if exact else "approximation: ")
              + ("the schedule's" if fixed or near_fixed
                 else "geometric, p = K / L, truncated at the updates before"),
              "minibatch": "exact: K gradients per update",
              **_outside(base.outside_assumptions, outside)},
        gradients=updates * k, updates=updates)


def _fixed_staleness(learners: int, k: int, updates: int):
    """Fixed steps and ideal communication: the staleness of a run of
    ``updates`` updates, walked period by period. Each period's pushes come
    at one instant and queue: the ones left over from the last period
    first, then the released in order of release; every K of them make an
    update. Once a period repeats the last (the queue's order and each
    learner's lag), the rest of the run repeats it. Learners are walked in
    blocks of gcd(L, K), exactly."""
    from ..pmf import Pmf

    # every batch, leftover and release moves whole runs of gcd(L, K)
    # learners that keep together: the schedule of L / g blocks in batches
    # of K / g has the same staleness, g times each (a million learners in
    # halves are two blocks)
    block = math.gcd(learners, k)
    learners, k = learners // block, k // block
    version, counts = 0, np.zeros(1)
    reads = np.zeros(learners, dtype=np.int64)          # the version each learner read
    queue = np.arange(learners)                          # first period: all, in order
    seen: dict = {}
    applied = 0
    while applied < updates:
        batches, released, this = len(queue) // k, [], np.zeros(1)
        for j in range(min(batches, updates - applied)):
            batch = queue[j * k:(j + 1) * k]
            version += 1
            this = _add(this, np.bincount(version - reads[batch] - 1))
            reads[batch] = version
            released.append(batch)
        applied += min(batches, updates - applied)
        counts = _add(counts, this)
        queue = np.concatenate([queue[batches * k:], *released])
        # the state as bytes: a million learners' queue is one array, not a tuple
        key = (queue.tobytes(), (reads - version).tobytes())
        if key in seen:                                  # periodic from here on
            first, counts_then = seen[key]
            cycle_updates, cycle_counts = applied - first, _add(counts, -counts_then)
            repeats = (updates - applied) // cycle_updates
            counts = _add(counts, repeats * cycle_counts)
            applied += repeats * cycle_updates
            seen = {}
        else:
            seen[key] = (applied, counts.copy())
    return Pmf.from_probs(0, counts)


def _add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    size = max(len(a), len(b))
    return np.pad(a, (0, size - len(a))) + np.pad(b, (0, size - len(b)))


KIND = Kind(Spec, loop, build, predict, draw=draw_k(SHARES),
            knob=lambda learners: ("k", powers_of_two(learners)))
