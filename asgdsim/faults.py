"""What the closed form says when learners differ: persistently slow
learners, groups of different GPUs or step laws, failures, slow links.

Stragglers need nothing here: a straggling step is part of the step law
(:class:`~asgdsim.distributions.Straggling`), which every closed form reads
as it reads any law; synchronous rounds get the exact E[max] of the mixture.

Learners whose step laws differ (``faults.slow_learners``, a mixed
``cluster.groups``, or both) break the symmetry every closed form assumes.
Each learner has its own law (:func:`asgdsim.costs.learner_laws`); four
results hold with ideal communication, and replace the kind's own:

- ``sync``: a round is E[max] of independent steps of those laws, the
  integral of 1 - prod_j F_j(x)^(n_j) (n_j learners of law j);
- ``k-sync``: a round is E[K-th] of them, the integral of P(fewer than K
  are done by x), the count done a sum of binomials Bin(n_j, F_j(x));
- ``k-batch-sync``: a round is the K-th event of the learners' renewal
  processes started together, each learner's count from its own law
  (:func:`asgdsim.renewal.kth_event_of_laws`; exact where their sums are);
- ``async``: the learners are independent renewal processes, so gradients
  arrive at the rate sum of 1 / m_i; with exponential steps learner i's
  staleness counts the others' gradients during its own step, geometric
  with p_i = rate_i / total rate, and the law is their mixture weighted by
  each learner's share of the gradients (mean L - 1 still).

Rounds that wait for every learner (``sync``, ``allreduce``,
``local-sgd``) walk each learner's own law in their schedule
(:func:`asgdsim.analytic.predict_rounds`), with modelled communication
too. Every other kind's prediction is its own for identical learners (on
their one law where every learner is slowed alike); where the laws differ
it is labelled outside the closed form's assumptions.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace

import numpy as np
from scipy import integrate

from .renewal import MIXED_EVENTS, kth_event_of_laws

__all__ = ["with_faults", "with_learner_laws", "with_link_slowdowns", "with_failures"]

#: kinds of rounds that wait for every learner (analytic.predict_rounds)
ROUNDS = ("sync", "allreduce", "local-sgd")
#: a probability below this is taken as 0 (far under any figure reported)
TINY = 1e-300


def with_faults(scenario, costs, whole):
    """The kind's closed form ``whole`` with what the scenario's differing
    learners, failures and slow links change in it, in that order."""
    faults = scenario.faults
    if faults.slow_learners is not None or scenario.cluster.groups is not None:
        whole = with_learner_laws(scenario, costs, whole)
    if faults.failures is not None:
        whole = with_failures(scenario, costs, whole)
    if faults.link_slowdowns:
        whole = with_link_slowdowns(scenario, whole)
    return whole


def with_link_slowdowns(scenario, whole):
    """The closed form prices every link at its full rate: a run whose links
    slow down for a while is outside its assumptions (the simulator's
    figures are exact for the window; see components/slowdown.py)."""
    from .analytic import add_reason

    windows = "; ".join(f"{s.links} at {s.factor:g} of its rate from {s.from_:g} s to {s.to:g} s"
                        for s in scenario.faults.link_slowdowns)
    laws = dict(whole.laws)
    add_reason(laws, f"links slow down ({windows}), and the closed "
                    "form takes every link at its full rate")
    return replace(whole, laws=laws)


def with_learner_laws(scenario, costs, whole):
    """The closed form ``whole`` of the kind, for learners whose step laws
    differ: groups of different GPUs or laws (cluster.groups), persistently
    slow learners, or both. Each learner's law is costs.learner_laws';
    ``whole`` took the groups' mixed law for all, without the slowdowns."""
    from .analytic import _ideal, add_reason
    from .costs import learner_classes

    from .shapes import COMPOSED, with_groups

    # by class, not learner by learner: a million learners are a few laws
    classes = learner_classes(scenario, costs)
    distinct = Counter()
    for group in classes:
        distinct.update(group)
    kind, alike = scenario.algorithm.kind, len(distinct) == 1
    exact = _ideal(scenario) and kind in ("sync", "async", "k-sync", "k-batch-sync") and (
        kind != "k-batch-sync" or scenario.algorithm.k <= MIXED_EVENTS)
    slow = scenario.faults.slow_learners
    # the rounds of these kinds already walk each learner's own law
    # (analytic.predict_rounds); the exact E[max] of ideal sync stays below
    rounds = kind in ROUNDS and not (exact and not alike)
    if slow is not None and alike and not rounds:
        # every learner slowed alike: the kind's own closed form on their one
        # law (``whole`` took the law without the slowdown)
        from .algorithms import KINDS

        (law,) = distinct
        whole = KINDS[kind].predict(scenario, replace(costs, compute=law))
    if (scenario.cluster.groups is not None and kind in COMPOSED and not exact
            and (slow is None or rounds) and (not alike or scenario.cluster.mixed_shapes)):
        # each group's stations its own, put together as the kind says (shapes.py)
        return with_groups(scenario, costs, whole)
    if rounds and slow is not None:
        return replace(whole, groups=_group_figures(scenario, classes, None))
    # nodes of different shapes matter where their links take time
    shapes = scenario.cluster.mixed_shapes and not _ideal(scenario)
    if alike or not exact:
        out = dict(whole.laws)
        if not alike or shapes:
            taken = ("the groups' laws mixed by their learners"
                     if len(set(costs.group_computes)) > 1 else "one learner's law")
            add_reason(out, f"{_differences(scenario, costs)}, and the "
                           f"closed form of {kind} here assumes identical learners (it takes "
                           + taken + (" without the slowdown" if slow is not None else "")
                           + (" and the first group's loop" if shapes else "") + ")")
        figures = _group_figures(scenario, classes, kind if exact else None)
        return replace(whole, laws=out, groups=figures)
    if kind == "async":
        return _async_rates(scenario, costs, whole, classes, distinct)
    if kind == "k-batch-sync":
        return _renewal_rounds(scenario, whole, distinct)
    return _sync_rounds(scenario, whole, classes, distinct)


