"""What the closed form says when learners are persistently slow.

Stragglers need nothing here: a straggling step is part of the step law
(:class:`~asgdsim.distributions.Straggling`), which every closed form reads
as it reads any law; synchronous rounds get the exact E[max] of the mixture.

Persistently slow learners (``faults.slow_learners``) break the symmetry
every closed form assumes. Two results hold exactly with ideal
communication, and replace the kind's own:

- ``sync``: a round is E[max] of independent steps of two laws,
  the integral of 1 - F(x)^(L - S) F(x / f)^S (S learners f times slower);
- ``async``: the learners are independent renewal processes, so gradients
  arrive at the rate sum of 1 / m_i; with exponential steps learner i's
  staleness counts the others' gradients during its own step, geometric
  with p_i = rate_i / total rate, and the law is their mixture weighted by
  each learner's share of the gradients (mean L - 1 still).

For every other kind, or with modelled communication, the prediction is
labelled outside the closed form's assumptions.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from scipy import integrate, special

__all__ = ["with_slow_learners", "with_link_slowdowns", "with_failures"]


def with_link_slowdowns(scenario, whole):
    """The closed form prices every link at its full rate: a run whose links
    slow down for a while is outside its assumptions (the simulator's
    figures are exact for the window; see components/slowdown.py)."""
    from .analytic import OUTSIDE

    windows = "; ".join(f"{s.links} at {s.factor:g} of its rate from {s.from_:g} s to {s.to:g} s"
                        for s in scenario.faults.link_slowdowns)
    laws = dict(whole.laws)
    laws.setdefault("assumptions", f"{OUTSIDE}: links slow down ({windows}), and the closed "
                    "form takes every link at its full rate")
    return replace(whole, laws=laws)


def with_slow_learners(scenario, costs, whole):
    """The closed form ``whole`` of the kind, for a scenario with slow learners."""
    from .analytic import OUTSIDE, _ideal, _is_exponential
    from .pmf import Pmf

    slow = scenario.faults.slow_learners
    law, f = costs.compute, slow.slowdown
    total, slowed = scenario.cluster.learners, len(set(slow.learners))
    kind = scenario.algorithm.kind
    if not _ideal(scenario) or kind not in ("sync", "async"):
        laws = dict(whole.laws)
        laws.setdefault("assumptions", f"{OUTSIDE}: {slowed} of the {total} learners are "
                        f"{f:g} times slower, and the closed form of {kind} here assumes "
                        "identical learners")
        return replace(whole, laws=laws)
    laws = dict(whole.laws)
    if kind == "sync":
        upper = law.scaled(max(f, 1.0)).ppf(1 - 1e-12 / total)
        def tail(x: float) -> float:
            return 1.0 - law.cdf(x) ** (total - slowed) * law.cdf(x / f) ** slowed
        round_s = integrate.quad(tail, 0.0, upper, limit=400)[0]
        scale = round_s / whole.t_update_s
        laws["epoch_time"] = (f"exact: rounds of E[max] of {total - slowed} steps and {slowed} "
                              f"{f:g} times slower")
        return replace(whole, t_update_s=round_s, epoch_time_s=whole.epoch_time_s * scale,
                       steady_throughput_samples_per_s=whole.steady_throughput_samples_per_s / scale,
                       laws=laws)
    rates = np.array([1.0 / law.mean] * (total - slowed) + [1.0 / (f * law.mean)] * slowed)
    scale = (total / law.mean) / rates.sum()
    share = rates / rates.sum()
    if _is_exponential(law):
        most = math.ceil(math.log(1e-13) / math.log1p(-share.min())) + 2
        k = np.arange(most)
        probs = sum(w * p * (1 - p) ** k for w, p in zip(share, share))
        staleness = Pmf.from_probs(0, probs)
        laws["staleness"] = ("exact: a mixture of geometric laws, learner i's with p_i its share "
                             "of the gradient rate, weighted by that share")
    else:
        staleness = whole.staleness
        laws["staleness"] = ("approximation: identical learners' law (its mean, L - 1, holds "
                             "for any rates in steady state)")
    laws["epoch_time"] = "exact mean: the learners' gradient rates summed"
    return replace(whole, t_update_s=whole.t_update_s * scale,
                   epoch_time_s=whole.epoch_time_s * scale,
                   steady_throughput_samples_per_s=whole.steady_throughput_samples_per_s / scale,
                   staleness=staleness, laws=laws)


def with_failures(scenario, costs, whole):
    """Learners that fail: up a share A = mtbf / (mtbf + repair) of the time.

    With exponential steps and ideal communication ``async`` is exact in the
    long run: a learner up delivers at rate 1 / m whatever it lost (its
    steps are memoryless), so the gradient rate is A L / m and the epoch
    takes 1 / A as long. A gradient's staleness counts the other learners'
    gradients during its step: geometric with mean U, U the others up
    (Binomial(L - 1, A) for learner failures; with node failures the G - 1
    on its own node are up with it and the other nodes' G each are up with
    probability A), an approximation where repairs are as short as steps.
    Every other kind: the epoch time scaled by 1 / A, labelled outside.
    """
    from .analytic import OUTSIDE, _ideal, _is_exponential
    from .pmf import Pmf

    spec, law = scenario.faults.failures, costs.compute
    available = spec.mtbf / (spec.mtbf + spec.repair)
    laws = dict(whole.laws)
    scaled = replace(whole, epoch_time_s=whole.epoch_time_s / available,
                     t_update_s=whole.t_update_s / available,
                     steady_throughput_samples_per_s=whole.steady_throughput_samples_per_s * available)
    kind, total = scenario.algorithm.kind, scenario.cluster.learners
    if not (kind == "async" and _ideal(scenario) and _is_exponential(law)):
        laws.setdefault("assumptions", f"{OUTSIDE}: {spec.scope}s fail (up {available:.1%} of the "
                        f"time); the closed form of {kind} here is the failure-free one, its "
                        "epoch time scaled by that share")
        return replace(scaled, laws=laws)
    # the number of the other learners up while a learner steps
    per_node = scenario.cluster.gpus_per_node if spec.scope == "node" else 1
    others = total // per_node - 1
    up = np.arange(others + 1)
    chance = np.exp(special.gammaln(others + 1) - special.gammaln(up + 1)
                    - special.gammaln(others - up + 1) + up * math.log(available)
                    + (others - up) * math.log1p(-available)) if available < 1 else (up == others) * 1.0
    others_up = up * per_node + (per_node - 1)
    most = int(40 * (others_up.max() + 1)) + 10
    k = np.arange(most)
    probs = sum(w / (1 + u) * (u / (1 + u)) ** k for w, u in zip(chance, others_up) if w > 1e-15)
    laws["epoch_time"] = (f"exact (long run): the failure-free rate times the share of time up "
                          f"({available:.1%}), exponential steps being memoryless")
    laws["staleness"] = ("approximation: geometric with mean the other learners up, binomial "
                         "over the failure units (repairs long against a step)")
    return replace(scaled, staleness=Pmf.from_probs(0, probs), laws=laws)
