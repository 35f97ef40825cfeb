"""``ssp``: stale synchronous parallel (Ho et al., NIPS 2013). Each gradient
is applied on arrival, as in ``async``, and the reply carries the new
weights; but a learner may start its step i (from 0) only when every
learner has pushed at least i - s gradients. s = 0 is a barrier each step;
a bound no learner reaches is ``async``.

Closed form (ideal communication):

- fixed steps: the learners keep in step and never wait: ``async``, exact;
  so too where a saturated shared resource (the server's port) paces the
  learners, serving them in turn;
- s = 0: rounds of L steps started together, each E[max of L steps] (the
  n-th gradient at its order statistic in the last round), exact; a
  gradient's staleness is the learners after it in its round before plus
  those before it in its own: U + V, U and V uniform on 0..L-1, exact for
  any continuous step law (the first round: V alone; the last, cut short
  at the run's end: V below the gradients it applies);
- s >= 1: as ``async`` (every learner keeps the same long-run pace, so the
  mean staleness is L - 1 in steady state, exactly), with each step
  slowed by the barrier's excess E[max of L] - m spread over the s + 1
  steps a learner may run ahead. That is a rough estimate, exact at s = 0
  and as s grows: simulated, the slowdown came out at 0.8 to 0.95 of it
  for exponential steps and 0.1 to 0.5 for gamma steps of cv 0.3 (L 4 to
  64, s 1 to 8). Where it exceeds 5 % of a step the prediction is
  labelled outside the closed form's assumptions.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Literal

import numpy as np
from pydantic import Field

from ..specs import _Spec
from .kind import Kind
from .server import ASYNC, loop, predict_async


class Spec(_Spec):
    kind: Literal["ssp"]
    #: a learner may start step i once every learner has pushed i - s gradients
    staleness_bound: int = Field(ge=0, strict=True)


def build(env, scenario, costs, weights, recorder, seed):
    from ..components.family import StalenessClock

    cluster = ASYNC.build(env, scenario, costs, weights, recorder, seed)
    clock = StalenessClock(env, len(cluster.learners), scenario.algorithm.staleness_bound)
    for learner in cluster.learners:
        learner.clock = clock
    return cluster


def predict(scenario, costs):
    from ..analytic import OUTSIDE, Run, _ideal

    s, law = scenario.algorithm.staleness_bound, costs.compute
    base = predict_async(scenario, costs)
    L = scenario.cluster.learners
    steps = base.gradients / L
    # nobody is ever held back: one learner, learners in step, a bound no learner reaches
    if L == 1 or law.is_constant and _ideal(scenario) or s >= steps:
        return base
    if s == 0:
        if _ideal(scenario):
            return _barrier(scenario, base, Run.of(scenario), law)
        return _modelled_barrier(scenario, costs, base, Run.of(scenario), law)
    if base.bound != "gpu":
        return base      # a saturated shared resource serves the learners in turn
    # the barrier's excess spread over the s + 1 steps a learner may run
    # ahead: a rough estimate (see the module's docstring)
    cost = (law.expected_max(L) - law.mean) / (s + 1)
    cycle = base.t_gpu_s
    slower = (cycle + cost) / cycle
    laws = dict(base.laws)
    laws["epoch_time"] = (f"approximation: async's, each step slowed by the barrier's "
                          f"excess E[max of L] - m over s + 1 = {s + 1} steps")
    laws["staleness"] = "approximation: async's law (mean L - 1 in steady state, exact)"
    if cost > 0.05 * cycle and "assumptions" not in laws:
        laws["assumptions"] = (f"{OUTSIDE}: the staleness bound holds learners back by about "
                               f"{cost / cycle:.0%} of a step, a cost the closed form only estimates roughly")
    return replace(base, t_gpu_s=cycle * slower, t_update_s=base.t_update_s * slower,
                   epoch_time_s=base.epoch_time_s * slower,
                   steady_throughput_samples_per_s=base.steady_throughput_samples_per_s / slower,
                   laws=laws)


def _barrier(scenario, base, run, law):
    """s = 0 with ideal communication: a barrier every step."""
    from ..pmf import Pmf

    L = scenario.cluster.learners
    n = run.target_gradients
    if n == math.inf:
        n = run.updates if run.updates else L * max(1, math.floor(run.time_s / law.expected_max(L)))
    n = int(n)
    rounds, last = divmod(n - 1, L)
    last += 1                                   # gradients of the last round
    t_last = rounds * law.expected_max(L) + law.expected_order(last, L)
    uniform = np.full(L, 1.0 / L)
    if rounds == 0:
        staleness = Pmf.from_probs(0, np.full(last, 1.0 / last))
    else:
        middle = np.convolve(uniform, uniform)                    # U + V
        tail = np.convolve(uniform, np.full(last, 1.0 / last))    # the last round's
        parts = [(L, np.pad(uniform, (0, 2 * L - 1 - L))),
                 ((rounds - 1) * L, middle), (last, np.pad(tail, (0, 2 * L - 1 - len(tail))))]
        staleness = Pmf.from_probs(0, sum(w * p for w, p in parts) / n)
    laws = dict(base.laws)
    laws["epoch_time"] = "exact: rounds of E[max of L steps], the last to its n-th gradient"
    laws["staleness"] = "exact: U + V, ranks uniform on 0..L-1 in consecutive rounds"
    per_round = law.expected_max(L)
    return replace(base, t_gpu_s=per_round, t_update_s=per_round / L,
                   epoch_time_s=run.epoch_time(t_last, n),
                   steady_throughput_samples_per_s=L * scenario.workload.sub_batch / per_round,
                   staleness=staleness, laws=laws, gradients=n, updates=n)


def _modelled_barrier(scenario, costs, base, run, law):
    """s = 0 with modelled communication: the barrier lifts when the last
    gradient of a step reaches the server. The others have their weights by
    then and start at once; the last learner starts after the update and
    its pull. Each reads its sub-batch and computes, and the gradients queue
    at the server's port in the order they come (each at its expected order
    statistic); the last one's arrival lifts the next barrier."""
    from ..analytic import _push_queue, _resolved
    from ..skeleton import Skeleton
    from ..structure import loop_of, topology_of

    loop_, topo = loop_of(scenario, costs), topology_of(scenario)
    L = topo.learners
    local = sum(st.duration_s for st in loop_.after if st.holds[0] != "server_port_in")
    # each shard's port takes one part of every learner's message
    message = loop_.demand_s("server_port_in") / max(1, topo.instances("server_port_in"))
    # the reads after the barrier, walked: a node's learners take turns at
    # its disk and host links
    starts = np.zeros(L)
    starts[-1] = costs.server_update_s + sum(st.duration_s for st in loop_.reply)
    walked = Skeleton().walk(starts, [_resolved(topo, loop_.before, i) for i in range(L)])
    ready = np.array([row[~np.isnan(row)][-1] if np.any(~np.isnan(row)) else start
                      for row, start in zip(walked, starts)])
    per_round = _push_queue(ready, law.plus(local), message, L)
    n = base.gradients
    laws = dict(base.laws)
    laws["epoch_time"] = ("approximation: a barrier each step, lifted by the last gradient's "
                          "arrival; the round's gradients queued at the server's port at their "
                          "expected order statistics, the last learner after its update and pull")
    return replace(base, t_gpu_s=per_round, t_update_s=per_round / L,
                   epoch_time_s=run.epoch_time(per_round * n / L, n),
                   steady_throughput_samples_per_s=L * scenario.workload.sub_batch / per_round,
                   laws=laws)


def draw(rng, ideal: bool, learners: int):
    return {"staleness_bound": int(rng.choice([0, 1, 2, 4, 16]))}, {}, lambda learners: 1


KIND = Kind(Spec, loop, build, predict, draw=draw,
            knob=lambda learners: ("staleness_bound", [0, 1, 2, 4, 8, 16]))