def _renewal_rounds(scenario, whole, distinct):
    """k-batch-sync: a round is the K-th event of the learners' renewal
    processes started together, each of its own law (renewal.kth_event_of_laws)."""
    round_s, exact = kth_event_of_laws(dict(distinct), scenario.algorithm.k)
    scale = round_s / whole.t_update_s
    out = dict(whole.laws)
    out["epoch_time"] = (("exact" if exact else "approximation") + ": rounds of the K-th event "
                         f"of renewal processes of {len(distinct)} laws started together, each "
                         "learner's count from its own law" + ("" if exact else
                                                               " (sums of steps "
                                                               f"{next(iter(distinct)).sums_taken})"))
    return replace(whole, t_update_s=round_s, epoch_time_s=whole.epoch_time_s * scale,
                   steady_throughput_samples_per_s=whole.steady_throughput_samples_per_s / scale,
                   laws=out)


def _differences(scenario, costs) -> str:
    """What makes the learners differ, in words."""
    parts = []
    groups, slow = scenario.cluster.groups, scenario.faults.slow_learners
    if groups and len(set(costs.group_computes)) > 1:
        parts.append("the groups' steps differ (" + ", ".join(
            f"{law.mean:.3g} s on average on group {i}'s {g.gpu.name}"
            for i, (g, law) in enumerate(zip(groups, costs.group_computes))) + ")")
    if scenario.cluster.mixed_shapes and scenario.timing.communication != "ideal":
        parts.append("the groups' nodes differ (" + ", ".join(
            f"group {i}'s {g.gpus_per_node} GPUs, {g.host_link.name}, {g.network.name}"
            for i, g in enumerate(groups)) + ")")
    if slow is not None:
        parts.append(f"{len(set(slow.learners))} of the {scenario.cluster.learners} learners are "
                     f"{slow.slowdown:g} times slower")
    return "; ".join(parts)


