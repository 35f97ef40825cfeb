"""The closed form of a mixed cluster: groups whose steps or nodes differ
(``cluster.groups``), each group's stations its own.

With ideal communication only the learners' step laws differ, and for
``sync`` and ``async`` :mod:`asgdsim.faults` has the exact laws (E[max];
the rates summed and geometric staleness). Otherwise a group's learners
queue at their own nodes' links, disk and ports, with their own durations
(``Costs.group_costs``), so each group is first solved as a cluster of its
own (:func:`asgdsim.groups.group_scenario`: its nodes, its loop, its law,
its stations), and the groups are then put together where the algorithm
says how:

- ``async``: each learner is a renewal process whose cycle is its group's
  (its step, its stages and their queueing); gradients arrive at the sum
  R of the rates, and a learner's gradient sees the others' R - r_i per
  unit of its own cycle (mean R c_i - 1), their renewal counts' variance
  around it. The server's queue is each group's alone; a saturated server
  (its bare load over 1) adds one wait to every learner's bare cycle (FIFO:
  one queue for all) until it is just full, and between 60 % busy and
  saturation the prediction says it is outside.
- ``sprint``: a node's update thread serves its own GPUs and the cycle T is
  the cluster's (the Allreduce of every node, the slowest node's update).
  Each group's whole step and gradient rate come from SPRINT's closed form
  on its own nodes at that cycle; a GPU's staleness is the pipelined
  1 + floor(U + X/T) of its group's step, each cycle end a version unless
  no group delivered in it, mixed by the groups' rates; the gradients of a
  cycle are the groups' summed (moments added), the epoch time that of the
  rates summed and the groups' start-up lags averaged by rate. That takes
  the GPUs at random phases: a group whose steps' noise does not spread
  its GPUs over a cycle within the run delivers in bursts, and the
  prediction says it is outside.
- Rounds (``sync``, ``allreduce``, ``local-sgd``) walk every learner's own
  loop on the whole topology, or past 256 learners queue every group's
  messages at the server's port (:func:`asgdsim.analytic.predict_rounds`);
  here they only get their labels and group figures.

Every other kind keeps the closed form of a learner drawn at random, and
says that it is outside its assumptions.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace

import numpy as np

__all__ = ["COMPOSED", "with_groups"]

#: kinds whose mixed clusters this module puts together
COMPOSED = ("async", "sprint", "sync", "allreduce", "local-sgd")
#: the server's busy share past which one group's queueing no longer stands
#: for all, short of saturation (where one wait for all is modelled): the
#: other groups' messages then lengthen a group's queue and it was solved alone
SHARED_BUSY = 0.6


def with_groups(scenario, costs, whole):
    """``whole`` (the kind's closed form) for a mixed cluster of a composed
    kind, with the groups put together (see the module's docstring)."""
    kind = scenario.algorithm.kind
    if kind == "async":
        return _async(scenario, costs, whole)
    if kind == "sprint":
        return _sprint(scenario, costs, whole)
    return _rounds(scenario, costs, whole)


def group_costs(costs, index: int):
    """Group ``index``'s durations: its own where the groups' nodes differ,
    else the cluster's with its step law."""
    if costs.group_costs:
        return costs.group_costs[index]
    return replace(costs, compute=costs.group_computes[index], group_computes=())


def _parts(scenario, costs, predict):
    """Each group's closed form, as a cluster of its own."""
    from .groups import group_scenario

    return [predict(group_scenario(scenario, i), group_costs(costs, i))
            for i in range(len(scenario.cluster.groups))]


def _first_outside(parts) -> dict:
    reason = next((p.outside_assumptions for p in parts if p.outside_assumptions), None)
    return {} if reason is None else {"assumptions": reason}


def _t_last(run, pred) -> float:
    """The time of a prediction's last update, from its epoch time (the
    inverse of Run.epoch_time)."""
    samples = pred.gradients * run.sub_batch
    if run.epochs and samples >= run.epochs * run.dataset - 1e-9:
        return pred.epoch_time_s * run.epochs
    return pred.epoch_time_s * samples / run.dataset


def _async(sc, costs, whole):
    """Learners as renewal processes of their group's cycle (module docstring)."""
    from .analytic import OUTSIDE, Run, few_gradients, predict_async
    from .pmf import Pmf
    from .structure import loops_of, topology_of

    parts = _parts(sc, costs, predict_async)
    run, counts = Run.of(sc), sc.cluster.group_learners
    # a learner's mean cycle in its group: its step, its stages and their queueing
    cycles = [n * run.sub_batch / p.steady_throughput_samples_per_s for n, p in zip(counts, parts)]
    laws = [group_costs(costs, i).compute for i in range(len(parts))]
    bare, demands = _bare_cycles(sc, costs, laws)
    saturated = _load(counts, bare, demands, 0.0) > 1
    if saturated:
        # a saturated server's queue is one for all (FIFO): every learner's
        # bare cycle (its step and stages, no queueing) waits as long, until
        # the busiest of the server's CPU and ports is just full. Each
        # group's own cycle already holds its queueing as if alone, and the
        # mix of messages is the learners' at the shared pace, not alone
        wait = _wait_to_fill(counts, bare, demands)
        cycles = [c + wait for c in bare]
    rate = sum(n / c for n, c in zip(counts, cycles))
    cycle_laws = [law.plus(c - law.mean) for law, c in zip(laws, cycles)]
    # renewal theory: by time t learner i has given t / c_i - (1 - cv_i^2) / 2 gradients
    lag = sum(n * (1 - min(1.0, law.var / c ** 2)) / 2 for n, law, c in zip(counts, laws, cycles))
    n = run.target_gradients
    if n == math.inf:
        n = run.updates if run.updates else max(1, math.floor(run.time_s * rate))
    t_last = (n + lag) / rate
    if run.time_s is not None and t_last > run.time_s:
        t_last = run.time_s
    gradients = min(n, max(1.0, t_last * rate - lag))
    distinct = Counter()
    for law, learners in zip(cycle_laws, counts):
        distinct[law] += learners
    total = sum(counts)
    if total == 1:
        staleness = Pmf.point(0)
    else:
        staleness = _renewal_counts(distinct, rate)
    laws_text = {
        "epoch_time": "approximation: each group's learner cycle by the closed form on its own "
                      "nodes, the learners' renewal rates summed",
        "staleness": "approximation: learner i's a count law of mean R c_i - 1 (its group's "
                     "cycle c_i, the gradient rate R) with the others' renewal variance (a "
                     "discretised normal where under-dispersed), mixed by the learners' shares "
                     "of the gradients",
        "minibatch": "exact: one gradient per update",
        **_first_outside(parts)}
    busy = None if saturated else _server_busy(sc, costs, [n / c for n, c in zip(counts, cycles)])
    if saturated and topology_of(sc).nodes_per_switch:
        # the shared server's bound counts its CPU and ports, not the leaf
        # links of a fat tree that its messages cross at their own pace
        busy = ("the server is saturated by every group's messages, and its bound leaves "
                "out the fat tree's links on their way")
    elif saturated and (hog := _hogging(bare, demands)) is not None:
        busy = hog
    if busy is not None and "assumptions" not in laws_text:
        laws_text["assumptions"] = f"{OUTSIDE}: {busy}"
    if "assumptions" not in laws_text and (few := few_gradients(gradients, total)):
        laws_text["assumptions"] = few
    loops = loops_of(sc, costs)
    # the simulator's step runs from taking the weights to the gradient at the server
    reply = [sum(st.duration_s for st in loops[min(i, len(loops) - 1)].reply)
             for i in range(len(parts))]
    figures = tuple(
        {"learners": learners, "gpu": group.gpu.name,
         "mean_step_s": float(c - back - costs.server_update_s),
         "throughput_share": float(learners / c / rate),
         "staleness_mean": float(rate * c - 1)}
        for group, learners, c, back in zip(sc.cluster.groups, counts, cycles, reply))
    return replace(whole, t_gpu_s=float(np.average(cycles, weights=counts)), t_update_s=1 / rate,
                   bound=max(parts, key=lambda p: p.t_gpu_s).bound,
                   epoch_time_s=run.epoch_time(t_last, gradients),
                   steady_throughput_samples_per_s=rate * run.sub_batch, staleness=staleness,
                   laws=laws_text, gradients=gradients, updates=gradients, groups=figures)


def _renewal_counts(distinct: Counter, rate: float):
    """Async staleness over learners of several cycle laws (faults.py's
    renewal moments: mean (R - r_i) c_i, the variance of the others'
    renewal counts over the cycle), each count law a discretised normal
    where it is under-dispersed: a binomial of that variance piles its mass
    against its top, where the others' counts of nearly fixed cycles sit
    evenly around the mean."""
    from .analytic import _count_law, _discretised_normal, _mixture

    parts = []
    for law, learners in distinct.items():
        others = rate - 1 / law.mean
        mean, var = others * law.mean, others ** 2 * law.var
        for other, n in distinct.items():
            ratio = law.mean / other.mean
            frac = ratio - math.floor(ratio)
            var += (n - (other == law)) * (frac * (1 - frac) + ratio * other.cv ** 2)
        if var < mean:
            probs, values = _discretised_normal(mean, var)
        else:
            values, probs = _count_law(mean, var)
        parts.append((learners / law.mean / rate, values, probs))
    return _mixture(parts)


def _bare_cycles(sc, costs, laws) -> tuple[list[float], list[list[float]]]:
    """Each group's learner cycle with nobody in the way (its step, its
    stages, the server's update), and what one of its gradients asks of
    each of the server's resources (CPU, way in, way out), per group."""
    from .structure import loops_of, topology_of

    topo, loops = topology_of(sc), loops_of(sc, costs)
    loops = loops if len(loops) > 1 else loops * len(laws)
    bare = [law.mean + sum(st.duration_s for st in loop.stages) + costs.server_update_s
            for law, loop in zip(laws, loops)]
    demands = [[costs.server_update_s] * len(laws)] + [
        [loop.demand_s(kind) / topo.instances(kind) for loop in loops]
        for kind in ("server_port_in", "server_port_out")]
    return bare, demands


def _hogging(bare, demands) -> str | None:
    """Why a saturated server is not busy all the time: one group's message
    holds a port of the server for longer than another group's whole
    cycle, so while it passes, the other way runs dry (nobody else got in
    to be answered). The bound fills the busiest port to the brim."""
    messages = [max(d_in, d_out) for d_in, d_out in zip(*demands[1:])]
    for i, message in enumerate(messages):
        for j, cycle in enumerate(bare):
            if j != i and message > cycle:
                return (f"group {i}'s messages hold the saturated server's port "
                        f"{message:.3g} s each, longer than group {j}'s whole cycle "
                        f"({cycle:.3g} s): while one passes, the other way runs dry, and "
                        "the server's bound fills its busiest port to the brim")
    return None


def _load(counts, cycles, demands, wait: float) -> float:
    """The busiest server resource's share of time busy, every cycle ``wait`` longer."""
    return max(sum(n * d / (c + wait) for n, d, c in zip(counts, row, cycles)) for row in demands)


def _wait_to_fill(counts, cycles, demands) -> float:
    """The wait w that makes the busiest server resource just full (bisection)."""
    low, high = 0.0, max(sum(n * d for n, d in zip(counts, row)) for row in demands)
    for _ in range(100):
        mid = (low + high) / 2
        if _load(counts, cycles, demands, mid) > 1:
            low = mid
        else:
            high = mid
    return high


def _server_busy(sc, costs, rates: list[float]) -> str | None:
    """Why each group's queueing at the server does not stand for all: the
    server's CPU or a port busier than SHARED_BUSY with every group's messages."""
    from .structure import loops_of, topology_of

    topo, loops = topology_of(sc), loops_of(sc, costs)
    if len(loops) == 1:
        loops = loops * len(rates)
    cpu = sum(rates) * costs.server_update_s
    port = max(sum(r * loop.demand_s(kind) for r, loop in zip(rates, loops))
               / topo.instances(kind) for kind in ("server_port_in", "server_port_out"))
    most = max(cpu, port)
    if most < SHARED_BUSY:
        return None
    return (f"the server is {most:.0%} busy with every group's messages, and each group's "
            "queueing at it was solved as if it were alone")


def _sprint(sc, costs, whole):
    """Each group's SPRINT on its own nodes at the cluster's cycle, put together."""
    from .analytic import OUTSIDE, Run, _count_law, _mixture, _pipelined_staleness, predict_sprint

    parts = _parts(sc, costs, predict_sprint)
    run = Run.of(sc)
    rates = np.array([p.steady_throughput_samples_per_s / run.sub_batch for p in parts])
    rate = float(rates.sum())
    shares = rates / rate
    # each group's start-up lag: its last update's time less its gradients at its steady rate
    lag = float(sum(w * (_t_last(run, p) - p.gradients / r)
                    for w, p, r in zip(shares, parts, rates)))
    n = run.target_gradients
    if n == math.inf:
        n = run.updates * sum(p.gradients_per_update.mean for p in parts) if run.updates \
            else max(1, math.floor((run.time_s - lag) * rate))
    t_last = n / rate + lag
    if run.time_s is not None and t_last > run.time_s:
        t_last = run.time_s
    gradients = min(n, max(1.0, (t_last - lag) * rate))
    T = costs.cycle_s
    steps = [group_costs(costs, i).compute for i in range(len(parts))]
    # a GPU's whole step (stages and queueing included): its group's on its own nodes
    steps = [law.plus(p.t_gpu_s - law.mean) for law, p in zip(steps, parts)]
    # a cycle's gradients, group by group: rate x T on average; a GPU gives at
    # most about one a cycle where its steps are longer (Bernoulli), a renewal
    # count's cv^2 per gradient otherwise
    means = rates * T
    cv2 = np.array([law.var / law.mean ** 2 for law in steps])
    ratio = np.array([T / law.mean for law in steps])
    variances = means * np.where(ratio >= 1, cv2, np.maximum(cv2, 1 - ratio))
    per_update = _mixture([(1.0, *_count_law(float(means.sum()), float(variances.sum())))],
                          positive=True)
    # in the long run nearly every cycle holds some group's gradient: the
    # pipelined law 1 + floor(U + X / T) of each group's step, each cycle end
    # a version with the chance that the cycle is not empty
    nonempty = -math.expm1(-rate * T)
    staleness_laws = [_pipelined_staleness(law, T, nonempty) for law in steps]
    staleness = _mixture([(w, law.values, law.probs) for w, law in zip(shares, staleness_laws)])
    laws = {"epoch_time": "approximation: each group's gradient rate by SPRINT's closed form on "
                          "its own nodes at the cluster's cycle, summed, with their start-up lags "
                          "averaged by rate",
            "minibatch": "approximation: the groups' gradients per cycle summed (means and "
                         "variances added)",
            "staleness": "approximation: the pipelined 1 + floor(U + X/T) of each group's "
                         "whole step X at the cluster's cycle T, cycles empty as often as the "
                         "summed rate leaves them (Poisson), mixed by the groups' rates",
            **_first_outside(parts)}
    # a group whose GPUs keep in phase delivers in bursts, not at random
    # phases: its steps' noise must spread them over a cycle within the run
    for i, (law, learners, share) in enumerate(zip(steps, sc.cluster.group_learners, shares)):
        spread = law.std * math.sqrt(max(gradients * share / learners, 1.0))
        if spread < T and "assumptions" not in laws:
            laws["assumptions"] = (
                f"{OUTSIDE}: group {i}'s GPUs keep in phase (their steps' noise spreads them "
                f"by {spread:.3g} s over the run, less than a cycle of {T:.3g} s), and the "
                "groups are put together at random phases")
    figures = tuple(
        {"learners": learners, "gpu": group.gpu.name, "mean_step_s": float(p.t_gpu_s),
         "throughput_share": float(w), "staleness_mean": float(law.mean)}
        for group, learners, p, w, law in zip(sc.cluster.groups, sc.cluster.group_learners,
                                               parts, shares, staleness_laws))
    return replace(whole, t_gpu_s=float(np.average([p.t_gpu_s for p in parts], weights=rates)),
                   t_update_s=costs.cycle_s, epoch_time_s=run.epoch_time(t_last, gradients),
                   steady_throughput_samples_per_s=rate * run.sub_batch,
                   staleness=staleness, gradients_per_update=per_update, laws=laws,
                   gradients=gradients, updates=gradients / per_update.mean, groups=figures)


def _rounds(sc, costs, whole):
    """Rounds already walk each learner's own loop and law (analytic.predict_rounds):
    the label, and each group's figures (every learner one gradient a round)."""
    from .structure import loops_of

    loops = loops_of(sc, costs)
    counts, total = sc.cluster.group_learners, sc.cluster.learners
    laws = dict(whole.laws)
    from .analytic import MAX_SKELETON_LEARNERS

    laws["epoch_time"] = (
        "approximation: the round's schedule walked over every group's nodes, each learner its "
        "group's loop, its compute at the expected order statistics of the learners' own laws"
        if total <= MAX_SKELETON_LEARNERS else
        "approximation: every learner's message queued at the server's port at its group's "
        "length, its compute at the expected order statistics of the learners' own laws")
    figures = []
    for i, (group, learners) in enumerate(zip(sc.cluster.groups, counts)):
        loop = loops[i] if len(loops) > 1 else loops[0]
        step = group_costs(costs, i).compute.mean + sum(
            st.duration_s for st in loop.before + loop.after)
        figures.append({"learners": learners, "gpu": group.gpu.name, "mean_step_s": float(step),
                        "throughput_share": learners / total, "staleness_mean": 0.0})
    return replace(whole, laws=laws, groups=tuple(figures))
