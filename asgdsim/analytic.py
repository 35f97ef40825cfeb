"""The closed-form model: epoch time, mini-batch size and staleness without
simulating.

It reads the same :class:`~asgdsim.costs.Costs` as the simulator. Where
DESIGN.md's exact results hold (``communication: ideal``) it returns them:

- async, exponential compute: staleness ~ Geometric, P(k) = (1/M)(1 - 1/M)^k;
  any law: mean M - 1;
- sprint, fixed cycle T, exponential compute (mean m): gradients per update
  ~ Poisson(G T / m), conditioned on at least one (a cycle with none is no
  update); staleness = 1 + floor(U + X / T), U ~ U(0, 1), X the step time;
- sync: a round takes E[max of P steps] (m H_P for exponential compute);
- constant compute: the epoch time to the exact event.

Elsewhere it is a mean-value model: the learners and what they share (host
links, disks, the accumulator, a server's ports and CPU) form a closed
queueing network solved by mean-value analysis (:mod:`asgdsim.mva`), which
gives the learners' cycle with its queueing delays and, at saturation, the
bound the busiest station sets (named in ``bound``). The laws used there are
approximations: ``laws`` says which is which.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from . import mva
from .costs import Costs, costs_of
from .distributions import Law
from .pmf import Pmf
from .scenario import Scenario

__all__ = ["Prediction", "predict"]


@dataclass(frozen=True)
class Prediction:
    """What the closed form says of a scenario; ``summary`` is the contract's dict."""

    scenario: Scenario
    t_gpu_s: float                  # one learner's mean step, data and copies included
    t_update_s: float               # mean time between updates
    bound: str                      # the resource that limits throughput
    epoch_time_s: float
    throughput_samples_per_s: float
    staleness: Pmf
    gradients_per_update: Pmf
    laws: dict[str, str] = field(default_factory=dict)

    @property
    def minibatch(self) -> Pmf:
        return self.gradients_per_update.scaled(self.scenario.workload.sub_batch)

    @property
    def summary(self) -> dict:
        return {
            "epoch_time_s": self.epoch_time_s,
            "throughput_samples_per_s": self.throughput_samples_per_s,
            "t_gpu_s": self.t_gpu_s,
            "t_update_s": self.t_update_s,
            "bound": self.bound,
            "staleness": self.staleness.describe(),
            "minibatch": self.minibatch.describe(),
            "laws": dict(self.laws),
        }


def predict(scenario: Scenario, costs: Costs | None = None) -> Prediction:
    """The closed-form prediction for ``scenario`` (milliseconds, no simulation).

    ``costs``, when the caller already has them, saves deriving them again."""
    return _PREDICTORS[scenario.algorithm.kind](scenario, costs or costs_of(scenario))


def _target_gradients(scenario: Scenario) -> tuple[int, float]:
    """(gradients for the epochs that define epoch time, number of those epochs)."""
    epochs = scenario.stop.epochs or 1.0
    samples = epochs * scenario.workload.dataset_samples
    return math.ceil(samples / scenario.workload.sub_batch - 1e-9), epochs


def _is_exponential(law: Law) -> bool:
    return law.name == "exponential"


def _exact(scenario: Scenario) -> bool:
    return scenario.timing.communication == "ideal"