def _sync_rounds(scenario, whole, classes, distinct):
    """A round is E[K-th] of independent steps of the learners' laws (K = L
    for sync: their max): the integral of P(fewer than K are done by x), the
    count done a sum of binomials, n_j learners of law j done with
    probability F_j(x) each."""
    from scipy import stats

    from .distributions import top_quantile

    total = sum(distinct.values())
    k = scenario.algorithm.k if scenario.algorithm.kind == "k-sync" else total
    upper = max(law.ppf(top_quantile(total)) for law in distinct)

    def tail(x: float) -> float:
        below = np.array([1.0])
        for law, n in distinct.items():
            # scipy's binomial overflows at p of 1e-308 or so (a lognormal's
            # far left tail): a chance that small is none
            p = float(law.cdf(x))
            done = stats.binom.pmf(np.arange(n + 1), n, p if p > TINY else 0.0)
            below = np.convolve(below, done)[:k]      # counts of K or more: not below
        return float(below.sum())
    # a fixed step's law steps at its value: the quadrature is told where
    steps = sorted({law.mean for law in distinct if law.is_constant and 0 < law.mean < upper})
    round_s = integrate.quad(tail, 0.0, upper, limit=400, points=steps or None)[0]
    scale = round_s / whole.t_update_s
    out = dict(whole.laws)
    slow = scenario.faults.slow_learners
    which = "max" if k == total else "K-th"
    if scenario.cluster.groups is None:
        f, slowed = slow.slowdown, len(set(slow.learners))
        out["epoch_time"] = (f"exact: rounds of E[{which}] of {total - slowed} steps and "
                             f"{slowed} {f:g} times slower")
    else:
        out["epoch_time"] = (f"exact: rounds of E[{which}] of the learners' steps, "
                             f"{len(distinct)} laws (the groups', the slow learners')")
    return replace(whole, t_update_s=round_s, epoch_time_s=whole.epoch_time_s * scale,
                   steady_throughput_samples_per_s=whole.steady_throughput_samples_per_s / scale,
                   laws=out, groups=_group_figures(scenario, classes,
                                                   "sync" if k == total else None))


def _async_rates(scenario, costs, whole, classes, distinct):
    """Learners are independent renewal processes: gradients arrive at the
    sum of their rates; with exponential steps learner i's staleness is
    geometric, in steady state with p_i its share of that sum, and the law
    their mixture weighted by each one's share of the gradients. A run's
    start and stop move each learner's mean to first order (:func:`_run_means`)."""
    from .analytic import OUTSIDE, Run, _is_exponential, few_gradients
    from .pmf import Pmf, lattice

    total = sum(distinct.values())
    rates = {law: 1.0 / law.mean for law in distinct}
    rate = sum(n * rates[law] for law, n in distinct.items())
    scale = (total / costs.compute.mean) / rate
    run = Run.of(scenario)
    stop = run.target_gradients if run.target_gradients < math.inf else run.updates
    means, shares, gradients = _run_means(distinct, stop, run.time_s)
    out = dict(whole.laws)
    if all(_is_exponential(law) for law in distinct):
        # learners of one law are alike: a geometric law each, of its mean
        p = {law: 1.0 / (1.0 + means[law]) for law in distinct}
        most = math.ceil(math.log(1e-13) / math.log1p(-min(p.values()))) + 2
        k, width = lattice(0, most - 1)
        probs = sum(shares[law] * q * (1 - q) ** k for law, q in p.items())
        staleness = Pmf.from_probs(int(k[0]), probs, width)
        out["staleness"] = ("approximation: a mixture of geometric laws, learner i's of the "
                            "others' updates over its gradients (in steady state p_i its share "
                            "of the gradient rate, exactly; the run's start and stop to first "
                            "order), weighted by its share of the gradients")
    elif not any(law.is_constant for law in distinct):
        staleness = _renewal_staleness(distinct, rates, rate, means, shares)
        out["staleness"] = ("approximation: learner i's a count law of mean (R - r_i) m_i (exact "
                            "in steady state; the run's start and stop to first order) and the "
                            "variance of the others' renewal counts over its step, mixed by the "
                            "learners' shares of the gradients")
    else:
        staleness = whole.staleness
        out["staleness"] = ("approximation: identical learners' law (its mean, L - 1, holds "
                            "for any rates in steady state)")
    out["epoch_time"] = "exact mean: the learners' gradient rates summed"
    epoch = whole.epoch_time_s * scale
    if all(law.is_constant for law in distinct):
        # fixed steps keep their schedule: learner i applies at k m_i
        epoch, gradients = _fixed_schedule_epoch(distinct, stop, run)
        out["epoch_time"] = "exact: fixed steps of several rates, their schedule"
        if gradients < FIXED_STEADY_GRADIENTS * total:
            out.setdefault("assumptions", (
                f"{OUTSIDE}: fixed steps of several rates keep an exact schedule whose "
                f"staleness the closed form does not walk; over a run of "
                f"{gradients / total:.3g} gradients a learner the steady state's law does not "
                "hold"))
    if "assumptions" not in out and (few := few_gradients(gradients, total)):
        out["assumptions"] = few
    # the run's gradients at the learners' own rates (a time stop's are
    # not the mean law's); the epoch, the time of the last over them
    return replace(whole, t_update_s=whole.t_update_s * scale, epoch_time_s=epoch,
                   steady_throughput_samples_per_s=whole.steady_throughput_samples_per_s / scale,
                   staleness=staleness, laws=out, groups=_group_figures(scenario, classes, "async"),
                   gradients=gradients, updates=gradients)


