"""``ssp``: stale synchronous parallel (Ho et al., NIPS 2013). Each gradient
is applied on arrival, as in ``async``, and the reply carries the new
weights; but a learner may start its step i (from 0) only when every
learner has pushed at least i - s gradients. s = 0 is a barrier each step;
a bound no learner reaches is ``async``.

Closed form (ideal communication):

- fixed steps: the learners keep in step and never wait: ``async``, exact;
- s = 0: rounds of L steps started together, each E[max of L steps] (the
  n-th gradient at its order statistic in the last round), exact; a
  gradient's staleness is the learners after it in its round before plus
  those before it in its own: U + V, U and V uniform on 0..L-1, exact for
  any continuous step law (the first round: V alone; the last, cut short
  at the run's end: V below the gradients it applies);
- s >= 1: as ``async`` (every learner keeps the same long-run pace, so the
  mean staleness is L - 1 in steady state, exactly), with each step
  slowed by what the bound costs. No closed form of that cost is known to
  us; it is the difference between the max-plus recursion of the steps'
  start times with the bound, T_j(i) = X_j(i) + max(T_j(i - 1),
  max_l T_l(i - s - 1)), and without it, walked on a fixed seeded set of
  draws of the step law over the run's own length (so its start, when the
  learners have not yet spread out, is in): a numerical evaluation, not a
  simulation of the cluster, and labelled an approximation. With modelled
  communication the cost is added to async's cycle.
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
    #: a learner may start step i once every learner has pushed i - s
    #: gradients: counted in a learner's own steps ahead of the slowest, not
    #: in updates as the staleness the run reports is (64 learners, s = 2:
    #: a staleness of 63 on average, as async's)
    staleness_bound: int = Field(ge=0, strict=True)


def build(env, scenario, costs, weights, recorder, seed):
    from ..components.family import StalenessClock

    cluster = ASYNC.build(env, scenario, costs, weights, recorder, seed)
    clock = StalenessClock(env, len(cluster.learners), scenario.algorithm.staleness_bound)
    for learner in cluster.learners:
        learner.clock = clock
    cluster.shared.append(clock)
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
        laws = dict(base.laws)
        laws.setdefault("assumptions", f"{OUTSIDE}: the learners queue at {base.bound}, and how "
                        "the staleness bound acts on that queue's order is not modelled")
        return replace(base, laws=laws)
    # what the bound costs a step: the recursion of its start times, walked
    # on fixed draws of the step law, against free-running learners
    # beyond the simulator's learners, the recursion walks WALKED_LEARNERS of
    # them for as many steps each (the bound then waits for the slowest of
    # those: the cost of a million learners' bound is underestimated)
    walked = min(L, WALKED_LEARNERS)
    n = max(1, round(base.gradients * walked / L))
    held, free = _bound_recursion(law, walked, s, n), _bound_recursion(law, walked, math.inf, n)
    # the run's last gradient: the bound's recursion itself with ideal
    # communication; else async's, later by what the bound costs
    per_second = Run.of(scenario).epoch_time(1.0, base.gradients)   # epoch time is linear in it
    t_async = base.epoch_time_s / per_second
    t_last = held if _ideal(scenario) else t_async + (held - free)
    slower = t_last / t_async
    laws = dict(base.laws)
    laws["epoch_time"] = ("approximation: the recursion of the steps' start times under the "
                          f"bound, walked on fixed draws of the step law (the bound costs "
                          f"{(held - free) / steps / law.mean:.1%} of a step)"
                          + ("" if _ideal(scenario) else ", its cost added to async's run"))
    if walked < L:
        laws["epoch_time"] += (f"; walked on {walked:,} of the {L:,} learners (the slowest of "
                               "all of them would hold the bound back more)")
    laws["staleness"] = "approximation: async's law (mean L - 1 in steady state, exact)"
    return replace(base, t_gpu_s=base.t_gpu_s * slower, t_update_s=base.t_update_s * slower,
                   epoch_time_s=t_last * per_second,
                   steady_throughput_samples_per_s=base.steady_throughput_samples_per_s / slower,
                   laws=laws)


#: steps x learners x replications of the bound's recursion walked at most
RECURSION_DRAWS = 400_000
#: learners the bound's recursion walks at most (the simulator's cap)
WALKED_LEARNERS = 16_384


def _bound_recursion(law, learners: int, bound: float, gradients: int) -> float:
    """The mean time of the run's last gradient (the ``gradients``-th step
    finished) when step i may start only once every learner has finished
    step i - s - 1 (the bound), over fixed draws (seeded, so the closed form
    is a function of the scenario): T_j(i) = X_j(i) + max(T_j(i - 1),
    max_l T_l(i - s - 1)). Long runs are walked for a prefix and continued
    at the pace of its last half."""
    # enough steps that the fastest learners' share of the run is in: the
    # learners spread by their step noise's random walk
    each = gradients / learners
    steps = math.ceil(each + 10 + 4 * law.cv * math.sqrt(each))
    walked = max(2, min(steps, RECURSION_DRAWS // learners))
    reps = max(1, min(64, RECURSION_DRAWS // (learners * walked)))
    draws = law.sample(np.random.default_rng(20131205), reps * walked * learners)
    draws = draws.reshape(walked, reps, learners)
    done = np.zeros((walked, reps, learners))
    latest = np.zeros((walked, reps))              # max over learners, step by step
    for i in range(walked):
        gate = latest[i - bound - 1] if bound < math.inf and i - bound - 1 >= 0 else 0.0
        previous = done[i - 1] if i else 0.0
        done[i] = np.maximum(previous, np.asarray(gate)[..., None]) + draws[i]
        latest[i] = done[i].max(axis=1)
    # the k-th gradient of each replication: its k-th smallest finish
    finished = np.sort(done.transpose(1, 0, 2).reshape(reps, -1), axis=1)
    within = min(gradients, walked * learners // 2 if walked < steps else gradients)
    last = float(finished[:, within - 1].mean())
    if within == gradients:
        return last
    # beyond the prefix: the pace of its second quarter of gradients
    early = float(finished[:, within // 2 - 1].mean())
    return last + (gradients - within) * (last - early) / (within - within // 2)


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
    staleness = _barrier_staleness(L, rounds, last, n)
    laws = dict(base.laws)
    laws["epoch_time"] = "exact: rounds of E[max of L steps], the last to its n-th gradient"
    laws["staleness"] = "exact: U + V, ranks uniform on 0..L-1 in consecutive rounds"
    per_round = law.expected_max(L)
    return replace(base, t_gpu_s=per_round, t_update_s=per_round / L,
                   epoch_time_s=run.epoch_time(t_last, n),
                   steady_throughput_samples_per_s=L * scenario.workload.sub_batch / per_round,
                   staleness=staleness, laws=laws, gradients=n, updates=n)


def _barrier_staleness(L: int, rounds: int, last: int, n: int):
    """U + V, U and V uniform on 0..L-1 (the first round: V alone; the last,
    of ``last`` gradients: V below ``last``), mixed by the gradients of
    each: the sums of uniforms are trapezoids, P(U + V = j) = (number of
    pairs) / (L last), in closed form on the lattice of pmf.lattice."""
    from ..pmf import Pmf, lattice

    j, width = lattice(0, 2 * L - 2)

    def pairs(a: int, b: int) -> np.ndarray:
        """How many (u, v), u < a and v < b, sum to each j."""
        return np.clip(np.minimum.reduce([j + 1, np.full_like(j, min(a, b)),
                                          a + b - 1 - j]), 0, None).astype(float)

    if rounds == 0:
        return Pmf.from_probs(int(j[0]), (j < last) / last * width, width)
    mixed = (L * (j < L) / L + (rounds - 1) * L * pairs(L, L) / L**2
             + last * pairs(L, last) / (L * last)) / n
    return Pmf.from_probs(int(j[0]), mixed * width, width)


#: rounds of the barrier walked with modelled communication
ROUNDS_WALKED = 64


def _modelled_barrier(scenario, costs, base, run, law):
    """s = 0 with modelled communication: the barrier lifts when the last
    gradient of a step reaches the server. Each learner starts its next step
    once the barrier is lifted and its own gradient's update is applied and
    pulled: the server applies the gradients one at a time in the order they
    reached it, so where it is busy the last learner starts well after the
    barrier. Each reads its sub-batch and computes, and the gradients queue
    at the server's port in the order they come (each at its expected order
    statistic); the last one's arrival lifts the next barrier. The rounds are
    walked until they repeat (one length, or two alternating), and a round
    is their mean."""
    from ..analytic import _expected_order_statistics, _resolved
    from ..skeleton import Skeleton
    from ..structure import loop_of, topology_of

    loop_, topo = loop_of(scenario, costs), topology_of(scenario)
    L = topo.learners
    local = sum(st.duration_s for st in loop_.after if st.holds[0] != "server_port_in")
    # each shard's port takes one part of every learner's message
    message = topo.message_s(loop_, "server_port_in")
    pull, update = sum(st.duration_s for st in loop_.reply), costs.server_update_s
    before = [_resolved(topo, loop_.before, i) for i in range(L)]
    starts, busy, rounds, backlogs = np.zeros(L), 0.0, [], []
    starts[-1] = update + pull
    places = np.arange(L)
    for _ in range(ROUNDS_WALKED):
        # the reads after the barrier, walked: a node's learners take turns
        # at its disk and host links
        walked = Skeleton().walk(starts, before)
        ready = np.array([row[~np.isnan(row)][-1] if np.any(~np.isnan(row)) else start
                          for row, start in zip(walked, starts)])
        rank = np.argsort(ready, kind="stable")
        arrive = (np.sort(ready + law.mean + local) if law.is_constant
                  else _expected_order_statistics(ready[rank], law.plus(local)))
        # the server's port, then its CPU, one gradient after another (FIFO:
        # the j-th done at (j + 1) services past the latest start it waited for)
        at_server = message * (places + 1) + np.maximum.accumulate(arrive - message * places)
        applied = update * (places + 1) + np.maximum(
            busy, np.maximum.accumulate(at_server - update * places))
        lifted = at_server[-1]
        rounds.append(lifted)
        within = applied          # the round's applies
        # the next round, from this barrier: learner rank[j] once it has pulled
        starts = np.empty(L)
        starts[rank] = np.maximum(0.0, applied + pull - lifted)
        busy = max(0.0, applied[-1] - lifted)
        backlogs.append(busy)
        if len(rounds) >= 4 and np.allclose(rounds[-2:], rounds[-4:-2], rtol=1e-12, atol=0.0) \
                and np.allclose(backlogs[-2:], backlogs[-4:-2], rtol=1e-12, atol=1e-12):
            break      # settled: a round repeats itself, or two alternate, the CPU's backlog too
    # the rounds may settle into a cycle (a round that starts together, then
    # one staggered by the server's applies): the mean of the later ones
    per_round = float(np.mean(rounds[-2:] if len(rounds) < ROUNDS_WALKED
                              else rounds[ROUNDS_WALKED // 2:]))
    # the server's CPU applies a round's L gradients one at a time: where it
    # is the bound its backlog grows for rounds before the lifts keep its
    # pace (256 K20 learners, CaffeNet: 5.79 s a round over the first ten,
    # 6.10 s of applies a round, 6.10 simulated), and no round is shorter
    per_round = max(per_round, L * update)
    n = base.gradients
    # the run's last gradient: whole rounds end with their last apply, and
    # a partial one's last comes as much before that as in a settled round
    # (taken pro rata: 9 gradients of 8 learners, 958 s an epoch against
    # the run's 1,508, which waits a pull and a step past the barrier)
    rounds_before, place = divmod(max(math.ceil(n), 1) - 1, L)
    t_last = (rounds_before + 1) * per_round - float(within[-1] - within[place])
    laws = dict(base.laws)
    laws["epoch_time"] = ("approximation: a barrier each step, lifted by the last gradient's "
                          "arrival; the round's gradients queued at the server's port and CPU at "
                          "their expected order statistics, each learner after its update and pull"
                          "; the run's last at its place in its round")
    return replace(base, t_gpu_s=per_round, t_update_s=per_round / L,
                   epoch_time_s=run.epoch_time(t_last, n),
                   steady_throughput_samples_per_s=L * scenario.workload.sub_batch / per_round,
                   laws=laws)


def draw(rng, ideal: bool, learners: int):
    return {"staleness_bound": int(rng.choice([0, 1, 2, 4, 16]))}, {}, lambda learners: 1


KIND = Kind(Spec, loop, build, predict, draw=draw,
            knob=lambda learners: ("staleness_bound", [0, 1, 2, 4, 8, 16]))