def _links_per_node(scenario: Scenario) -> int:
    c = scenario.cluster
    return -(-c.gpus_per_node // c.gpus_per_host_link)


def _renewal_lag(law: Law) -> float:
    """E[time of the n-th event] - n x mean, for a renewal process from time 0.

    The elementary renewal expansion E[N(t)] = t/m + (cv^2 - 1)/2 + o(1)
    inverted; exact for exponential steps (0) and constant steps.
    """
    return law.mean * (1.0 - law.cv ** 2) / 2.0


def _predict_async(sc: Scenario, costs: Costs) -> Prediction:
    c, law = sc.cluster, costs.compute
    m_learners = c.learners
    copies = costs.batch_to_gpu_s + costs.gradient_to_host_s + costs.weights_to_gpu_s
    # every learner of the cluster in one closed network; a node's disk, port
    # and host links serve only its own learners: c such servers side by side
    cycle, _, bound = mva.solve([
        mva.Station("gpu", law.mean, servers=0),
        mva.Station("disk", costs.batch_read_s, servers=c.nodes),
        mva.Station("host_link", copies, servers=c.nodes * _links_per_node(sc)),
        mva.Station("port", 2 * costs.network_s, servers=c.nodes),
        mva.Station("server_port_in", costs.network_s),
        mva.Station("server", costs.server_update_s),
        mva.Station("server_port_out", costs.network_s),
    ], m_learners)
    per_gradient = cycle / m_learners
    n, epochs = _target_gradients(sc)
    if _exact(sc) and law.is_constant:
        arrival = math.ceil(n / m_learners) * law.mean     # all learners in lockstep
        epoch_law = "exact: constant compute, learners in lockstep"
    else:
        arrival = n * per_gradient + (_renewal_lag(law) if _exact(sc) else 0.0)
        epoch_law = ("exact mean: Poisson arrivals" if _exact(sc) and _is_exponential(law)
                     else "mean-value: n / throughput")
    if m_learners == 1:
        staleness, staleness_law = Pmf.point(0), "exact: one learner"
    elif _exact(sc) and law.is_constant:
        staleness, staleness_law = Pmf.point(m_learners - 1), "exact after the first round: M - 1"
    elif _exact(sc) and _is_exponential(law):
        p = 1.0 / m_learners
        k = np.arange(0, int(stats.geom.isf(1e-13, p)) + 2)
        staleness = Pmf.from_probs(0, p * (1 - p) ** k)
        staleness_law = "exact: geometric, ideal communication and exponential compute"
    else:
        # the others' updates during one's own cycle C: mean M - 1; each other
        # learner adds cv^2 of renewal variance, the random window (M - 1)^2 cv^2
        # (for exponential cycles this is the geometric law's M (M - 1))
        others, cv = m_learners - 1, law.std / cycle
        probs, values = _discretised_normal(others, others * cv**2 + others**2 * cv**2)
        staleness = Pmf.from_probs(int(values[0]), probs)
        staleness_law = "approximation: normal with mean M - 1 and the variance of a renewal count"
    return Prediction(
        scenario=sc, t_gpu_s=cycle, t_update_s=per_gradient, bound=bound,
        epoch_time_s=arrival / epochs,
        throughput_samples_per_s=sc.workload.sub_batch / per_gradient,
        staleness=staleness, gradients_per_update=Pmf.point(1),
        laws={"epoch_time": epoch_law, "staleness": staleness_law,
              "minibatch": "exact: one gradient per update"})


def _predict_sync(sc: Scenario, costs: Costs) -> Prediction:
    c, law = sc.cluster, costs.compute
    p_learners = c.learners
    copies = costs.batch_to_gpu_s + costs.gradient_to_host_s + costs.weights_to_gpu_s
    round_s = (_sync_compute_and_push(law, p_learners, costs.network_s)
               + costs.batch_read_s + copies + costs.server_update_s)
    n, epochs = _target_gradients(sc)
    rounds = math.ceil(n / p_learners)
    exact = _exact(sc) and (law.is_constant or _is_exponential(law))
    return Prediction(
        scenario=sc, t_gpu_s=law.mean + costs.batch_read_s + copies + 2 * costs.network_s,
        t_update_s=round_s, bound="slowest learner",
        epoch_time_s=rounds * round_s / epochs,
        throughput_samples_per_s=p_learners * sc.workload.sub_batch / round_s,
        staleness=Pmf.point(0), gradients_per_update=Pmf.point(p_learners),
        laws={"epoch_time": "exact mean: rounds x E[max of P steps]" if exact
              else "mean-value: rounds x (E[max of P steps] + communication)",
              "staleness": "exact: 0", "minibatch": "exact: P gradients per round"})


def _sync_compute_and_push(law: Law, learners: int, message_s: float) -> float:
    """A synchronous round from publishing the weights to the last gradient in.

    The weights leave the server's port one learner after another, so the
    learners start (P + 1) / 2 messages late on average. Their gradients
    queue at the port in the order they finish: the port is done at
    max over k of (k-th finish + (P - k + 1) messages), with the k-th
    finish at its expected order statistic (Blom's approximation, the exact
    E[max] for the last). With no communication this is E[max of P steps].
    """
    if message_s == 0:
        return law.expected_max(learners)
    finishes = [law.ppf((k - 0.375) / (learners + 0.25)) for k in range(1, learners)]
    finishes.append(law.expected_max(learners))
    port_done = max(f + (learners - k) * message_s for k, f in enumerate(finishes))
    return (learners + 1) / 2 * message_s + port_done


def _predict_sprint(sc: Scenario, costs: Costs) -> Prediction:
    c, law = sc.cluster, costs.compute
    g = c.learners
    cycle = costs.cycle_s
    step = law.plus(costs.gpu_overhead_s)      # a learner's whole step, no contention
    copies = costs.weights_to_gpu_s + costs.batch_to_gpu_s + costs.gradient_to_host_s
    # one node's GPUs in a closed network (the nodes are alike and independent
    # between cycles): its disk, host links and accumulator are shared
    node_cycle, _, bound = mva.solve([
        mva.Station("gpu", law.mean, servers=0),
        mva.Station("disk", costs.batch_read_s),
        mva.Station("host_link", copies, servers=_links_per_node(sc)),
        mva.Station("accumulator", costs.accumulate_s),
    ], c.gpus_per_node)
    per_gradient = node_cycle / g
    exponential = _exact(sc) and _is_exponential(law)
    counts, k, count_law = _gradients_per_cycle(g, cycle / (per_gradient * g), step.cv, exponential)
    at_least_one = k >= 1
    gradients_per_update = Pmf.from_probs(int(k[at_least_one][0]), counts[at_least_one])
    nonempty = 1.0 - float(counts[k == 0].sum())
    staleness = _pipelined_staleness(step.scaled(per_gradient * g / step.mean), cycle, nonempty)
    n, epochs = _target_gradients(sc)
    if _exact(sc) and law.is_constant:
        arrival = math.ceil(n / g) * law.mean
        applied = (math.ceil(arrival / cycle - 1e-12) + 1) * cycle
        epoch_law = "exact: constant compute, fixed cycle"
    else:
        # the n-th gradient arrives, waits for the next swap (T/2 on average),
        # then for the cycle that applies it (T)
        arrival = n * per_gradient + (_renewal_lag(step) if _exact(sc) else 0.0)
        applied = arrival + 1.5 * cycle
        epoch_law = ("mean: Poisson arrivals plus 1.5 cycles" if exponential
                     else "mean-value: n / throughput plus 1.5 cycles")
    return Prediction(
        scenario=sc, t_gpu_s=per_gradient * g, t_update_s=cycle, bound=bound,
        epoch_time_s=applied / epochs,
        throughput_samples_per_s=sc.workload.sub_batch / per_gradient,
        staleness=staleness, gradients_per_update=gradients_per_update,
        laws={"epoch_time": epoch_law,
              "staleness": ("exact: 1 + floor(U + X/T)" if exponential
                            else "approximation: 1 + floor(U + X/T), uniform phase"),
              "minibatch": count_law + ", given at least one"})


def _gradients_per_cycle(g: int, ratio: float, cv: float,
                         exponential: bool) -> tuple[np.ndarray, np.ndarray, str]:
    """The law of the gradients arriving in one cycle from g independent GPUs.

    ``ratio`` = T / (mean step). Each GPU's steps form a stationary renewal
    process seen through a window of length T:

    - exponential steps: Poisson(g ratio), exact;
    - nearly constant steps: each GPU delivers floor(ratio) or one more, the
      extra with probability frac(ratio) (its phase is uniform), so the count
      is g floor(ratio) + Binomial(g, frac(ratio));
    - otherwise a discretised normal with the binomial variance plus the
      renewal variance g ratio cv^2.

    Returns (probabilities, counts, description).
    """
    mean = g * ratio
    if exponential:
        k = np.arange(0, int(stats.poisson.isf(1e-13, mean)) + 2)
        return stats.poisson.pmf(k, mean), k, "exact: Poisson(G T / m)"
    whole, frac = math.floor(ratio), ratio - math.floor(ratio)
    lattice_var, renewal_var = g * frac * (1 - frac), g * ratio * cv ** 2
    if renewal_var <= 0.1 * lattice_var or renewal_var == 0:
        j = np.arange(0, g + 1)
        return (stats.binom.pmf(j, g, frac), g * whole + j,
                "approximation: G floor(T/m) + Binomial(G, frac(T/m)), near-constant steps")
    probs, k = _discretised_normal(mean, lattice_var + renewal_var)
    return probs, k, "approximation: normal, binomial plus renewal variance G T cv^2 / m"


def _discretised_normal(mean: float, var: float) -> tuple[np.ndarray, np.ndarray]:
    """A count law with this mean and variance: a normal discretised to the
    integers (>= 0), or the two integers around the mean when the variance is
    below what a lattice allows."""
    low, frac = math.floor(mean), mean - math.floor(mean)
    if var <= frac * (1 - frac) + 1e-9:
        return np.array([1 - frac, frac]), np.array([low, low + 1])
    sd = math.sqrt(var)
    k = np.arange(max(0, math.floor(mean - 12 * sd)), math.ceil(mean + 12 * sd) + 1)
    cdf = stats.norm.cdf((np.append(k, k[-1] + 1) - 0.5 - mean) / sd)
    return np.diff(cdf), k


def _pipelined_staleness(step: Law, cycle: float, nonempty: float = 1.0) -> Pmf:
    """Staleness = 1 + floor(U + X/T), U uniform: the pipelined SPRINT cycle.

    That many cycle ends fall between reading the weights and the update that
    applies the gradient. P(floor(U + Y) = j) = E[max(0, 1 - |Y - j|)], the
    second difference of E[(y - Y)+] at j - 1, j, j + 1.

    A cycle in which no gradient arrived makes no version, so each of those
    cycle ends counts only with probability ``nonempty``, except the one that
    applies the cycle in which the learner's previous gradient arrived (it
    had at least that gradient): with J cycle ends, staleness is
    1 + Binomial(J - 1, q) for J >= 2 and Binomial(1, q) for J = 1.
    """
    last = math.ceil(step.ppf(1 - 1e-13) / cycle) + 2
    pe = step.partial_expectation(np.arange(-1, last + 2) * cycle) / cycle
    probs = np.maximum(pe[2:] - 2 * pe[1:-1] + pe[:-2], 0.0)     # j = 0 .. last
    ends = Pmf.from_probs(1, np.array(probs))
    if nonempty >= 1.0 - 1e-12:
        return ends
    thinned = np.zeros(int(ends.values[-1]) + 1)
    for count, p in zip(ends.values.tolist(), ends.probs.tolist()):
        certain = 1 if count >= 2 else 0
        trials = count - certain
        thinned[certain:certain + trials + 1] += p * stats.binom.pmf(np.arange(trials + 1),
                                                                     trials, nonempty)
    return Pmf.from_probs(0, thinned)


_PREDICTORS = {"async": _predict_async, "sync": _predict_sync, "sprint": _predict_sprint}