#: gradients a learner below which fixed steps of several rates are off
#: their steady staleness (labelled)
FIXED_STEADY_GRADIENTS = 10


def _fixed_schedule_epoch(distinct, gradients: float | None, run) -> tuple[float, float]:
    """(epoch time, gradients) of learners of fixed steps of several rates
    started together, ideal communication: learner i applies at k m_i, so
    the n-th gradient is the first time t at which the sum over the learners
    of floor(t / m_i) reaches n; a time stop's count is that sum at its
    time. 32 learners, two of them twice as slow, 96 gradients: the summed
    rate said 10.1 s an epoch, the run and the schedule 13.0 (a hunt)."""
    def steps(law, t: float) -> int:
        return math.floor(t / law.mean * (1 + 1e-12))

    until = _stop_time(lambda t: sum(n * steps(law, t) for law, n in distinct.items()),
                       gradients, run.time_s, max(law.mean for law in distinct))
    count = sum(n * steps(law, until) for law, n in distinct.items())
    count = min(count, math.inf if gradients is None else gradients)
    return run.epoch_time(max(steps(law, until) * law.mean for law in distinct), count), count


def _stop_time(applied, gradients: float | None, time_s: float | None, start: float) -> float:
    """When the learners' applies ``applied(t)`` (growing with t) reach the
    run's ``gradients``, or ``time_s`` where it comes first: bisected, from
    a bracket doubled from ``start``."""
    until = math.inf if time_s is None else time_s
    if gradients is None or (until < math.inf and applied(until) <= gradients):
        return until
    low, high = 0.0, start
    while applied(high) < gradients:
        low, high = high, 2 * high
    for _ in range(100):
        middle = (low + high) / 2
        low, high = (middle, high) if applied(middle) < gradients else (low, middle)
    return min(until, high)


def _run_means(distinct, gradients: float | None, time_s: float | None):
    """Each law's mean staleness over a run from a common start that stops
    after ``gradients`` or at ``time_s`` (the first), its share of the run's
    gradients, and their count. Learner j applies
    M_j(t) = t / m_j + lag_j (1 - exp(-t / m_j)) by time t (0 at the start,
    the renewal function's asymptote, lag_j = (c_j^2 - 1) / 2, beyond a few
    steps); learner i's gradients together saw every other learner's applies
    up to its last, at T less its age at the stop (m_i (1 + c_i^2) / 2 on
    average). For identical learners the mean is async's
    (M - 1)(1 - M (1 + c^2) / 2n) to first order; in steady state
    (R - r_i) m_i. 128 exponential learners, two of them half as fast, 2
    gradients a learner: 74 simulated, 127 in steady state."""
    lag = {law: (law.var / law.mean ** 2 - 1.0) / 2.0 for law in distinct}

    def applied(law, t: float) -> float:
        return t / law.mean + lag[law] * -math.expm1(-t / law.mean)

    def total(t: float) -> float:
        return sum(n * applied(law, t) for law, n in distinct.items())

    # (M_j grows with t: lag_j >= -1/2)
    until = _stop_time(total, gradients, time_s, max(law.mean for law in distinct))
    means, shares = {}, {}
    for law, n in distinct.items():
        own = applied(law, until)
        last = max(until - law.mean * (1.0 + lag[law]), 0.0)     # its age: m (1 + c^2) / 2
        seen = sum(k * applied(other, last) for other, k in distinct.items()) - applied(law, last)
        means[law], shares[law] = (seen / own if own > 0 else 0.0), n * own
    whole = sum(shares.values())
    return means, {law: share / whole for law, share in shares.items()}, whole


def _renewal_staleness(distinct, rates, rate, means, shares):
    """Async staleness with random steps of several laws: in steady state a
    learner's step X sees the others' stationary renewal processes, learner
    j's about X / m_j times. The count's mean is (R - r_i) m_i (over a run,
    ``means``); its variance that of the mean over X, (R - r_i)^2 var X, plus
    each other learner's around it: the lattice's frac (1 - frac) of X / m_j
    and the renewal count's (m_i / m_j) cv_j^2. Each law's count law,
    weighted by its learners' ``shares`` of the gradients."""
    from .analytic import _count_law, _mixture

    parts = []
    for law in distinct:
        var = (rate - rates[law]) ** 2 * law.var
        for other, n in distinct.items():
            ratio = law.mean / other.mean
            frac = ratio - math.floor(ratio)
            var += (n - (other == law)) * (frac * (1 - frac) + ratio * other.cv ** 2)
        parts.append((shares[law], *_count_law(means[law], var)))
    return _mixture(parts)


def _group_figures(scenario, classes, exact_kind: str | None) -> tuple[dict, ...]:
    """The closed form's figures of each group (cluster.groups), where it
    has them (``exact_kind``: sync or async with ideal communication), from
    each group's classes of learners ({law: learners}, costs.learner_classes):

    - sync: every learner gives one gradient a round, so a group's share is
      its share of the learners, and its mean step its laws' mean;
    - async: learner i gives gradients at rate r_i = 1 / m_i, so a group's
      share is its rates' share of the sum R, its mean step over its
      gradients n_g / sum r_i, and with random steps its mean staleness
      sum (R - r_i) / sum r_i: learner i's step, independent of the others'
      stationary renewal processes, sees (R - r_i) m_i of their gradients on
      average (with exponential steps, geometric with p_i = r_i / R). Steps
      of a constant length keep the learners in phase: no such mean.
    """
    groups = scenario.cluster.groups
    if not groups:
        return ()
    out = []
    learners = sum(n for group in classes for n in group.values())
    own_rates = [sum(n / law.mean for law, n in group.items()) for group in classes]
    total = sum(own_rates)
    constant = any(law.is_constant for group in classes for law in group)
    for group, mine, own, n in zip(groups, classes, own_rates, scenario.cluster.group_learners):
        figures = {"learners": n, "gpu": group.gpu.name, "mean_step_s": None,
                   "throughput_share": None, "staleness_mean": None}
        if exact_kind == "sync":
            figures.update(mean_step_s=sum(law.mean * k for law, k in mine.items()) / n,
                           throughput_share=n / learners)
        elif exact_kind == "async":
            figures.update(mean_step_s=float(n / own), throughput_share=float(own / total))
            if not constant:
                figures["staleness_mean"] = float(sum(k * (total - 1.0 / law.mean)
                                                      for law, k in mine.items()) / own)
        out.append(figures)
    return tuple(out)


#: failures (and repairs) in a run below which its share of time up is not the long run's
FEW_FAILURES = 100


def with_failures(scenario, costs, whole):
    """Learners that fail: up a share A = mtbf / (mtbf + repair) of the time.

    With exponential steps and ideal communication ``async`` is exact in the
    long run: a learner up delivers at rate 1 / m whatever it lost (its
    steps are memoryless), so the gradient rate is A L / m and the epoch
    takes 1 / A as long. A gradient's staleness counts the other learners'
    gradients during its step: geometric with mean U mtbf / (m + mtbf), U
    the others up (Binomial(L - 1, A) for learner failures; with node
    failures the G - 1 on its own node are up with it and the other nodes'
    G each are up with probability A) and mtbf / (m + mtbf) what is left of
    a step that its learner's failure did not cut short (a finished step
    lasts Exp(1 / m + 1 / mtbf)); an approximation where repairs are as
    short as steps.
    Every other kind: the epoch time scaled by 1 / A, labelled outside.
    """
    from .analytic import _ideal, _is_exponential, add_reason
    from .pmf import Pmf, binomial, lattice

    spec, law = scenario.faults.failures, costs.compute
    available = spec.mtbf / (spec.mtbf + spec.repair)
    laws = dict(whole.laws)
    scaled = replace(whole, epoch_time_s=whole.epoch_time_s / available,
                     t_update_s=whole.t_update_s / available,
                     steady_throughput_samples_per_s=whole.steady_throughput_samples_per_s * available)
    kind, total = scenario.algorithm.kind, scenario.cluster.learners
    if spec.scope == "node" and scenario.cluster.mixed_shapes:
        # nodes of different sizes: the units below are all of one size
        add_reason(laws, f"nodes of {len(scenario.cluster.groups)} "
                        "shapes fail, and the closed form's failure units are alike; the "
                        f"failure-free epoch time scaled by the share of time up ({available:.1%})")
        return replace(scaled, laws=laws)
    per_unit = scenario.cluster.gpus_per_node if spec.scope == "node" else 1
    units = total // per_unit
    # the long run's share of time up needs many failures in the run
    per_s = scaled.steady_throughput_samples_per_s / scenario.workload.sub_batch
    run_s = whole.gradients / per_s if per_s > 0 and math.isfinite(whole.gradients) else math.inf
    cycles = units * run_s / (spec.mtbf + spec.repair)
    if cycles < FEW_FAILURES:
        add_reason(laws, f"about {cycles:.3g} failures are expected in "
                        "the run, and the closed form's share of time up is the long run's")
        return replace(scaled, laws=laws)
    if not (kind == "async" and _ideal(scenario) and _is_exponential(law)):
        add_reason(laws, f"{spec.scope}s fail (up {available:.1%} of the "
                        f"time); the closed form of {kind} here is the failure-free one, its "
                        "epoch time scaled by that share")
        return replace(scaled, laws=laws)
    # the other learners up while a learner steps: its own unit's, and each
    # other unit's with chance A
    # the counts of other units up where their binomial has mass (14
    # standard deviations), not all of a million units
    centre, spread = (units - 1) * available, 14 * math.sqrt((units - 1) * available * (1 - available))
    up = np.arange(max(0, math.floor(centre - spread)), min(units - 1, math.ceil(centre + spread)) + 1)
    chance = binomial(up, units - 1, available)
    others_up = up * per_unit + (per_unit - 1)
    most = int(40 * (others_up.max() + 1)) + 10
    k, width = lattice(0, most - 1)
    weights, means = _binned_units(chance, others_up, max(MIN_UP_GROUPS, UP_TERMS // len(k)))
    # a step that finishes is one its learner's failure did not cut short:
    # steps at rate 1 / m against failures at 1 / mtbf, it lasts Exp(1 / m +
    # 1 / mtbf), over which U others deliver U mtbf / (m + mtbf) on average
    # (failures every 2 steps: 1.67 where the whole step's U said 2.50,
    # 1.70 simulated)
    kept = spec.mtbf / (spec.mtbf + law.mean)
    probs = sum(w / (1 + u) * (u / (1 + u)) ** k for w, u in zip(weights, means * kept))
    laws["epoch_time"] = (f"exact (long run): the failure-free rate times the share of time up "
                          f"({available:.1%}), exponential steps being memoryless")
    laws["staleness"] = ("approximation: geometric with mean the other learners up, binomial "
                         "over the failure units, over a step its failure did not cut short "
                         "(repairs long against a step)")
    return replace(scaled, staleness=Pmf.from_probs(int(k[0]), probs, width), laws=laws)


#: terms (geometric laws x their values) the staleness mixture may take, and
#: the fewest groups of counts of learners up it is cut into
UP_TERMS, MIN_UP_GROUPS = 2**22, 16


def _binned_units(chance: np.ndarray, others_up: np.ndarray,
                  groups: int) -> tuple[np.ndarray, np.ndarray]:
    """The counts of others up that carry weight (above 1e-15), as they are;
    or, where there are more than ``groups`` of them (a binomial over a
    million learners spans thousands), that many runs of consecutive counts,
    each at its weighted mean: their geometric laws differ in mean by a
    fraction sqrt((1 - A) / (A L)) of it, far below what the mixture shows."""
    keep = chance > 1e-15
    chance, others_up = chance[keep], others_up[keep]
    if len(chance) <= groups:
        return chance, others_up
    group = np.arange(len(chance)) * groups // len(chance)
    weights = np.bincount(group, weights=chance)
    return weights, np.bincount(group, weights=chance * others_up) / weights
