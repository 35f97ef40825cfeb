"""The closed-form model: epoch time, mini-batch size and staleness without
simulating.

It reads the same :class:`~asgdsim.costs.Costs` and the same description of
the learner's loop and topology (:mod:`asgdsim.structure`) as the simulator.
Three regimes, each with its own exact or approximate laws (``laws`` says
which):

- Steady state with random steps: the learners and what they share form a
  closed queueing network, solved by mean-value analysis (:mod:`asgdsim.mva`)
  with one station per kind of resource a stage holds, the waiting scaled by
  how random the learners' cycles are. DESIGN.md's exact results hold here
  with ideal communication: geometric staleness for async with exponential
  steps, Poisson gradients per SPRINT cycle and 1 + floor(U + X/T)
  staleness, m H_P per synchronous round.
- Identical fixed-time steps: the learners never drift apart. Their periodic
  schedule, staggered where they queue, is computed (:mod:`asgdsim.skeleton`)
  and everything follows from it exactly.
- In between, and at the start of every run: the learners start in phase and
  drift apart by the random walk of their step noise; SPRINT's cycle windows
  are seen through that (:mod:`asgdsim.phases`). Short runs keep their
  start-up and drain: epoch time is the time of the update that reaches the
  stop condition, not a rate.

Where an effect is not modelled, ``laws["assumptions"]`` says "outside the
closed form's assumptions: <why>" and ``compare --check`` fails on it.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, replace

import numpy as np
from scipy import special

from . import mva
from .costs import Costs, costs_of
from .distributions import Law, Straggling, apart_from_stragglers, top_quantile
from .errors import ScenarioError
from .phases import SPREAD as SPREAD_OF_SD, Deliveries, Windows, expect, staleness_of, windows_of
from .pmf import MAX_SUPPORT, Pmf, binomial, lattice
from .renewal import kth_event_mean
from .scenario import Scenario
from .skeleton import Skeleton, Walk, busiest, period_of, queued_behind
from .structure import Loop, Topology, loop_of, topology_of

__all__ = ["Prediction", "predict", "OUTSIDE"]

#: the phrase that marks a prediction outside the closed form's assumptions
OUTSIDE = "outside the closed form's assumptions"
#: the staleness law of a walked periodic schedule (softsync reads it to keep its batches on it)
SCHEDULED_APPLIES = "the order of the periodic schedule's applies"
#: steps of a deterministic skeleton walked before reading its period: a
#: server's learners settle in a few; a node's GPUs that take turns at shared
#: links can need a hundred steps
SKELETON_STEPS = 40
MAX_SKELETON_STEPS = 1024
#: most steps, of all learners together, of the one longer walk a server's
#: schedule takes where it has not repeated within SKELETON_STEPS
MAX_SKELETON_WALK = 1 << 13
#: fetches a downpour learner makes in the run below which its staleness is
#: not yet the steady state's
FEW_FETCHES = 4
#: the server CPU's busy share below which a downpour schedule that leaves
#: it out of pushes no fetch waits on still orders applies and fetches
CPU_LEFT_OUT = 0.5
#: most steps per learner modelled one by one (the rest continue the pattern)
MAX_TRANSIENT_STEPS = 4096
#: most learners whose server schedule is walked one by one
MAX_SKELETON_LEARNERS = 256


@dataclass(frozen=True)
class Prediction:
    """What the closed form says of a scenario; ``summary`` is the contract's dict."""

    scenario: Scenario
    #: DESIGN.md's T_gpu: a learner's mean time from one gradient to its next
    #: as the kind's closed form lays it out: its step with data and copies,
    #: and, where a learner waits for its own reply (async, downpour, SSP)
    #: or for its node's links and cycle (SPRINT), those waits; a round's
    #: wait for its slowest learner is not in it (sync, allreduce, k-sync)
    t_gpu_s: float
    t_update_s: float               # mean time between updates
    bound: str                      # the resource that limits throughput
    epoch_time_s: float
    #: samples per second once the start-up has passed
    steady_throughput_samples_per_s: float
    staleness: Pmf
    gradients_per_update: Pmf
    laws: dict[str, str] = field(default_factory=dict)
    #: expected gradients and updates applied by the run's end
    gradients: float = math.nan
    updates: float = math.nan
    #: a mixed cluster's groups: learners, gpu, and mean_step_s,
    #: throughput_share, staleness_mean where the closed form has them (faults.py)
    groups: tuple[dict, ...] = ()
    #: the fastest learners' mean step with their data and copies and no
    #: wait at all: compute and the loop's stages uncontended (:func:`learner_step_s`)
    step_s: float = math.nan

    def __repr__(self) -> str:
        return (f"Prediction({self.scenario.name!r}: epoch time {self.epoch_time_s:.4g} s, "
                f"staleness mean {self.staleness.mean:.4g}, mini-batch mean "
                f"{self.minibatch.mean:.4g}, bound by {self.bound})")

    @property
    def throughput_samples_per_s(self) -> float:
        """Samples per second over the run, as the simulator counts them: an
        epoch's samples over the epoch time (start-up and stop included)."""
        return self.scenario.workload.dataset_samples / self.epoch_time_s

    @property
    def minibatch(self) -> Pmf:
        return self.gradients_per_update.scaled(self.scenario.workload.sub_batch)

    @property
    def outside_assumptions(self) -> str | None:
        """Why the closed form does not apply here, or None."""
        return self.laws.get("assumptions")

    @property
    def summary(self) -> dict:
        return {
            "epoch_time_s": self.epoch_time_s,
            "throughput_samples_per_s": self.throughput_samples_per_s,
            "steady_throughput_samples_per_s": self.steady_throughput_samples_per_s,
            "step_s": self.step_s,
            "t_gpu_s": self.t_gpu_s,
            "t_update_s": self.t_update_s,
            "bound": self.bound,
            "staleness": self.staleness.describe(),
            "minibatch": self.minibatch.describe(),
            "laws": dict(self.laws),
            **({"groups": [dict(g) for g in self.groups]} if self.groups else {}),
        }


def predict(scenario: Scenario, costs: Costs | None = None) -> Prediction:
    """The closed-form prediction for ``scenario`` (milliseconds, no simulation).

    ``costs``, when the caller already has them, saves deriving them again."""
    if not isinstance(scenario, Scenario):
        raise TypeError(f"predict takes a Scenario (asgdsim.load_scenario(path)), got "
                        f"{type(scenario).__name__}")
    costs = costs or costs_of(scenario)
    try:
        whole = _closed_form(scenario, costs)
    except ValueError:
        # a stop in seconds that ends the run before its first gradient leaves
        # the closed form nothing to say: refused as the commands refuse it,
        # on the steady step and cycle (only here, off the common path)
        if scenario.stop.time is None:
            raise
        from .budget import refuse_short_time
        from .scenario import Stop

        steady = _closed_form(scenario.model_copy(update={"stop": Stop(epochs=1)}), costs)
        try:
            refuse_short_time(scenario, learner_step_s(scenario, costs), steady.t_update_s)
        except ScenarioError as exc:
            raise ScenarioError(scenario.name, exc.problems) from None
        # the same cluster without the stop has its figures: the stop leaves
        # the closed form no update to describe (SPRINT's windows by then all
        # empty: a P100 group's first step, 0.10 s, before a 0.2 s stop; a review)
        raise ScenarioError(scenario.name, [("stop.time", (
            f"expected a stop after the closed form's first update; it has none by "
            f"{scenario.stop.time:.3g} s (the steady figures hold from "
            f"{2 * steady.t_gpu_s:.3g} s or so): a later stop"))]) from None
    if scenario.stop.warmup is not None:
        whole = _after_warmup(scenario, costs, whole, _closed_form)
    whole = replace(whole, step_s=learner_step_s(scenario, costs))
    whole = _rare_slow_label(scenario, costs, whole)
    first = first_update_s(whole)
    other = whole.outside_assumptions or ""
    if scenario.stop.time is not None and scenario.stop.time < first \
            and STOPS_BEFORE_FIRST not in other:
        # (each kind's run counts at least one update; the simulator refuses a
        # run of none) said first, before any other reason
        said = stops_before_first(scenario.stop.time, "update",
                                  f"after {first:.3g} s at the least")
        whole = replace(whole, laws={**whole.laws, "assumptions": said + (
            "; also " + other.removeprefix(f"{OUTSIDE}: ") if other else "")})
    return whole


def first_update_s(prediction: Prediction) -> float:
    """The least time before a run's first update: a learner's step, and
    the mean time between updates (a round, a batch's gradients)."""
    return max(prediction.step_s, prediction.t_update_s)


#: what every label of a time stop before the first update says
STOPS_BEFORE_FIRST = "comes before the first"


def stops_before_first(time_s: float, what: str, expected: str) -> str:
    """The label of a time stop before the first ``what`` (an update, a
    round's, a batch of c) is expected (``expected``: when, or how far)."""
    return (f"{OUTSIDE}: the stop at {time_s:.3g} s {STOPS_BEFORE_FIRST} {what} is expected "
            f"({expected}): the run may apply none, and have no epoch time; the closed form's "
            "figures are one update's")


#: kinds whose closed form takes measured steps with a rare slow mode far
#: off (the same law written as faults.stragglers is labelled or modelled)
RARE_SLOW_KINDS = ("sprint", "k-async", "local-sgd")


def _rare_slow_label(scenario: Scenario, costs: Costs, whole: Prediction) -> Prediction:
    """Label measured steps of a steady bulk and a rare slow mode where the
    kind's closed form reads them by their moments only: 1,000 steps of
    1.28 s, 2 % five times slower (a hunt): k-async of 8 of 16, an epoch
    of 8,899 s against 4,653 simulated; SPRINT a mini-batch of 24.6 against
    51 to 61; local SGD 7 to 11 % long. Written as ``faults.stragglers``
    the same law is labelled, or modelled, in each."""
    from .distributions import rare_slow_mode

    found = rare_slow_mode(costs.compute)
    if found is None or scenario.algorithm.kind not in RARE_SLOW_KINDS \
            or whole.outside_assumptions is not None:
        return whole
    share, ratio = found
    return replace(whole, laws={**whole.laws, "assumptions": (
        f"{OUTSIDE}: the measured steps are a steady bulk and a rare slow mode ({share:.1%} of "
        f"them {ratio:.2g} times the median), which this kind's closed form reads by their "
        "moments only; written as faults.stragglers (probability and slowdown) the closed "
        "form tells them apart")})


def learner_step_s(scenario: Scenario, costs: Costs) -> float:
    """The fastest learners' mean step with their data and copies, waiting
    for nothing: the compute law's mean and the loop's stages uncontended
    (each group its own; slow learners are not the fastest), the stages a
    learner runs every few steps (downpour's pushes and fetches, local SGD's
    averaging) spread over them."""
    from .costs import learner_classes
    from .structure import loops_of

    algorithm = scenario.algorithm
    every = {"downpour": lambda: (algorithm.n_push, algorithm.n_fetch),
             "local-sgd": lambda: (algorithm.period, algorithm.period)}.get(algorithm.kind)
    loops = tuple(loop.per_step(*every()) if every else loop
                  for loop in loops_of(scenario, costs))
    if len(loops) == 1:
        loops *= max(1, len(scenario.cluster.groups or ()))
    return min(law.mean + loop.overhead_s
               for classes, loop in zip(learner_classes(scenario, costs), loops)
               for law in classes)


def _closed_form(sc: Scenario, costs: Costs) -> Prediction:
    """The kind's closed form, and what differing learners, failures and
    slow links change in it (faults.py)."""
    from .algorithms import KINDS

    whole = KINDS[sc.algorithm.kind].predict(sc, costs)
    faults = sc.faults
    if faults.slow_learners or faults.failures or faults.link_slowdowns or sc.cluster.groups:
        from .faults import with_faults
        whole = with_faults(sc, costs, whole)
    return whole


#: what the closed form says of a warm-up that leaves nothing of the run
WARMUP_COVERS_RUN = "the warm-up covers the whole run"


def _after_warmup(sc: Scenario, costs: Costs, whole: Prediction, closed_form) -> Prediction:
    """The laws of the run less its warm-up: the whole run's laws weighted by
    their counts, less those of a run that stops where the warm-up ends.
    The epoch time stays the whole run's."""
    from .scenario import Stop

    w = sc.stop.warmup
    early_stop = Stop(time=w.time, updates=w.updates, epochs=w.epochs)
    early = closed_form(sc.model_copy(update={"stop": early_stop}), costs)
    kept_gradients, kept_updates = whole.gradients - early.gradients, whole.updates - early.updates
    laws = dict(whole.laws)
    if kept_gradients < 0.5 or kept_updates < 0.5:
        add_reason(laws, WARMUP_COVERS_RUN)
        return replace(whole, laws=laws)
    for key in ("staleness", "minibatch"):
        laws[key] = laws[key].replace("exact: ", "approximation: ") + \
            "; the warm-up left out (the run less its first part)"
    return replace(
        whole, laws=laws,
        staleness=whole.staleness.less(early.staleness, early.gradients / whole.gradients),
        gradients_per_update=whole.gradients_per_update.less(
            early.gradients_per_update, early.updates / whole.updates),
        gradients=kept_gradients, updates=kept_updates)


# -- the run: how long, in the stop condition's terms -----------------------

@dataclass(frozen=True)
class Run:
    """The stop conditions of a scenario, and how the summary turns the last
    update into an epoch time (summary.epoch_time)."""

    dataset: int
    sub_batch: int
    epochs: float | None
    gradients: int | None
    updates: int | None
    time_s: float | None

    @classmethod
    def of(cls, sc: Scenario) -> Run:
        s = sc.stop
        return cls(sc.workload.dataset_samples, sc.workload.sub_batch, s.epochs, s.gradients,
                   s.updates, s.time)

    @property
    def target_gradients(self) -> float:
        """Gradients that end the run by ``epochs`` or ``gradients`` (inf if neither)."""
        out = math.inf
        if self.epochs:
            out = math.ceil(self.epochs * self.dataset / self.sub_batch - 1e-9)
        if self.gradients:
            out = min(out, self.gradients)
        return out

    def epoch_time(self, t_last: float, gradients: float) -> float:
        """As the summary computes it from the last update's time and the
        gradients applied by then."""
        samples = gradients * self.sub_batch
        return t_last * self.dataset / samples if samples else math.nan


# -- shared pieces ----------------------------------------------------------

def _stations(loop: Loop, topology: Topology, law: Law, scope: str,
              extra: list[mva.Station] = ()) -> list[mva.Station]:
    """The queueing stations of the loop: one per kind of resource a stage
    queues at, with as many servers as the cluster (or one node) has.

    A message across a fat tree's leaves holds the server's port and the
    leaves' links at once, not one after the other: like the node's port
    beside the server's, the links it holds together are one station, the
    busiest per instance (a leaf's link, at its share of a port's time
    over the leaves that carry it, in place of the server's port where it
    is the busier; structure.Topology.fabric_demands)."""
    kinds = dict.fromkeys(stage.holds[0] for stage in loop.stages)
    stations = {"gpu": mva.Station("gpu", law.mean, servers=0)}
    for kind in kinds:
        servers = topology.instances(kind)
        if scope == "node":
            servers = max(1, servers // topology.nodes)
        demand = topology.held_s(st for st in loop.stages if st.holds[0] == kind)
        stations[kind] = mva.Station(kind, demand, servers=servers)
    for name, demand, leaves in topology.fabric_demands(loop.stages) if scope == "cluster" else ():
        port = ALONG[name]
        # (a link no busier than the port, e.g. at 1:1, leaves the port the station)
        if port in stations and \
                demand / leaves > stations[port].demand_s / stations[port].servers * (1 + 1e-9):
            stations[port] = mva.Station(name, demand, servers=leaves)
    return list(stations.values()) + list(extra)


#: the server's port a fat tree's link is held with (structure.Topology.fabric_demands)
ALONG = {"leaf_up": "server_port_in", "server_leaf_down": "server_port_in",
         "leaf_down": "server_port_out", "server_leaf_up": "server_port_out"}


def _cycle(stations: list[mva.Station], customers: int, law: Law,
           overhead_s: float) -> tuple[float, dict[str, float], str]:
    """A learner's mean cycle with queueing; the waiting scaled by how random
    its cycles are (squared cv of compute over the whole uncontended cycle)."""
    cv2 = min(1.0, law.var / (law.mean + overhead_s) ** 2)
    return mva.solve(stations, customers, arrival_cv2=cv2)


def _turns_reshuffled(stations: list[mva.Station], customers: int, law: Law,
                      cycle: float) -> str | None:
    """Mean-value analysis scales the waiting by how random one learner's
    cycle is: a few learners that keep their turns at the busiest resource
    in a rhythm wait little. Where their steps differ by more than a turn
    there on most steps, the rhythm does not hold: their arrivals are as
    random as independent phases make them (SPRINT's node of 8 K80 dies
    whose disk is the bottleneck, 8.8 ms a read, lognormal steps of 30 ms
    and cv 0.37: the cycle simulates to 83 ms, the bound is 70 ms and
    arrivals of cv 1 give 82 ms). Say so where that would lengthen the cycle
    by more than the agreement bound."""
    queues = [s for s in stations if s.servers > 0 and s.demand_s > 0]
    if not queues or law.std == 0:
        return None
    busiest = max(queues, key=lambda s: s.demand_s / s.servers)
    if law.apart(busiest.demand_s) <= 0.5:
        return None
    random_turns = mva.solve(stations, customers, arrival_cv2=1.0)[0]
    if random_turns <= 1.05 * cycle:
        return None
    return (f"{OUTSIDE}: the GPUs' steps differ by more than a turn at {busiest.name} "
            f"({1e3 * busiest.demand_s:.3g} ms) on most steps, so they take their turns there in "
            f"random order, not in the rhythm the closed form's {1e3 * cycle:.3g} ms cycle "
            f"assumes (random turns: {1e3 * random_turns:.3g} ms)")


def _count_law(mean: float, var: float) -> tuple[np.ndarray, np.ndarray]:
    """A law on counts >= 0 with this mean and variance: two neighbouring
    values where the variance is at a lattice's least, else a binomial,
    Poisson or negative binomial with the same two moments (under-, equi- or
    over-dispersed). Returns (values, probabilities).

    The pmfs are written out with log-gamma rather than called from
    scipy.stats: a SPRINT prediction needs a few hundred of them, and the
    frozen-distribution machinery cost 90 us each."""
    low, frac = math.floor(mean), mean - math.floor(mean)
    # (a mean of next to nothing is nothing: a negative binomial of such a
    # mean and a wide variance has a tail past any lattice)
    if var <= frac * (1 - frac) + 1e-9 or mean <= 1e-9:
        return np.array([low, low + 1]), np.array([1 - frac, frac])
    p = 1.0 - var / mean
    # support out to 14 standard deviations, and for a negative binomial past
    # the point where its geometric tail, below (1-q)^k / q, drops under 1e-13;
    # on a coarser lattice past MAX_SUPPORT values (pmf.lattice)
    top = lambda extra=0: lattice(0, math.ceil(max(mean + 14 * math.sqrt(var), extra)) + 1)  # noqa: E731
    if abs(p) <= 1e-4:      # Poisson: its variance is 0.01 % off at most
        k, width = top()
        return k, width * _poisson_pmf(k, mean)
    if p < 0:
        r, q = mean**2 / (var - mean), mean / var
        k, width = top(math.log(1e-13 * q) / math.log1p(-q))
        return k, width * np.exp(special.gammaln(k + r) - special.gammaln(r)
                                 - special.gammaln(k + 1) + r * math.log(q)
                                 + special.xlog1py(k, -q))
    trials = max(1, round(mean / p))
    sd = math.sqrt(var)      # the window that holds the mass, not every one of the trials
    k, width = lattice(max(0, math.floor(mean - 14 * sd)), min(trials, math.ceil(mean + 14 * sd)))
    k = k[k <= trials]
    return k, width * binomial(k, trials, min(1.0, mean / trials))


def _poisson_pmf(k: np.ndarray, mean: float) -> np.ndarray:
    return np.exp(special.xlogy(k, mean) - mean - special.gammaln(k + 1))


def _mixture(laws: list[tuple[float, np.ndarray, np.ndarray]], positive: bool = False) -> Pmf:
    """A weighted mixture of count laws (weight, values, probabilities);
    ``positive`` drops zero and renormalises each law first. Past
    MAX_SUPPORT values, on the coarser lattice of pmf.lattice."""
    top = max(int(v.max()) for _, v, _ in laws) + 1
    _, width = lattice(0, top)
    total = np.zeros(top // width + 2)
    for weight, values, probs in laws:
        if positive:
            keep = values > 0
            values, probs = values[keep], probs[keep]
            if probs.sum() <= 0:
                continue
            probs = probs / probs.sum()
        # bins of width integers from 0, each written at its middle
        np.add.at(total, values.astype(int) // width, weight * probs)
    return Pmf.from_probs((width - 1) // 2, total, width)


def _grouped(means: np.ndarray, variances: np.ndarray, weights: np.ndarray,
             positive: bool = False) -> Pmf:
    """The mixture of count laws of many (mean, variance) pairs, grouped to a
    few hundred distinct ones (their moments rounded to 1 %)."""
    keep = weights > 0
    means, variances, weights = means[keep], variances[keep], weights[keep]
    if not len(means):
        return Pmf.point(0)
    key_m = np.round(means, 2) if means.max() < 10 else np.round(means, 1 - int(np.log10(means.max())))
    key_v = np.round(variances, 2)
    keys, inverse = np.unique(np.column_stack([key_m, key_v]), axis=0, return_inverse=True)
    inverse = inverse.ravel()
    summed = np.bincount(inverse, weights=weights)
    mean_of = np.bincount(inverse, weights=weights * means) / summed
    var_of = np.bincount(inverse, weights=weights * variances) / summed
    return _mixture([(w, *_count_law(m, v)) for w, m, v in zip(summed, mean_of, var_of)], positive)


def _discretised_normal(mean: float, var: float, least: float = 0,
                        most: float = math.inf) -> tuple[np.ndarray, np.ndarray]:
    """A law on the integers from ``least`` to ``most`` (counts: from 0) with
    this mean and variance: a normal discretised to them, or the two integers
    around the mean when the variance is below what a lattice allows."""
    low, frac = math.floor(mean), mean - math.floor(mean)
    if var <= frac * (1 - frac) + 1e-9:
        return np.array([1 - frac, frac]), np.array([low, low + 1])
    sd = math.sqrt(var)
    k = np.arange(max(least, math.floor(mean - 12 * sd)), min(most, math.ceil(mean + 12 * sd)) + 1)
    cdf = special.ndtr((np.append(k, k[-1] + 1) - 0.5 - mean) / sd)
    return np.diff(cdf), k


def _is_exponential(law: Law) -> bool:
    return law.name == "exponential"


def _ideal(scenario: Scenario) -> bool:
    return scenario.timing.communication == "ideal"


def _renewal_lag(law: Law) -> float:
    """E[time of the n-th event] - n x mean, for a renewal process from time 0.

    The elementary renewal expansion E[N(t)] = t/m + (cv^2 - 1)/2 + o(1)
    inverted; exact for exponential steps (0) and constant steps.
    """
    return law.mean * (1.0 - law.cv ** 2) / 2.0


#: a shared resource this busy under steps this random: outside the assumptions
CONTENTION_UTILISATION, CONTENTION_CV = 0.7, 0.3


def _random_contention(util: dict[str, float], law: Law, overhead_s: float) -> str | None:
    """Learners with random steps that crowd a shared resource queue for it
    in turns that mean-value analysis (which assumes them independent) only
    approximates: say so where it is the busiest thing in the cluster."""
    if not util:
        return None
    busiest = max(util, key=util.get)
    cv = law.std / (law.mean + overhead_s)
    # a saturated resource sets the pace itself, and its bound is exact
    if CONTENTION_UTILISATION <= util[busiest] < 0.97 and cv >= CONTENTION_CV:
        return (f"{OUTSIDE}: {busiest} is {util[busiest]:.0%} busy under random steps "
                f"(cv {cv:.2f}); their queueing in turns is approximated by mean-value analysis")
    return None


#: a node resource this busy under steps this random: outside SPRINT's closed form
NODE_CONTENTION_UTILISATION, NODE_CONTENTION_CV = 0.5, 0.2


def _node_contention(util: dict[str, float], law: Law, overhead_s: float) -> str | None:
    """A node's GPUs are few customers of its resources: under random steps
    they queue there more than mean-value analysis with arrivals as random
    as one GPU's cycle says, from half busy on, and a second resource near
    saturation beside a saturated one leaves the first idle at times."""
    if not util:
        return None
    cv = law.std / (law.mean + overhead_s)
    busy = sorted(util.items(), key=lambda kv: kv[1], reverse=True)
    (first, u1), second = busy[0], (busy[1] if len(busy) > 1 else (None, 0.0))
    if cv < NODE_CONTENTION_CV:
        return None
    if u1 >= 0.97 and second[1] >= 0.9:
        return (f"{OUTSIDE}: {first} and {second[0]} are both near saturation ({u1:.0%}, "
                f"{second[1]:.0%}) under random steps (cv {cv:.2f}): the GPUs' random turns "
                "leave the first idle at times, which its bound does not see")
    if NODE_CONTENTION_UTILISATION <= u1 < 0.97:
        return (f"{OUTSIDE}: {first} is {u1:.0%} busy with a node's GPUs under random steps "
                f"(cv {cv:.2f}); their queueing in turns is approximated by mean-value analysis")
    return None


def _reshuffled(util: dict[str, float], law: Law, spacing_s: float) -> str | None:
    """The skeleton's schedule spaces the learners' turns at the busiest
    shared resource ``spacing_s`` apart; where two neighbours' steps differ
    by more than that (their difference has sd sqrt(2) x a step's) their
    order reshuffles every step, and where the resource is busy short of
    saturation (which sets the pace itself) they queue in random turns that
    neither the schedule nor mean-value analysis (whose arrivals are only as
    random as a learner's cycle) holds."""
    if not util:
        return None
    busiest = max(util, key=util.get)
    apart = math.sqrt(2.0) * law.std
    if CONTENTION_UTILISATION <= util[busiest] < 0.97 and apart > spacing_s:
        return (f"{OUTSIDE}: {busiest} is {util[busiest]:.0%} busy and two learners' steps "
                f"differ by {apart:.3g} s (sd), more than their turns at it ({spacing_s:.3g} s "
                "apart): they queue in random turns, which the schedule does not hold")
    return None


def _queued(busy: float, most: float) -> float:
    """Services an arrival finds ahead of it at an open queue ``busy`` of the
    time, U / (1 - U) for exponential services (half that for fixed ones),
    at most ``most`` (a closed network's customers)."""
    return most if busy >= 1 else min(most, busy / (1 - busy))


#: a node port this busy, held together with a shard's: outside the assumptions
COUPLED_UTILISATION = 0.25


def _coupled_shards(loop: Loop, topology: Topology, cycle: float) -> str | None:
    """A message to several shards passes its node's port and each shard's
    at once (cut-through): where both are busy, each stays reserved while
    the transfer waits for the other, a coupling mean-value analysis (one
    station per transfer) does not see. Say so where it can bind: where a
    node's port is busy enough counting the time it stays reserved while a
    part waits for its shard's (a queue of fixed services, U / (2 (1 - U))
    services at a shard's port U busy, at most every learner's part)."""
    if topology.servers == 1:
        return None
    for kind in ("port_out", "port_in"):
        shard = "server_port_in" if kind == "port_out" else "server_port_out"
        held = topology.held_s(st for st in loop.stages if kind in st.holds[1:])
        busy = topology.learners / cycle * held / topology.instances(kind)
        at_shard = topology.learners / cycle * loop.demand_s(shard) / topology.instances(shard)
        if topology.colocated:
            # a shard's host node: its port carries every learner's part
            busy = max(busy, at_shard)
        waits = _queued(at_shard, topology.learners / topology.instances(shard)) / 2
        if busy * (1 + waits) >= COUPLED_UTILISATION:
            return (f"{OUTSIDE}: the nodes' {kind} ports are {busy:.0%} busy with messages to "
                    f"{topology.servers} shards ({min(busy * (1 + waits), 1):.0%} with the time "
                    f"they stay held while a shard's port, {at_shard:.0%} busy, is not free): "
                    "each transfer holds a node's port and a shard's at once")
    return None


def _sharded_fabric(loop: Loop, topology: Topology, cycle: float) -> str | None:
    """A message to several shards across a fat tree's leaves holds, part by
    part, the links of several leaves, and colocated shards' leaves carry
    their learners' parts and their shards' at once: couplings that the
    stations (one per kind of link) do not see. Say so where the links are
    busy enough for them to bind, as for the shards' ports."""
    if topology.servers == 1 or not topology.nodes_per_switch:
        return None
    for name, demand, leaves in topology.fabric_demands(loop.stages):
        busy = topology.learners / cycle * demand / leaves
        if busy >= COUPLED_UTILISATION:
            return (f"{OUTSIDE}: the fat tree's {name} links are {busy:.0%} busy with messages "
                    f"to {topology.servers} shards across the leaves, each part holding its "
                    "own leaves' links")
    return None


def add_reason(laws: dict, reason: str) -> None:
    """One more way ``laws``' scenario is outside the closed form's
    assumptions, said after those already said (each fault its own)."""
    said = laws.get("assumptions")
    laws["assumptions"] = f"{OUTSIDE}: {reason}" if said is None else f"{said}; and {reason}"


def _outside(*reasons: str | None) -> dict[str, str]:
    """``laws`` entries for the first reason the closed form does not apply."""
    reason = next((r for r in reasons if r is not None), None)
    return {} if reason is None else {"assumptions": reason}


# -- async: every gradient its own update -----------------------------------

def _resolved(topology: Topology, stages, learner: int) -> list[Walk]:
    resolved = ((topology.holds(st, learner), topology.duration_s(st, learner)) for st in stages)
    return [(names, duration) for names, duration in resolved if names is not None]


#: steps a learner within which an ideal async run's end is the exact k-th
#: event of renewal processes started together (kth_event_mean), not renewal's start
SHORT_RUN_ROUNDS = 16
#: the share of M - 1 that a run's start and stop may take off the mean
#: staleness ((M - 1) M (1 + c^2) / 2n) before the first-order law is said
#: not to hold, for steps more varied than exponential ones
FIRST_ORDER_SHARE = 0.25

#: seeded rounds of the learners' turns at a saturated port (:func:`_turns_walked`)
#: (each learner's first 2 turns let the schedule settle; the rest are measured)
TURN_REPLICAS, TURN_DRAWS, TURNS_EACH = 64, 8192, 10
#: the seed of their steps (any fixed number: every call walks the same turns)
TURNS_SEED = 10


def _turns_walked(stations: list[mva.Station], customers: int, law: Law,
                  cycle: float) -> float:
    """The cycle where one fixed-time single server is the busiest station
    and the learners' steps are random: its turns walked, d_k = max(d_(k-1),
    a_k) + D (the k-th turn ends one service D after the later of the turn
    before and the earliest learner waiting, each learner back a seeded
    cycle of the rest after its last turn: the other stations' demands
    and a step), the cycle N times the turns' mean spacing; the longer of
    that and ``cycle``. At the knee, with about as many learners as keep
    the server busy, a learner late by part of a turn leaves it idle and
    the turn is not made up, which mean-value analysis with arrivals as
    random as a learner's cycle does not see."""
    queues = [s for s in stations if s.servers > 0 and s.demand_s > 0]
    if law.std == 0 or not queues:
        return cycle
    busiest = max(queues, key=lambda s: s.demand_s / s.servers)
    if busiest.servers != 1 or busiest.service_cv2 > 0 or customers > MAX_SKELETON_LEARNERS \
            or customers * busiest.demand_s < CONTENTION_UTILISATION * cycle:
        return cycle
    # arrivals as random as can be leave the cycle as it is: nothing to walk
    if mva.solve(stations, customers, arrival_cv2=1.0)[0] <= cycle * (1 + 1e-3):
        return cycle
    d, n = busiest.demand_s, customers
    rest = sum(s.demand_s for s in stations) - d - law.mean
    turns = n * TURNS_EACH
    replicas = max(8, min(TURN_REPLICAS, TURN_DRAWS // n))
    rng = np.random.default_rng(TURNS_SEED)
    think = rest + law.sample(rng, replicas * turns).reshape(turns, replicas)
    # each replica's learners' next arrivals; the server takes the earliest
    coming = rest + law.sample(rng, replicas * n).reshape(replicas, n)
    rows = np.arange(replicas)
    last = np.zeros(replicas)
    done = np.empty((turns, replicas))
    for k in range(turns):
        who = coming.argmin(axis=1)
        last = np.maximum(last, coming[rows, who]) + d
        coming[rows, who] = last + think[k]
        done[k] = last
    settled = 2 * n
    spacing = (done[-1] - done[settled]).mean() / (turns - 1 - settled)
    return max(cycle, n * float(spacing))


def _serialised_start(loop: Loop, step: float, update_s: float, cycle: float, busy: float,
                      steps: int = 1) -> float:
    """How late the n-th of M learners' gradients (or messages of ``steps``
    steps) comes beyond n cycles / M, where a shared resource, ``busy`` of
    the time, bounds them. The learners start together and have their
    first applied ``first`` later with nothing in its way (their steps,
    each after its stages before, the stages after the last; no reply
    before the first); the resource serves their first turns one after
    another, busy x cycle in all, and each learner's later turns come a
    cycle apart. The n-th then comes at first + n cycle / M - (1 - busy)
    cycle / 2 on average over its place in the round: half a cycle late,
    as renewal theory says, where the resource is idle (busy -> 0, first
    -> cycle), and right after the first step where it is saturated, one
    turn after another from there (33 ms and 1.06 ms turns for 464
    learners: the 2,417th gradient at 2.60 s, where half a cycle late said
    2.81)."""
    return _first_apply(loop, step, update_s, steps) - (1.0 - busy) * cycle / 2.0


def _first_apply(loop: Loop, step: float, update_s: float, steps: int = 1) -> float:
    """When a learner's first gradient (a message of ``steps`` steps) is
    applied with nothing in its way: its steps, each after its stages
    before, the stages after the last, the update."""
    return steps * (step + sum(st.duration_s for st in loop.before)) \
        + sum(st.duration_s for st in loop.after) + update_s


def _shared_busy(util: dict[str, float]) -> float:
    """How busy the busiest resource the learners share is (their GPUs are their own)."""
    return max((u for name, u in util.items() if name != "gpu"), default=0.0)


def missed_pushers(update_s: float, bound: str, per_push: float, c: int) -> int:
    """Of the pushers after a batch's last, how many read the weights before
    its update (``update_s``) is applied: where the server's port spaces
    the pushes by ``per_push``, those i per_push after it for i < c."""
    if not update_s or not ALONG.get(bound, bound).startswith("server_port"):
        return 0
    return min(c - 1, max(0, math.ceil(update_s / per_push) - 1))


def read_during_update(update_s: float, law, cycle: float, m: int,
                       c: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Where the steps' noise spreads the pushes (the caller's compute-bound
    runs; a saturated port spaces them instead: :func:`missed_pushers`):
    the law of how many places after a batch's last read the weights
    before its update (``update_s`` long) is applied, as (counts, probs).
    Each of the other m - 1 learners pushes within it with the chance
    q = (1/cycle) x integral over 0..update_s of P(X > u), X its time
    between pushes (the loop's fixed part, cycle less the step's mean, plus
    the step): the equilibrium chance that a renewal process has an event
    that soon (Palm; independent learners, as the noise mixes their phases
    where m x cv >= 1); the count is Binomial(m - 1, q), at most c - 1
    places (4 V100s, VGG-16, batches of 2, steps of cv 0.3: staleness 1.83
    simulated, 1.50 without it, 1.73 with it). It leaves out that the
    batch's own earlier pushers pushed lately (2 learners, c = 2: 4 % high).
    None where nothing can be missed."""
    if not update_s or c == 1 or m == 1 or m * law.cv < 1:
        # steps this steady keep the learners' order: the schedule's, no chance
        return None
    fixed = max(cycle - law.mean, 0.0)
    u = np.linspace(0.0, min(update_s, 50 * cycle), 513)
    q = min(1.0, float(np.trapezoid(1.0 - np.asarray(law.cdf(u - fixed)), u)) / cycle)
    counts = np.arange(m)
    probs = binomial(counts, m - 1, q)
    if probs[1:].sum() <= 1e-12:
        return None
    # places past c - 1 start the next batch: the counts above it are c - 1
    places = np.bincount(np.minimum(counts, c - 1), weights=probs)
    keep = np.flatnonzero(places > 1e-12)
    return keep, places[keep] / places[keep].sum()


def predict_async(sc: Scenario, costs: Costs, batch: int = 1) -> Prediction:
    """Every gradient its own update; with ``batch`` c > 1 (softsync,
    k-batch-async: ``costs`` then hold 1/c of the update a push) the
    gradients arrive alike and the staleness counts updates of c."""
    topo, loop, law, run = topology_of(sc), loop_of(sc, costs), costs.compute, Run.of(sc)
    m = topo.learners
    server = [mva.Station("server", costs.server_update_s)] if costs.server_update_s else []
    stations = _stations(loop, topo, law, "cluster", server)
    cycle, util, bound = _cycle(stations, m, law, loop.overhead_s + costs.server_update_s)
    cycle = _turns_walked(stations, m, law, cycle)
    per_gradient = cycle / m
    missed = missed_pushers(batch * costs.server_update_s, bound, per_gradient, batch)
    if not missed and bound == "gpu" and not _ideal(sc):
        missed = read_during_update(batch * costs.server_update_s, law, cycle, m, batch) or 0
    laws = {"minibatch": "exact: one gradient per update"}
    n = run.target_gradients
    if n == math.inf:       # a time or updates stop: gradients by then
        n = run.updates if run.updates else max(1, math.floor(run.time_s / per_gradient))
    if law.is_constant and m <= MAX_SKELETON_LEARNERS:
        applies = _downpour_skeleton(topo, loop, law.mean, costs.server_update_s, 1, 1,
                                     run_steps=n / m)[0]
        laws.update(_outside(_hangs_on_ties(topo, loop, law.mean, costs.server_update_s, 1, 1,
                                            applies, n / m)[0]))
        if not missed:
            return _async_from_schedule(sc, applies, cycle, bound, laws, batch)
        # (which pushers read before a batch's update, at a saturated port, is
        # the port's schedule: batched_staleness's places, on average)
        scheduled = _async_from_schedule(sc, applies, cycle, bound, laws)
        return replace(scheduled, staleness=batched_staleness(scheduled.staleness, batch, missed))
    # start-up: every learner's first step begins at 0; by renewal theory
    # the n-th gradient comes (1 - cv^2) / 2 cycles late; a shared resource
    # serialises the first round as well (_serialised_start)
    c2 = law.var / cycle ** 2 if bound == "gpu" else 0.0
    if bound != "gpu" and m > 1:
        start = _serialised_start(loop, law.mean, costs.server_update_s, cycle, util[bound])
    else:
        start = cycle * (1.0 - c2) / 2.0 if m > 1 or _ideal(sc) else 0.0

    def arrival_of(k: float) -> tuple[float, str, dict, bool]:
        """When the k-th gradient comes, by which law, the labels that law
        adds, and whether that time is the exact k-th event."""
        extra: dict = {}
        exact_end = False
        arrival = k * per_gradient + start
        if _ideal(sc) and m == 1:
            arrival = k * law.mean
        elif (_ideal(sc) and bound == "gpu" and not law.is_constant and m > 1
              and k <= SHORT_RUN_ROUNDS * m):
            # a short run: the k-th event of M renewal processes started
            # together, exactly; renewal's start, (1 - cv^2) / 2 cycles,
            # holds only many steps in (gamma steps of cv 3, 32 learners, 120
            # gradients: a start of -4 cycles put the run's end before 0)
            arrival, exact_end = kth_event_mean(law, m, int(math.ceil(k)))[0], True
        elif law.is_constant and bound == "gpu" and m > 1:
            # fixed steps that nothing shared holds apart stay in phase: the
            # k-th gradient ends the round it is in (half a cycle late is the
            # mean over where k falls in a round; 1,056 of 264 learners: 4
            # cycles, not 4.5)
            arrival = math.ceil(k / m - 1e-9) * cycle
        epoch_law = ("exact mean: Poisson arrivals" if _ideal(sc) and _is_exponential(law)
                     else "mean-value: the n-th gradient of M renewal processes started together")
        in_phase = _in_phase(sc, law, bound, loop, costs.server_update_s, cycle, util, 1, k)
        if in_phase is not None:
            arrival, exact_end = in_phase, False
            epoch_law = ("approximation: the n-th gradient of M learners that start together, "
                         "each drifting from the first round's stagger by its step noise")
        if m <= MAX_SKELETON_LEARNERS and law.std <= cycle / 4:
            # nearly identical steps: the learners keep the skeleton's schedule,
            # each apply moved by the random walk of its learner's step noise
            exact_end = False
            applies = _downpour_skeleton(topo, loop, law.mean, costs.server_update_s, 1, 1,
                                         run_steps=k / m)[0]
            steps = _steps_for(applies, k, 8)
            times = _extend(applies, steps, period_of(applies))
            arrival = _nth_arrival(times, law.std * np.sqrt(np.arange(1, steps + 1)), k)
            epoch_law = ("approximation: the skeleton's schedule, each learner drifting by "
                         "its step noise")
            extra = _outside(_reshuffled(util, law, per_gradient) or _hangs_on_ties(
                topo, loop, law.mean, costs.server_update_s, 1, 1, applies, k / m)[0])
        return arrival, epoch_law, extra, exact_end

    if run.time_s is None:
        arrival, epoch_law, extra, exact_end = arrival_of(n)
    else:
        # the gradients by the stop's time: the last that comes within it
        # (the steady pace from 0 counts the start's time as gradients:
        # async, 8 learners, a 1 s stop: 30 against the run's 26; a hunt)
        n, (arrival, epoch_law, extra, exact_end) = _last_within(
            arrival_of, n, run.time_s, per_gradient,
            run.target_gradients if run.target_gradients < math.inf else run.updates)
    laws.update(extra)
    # the epoch at the slower of the law's pace to the n-th and the steady
    # pace (a schedule of steady steps that stragglers break runs at the
    # latter: softsync over 8 Piz Daint nodes, 2 % stragglers, 40.4 s an
    # epoch at the schedule's, 41.1 at the steady pace, 42.9 simulated),
    # but a short run's exact k-th event as it is
    t_last = arrival if exact_end else max(arrival, n * per_gradient)
    gradients = n
    if run.time_s is not None and arrival > run.time_s:      # not even the first
        t_last = run.time_s
        gradients = min(n, t_last / per_gradient)
    # staleness: a learner's gradients together saw every update of the
    # others from the start to its last apply. In steady state that is M - 1
    # per gradient for any law; the others started with it (renewal lag
    # (c^2 - 1) / 2 steps each) and the run stops while they are a mean age
    # of (1 + c^2) / 2 steps into their current one, so over n gradients the
    # mean is (M - 1) (1 - M (1 + c^2) / (2 n))
    others = m - 1
    mean = others * max(0.0, 1.0 - m * (1.0 + c2) / (2.0 * max(gradients, 1.0)))
    # (the laws from the first round's ranks count batches themselves: a
    # gradient on the first weights is stale by its rank's batches, not
    # batched_staleness's uniform place in one)
    by_rank = False
    if m == 1:
        staleness, staleness_law = Pmf.point(0), "exact: one learner"
    elif gradients <= 1:
        staleness, staleness_law = Pmf.point(0), "exact: one gradient, on the first weights"
    elif mean <= 0:
        # a run of about one round: every gradient read the first weights,
        # the k-th applied saw k - 1 updates (a learner that stepped twice
        # saw fewer: the first-order law above has no room for it)
        staleness, by_rank = _mixture([(1.0, *_first_round(m, gradients, batch))]), True
        staleness_law = "approximation: the first round's ranks, every gradient on the first weights"
        laws.update(_outside(_all_start(m, gradients, c2) or (
            f"{OUTSIDE}: the run ends within the learners' first round ({gradients:g} "
            f"gradients of {m} learners), and the closed form has no staleness law for a run "
            "that is all start")))
    elif _ideal(sc) and _is_exponential(law):
        p = 1.0 / (1.0 + mean)
        k, width = lattice(0, math.ceil(math.log(1e-13) / math.log1p(-p)) + 1)
        staleness = Pmf.from_probs(int(k[0]), p * (1 - p) ** k, width)
        staleness_law = ("exact: geometric, ideal communication and exponential compute "
                         "(mean M - 1 in steady state; a run's start and stop take M (M - 1) / n)")
    else:
        # a shared station that paces the learners serves them in turn: how
        # far their steps' noise moves each in the queue is the count's spread
        reordered = (_reordering(law, per_gradient, m)
                     if ALONG.get(bound, bound).startswith("server")
                     and util.get(bound, 0.0) >= SATURATED and not law.is_constant else None)
        staleness, by_rank = _async_staleness(m, gradients, mean, c2, batch, missed,
                                              reordered), True
        staleness_law = ("approximation: the first round's ranks, then M - 1 less the "
                         "run's stop, with the variance of a renewal count")
        laws.update(_outside(_all_start(m, gradients, c2)))
    if batch > 1 and not by_rank:
        staleness = batched_staleness(staleness, batch, missed)
    if isinstance(missed, tuple):
        staleness_law += (f"; the pushers that come while a batch's update applies read the "
                          f"weights before it: {float(missed[0] @ missed[1]):.2g} of every "
                          f"{batch} on average (each other learner within it by its steps' "
                          "equilibrium chance)")
    laws.update(epoch_time=epoch_law, staleness=staleness_law)
    laws.update(_outside(_random_contention(util, law, loop.overhead_s + costs.server_update_s),
                         _coupled_shards(loop, topo, cycle), _sharded_fabric(loop, topo, cycle)))
    return Prediction(
        scenario=sc, t_gpu_s=cycle, t_update_s=per_gradient, bound=bound,
        epoch_time_s=run.epoch_time(t_last, gradients),
        steady_throughput_samples_per_s=sc.workload.sub_batch / per_gradient,
        staleness=staleness, gradients_per_update=Pmf.point(1), laws=laws,
        gradients=gradients, updates=gradients)


def _all_start(m: int, gradients: float, c2: float) -> str | None:
    """Why the start-and-stop correction of async's staleness, first order
    in M (1 + c^2) / 2n, does not hold: steps more varied than exponential
    ones over a run short enough that it takes more than FIRST_ORDER_SHARE
    of M - 1 (gamma steps of cv 3, 32 learners, 120 gradients: 14.4
    simulated, the correction took all of it); or None."""
    share = m * (1.0 + c2) / (2.0 * max(gradients, 1.0))
    if m > 1 and c2 > 1.0 and gradients >= m and share > FIRST_ORDER_SHARE:
        return (f"{OUTSIDE}: steps this varied (cv {math.sqrt(c2):.2g} a cycle) make a run of "
                f"{gradients / m:.3g} gradients a learner mostly its start, a burst of short "
                "steps and a long one, where the closed form's staleness takes the start and "
                "stop to first order")
    return None


def _last_within(time_of, guess: int, time_s: float, spacing: float,
                 limit: float | None = None) -> tuple[int, tuple]:
    """The largest count n >= 1 (and at most ``limit``) whose time
    ``time_of(n)[0]`` (growing with n) is within ``time_s``, and
    ``time_of(n)``; from a ``guess``, in steps of about ``spacing`` apart,
    then by bisection. A count none of whose times is within the stop is 1."""
    limit = math.inf if limit is None else limit
    seen: dict[int, tuple] = {}

    def at(k: int) -> tuple:
        if k not in seen:
            seen[k] = time_of(k)
        return seen[k]

    n = int(max(1, min(guess, limit)))
    if at(n)[0] > time_s:
        high = n
        while n > 1 and at(n)[0] > time_s:
            high, n = n, max(1, n - max(1, math.ceil((at(n)[0] - time_s) / spacing)))
        if at(n)[0] > time_s:
            return n, at(n)
    else:
        high, jump = n, 1
        while high < limit and at(high)[0] <= time_s:
            n = high
            jump = max(jump, math.floor((time_s - at(high)[0]) / spacing))
            high, jump = int(min(high + jump, limit)), 2 * jump
        if at(high)[0] <= time_s:
            return high, at(high)
    while high - n > 1:
        middle = (n + high) // 2
        n, high = (middle, high) if at(middle)[0] <= time_s else (n, middle)
    return n, at(n)


def _async_staleness(m: int, n: float, mean: float, c2: float, batch: int = 1,
                     missed: int | tuple = 0, reordered: tuple | None = None) -> Pmf:
    """The staleness law of an async run of n gradients with mean ``mean``:
    each learner's first gradient has seen the others' first round only (its
    rank among them where the steps barely vary: uniform on 0..M-1, with the
    mean (M - 1)(1 + c^2)/2 in general), the rest a renewal count around the
    mean that makes up the run's. A run of fewer gradients than learners
    applies only the first n of the first round: ranks 0..n-1 (128
    learners, 70 gradients: 34.5 simulated, where ranks over all 128 said
    63.5).

    Updates of ``batch`` gradients (softsync, k-batch-async) count those
    ranks in batches: a first-round gradient, on the first weights, is
    stale by the batches before its own, floor(A / c); a later one by
    :func:`batched_staleness` (128 learners, batches of 8, 70 gradients:
    4.0 simulated, 4.56 with every gradient's place in its batch uniform).

    ``reordered`` (offsets, probabilities), where a saturated station
    serves the learners in turn (:func:`_reordering`), is added to the
    steady count: the places a gradient gains or loses in the queue."""
    others = m - 1
    first_mean = min(others, others * (1.0 + c2) / 2.0)
    weight = min(1.0, m / max(n, 1.0))
    if c2 <= 1e-6 or n < m:
        first = _first_round(m, n, batch)
    else:
        values, probs = _count_law(first_mean, others * c2 + others**2 * c2 / 4)
        first = (values // batch, probs)
    laws = [(weight, *first)]
    if weight < 1.0:
        rest = (mean - weight * first_mean) / (1.0 - weight)
        law = _count_law(max(rest, 0.0), others * c2 + others**2 * c2)
        if reordered is not None:
            law = _shifted_by(*law, *reordered)
        laws.append((1.0 - weight, *_batched(*law, batch, missed)))
    return _mixture(laws)


#: a station this busy paces the learners: it serves them in turn
SATURATED = 0.95


def _shifted_by(values: np.ndarray, probs: np.ndarray, offsets: np.ndarray,
                shifts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The law of A + B, A ~ (values, probs) on consecutive counts (the
    steady count's two neighbours), B ~ (offsets, shifts) on consecutive
    integers; what falls below 0 at 0."""
    summed = np.convolve(probs, shifts)
    out = np.arange(len(summed)) + int(values[0]) + int(offsets[0])
    below = out < 0
    if below.any():
        summed = np.concatenate([[summed[below].sum()], summed[~below]])
        out = np.concatenate([[0], out[~below]])
    return out, summed


def _reordering(law: Law, spacing: float, m: int, points: int = 256) -> tuple | None:
    """How many places a gradient gains or loses at a station that serves
    the M learners in turn, ``spacing`` apart, while their steps vary
    (``law``): the others that left it d places before come back before it
    unless their step is d spacings longer (X_j >= X_i + d s: one update
    fewer seen), and those d places after it come back before it if theirs
    is d spacings shorter (X_j < X_i - d s: one more). Given X_i = x each
    other's place is an independent Bernoulli, so the count is the
    difference of two Poisson-binomial sums, mixed over x at ``points``
    quantiles: (offsets, probabilities), mean 0. A saturated port, 64
    learners of VGG-16 steps of cv 0.05 pushed 81 ms apart: variance 0.736,
    0.744 simulated; the count's mean law alone said a point. None where
    no place moves."""
    xs = np.atleast_1d(law.quantiles((np.arange(points) + 0.5) / points))
    d = np.arange(1, m) * spacing
    # (the places that may move: a spacing d past which no x moves any)
    reach = int(np.searchsorted(d, xs[-1] - xs[0], side="right")) + 1
    if reach > MAX_REORDERED:
        # places past thousands: the difference's normal law, its variance
        # the step's own over the spacing (its place, (sd/s)^2) and each
        # other's Bernoulli around it (2 / sqrt(pi) sd/s for normal steps:
        # 5,500 where the walk gives 5,386 at sd/s = 74); hundreds of
        # thousands of learners stay cheap
        ratio = law.std / spacing
        pmf, k = _discretised_normal(0.0, ratio ** 2 + 2.0 / math.sqrt(math.pi) * ratio,
                                     least=-math.inf)
        return k, pmf / pmf.sum()
    d = d[:reach]
    fewer = 1.0 - law.cdf(xs[:, None] + d)      # an earlier leaver comes back after it
    more = law.cdf(xs[:, None] - d)             # a later leaver comes back before it
    total = np.zeros(2 * len(d) + 1)            # offsets -len(d)..len(d)
    for f, g in zip(fewer, more):
        f, g = f[f > 1e-12], g[g > 1e-12]
        if len(f) + len(g) > POISSON_BINOMIAL_TERMS:
            # many small independent terms: the difference's normal law
            diff, k = _discretised_normal(float(g.sum() - f.sum()),
                                          float((f * (1 - f)).sum() + (g * (1 - g)).sum()),
                                          least=-len(f), most=len(g))
            start = len(d) + int(k[0])
        else:
            pmf_fewer, pmf_more = _poisson_binomial(f), _poisson_binomial(g)
            diff = np.convolve(pmf_more, pmf_fewer[::-1])
            start = len(d) - (len(pmf_fewer) - 1)
        total[start:start + len(diff)] += diff / diff.sum() / len(xs)
    kept = np.flatnonzero(total > 1e-15)
    if len(kept) <= 1:
        return None
    lo, hi = kept[0], kept[-1]
    return np.arange(lo, hi + 1) - len(d), total[lo:hi + 1] / total[lo:hi + 1].sum()


#: Bernoullis summed one by one; past this many, their normal law
POISSON_BINOMIAL_TERMS = 128
#: places a gradient may move in a saturated queue walked exactly; past
#: this many, a normal law of the same spread
MAX_REORDERED = 4096


def _poisson_binomial(p: np.ndarray) -> np.ndarray:
    """The pmf of a sum of independent Bernoullis of probabilities ``p``, on
    0..len(p): one convolution each (few: only those that may happen)."""
    pmf = np.ones(1)
    for q in p:
        pmf = np.convolve(pmf, [1.0 - q, q])
    return pmf


def _first_round(m: int, n: float, batch: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """The first round's staleness where every gradient read the first
    weights: of its first min(n, M) gradients the k-th applied (k from 0)
    saw the k before it, floor(k / c) updates of ``batch`` c: (values,
    probabilities)."""
    ranks, _ = lattice(0, max(1, min(m, round(n))) - 1)
    return ranks // batch, np.full(len(ranks), 1.0 / len(ranks))


def few_gradients(gradients: float, learners: int) -> str | None:
    """Why a mixed cluster's staleness law, the steady state's, does not
    hold for a run of under two gradients a learner (its first gradients
    read the first weights and saw fewer updates: 48 learners, 60
    gradients, 13.0 simulated against 47), or None."""
    if learners > 1 and gradients < 2 * learners:
        return (f"{OUTSIDE}: the run ends before every learner has given two gradients "
                f"({gradients:.0f} of {learners} learners), and the staleness law is the "
                "steady state's, with no room for the run's start")
    return None


def batched_staleness(arrivals: Pmf, c: int, missed: int | tuple = 0) -> Pmf:
    """The law of floor((r + A) / c) + [1 <= r <= missed], A ~ ``arrivals``,
    r uniform on 0..c-1: the pushers 1 to ``missed`` places after a batch's
    last read weights without that batch's update, still being applied."""
    values, probs = _batched(arrivals.values, arrivals.probs, c, missed)   # on 0, w, 2w, ...
    return Pmf.from_probs(int(values[0]), probs, int(values[1] - values[0]) if len(values) > 1 else 1)


def _batched(values: np.ndarray, probs: np.ndarray, c: int,
             missed: int | tuple = 0) -> tuple[np.ndarray, np.ndarray]:
    """:func:`batched_staleness` on (values, probabilities). With A = q c + t
    (0 <= t < c) it is q for c - t of the r and q + 1 for the other t, each
    of the missed places one more: a few additions per value of A, whatever
    c (a million learners' batches are hundreds of thousands of gradients).
    ``missed`` may be a law (counts, probabilities): the mixture over it."""
    if c == 1:
        return values, probs
    if isinstance(missed, tuple):
        law = _mixture([(p, *_batched(values, probs, c, int(k))) for k, p in zip(*missed)])
        return law.values, law.probs
    q, t = np.divmod(values.astype(np.int64), c)
    low = np.clip(np.minimum(missed, c - t - 1), 0, None)      # r in 1..missed below c - t
    high = np.clip(missed + t + 1 - c, 0, None)                # r in c - t..missed
    out = np.zeros(int(q[-1]) + 3)
    np.add.at(out, q, probs * (c - t - low) / c)
    np.add.at(out, q + 1, probs * (t - high + low) / c)
    np.add.at(out, q + 2, probs * high / c)
    return np.arange(len(out)), out


def _nth_arrival(times: np.ndarray, sd: np.ndarray, n: float, weight: float = 1.0) -> float:
    """When the expected count of events reaches n - 1/2: event k of each row
    of ``times`` at times[:, k] plus Normal(0, sd[k]^2), each row standing
    for ``weight`` learners."""
    flat = np.sort(times.ravel())
    index = int(n / weight)
    if index >= len(flat):
        return float(flat[-1])
    spread = SPREAD_OF_SD * float(sd.max())
    grid = np.linspace(flat[max(0, index - 1)] - spread, flat[index] + spread, 2049)
    sd = np.broadcast_to(sd, times.shape)
    below = times + SPREAD_OF_SD * sd < grid[0]
    near = ~below & (times - SPREAD_OF_SD * sd <= grid[-1])
    z = (grid[None, :] - times[near][:, None]) / np.maximum(sd[near], 1e-300)[:, None]
    count = weight * (below.sum() + special.ndtr(z).sum(axis=0))
    return float(np.interp(n - 0.5, count, grid))


#: rows that stand for a large cluster's learners in :func:`_in_phase_nth`
IN_PHASE_ROWS = 256


def _in_phase(sc: Scenario, law: Law, bound: str, loop: Loop, update_s: float, cycle: float,
              util: dict[str, float], steps: int, n: float) -> float | None:
    """When the n-th apply (a message of ``steps`` steps) comes where M
    learners past the skeleton's walk start together with steady steps of
    one law that nothing shared holds apart and whose noise has not yet
    walked them a cycle apart (:func:`_in_phase_nth`); else None (renewal's
    start stands: their phases have spread, or a second law, a straggler or
    a slow learner holds some apart from the rest)."""
    m = sc.cluster.learners
    if bound != "gpu" or m <= MAX_SKELETON_LEARNERS or law.std == 0 \
            or law.std * math.sqrt(steps * n / m) > cycle or sc.cluster.groups is not None \
            or sc.faults.slow_learners is not None or sc.faults.stragglers is not None:
        return None
    return _in_phase_nth(_first_apply(loop, law.mean, update_s, steps), cycle,
                         _shared_busy(util), law.std, steps, m, n)


def _in_phase_nth(first: float, cycle: float, busy: float, sd: float, steps: int, m: int,
                  n: float) -> float:
    """When the n-th apply (a message of ``steps`` steps) of M learners
    comes, where they start together, steady steps (``sd`` of one) keep
    them in phase for many rounds and nothing shared holds them apart:
    each applies its k-th at first + q + (k - 1) cycle, q its place in the
    stagger that what they share (``busy`` of the time) put it in on the
    first round, uniform on [0, busy cycle], moved by its steps' noise, sd
    sqrt(k steps) sd. Renewal's start, half a cycle late whatever n, is
    right only once the phases have spread: 464 learners of 0.23 s steps
    of cv 0.08, 1,420 gradients (three rounds and 28): 0.889 s simulated,
    0.814 by renewal, 0.871 so (the skeleton walks up to 256 learners).
    Only the rounds whose noise reaches the n-th are laid out; those before
    are all in."""
    centre = n / m
    reach = 8 + math.ceil(SPREAD_OF_SD * sd * math.sqrt(steps * (centre + 8)) / cycle)
    k = np.arange(max(1, int(centre) - reach), int(centre) + reach + 1)
    rows = min(m, IN_PHASE_ROWS)
    q = (np.arange(rows) + 0.5) / rows * busy * cycle
    times = first + q[:, None] + (k - 1)[None, :] * cycle
    return _nth_arrival(times, sd * np.sqrt(k * steps), n - m * (k[0] - 1), m / rows)


def _paced_walk(walk_of, m: int, steps: int, share: float = 0.0,
                last_first: bool = False) -> dict[str, np.ndarray]:
    """The times of marked stages of every learner's fixed-time walk
    (``walk_of(i, steps)`` gives its stages and the indices of each kind of
    mark), learners x marks for each kind, the first kind setting the pace.

    Learners at different paces (a colocated shard's node works locally)
    would see the fast ones stop early and the rest run free: each walks
    as many steps as the slowest needs to reach the same time, the times
    past the earliest end are dropped, and each learner's marks continue at
    its own last pace to a common count. ``share``: a fat tree's links'
    share of a port's time (Topology.fabric_share); ``last_first``: ties the
    other way (Skeleton)."""
    def walk(counts: list[int]) -> list[dict[str, np.ndarray]]:
        plans = [walk_of(i, counts[i]) for i in range(m)]
        ends = Skeleton(share, last_first).walk([0.0] * m, [stages for stages, _ in plans])
        return [{name: ends[i, idx] for name, idx in marks.items()}
                for i, (_, marks) in enumerate(plans)]

    times = walk([steps] * m)
    pace_kind = next(iter(times[0]))
    pace = np.array([(t[pace_kind][-1] - t[pace_kind][0]) / max(len(t[pace_kind]) - 1, 1)
                     for t in times])
    if pace.max() <= pace.min() * (1 + 1e-9):
        return {name: np.array([t[name] for t in times]) for name in times[0]}
    counts = [min(MAX_SKELETON_STEPS, math.ceil(steps * pace.max() / p)) for p in pace]
    times = walk(counts)
    horizon = min(t[pace_kind][-1] for t in times)
    out = {}
    for name in times[0]:
        kept = [t[name][t[name] <= horizon] for t in times]
        width = max(len(k) for k in kept)
        rows = []
        for k in kept:
            tail = min(8, len(k) - 1)
            step_pace = (k[-1] - k[-1 - tail]) / tail if tail > 0 else horizon
            rows.append(np.concatenate([k, k[-1] + step_pace * np.arange(1, width - len(k) + 1)]))
        out[name] = np.array(rows)
    return out


def _async_from_schedule(sc: Scenario, applies: np.ndarray, cycle: float, bound: str,
                         laws: dict, batch: int = 1) -> Prediction:
    """Everything of an async run from its exact schedule: the k-th apply
    overall makes version k; a gradient's staleness is the applies between
    its learner's previous one and its own. In updates of ``batch`` c, the
    k-th is applied by update ceil(k / c), and a learner's weights after its
    push j are those of update floor(j / c) (128 learners of fixed steps,
    batches of 8, 70 gradients: 4.0 as simulated, where each gradient at a
    uniform place in its batch said 4.44)."""
    run = Run.of(sc)
    m = applies.shape[0]
    found = period_of(applies)
    need = run.target_gradients
    if need == math.inf:
        need = run.updates or math.inf
    steps = _steps_for(applies, need, 2)
    times = _extend(applies, steps, found)
    learner = np.repeat(np.arange(m), times.shape[1])
    order = np.lexsort((learner, times.ravel()))          # ties in learner order
    flat = times.ravel()[order]
    version = np.empty(len(flat), dtype=np.int64)
    version[order] = np.arange(1, len(flat) + 1)
    version = version.reshape(times.shape)
    previous = np.concatenate([np.zeros((m, 1), dtype=np.int64), version[:, :-1]], axis=1)
    staleness_all = (-(-version // batch) - previous // batch - 1).ravel()[order]
    n = len(flat) if need == math.inf else int(min(need, len(flat)))
    if run.time_s is not None:
        n = min(n, int(np.searchsorted(flat, run.time_s, side="right")))
    n = max(n, 1)
    staleness = Pmf.of_samples(staleness_all[:n])
    period = (found[1].mean() / found[0]) if found else cycle
    # (a schedule that hangs on its ties is the simulator's only while they hold)
    how = "approximation" if "assumptions" in laws else "exact"
    laws.update(epoch_time=f"{how}: identical fixed-time steps, their periodic schedule",
                staleness=f"{how}: {SCHEDULED_APPLIES}")
    return Prediction(
        scenario=sc, t_gpu_s=period, t_update_s=period / m, bound=bound,
        epoch_time_s=run.epoch_time(float(flat[n - 1]), n),
        steady_throughput_samples_per_s=sc.workload.sub_batch * m / period,
        staleness=staleness, gradients_per_update=Pmf.point(1), laws=laws,
        gradients=n, updates=n)


def _steps_for(times: np.ndarray, n: float, spare: int) -> int:
    """Steps per learner of a schedule (learners x steps) that hold its n-th
    event: learners at different paces (a colocated shard's own node) reach
    it after different numbers of steps."""
    if n == math.inf:
        return MAX_TRANSIENT_STEPS
    pace = (times[:, -1] - times[:, 0]) / max(times.shape[1] - 1, 1)
    rate = 1.0 / np.maximum(pace, 1e-300)
    return int(min(MAX_TRANSIENT_STEPS, n * rate.max() / rate.sum() + spare))


def _extend(times: np.ndarray, steps: int, found: tuple[int, np.ndarray] | None) -> np.ndarray:
    """A schedule of ``steps`` steps: the walked ones, then the period repeated
    (or the last steps' mean pace where no period showed)."""
    walked = times.shape[1]
    if steps <= walked:
        return times[:, :steps]
    k = np.arange(walked, steps)
    if found is not None:
        p, shift = found
        base = walked - p + (k - walked) % p
        reps = (k - walked) // p + 1
        more = times[:, base] + reps[None, :] * shift[:, None]
    else:
        tail = min(8, walked - 1)
        pace = (times[:, -1] - times[:, -1 - tail]) / tail
        more = times[:, -1:] + (k - walked + 1)[None, :] * pace[:, None]
    return np.concatenate([times, more], axis=1)


# -- downpour: messages of n_push gradients, a fetch every n_fetch steps ----

def _cpu_wait(stations: list[mva.Station], m: int, cycle: float, law: Law,
              update_s: float, bound: str) -> float:
    """The part of a learner's mean cycle spent waiting for the server's CPU.
    Where the CPU sets the pace, what is left of the cycle after the
    learner's own demands (the step, its stages, its update) and the
    queueing at the other stations at that throughput; elsewhere the CPU's
    own queueing. Each queue is taken as open (of fixed services), its
    waiting scaled by how random the cycles are, as _cycle scales it."""
    alone = sum(s.demand_s for s in stations) + update_s
    cv2 = min(1.0, law.var / alone ** 2)

    def waiting(demand: float, servers: int = 1, service_cv2: float = 0.0) -> float:
        queued = _queued(m / cycle * demand / servers, m)
        return cv2 * demand / servers * queued * (1 + service_cv2) / 2

    if bound != "server":
        return waiting(update_s)
    elsewhere = sum(waiting(s.demand_s, s.servers, s.service_cv2)
                    for s in stations if s.servers > 0 and s.demand_s > 0)
    return max(0.0, cycle - alone - elsewhere)


def downpour_spans(n_fetch: int, n_push: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each gradient of a learner's period (lcm(n_fetch, n_push) steps):
    the steps from the fetch it read to the push that carries it, the
    learner's own pushes strictly in between (a push at the fetch came
    first), and its fetches in between."""
    k = np.arange(math.lcm(n_fetch, n_push))
    read = n_fetch * (k // n_fetch)
    pushed = n_push * (k // n_push + 1)
    fetches = (pushed - 1) // n_fetch - read // n_fetch
    return pushed - read, (pushed - 1) // n_push - read // n_push, fetches


#: the server's CPU and port out both this busy, one of them saturated: outside
BUNCHED_PULLS = 0.5


def predict_downpour(sc: Scenario, costs: Costs) -> Prediction:
    """Every learner a renewal process of messages, n_push steps apart.

    In steady state the other M - 1 learners push one message every n_push
    mean steps each, whatever the step law, so a gradient sees (M - 1) I /
    n_push of them, I the time from the fetch it read to its message's
    arrival in mean steps: the steps in between, the pushes that end them
    and the fetches' replies. With ideal communication that is (M - 1)
    (n_push + n_fetch) / (2 n_push) on average, plus the learner's own
    pushes in between. As for async, the run's in-phase start and its stop
    take M (1 + c_X^2) / (2 U) of that (U updates, c_X^2 the squared cv of a
    message's n_push steps)."""
    algorithm = sc.algorithm
    n_fetch, n_push = algorithm.n_fetch, algorithm.n_push
    if n_fetch == n_push == 1:
        return predict_async(sc, costs)
    topo, law, run, whole = topology_of(sc), costs.compute, Run.of(sc), loop_of(sc, costs)
    loop = whole.per_step(n_push, n_fetch)
    m = topo.learners
    update_s = costs.server_update_s / n_push
    server = [mva.Station("server", update_s)] if update_s else []
    cycle, util, bound = _cycle(_stations(loop, topo, law, "cluster", server), m, law,
                                loop.overhead_s + update_s)
    message = n_push * cycle                     # one learner's time between pushes
    per_update = message / m
    updates = math.ceil(run.target_gradients / n_push) if run.target_gradients < math.inf \
        else run.updates or max(1, math.floor(run.time_s / per_update))
    c2 = law.var / cycle ** 2 if bound == "gpu" else 0.0
    c2_message = c2 / n_push
    # a learner that fetches before its first push waits at the busy port
    # for it too, which the serialised start does not know: half a message
    if bound != "gpu" and m > 1 and n_fetch >= n_push:
        start = _serialised_start(whole, law.mean, costs.server_update_s, message, util[bound],
                                  steps=n_push)
    else:
        start = message * (1.0 - c2_message) / 2.0

    def last_of(u):
        """When the u-th message is applied, by which law; the fixed steps'
        staleness, whether their schedule reshuffles, and the label of a run
        that is all start."""
        t_last = u * per_update + start
        epoch_law = "mean-value: the U-th message of M renewal processes started together"
        in_phase = _in_phase(sc, law, bound, whole, costs.server_update_s, message, util, n_push,
                             u)
        if in_phase is not None:
            t_last = in_phase
            epoch_law = ("approximation: the U-th message of M learners that start together, "
                         "each drifting from the first round's stagger by its step noise")
        fixed = reshuffled = None
        # the start's and stop's share of the staleness is a first-order
        # correction in M / U: a run of fewer than two messages a learner is all start
        first_only = None if m == 1 or u >= 2 * m else (
            f"{OUTSIDE}: the run ends before every learner has pushed twice ({u} messages "
            f"of {m} learners), and the closed form has no staleness law for a run that is all "
            "start")
        run_steps = u * n_push / m
        if _ideal(sc) and m == 1:
            t_last = u * message
        elif _ideal(sc) and u <= m and not law.is_constant:
            # a run of about one message a learner: the U-th event of M renewal
            # processes of n_push steps, from the start
            t_last, exact = kth_event_mean(law.sum_of(n_push), m, int(u))
            epoch_law = ("exact: " if exact else "approximation: ") + \
                "the U-th message of M renewal processes of n_push steps started together"
        elif m <= MAX_SKELETON_LEARNERS and law.std <= cycle / 4:
            # nearly identical steps: the in-phase start's bursts and the
            # stagger they settle into, each message moved by its steps' noise
            asked = _downpour_skeleton(topo, whole, law.mean, costs.server_update_s, n_fetch,
                                       n_push, run_steps=run_steps)
            tied, reverse, faster = _hangs_on_ties(topo, whole, law.mean, costs.server_update_s,
                                                   n_fetch, n_push, asked[0], run_steps)
            # where the pace hangs on ties, fixed steps keep the order the learners
            # asked in, and step noise breaks them toward the order that leaves
            # what they share the less idle (8 M40 learners at a busy server CPU:
            # 0.223 s a message the way they asked, 0.193 the other way; 57.9 s
            # an epoch simulated with fixed steps, 50.1 with steps of cv 0.07,
            # 57.9 and 49.7 closed form); the label stands
            pushes, fetches = reverse if tied and faster and not law.is_constant else asked
            count = _steps_for(pushes, u, 8)
            times = _extend(pushes, count, period_of(pushes))
            # the schedule applies a push no fetch waits on as it arrives, before
            # the server's CPU: its order is near the simulator's where the CPU
            # takes every push in the walk or is seldom busy (a CPU that sets the
            # pace applies each message long after it came: 88 against 128
            # simulated), and one server holds the weights (two shards apply a
            # message's parts apart: 37.1 against 41.5, 56 learners); with
            # communication modelled, the simulator's order of events at a tie
            # can differ (0.2 % of the staleness, 117 learners)
            cpu_walked = not costs.server_update_s or n_push % n_fetch == 0
            one_server = _ideal(sc) or algorithm.servers == 1
            if law.is_constant and one_server and \
                    (cpu_walked or util.get("server", 0.0) < CPU_LEFT_OUT):
                reads = _extend(fetches, count * n_push // n_fetch + 2,
                                _fetch_period(period_of(pushes), n_push, n_fetch, fetches)
                                or period_of(fetches))
                fixed = _downpour_staleness(times, reads, n_fetch, n_push, int(u))
            t_last = _nth_arrival(times, law.std * np.sqrt(n_push * np.arange(1, count + 1)), u)
            # the schedule holds the server's CPU only for pushes a fetch waits
            # on; it applies every message, one at a time, from the first push
            t_last = max(t_last, float(times.min()) + (u - 1) * costs.server_update_s)
            epoch_law = ("approximation: the skeleton's schedule, each learner drifting by "
                         "its step noise")
            reshuffled = _reshuffled(util, law, cycle / m) or tied
        return t_last, epoch_law, fixed, reshuffled, first_only

    if run.time_s is None:
        t_last, epoch_law, fixed, reshuffled, first_only = last_of(updates)
    else:
        # the messages by the stop's time: the last that comes within it
        # (the steady pace from 0 counts the start's time as messages:
        # 8 learners, n_push 2, a 3 s stop: 8 % short; a hunt)
        limit = math.ceil(run.target_gradients / n_push) if run.target_gradients < math.inf \
            else run.updates
        updates, (t_last, epoch_law, fixed, reshuffled, first_only) = _last_within(
            last_of, updates, run.time_s, per_update, limit)
    run_steps = updates * n_push / m
    if run.time_s is not None and t_last > run.time_s:       # not even the first
        t_last = run.time_s
        updates = min(updates, max(1.0, t_last / per_update))
    if fixed is not None:
        # (a schedule that hangs on its ties is the simulator's only while they hold)
        staleness, staleness_law = fixed, (
            "exact" if _ideal(sc) and not reshuffled else "approximation") + \
            f": {SCHEDULED_APPLIES} and fetches"
    else:
        # the read's time to its push: its steps, the pushes ending them and
        # every fetch's reply from the one it read on, in units of the
        # mean step (the others push once every n_push of those)
        span, own, fetches = downpour_spans(n_fetch, n_push)
        push_s, reply_s = topo.held_s(whole.after) / cycle, topo.held_s(whole.reply) / cycle
        if ALONG.get(bound, bound) == "server_port_in":
            # the way into the server takes the messages back to back: a
            # message waits its turn after its steps, so the cycle's waiting
            # is its push's, not its steps' (12 learners, n_fetch 3, n_push
            # 2, the port or the server's leaf link saturated: 14.8 and 14.5
            # closed form against 17.0 simulated with the wait spread over
            # the steps)
            steps_s = topo.held_s(whole.before) + law.mean
            push_s = max(push_s, n_push * (1.0 - steps_s / cycle) - n_push * reply_s / n_fetch)
        step_s = 1.0 - push_s / n_push - reply_s / n_fetch
        interval = span * step_s + (own + 1) * push_s + (fetches + 1) * reply_s
        if update_s:
            # a fetch waits for the server's CPU to apply every message queued
            # before it: that share of a step's waiting comes at once before
            # the read (n_fetch steps' worth), not along the steps to the push,
            # and the others' pushes meanwhile queue ahead of the learner's own
            interval = interval + ((fetches + 1) * n_fetch - span) * _cpu_wait(
                _stations(loop, topo, law, "cluster"), m, cycle, law, update_s, bound) / cycle
        share = max(0.0, 1.0 - m * (1.0 + c2_message) / (2.0 * updates))
        others = (m - 1) * interval / n_push
        staleness = _grouped(others * share + own, others * m * c2 / n_push, np.ones(len(span)))
        staleness_law = ("approximation: the others' messages from each gradient's fetch to "
                         "its push ((M - 1)(n_push + n_fetch) / (2 n_push) in steady state with "
                         "ideal communication), less the run's start and stop; a renewal "
                         "count's variance")
    laws = {"minibatch": "exact: n_push gradients per message", "epoch_time": epoch_law,
            "staleness": staleness_law}
    # a learner that fetches a few times in the run reads ever older weights
    # between them, which the steady state's law (not the schedule's walk
    # over the run) leaves out: over 156 steps a learner, n_fetch 1,000 said
    # 1983 against 313 simulated, 70 (2.2 fetches) 9.1 % off, 50 (3.1) 4.9 %
    few_fetches = None if fixed is not None or run_steps >= FEW_FETCHES * n_fetch else (
        f"{OUTSIDE}: each learner fetches {run_steps / n_fetch:.2g} times in the run "
        f"({run_steps:.3g} steps, a fetch every {n_fetch}): its staleness grows between "
        f"fetches, and the closed form's law is the steady state's, which needs "
        f"{FEW_FETCHES} or more")
    # a fetch waits for the CPU's whole backlog: where the CPU or the
    # server's way out sets the pace and the other is busy too, the learners
    # the CPU held pull together when it clears, in bursts at the way out
    # that one station's mean queue does not see
    cpu, out = util.get("server", 0.0), util.get("server_port_out", 0.0)
    bunched = None if min(cpu, out) < BUNCHED_PULLS or max(cpu, out) < 0.97 else (
        f"{OUTSIDE}: the server's CPU is {cpu:.0%} busy and its port out {out:.0%}: the "
        "fetches that wait for the CPU's backlog pull together when it clears, in bursts "
        "the port's mean queue does not see")
    laws.update(_outside(first_only, few_fetches, reshuffled, bunched,
                         _random_contention(util, law, loop.overhead_s + update_s),
                         _coupled_shards(loop, topo, cycle), _sharded_fabric(loop, topo, cycle)))
    gradients = updates * n_push
    return Prediction(
        scenario=sc, t_gpu_s=cycle, t_update_s=per_update, bound=bound,
        epoch_time_s=run.epoch_time(t_last, gradients),
        steady_throughput_samples_per_s=sc.workload.sub_batch * m / cycle,
        staleness=staleness, gradients_per_update=Pmf.point(n_push), laws=laws,
        gradients=gradients, updates=updates)


def _downpour_skeleton(topo: Topology, loop: Loop, step: float, update_s: float,
                       n_fetch: int, n_push: int, last_first: bool = False,
                       run_steps: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """When each message of identical fixed-time learners is applied and
    when each fetch reads the weights (learners x messages, learners x
    fetches), over enough steps to see the period, or else the run's
    ``run_steps`` steps a learner (within MAX_SKELETON_WALK). A push
    that is not followed by a fetch does not wait for the server's CPU.
    With n_fetch = n_push = 1 this is async: push, wait for the update, pull."""
    period = math.lcm(n_fetch, n_push)
    server = [(("server_cpu",), update_s)] if update_s else []

    def walk_of(i: int, periods: int) -> tuple[list[Walk], dict[str, list[int]]]:
        before, after, reply = (_resolved(topo, part, i) for part in (loop.before, loop.after, loop.reply))
        walk: list[Walk] = []
        marks: dict[str, list[int]] = {"push": [], "fetch": []}
        for k in range(1, periods * period + 1):
            walk += before + [((), step)]
            if k % n_push == 0:
                walk += after + (server if k % n_fetch == 0 else [])
                marks["push"].append(len(walk) - 1)
            if k % n_fetch == 0:
                if k % n_push and update_s:
                    # a fetch waits for the CPU's backlog, its own push or not
                    walk.append((("server_cpu",), 0.0))
                marks["fetch"].append(len(walk) - 1)
                walk += reply
        return walk, marks
    periods = max(2, math.ceil(SKELETON_STEPS // 2 / period))
    times = _paced_walk(walk_of, topo.learners, periods, topo.fabric_share, last_first)
    # many learners can settle slowly (99 learners whose fetches queue at
    # the server's port: 0.224 s a message over their first six, 0.245 in
    # the end): where the pushes have not repeated, walk the run, or as much
    # of it as MAX_SKELETON_WALK allows, once more
    longer = min(math.ceil(run_steps / period), MAX_SKELETON_WALK // (period * topo.learners))
    if period_of(times["push"]) is None and longer > periods:
        times = _paced_walk(walk_of, topo.learners, longer, topo.fabric_share, last_first)
    return times["push"], times["fetch"]


def _hangs_on_ties(topo: Topology, loop: Loop, step: float, update_s: float, n_fetch: int,
                   n_push: int, pushes: np.ndarray, run_steps: float = 0.0
                   ) -> tuple[str | None, tuple[np.ndarray, np.ndarray], bool]:
    """Identical fixed-time learners meet at what they share in ties, which
    the simulator breaks in the order they asked, and so does the schedule
    (``pushes``). Where breaking them the other way settles it at another
    pace, the pace hangs on them: the clock's rounding breaks a tie the
    other way at some point of a long run, and any step noise at once. The
    label that says so (or None), the schedule walked the other way (its
    applies and fetches), and whether that one is the faster."""
    other = _downpour_skeleton(topo, loop, step, update_s, n_fetch, n_push, last_first=True,
                               run_steps=run_steps)
    asked, reverse = (float(_paces(p, period_of(p)).mean()) for p in (pushes, other[0]))
    return _tied(asked, reverse, "the schedule's pace hangs", "a message"), other, reverse < asked


#: relative difference of two schedules' paces above which the pace hangs on ties
TIED_PACES = 0.01


def _tied(asked: float, reverse: float, what: str, per: str) -> str | None:
    """The label of a schedule whose pace, ``asked`` with ties in the order
    the learners asked and ``reverse`` the other way, hangs on them."""
    if abs(asked - reverse) <= TIED_PACES * min(asked, reverse):
        return None
    return (f"{OUTSIDE}: identical steps meet at what the learners share in ties, and "
            f"{what} on their order ({asked:.3g} s {per} in the order the "
            f"learners asked, {reverse:.3g} s the other way): the clock's rounding and any "
            "step noise pick one, not the closed form")


def _fetch_period(found: tuple[int, np.ndarray] | None, n_push: int, n_fetch: int,
                  walked: np.ndarray) -> tuple[int, np.ndarray] | None:
    """The fetches' period from the pushes' (p messages, each learner
    ``shift`` later): k of the pushes' periods hold a whole number of fetches,
    k p n_push / n_fetch, as much later. The two schedules extended each by
    its own walked period drift apart where the walk has not settled (a push
    period of 0.1281 s a step against the fetches' 0.1301: over 16,000
    gradients reads came after their pushes' applies, a staleness of -27; a
    hunt). None where the pushes show no period, or the walked fetches
    (``walked``, learners by fetches) do not show theirs once."""
    if found is None:
        return None
    p, shift = found
    k = n_fetch // math.gcd(p * n_push, n_fetch)
    fetches = k * p * n_push // n_fetch
    if 2 * fetches > walked.shape[1]:
        return None
    last = walked[:, -fetches:] - walked[:, -2 * fetches:-fetches]
    repeats = np.allclose(last, k * shift[:, None], rtol=1e-6, atol=1e-12)
    return (fetches, k * shift) if repeats else None


def _downpour_staleness(applies: np.ndarray, reads: np.ndarray, n_fetch: int, n_push: int,
                        updates: int) -> Pmf:
    """The staleness of every gradient of the first ``updates`` messages of
    a fixed schedule: its message's rank among the applies, less the applies
    its fetch saw. At one instant a fetch sees its own push and those of the
    learners before it (the simulator's order of events at a tie)."""
    m, messages = applies.shape
    fetches = reads.shape[1]
    # every apply and read as (time, learner, 0 apply | 1 read), in event order;
    # the schedule's applies and reads were extended apart (rounding a tie a
    # few ulps either way) where the simulator's clock reaches them by the
    # same sums: times are taken to the nanosecond, so its ties stay ties
    t = np.round(np.concatenate([applies.ravel(), reads.ravel()]), 9)
    who = np.concatenate([np.repeat(np.arange(m), messages), np.repeat(np.arange(m), fetches)])
    phase = np.repeat([0, 1], [m * messages, m * fetches])
    order = np.lexsort((phase, who, t))
    seen = np.cumsum(phase[order] == 0)             # applies up to each event
    version = np.empty(len(t), dtype=np.int64)
    version[order] = seen
    applied = version[:m * messages].reshape(m, messages)
    read = np.concatenate([np.zeros((m, 1), dtype=np.int64),
                           version[m * messages:].reshape(m, fetches)], axis=1)
    # gradient k of a learner: in message k // n_push, read by fetch k // n_fetch
    k = np.arange(messages * n_push)
    k = k[k // n_fetch <= fetches]
    staleness = applied[:, k // n_push] - read[:, k // n_fetch] - 1
    return Pmf.of_samples(staleness[applied[:, k // n_push] <= updates])


# -- sync: rounds of all learners ------------------------------------------

def predict_rounds(sc: Scenario, costs: Costs, aggregate_s: float, period: int = 1) -> Prediction:
    """Rounds of every learner's ``period`` steps, then ``aggregate_s`` after
    the slowest: through a server (``sync``: push, update, pull), or through
    a collective (``allreduce``, ``local-sgd``: no push or pull)."""
    from .algorithms.server import overlap_shares

    topo, loop, law, run = topology_of(sc), loop_of(sc, costs), costs.compute, Run.of(sc)
    p = topo.learners
    # sync's ``overlap: backward``: each step's after-stages start this part
    # of the step before its end
    shares = overlap_shares(sc)
    # local SGD: a round is ``period`` steps of each learner, then the averaging
    if topo.blocks or len(set(costs.group_computes)) > 1 or sc.faults.slow_learners is not None:
        # groups of different nodes or steps, or slow learners: each learner
        # its group's loop and its own law
        from .costs import learner_laws
        from .structure import loops_of

        rounds = _mixed_sync_rounds if p <= MAX_SKELETON_LEARNERS else _mixed_rounds_large
        first, steady, exact = rounds(topo, loops_of(sc, costs), learner_laws(sc, costs),
                                      aggregate_s, period, shares=shares)
    else:
        share = 0.0 if shares is None else float(shares[0])
        first, steady, exact = _sync_rounds(topo, loop, law, aggregate_s, period, share=share)
    # fixed steps walk every part of every message (_sync_rounds), booked as
    # the simulator books them, so the shards' coupling is in the walk
    coupled = topo.servers > 1 and not _ideal(sc) and not (
        law.is_constant and not topo.blocks and len(set(costs.group_computes)) <= 1
        and sc.faults.slow_learners is None and p <= MAX_SKELETON_LEARNERS)
    # but fixed steps whose parts meet at a fat tree's leaf links in ties
    # may walk rounds that are not the simulator's from the second on: where
    # the rounds walked with the ties the other way settle elsewhere, they
    # hang on them (192 fixed steps, two colocated shards, leaves of two
    # nodes: the second round 110 s simulated, 109 walked; the run's rounds
    # settle to 83 s, the walk's to 89, and the mean of the twelve walked,
    # 95.6, is 15 % off the run's)
    tied = None
    if (law.is_constant and not coupled and topo.servers > 1 and topo.nodes_per_switch
            and not _ideal(sc) and topo.fabric_demands(loop.stages)):
        tied = _tied(steady, _sync_rounds(topo, loop, law, aggregate_s, period, share=share,
                                          last_first=True)[1], "the rounds hang", "a round")
        exact = exact and tied is None
    step_s = law.mean + loop.overhead_s         # one step's, not a round's period of them
    law = law.sum_of(period)
    per_round = p * period
    n = run.target_gradients
    if n == math.inf:
        rounds = run.updates if run.updates else None
    else:
        rounds = math.ceil(n / per_round)
    # a time stop before the first round is expected to end: a run that
    # may have no update, whose epoch the closed form takes at one round
    too_short = None
    if rounds is None or run.time_s is not None:
        by_time = 0 if run.time_s < first else 1 + math.floor((run.time_s - first) / steady)
        rounds = by_time if rounds is None else min(rounds, by_time)
        if by_time == 0:
            too_short = stops_before_first(run.time_s, "round's update", f"{first:.3g} s")
    rounds = max(rounds, 1)
    t_last = first + (rounds - 1) * steady
    steps = "steps" if period == 1 else f"sums of {period} steps"
    return Prediction(
        scenario=sc, t_gpu_s=step_s, t_update_s=steady, bound="slowest learner",
        epoch_time_s=run.epoch_time(t_last, rounds * per_round),
        steady_throughput_samples_per_s=per_round * sc.workload.sub_batch / steady,
        staleness=Pmf.point(0), gradients_per_update=Pmf.point(per_round),
        laws={"epoch_time": (f"exact: rounds of E[max of P {steps}]" if _ideal(sc) and exact else
                             "exact: fixed-time steps, their round schedule"
                             if law.is_constant and exact else
                             "approximation: fixed-time steps, their round schedule walked "
                             f"(the mean of {SETTLING_ROUNDS} rounds where the learners' order "
                             "does not repeat; beyond the learners walked, a progression)"
                             if law.is_constant else
                             "approximation: the round's schedule with the compute of each "
                             "learner at its expected order statistic"
                             + ("" if period == 1 else
                                f"; the {period} steps' stages walked in turn at the mean "
                                "step, their sum one draw")),
              "staleness": "exact: 0",
              "minibatch": "exact: P gradients per round" if period == 1 else
              f"exact: P x {period} gradients per averaging",
              **_outside(f"{OUTSIDE}: each learner's message passes {topo.servers} shards' ports "
                         "in turn, each with its node's port at once (cut-through): which part "
                         "waits for which, and which parts fill the idle time the waiting "
                         "leaves, follow the learners' order, which the closed form walks only "
                         "for identical fixed steps (here at expected times, or as a progression)"
                         if coupled else tied, too_short)},
        gradients=rounds * per_round, updates=rounds)


def _sync_rounds(topo: Topology, loop: Loop, law: Law, update_s: float,
                 period: int = 1, k: int | None = None, share: float = 0.0,
                 last_first: bool = False) -> tuple[float, float, bool]:
    """(first round, a later round, whether exact): from the weights published
    (or time 0) to the next publication. The round closes at its ``k``-th
    gradient (all learners' by default; ``k-sync`` cancels the rest).

    A round of local SGD holds ``period`` steps of each learner, each after
    its own stages, walked in turn: with fixed steps exactly; with random
    steps at the mean step, the steps' sum then taken as one draw at its
    expected order statistic.

    The round's deterministic part is walked (skeleton.py): the weights leave
    the server's port one learner after another, in the order their
    gradients came in, and each learner then queues for its host link and
    disk as the stagger allows. The gradients queue at the server's port in
    the order they arrive, so the port is done at max over j of (j-th arrival
    + (P - j + 1) messages). With fixed steps the walk includes the compute
    and is exact; with random steps each learner's step ends at its expected
    order statistic (Blom's positions on the mixture of the learners' arrival
    laws, the exact E[max] for the last), in the order they were ready, and
    what follows it (the host link, each part of the gradient through its
    node's port and its shard's) is walked from there, first come first
    served, and the server port's queue then takes what random arrivals add
    to its mean finish beyond its finish at their means (:func:`_queue_spread`).

    With ``share`` (sync's ``overlap: backward``) what follows the step starts
    that part of the step before its end, and the learner is in the round
    once both are done: walked so with fixed steps (exactly), and with random
    ones from the expected order statistic less that part of the mean step.
    ``last_first``: ties the other way (Skeleton).
    """
    p = topo.learners
    k = p if k is None else k
    # exact where the round's E[max] is: fixed steps, exponential ones, or
    # sums of steps whose law sums exactly (a gamma, by quadrature)
    exact = law.is_constant or _is_exponential(law) or (period > 1 and law.sums_exactly)
    if p > MAX_SKELETON_LEARNERS:
        return _sync_rounds_large(topo, loop, law, update_s, k, share, period)
    push, to_push = loop.push, loop.to_push
    message = push.duration_s if push is not None else 0.0
    if push is not None and topo.nodes_per_switch:
        # or at the server's leaf's down-link, where a fat tree's is slower
        message = max(message, topo.message_s(loop, "server_port_in"))
    # a learner's last part for a colocated shard of its own node stays inside it
    remote = np.array([push is not None and topo.holds(push, i) is not None for i in range(p)])
    before = [_resolved(topo, loop.before, i) for i in range(p)]
    early = 0.0      # local SGD: the round's steps before the last, walked at their mean
    if period > 1:
        # each step's stages, then its compute, walked in turn; the last
        # step's compute is the tail's (or, for random steps, the sum's draw)
        before = [(b + [((), law.mean)]) * (period - 1) + b for b in before]
        if not law.is_constant:
            early, law = (period - 1) * law.mean, law.sum_of(period)
    reply = [_resolved(topo, loop.reply, i) for i in range(p)]
    # a message to several shards: every part walked, each with its shard's
    # port and its node's at once (the server's port as one queue would not)
    sharded = law.is_constant and k == p and topo.servers > 1 and push is not None
    if sharded:
        to_push, message = loop.after, 0.0
    # the step's part that its after-stages run beside (none without overlap,
    # or for a learner with no stage after its step)
    leads = _leads(topo, [loop] * p, [law.mean] * p, np.full(p, share))
    tail = [[((), law.mean - leads[i])] + _resolved(topo, to_push, i) for i in range(p)] \
        if law.is_constant else [[] for _ in range(p)]
    # random steps: what follows the step, walked from when it is done (a
    # part for a colocated shard of the learner's own node stays inside it)
    pushes = [] if law.is_constant else [_resolved(topo, loop.after, i) for i in range(p)]
    # (and from its step to the server's port, the stages before its push,
    # and its turn there, which a fat tree's down-link may make longer)
    services = message * remote
    own_push = (push.duration_s if push is not None else 0.0) * remote
    lags = np.array([sum(d for _, d in walk) for walk in pushes]) - own_push - leads \
        if pushes else None

    def one_round(stages: list[list[Walk]], order: np.ndarray) -> tuple[float, np.ndarray]:
        ready, computed = np.zeros(p), np.zeros(p)
        walked = [stages[i] + tail[i] for i in order]
        if any(walked):
            ends = Skeleton(topo.fabric_share, last_first).walk(np.zeros(p), walked)
            ready[order] = [row[~np.isnan(row)][-1] if np.any(~np.isnan(row)) else 0.0
                            for row in ends]
            if law.is_constant and leads.any():
                # the step's end: its part before the after-stages, then the rest
                computed[order] = [row[len(stages[i])] + leads[i] for row, i in zip(ends, order)]
        if law.is_constant:
            # FIFO at the server's port, ties in the order the learners asked
            rank = np.lexsort((np.argsort(order), ready))
            queue = ready[rank][:k]
            if leads.any():
                return _overlapped_round(queue, message * remote[rank][:k], computed[rank][:k],
                                         rank, update_s)
        else:
            # each step done at its expected order statistic, in the order the
            # learners were ready; then every part of its gradient through its
            # node's port and its shard's, first come first served
            rank = np.argsort(ready, kind="stable")
            computed = _expected_order_statistics(ready[rank] - early, law)
            starts = computed - leads[rank]
            ends = Skeleton(topo.fabric_share).walk(starts, [pushes[i] for i in rank])
            pushed = np.array([row[~np.isnan(row)][-1] if np.any(~np.isnan(row)) else t
                               for row, t in zip(ends, starts)]) if ends.size else starts
            pushed = np.maximum(pushed, computed)
            # the round closes at the K-th gradient in; the next pulls in that order
            spread = _queue_spread(ready[rank] - early, law, lags[rank], services[rank], k)
            return (float(np.sort(pushed)[k - 1]) + spread + update_s,
                    rank[np.argsort(pushed, kind="stable")])
        return float(_fifo_done(queue, message * remote[rank][:k])) + update_s, rank

    first, later, settled = _settled(one_round, before, reply, law.is_constant)
    return first, later, exact and settled


def _leads(topo: Topology, loops: list[Loop], means: list[float],
           shares: np.ndarray | None) -> np.ndarray:
    """How long before each learner's (mean) step ends its after-stages
    start (sync's ``overlap: backward``): its share of the step, or none
    where it has no stage after its step."""
    if shares is None or not shares.any():
        return np.zeros(len(loops))
    return np.array([mean * share if _resolved(topo, loop.after, i) else 0.0
                     for i, (loop, mean, share) in enumerate(zip(loops, means, shares))])


def _overlapped_round(arrivals: np.ndarray, services: np.ndarray, computed: np.ndarray,
                      rank: np.ndarray, update_s: float) -> tuple[float, np.ndarray]:
    """A round of fixed steps whose gradients left before their steps ended
    (sync's ``overlap: backward``): the messages through the server's port
    first come first served, each learner in the round once its message is
    through and its step done, the round closed by the last; the next
    round's pulls go in the order the learners came in (ties: the port's)."""
    # a FIFO server: message j done at C_j + max over i <= j of (arrival_i - C_(i-1))
    through = np.cumsum(services)
    done = through + np.maximum.accumulate(arrivals - (through - services))
    joined = np.maximum(done, computed)
    order = np.argsort(joined, kind="stable")
    return float(joined.max()) + update_s, rank[order]


#: draws of a round's steps that measure how much the server port's queue
#: adds to the round beyond its arrivals at their means (:func:`_queue_spread`)
SPREAD_DRAWS = 1 << 16
#: the seed of those draws (any fixed number: every call draws the same steps)
SPREAD_SEED = 65536


def _fifo_done(arrivals: np.ndarray, services: np.ndarray) -> np.ndarray:
    """When a single first-come-first-served server is done with jobs that
    arrive at ``arrivals`` (ascending along the last axis), taking
    ``services``: the max over j of the j-th arrival + the services from
    the j-th on (the server is busy from the last arrival it found idle)."""
    rest = np.cumsum(services[..., ::-1], axis=-1)[..., ::-1]
    return np.max(arrivals + rest, axis=-1)


def _queue_spread(starts: np.ndarray, law: Law, lags: np.ndarray, services: np.ndarray,
                  k: int) -> float:
    """What random steps add to the time the server's port has taken the
    first ``k`` gradients, beyond that time at the arrivals' expected order
    statistics. The port is done at max over ranks j of (the j-th arrival
    + its message and the k - j after it); the mean of a max is more than
    the max of the means (Jensen), most where the arrivals come about a
    message apart, so that the port's queue forms and drains at random
    (24 learners pulled 44.5 ms apart, lognormal steps of 0.21 s and cv
    0.29, K = 12 pushes of 44.5 ms: 0.838 s against 0.786 s, 6 % of the
    round the closed form had left out). Learner i's gradient is at the
    port ``lags[i]`` after its step (the stages before it, unhindered),
    taking ``services[i]`` there; the steps are seeded draws, the same for
    every call, and the difference is taken within them, so their own
    sampling error partly cancels (both terms err the same way)."""
    if not services.any() or law.is_constant:
        return 0.0
    p = len(starts)
    draws = max(64, SPREAD_DRAWS // p)
    arrivals = starts + lags + law.sample(np.random.default_rng(SPREAD_SEED), draws * p) \
        .reshape(draws, p)
    order = np.argsort(arrivals, axis=1, kind="stable")[:, :k]
    first = np.take_along_axis(arrivals, order, axis=1)
    taken = services[order]
    done = _fifo_done(first, taken).mean()
    at_means = _fifo_done(first.mean(axis=0), taken.mean(axis=0))
    return max(0.0, float(done - at_means))


def _settled(one_round, before: list, reply: list,
             fixed: bool = True) -> tuple[float, float, bool]:
    """(the first round, a later one, whether the rounds repeat):
    ``one_round(stages, order)`` walks a round from the learners' stages in
    the order their pulls are served and returns its length and the next
    order. With fixed steps the order settles in a few rounds (a round as
    long as the last in another order may lead to a different one), or
    cycles, and the cycle's mean round is the run's; where it wanders
    (shards across a fat tree's leaves) the mean of the rounds walked stands
    for it. With random steps the walk is at expected times, its order an
    approximation anyway: the mean of a few rounds."""
    p = len(before)
    first, order = one_round(before, np.arange(p))
    rounds, seen = [], {order.tobytes(): 0}
    for _ in range(SETTLING_ROUNDS if fixed else RANDOM_SETTLING_ROUNDS):
        duration, order = one_round([reply[i] + before[i] for i in range(p)], order)
        rounds.append(duration)
        again = seen.setdefault(order.tobytes(), len(rounds))
        if again < len(rounds):
            # the orders from round ``again`` on repeat: their rounds' mean
            return first, float(np.mean(rounds[again:])), True
    return first, float(np.mean(rounds)), False


#: rounds walked at most for the learners' order to settle, with fixed and random steps
SETTLING_ROUNDS, RANDOM_SETTLING_ROUNDS = 12, 3


def _mixed_sync_rounds(topo: Topology, loops: tuple[Loop, ...], laws: list[Law], update_s: float,
                       period: int = 1,
                       shares: np.ndarray | None = None) -> tuple[float, float, bool]:
    """:func:`_sync_rounds` for a mixed cluster whose groups' nodes differ:
    learner i walks its group's loop (its links' durations) on the whole
    topology, so the groups' messages share the server's port in the
    walk; with random steps each learner's arrival is at the order
    statistics of the learners' own laws. The server's port serves the
    messages in arrival order, each for its own length (its node's network);
    with each learner's ``shares``, as :func:`_sync_rounds`."""
    p = topo.learners
    mine = [loops[topo.block_of(i)] for i in range(p)]
    fixed = all(law.is_constant for law in laws)
    message, before, reply, tail, shift = np.zeros(p), [], [], [], np.zeros(p)
    leads = _leads(topo, mine, [law.mean for law in laws], shares)
    for i, (loop, law) in enumerate(zip(mine, laws)):
        push, to_push = loop.push, loop.to_push
        # (a part for a colocated shard of the learner's own node stays inside it)
        message[i] = topo.duration_s(push, i) if push is not None and topo.holds(push, i) else 0.0
        if message[i] and topo.nodes_per_switch:
            # or at the server's leaf's down-link, where a fat tree's is slower
            message[i] = max(message[i], topo.message_s(loop, "server_port_in"))
        walk = _resolved(topo, loop.before, i)
        if period > 1:
            walk = (walk + [((), law.mean)]) * (period - 1) + walk
        before.append(walk)
        reply.append(_resolved(topo, loop.reply, i))
        if fixed:
            tail.append([((), law.mean - leads[i])] + _resolved(topo, to_push, i))
        else:
            tail.append([])
            # the earlier steps are walked at their mean; their sum is one draw
            shift[i] = sum(d for _, d in _resolved(topo, to_push, i)) - (period - 1) * law.mean
    drawn = laws if fixed else [law.sum_of(period) for law in laws]

    def one_round(stages: list[list[Walk]], order: np.ndarray) -> tuple[float, np.ndarray]:
        ready, computed = np.zeros(p), np.zeros(p)
        walked = [stages[i] + tail[i] for i in order]
        if any(walked):
            ends = Skeleton().walk(np.zeros(p), walked)
            ready[order] = [row[~np.isnan(row)][-1] if np.any(~np.isnan(row)) else 0.0
                            for row in ends]
            if fixed and leads.any():
                computed[order] = [row[len(stages[i])] + leads[i] for row, i in zip(ends, order)]
        if fixed:
            arrive, rank = ready, np.lexsort((np.argsort(order), ready))
            if leads.any():
                return _overlapped_round(arrive[rank], message[rank], computed[rank], rank,
                                         update_s)
        else:
            rank = np.argsort(ready)
            arrive = np.empty(p)
            stepped = _mixed_order_statistics(ready[rank] + shift[rank] - leads[rank],
                                              [drawn[i] for i in rank])
            arrive[rank] = stepped
            if leads.any():
                # the round lasts until the last step is done, its message or not
                last = float(np.max(stepped + leads[rank] - shift[rank]))
        by_arrival = np.argsort(arrive, kind="stable")
        # FIFO at the server's port
        done = float(_fifo_done(arrive[by_arrival], message[by_arrival]))
        if not fixed and leads.any():
            done = max(done, last)
        # the next round serves them in the order they arrived: a slower
        # law's learner last, whatever its place in this round's walk
        return done + update_s, rank if fixed else by_arrival

    first, later, settled = _settled(one_round, before, reply, fixed)
    return first, later, fixed and settled


def _mixed_rounds_large(topo: Topology, loops: tuple[Loop, ...], laws: list[Law],
                        update_s: float, period: int = 1,
                        shares: np.ndarray | None = None) -> tuple[float, float, bool]:
    """:func:`_sync_rounds_large` for a mixed cluster: the server's port
    sets the pace, each learner's messages its group's length. The replies
    leave one after another, the groups mixed evenly; each learner's arrival is its
    ready time plus its own law's draw, the ready times bucketed (at most
    64 a group) so that the order statistics stay a few hundred columns."""
    p = topo.learners
    block = np.array([topo.block_of(i) for i in range(p)])
    busiest_in, busiest_out = (topo.busiest_share(port) for port in ("server_port_in",
                                                                       "server_port_out"))
    message = np.array([loop.demand_s("server_port_in") * busiest_in for loop in loops])[block]
    pull = np.array([loop.demand_s("server_port_out") * busiest_out for loop in loops])[block]
    sums = {law: law.sum_of(period) for law in set(laws)}
    drawn = [sums[law] for law in laws]
    # overlap: the messages leave that part of the mean step earlier, and
    # the round lasts until the last step is done
    leads = np.zeros(p) if shares is None else \
        np.array([share * law.mean if loops[b].after else 0.0
                  for law, b, share in zip(laws, block, shares)])

    def node_waits(after: bool, gap: float) -> np.ndarray:
        """Each learner's time in its stages at its node's own links, its
        turn there its slot's in one node of its group walked
        (:func:`_node_waits`); a later round's (gap > 0) after its reply's
        copy to the GPU."""
        waits, first = np.empty(p), 0
        for b, shape in enumerate(topo.blocks or (topo,)):
            loop, size = loops[b], shape.nodes * shape.learners_per_node
            own = [st for st in loop.after if st.holds[0] != "server_port_in"] if after else []
            copy = [st for st in loop.reply if st.holds[0] != "server_port_out"] if gap else []
            node = _node_waits(topo, loop.before, own, gap, period, laws[first].mean, first,
                               shape.learners_per_node, reply=copy)
            waits[first:first + size] = np.tile(node, shape.nodes)
            first += size
        return waits

    # a node's learners are spread over the round's pulls: one every ``nodes`` pulls
    gap = float(pull.mean()) * topo.nodes
    local, later = node_waits(True, 0.0) - leads, node_waits(True, gap) - leads
    before = node_waits(False, 0.0)

    def done(ready: np.ndarray) -> float:
        shift = ready.copy()
        for b in np.unique(block):
            # a group's ready times to 64 levels: learners of one level share a column
            mine_b = block == b
            lo, hi = shift[mine_b].min(), shift[mine_b].max()
            if hi > lo:
                shift[mine_b] = lo + np.round((shift[mine_b] - lo) / (hi - lo) * 63) / 63 * (hi - lo)
        order = np.argsort(shift, kind="stable")
        arrive = _mixed_order_statistics(shift[order], [drawn[i] for i in order])
        by_arrival = np.argsort(arrive, kind="stable")
        # FIFO at the server's port, in the order they arrive
        through = float(_fifo_done(arrive[by_arrival], message[order][by_arrival]))
        if leads.any():
            # no sooner than the last step's end: its arrival less what follows the step
            through = max(through, float(np.max(arrive - (local - before)[order])))
        return through + update_s

    # the replies leave in the order the gradients came in, which mixes the
    # groups: each group's learners spread evenly over the sequence
    rank = np.empty(p)
    for b in np.unique(block):
        mine_b = np.flatnonzero(block == b)
        rank[mine_b] = (np.arange(len(mine_b)) + 0.5) / len(mine_b)
    order = np.argsort(rank, kind="stable")
    replied = np.empty(p)
    replied[order] = np.cumsum(pull[order])
    return done(local), done(replied + later), False


def _mixed_order_statistics(shift: np.ndarray, laws: list[Law]) -> np.ndarray:
    """E of the order statistics of shift[i] + X_i, X_i ~ laws[i] independent
    (exact up to EXACT_ORDER_LEARNERS, else Blom's positions on the
    mixture's quantiles and the exact mean for the largest), each assigned
    in the order of the learners' expected arrivals shift[i] + E[X_i] (a
    slower law's learner later)."""
    p = len(shift)
    # learners of one law and shift share a column
    distinct: dict[tuple, int] = {}
    for s, law in zip(shift.tolist(), laws):
        distinct[(s, law)] = distinct.get((s, law), 0) + 1
    counts = np.array(list(distinct.values()), dtype=float)
    grid, smooth = _order_grid(list(distinct), p)
    each = np.column_stack([np.asarray(law.cdf(grid - s), dtype=float) for s, law in distinct])
    if len(grid) == 1:                         # every learner's arrival fixed, and the same
        ordered = np.full(p, grid[0])
    elif p <= EXACT_ORDER_LEARNERS:
        ordered = _exact_orders(np.repeat(each.T, counts.astype(int), axis=0), grid, smooth)
    else:
        mixture = each @ counts / p
        targets = (np.arange(1, p) - 0.375) / (p + 0.25)
        quantiles = np.interp(targets, mixture, grid)
        all_below = np.exp(np.log(np.clip(each, 1e-300, 1.0)) @ counts)
        ordered = np.append(quantiles, grid[0] + _integral(1.0 - all_below, grid, smooth))
    expected = shift + np.array([law.mean for law in laws])
    out = np.empty(p)
    out[np.argsort(expected, kind="stable")] = ordered
    return out


def _sync_rounds_large(topo: Topology, loop: Loop, law: Law, update_s: float,
                       k: int, share: float = 0.0, period: int = 1) -> tuple[float, float, bool]:
    """Many learners: the server's port sets the pace; messages leave and
    arrive one after another, the rest of the loop overlaps with them.
    Learner i (from 1) is ready i pulls after the round starts: a
    progression, so the round costs what a few learners cost
    (:func:`_staggered_queue`). With ``share`` (``overlap: backward``) the
    messages leave that part of the mean step earlier, and the round lasts
    at least until the last step is done. A node's learners share its disk
    and host links, every node alike: one node's learners are walked
    through them (:func:`_node_waits`), and each learner's turn there is
    its place in the node's queue. Local SGD's ``period`` steps are the
    sum of their draws, their stages walked in turn at the mean step."""
    p = topo.learners
    # each shard's port takes one part of every learner's message
    message = topo.message_s(loop, "server_port_in")
    after = [st for st in loop.after if st.holds[0] != "server_port_in"]
    # a reply's copy to the GPU, after its pull (a later round's)
    copy = [st for st in loop.reply if st.holds[0] != "server_port_out"]
    pull = topo.message_s(loop, "server_port_out")
    lead = share * law.mean if loop.after else 0.0
    steps = law.sum_of(period)

    def queue(spacing: float, reply) -> float:
        # a node's learners are spread over the round's pulls: one every
        # ``nodes`` pulls, in turn
        gap = spacing * topo.nodes
        through = _staggered_queue(
            _node_waits(topo, loop.before, after, gap, period, law.mean, reply=reply) - lead,
            spacing, p, steps, message, k)
        if not lead:
            return through
        return max(through, _staggered_queue(
            _node_waits(topo, loop.before, [], gap, period, law.mean, reply=reply),
            spacing, p, steps, 0.0, k))
    return queue(0.0, ()) + update_s, queue(pull, copy) + update_s, False


def _node_waits(topo: Topology, before, after, gap: float, period: int = 1,
                step: float = 0.0, first: int = 0, m: int | None = None,
                reply=()) -> np.ndarray:
    """How long each of a node's ``m`` learners (from learner ``first``)
    spends in its stages ``before`` its step and ``after`` it (those on its
    node's own links: disk, host links), after its ``reply``'s own (the
    weights copied to the GPU), started ``gap`` apart and queueing at the
    links they share, from its own start, in slot order: one node walked
    (every node of its shape alike). Where a round holds ``period`` steps,
    the stages before each, with ``step`` between."""
    m = topo.learners_per_node if m is None else m
    walked = [_resolved(topo, reply, i)
              + (_resolved(topo, before, i) + [((), step)]) * (period - 1)
              + _resolved(topo, before, i) + _resolved(topo, after, i)
              for i in range(first, first + m)]
    starts = np.arange(m) * gap
    ends = Skeleton(topo.fabric_share).walk(starts, walked)
    done = np.array([row[~np.isnan(row)][-1] if np.any(~np.isnan(row)) else start
                     for row, start in zip(ends, starts)])
    return done - starts - (period - 1) * step


#: points of the grids on which many learners' arrivals are integrated
STAGGER_GRID = 4096


def _staggered_queue(start: float | np.ndarray, spacing: float, p: int, law: Law,
                     message_s: float, k: int) -> float:
    """:func:`_push_queue` for learners i = 1..p ready at start + i spacing,
    in O(1) of p: where the ready times are spread (spacing > 0), they are
    taken as a continuum, each spacing wide (an error of about one spacing
    in a round of p of them), so the mixture of the arrival laws is the
    difference of the law's partial expectations, E[(y - X)+], and the
    product of the learners' cdfs the exponential of an integral of log F.
    The port's queue is a max over the arrivals' ranks j of (j-th arrival +
    (k - j) messages), and the j-th arrival interpolates the mixture's
    quantiles on a grid: piecewise linear in j, so its max over j lies at a
    rank next to a grid point, and only those ranks are evaluated.

    ``start`` may be one per slot of a node (:func:`_node_waits`, in slot
    order): the learners in equal shares, slot after slot (every node's
    first learner, then every node's second, ...), each share a progression
    of its own from its start, spacing apart, or all at its start (spacing
    0): the round ends at the node's last slot, not at its mean one."""
    waits = np.atleast_1d(np.asarray(start, dtype=float))
    if p % len(waits) or np.ptp(waits) == 0:
        waits = waits[:1] if np.ptp(waits) == 0 else np.array([waits.max()])
    m, s = len(waits), spacing
    n = p // m                      # learners of a slot
    # where each slot's progression starts (its learner i at a_j + i s, i = 1..n)
    starts = waits + np.arange(m) * n * s
    if law.is_constant:
        if m == 1:
            # arrivals in order: j-th (from 0) at a + (j + 1) s + step
            a = float(starts[0])
            first, last = a + s + law.mean, a + k * s + law.mean
            return last if message_s == 0 else max(first + k * message_s, last + message_s)
        arrive = np.sort((starts[:, None] + s * np.arange(1, n + 1)[None, :]).ravel()
                         + law.mean)[:k]
        return float(arrive[-1] if message_s == 0 else _fifo_done(arrive, np.full(k, message_s)))
    lo_q, hi_q = law.ppf(1e-9), law.ppf(top_quantile(p))
    # the mixture's cdf on a grid spanning every learner's arrivals
    grid = np.linspace(starts.min() + s / 2 + lo_q, starts.max() + (n + 0.5) * s + hi_q,
                       STAGGER_GRID)
    if s == 0:
        cdfs = np.asarray(law.cdf(grid[None, :] - starts[:, None]), dtype=float)
        mixture = cdfs.mean(axis=0)
        if m == 1:
            e_max = float(starts[0]) + law.expected_max(p)
        else:
            # P(max <= x) = the product over the slots of F(x - start)^n
            below = np.exp(n * np.log(np.clip(cdfs, 1e-300, 1.0)).sum(axis=0))
            e_max = float(grid[0] + np.trapezoid(1.0 - below, grid))
    else:
        top = grid[None, :] - starts[:, None] - s / 2
        bottom = grid[None, :] - starts[:, None] - (n + 0.5) * s
        mixture = (law.partial_expectation(top) - law.partial_expectation(bottom)).sum(axis=0) \
            / (p * s)
        e_max = _staggered_max(starts, s, n, law, lo_q, hi_q)
    mixture = np.maximum.accumulate(np.clip(mixture, 0.0, 1.0))
    if p == 1:
        return e_max + message_s

    def arrival(j: np.ndarray) -> np.ndarray:
        """E of the j-th arrival (from 0): Blom's positions on the mixture,
        the exact E[max] for the last."""
        targets = (j + 1 - 0.375) / (p + 0.25)
        out = np.interp(targets, mixture, grid)
        return np.where(j == p - 1, e_max, out)

    if message_s == 0:
        return float(arrival(np.array([k - 1]))[0])
    # ranks where the interpolation bends, with their neighbours, and the ends
    ranks = (p + 0.25) * mixture + 0.375 - 1
    j = np.unique(np.clip(np.concatenate([np.floor(ranks), np.ceil(ranks), [0, k - 1]]),
                          0, k - 1).astype(np.int64))
    return float(np.max(arrival(j) + (k - j) * message_s))


def _staggered_max(a: float | np.ndarray, s: float, p: int, law: Law, lo_q: float,
                   hi_q: float) -> float:
    """E[max of a + i s + X_i, i = 1..p] with the ready times as a
    continuum: log P(max <= x) = (1/s) x the integral of log F over
    [x - a - (p + 1/2) s, x - a - s/2]. Below the last learner's 1e-9
    quantile the max is surely not: the integral starts there. Several
    starts ``a``: as many progressions, whose log P add."""
    a = np.atleast_1d(np.asarray(a, dtype=float))
    t = np.linspace(lo_q, hi_q, 8 * STAGGER_GRID)
    log_f = np.log(np.clip(np.asarray(law.cdf(t), dtype=float), 1e-300, 1.0))
    # the integral of log F from lo_q to t (log F is about 0 above hi_q)
    big = np.concatenate([[0.0], np.cumsum((log_f[1:] + log_f[:-1]) / 2 * np.diff(t))])
    x0 = a.max() + (p + 0.5) * s + lo_q
    x = np.linspace(x0, a.max() + (p + 0.5) * s + hi_q, STAGGER_GRID)
    log_below = sum(np.interp(x - a_j - s / 2, t, big)          # clamped at either end
                    - np.interp(x - a_j - (p + 0.5) * s, t, big) for a_j in a) / s
    below = np.exp(np.minimum(log_below, 0.0))
    return float(x0 + np.trapezoid(1.0 - below, x))


def _push_queue(ready: np.ndarray, law: Law, message_s: float, k: int) -> float:
    """When the server's port has taken the first ``k`` gradients: learner i
    is ready to compute at ``ready[i]``; its gradient is at the port a step
    later; the port serves them one at a time in arrival order, ``message_s``
    each."""
    if law.is_constant:
        arrive = np.sort(ready + law.mean)[:k]
    else:
        arrive = _expected_order_statistics(ready, law)[:k]
    if message_s == 0:
        return float(arrive[-1])
    return float(_fifo_done(arrive, np.full(k, message_s)))


def _expected_order_statistics(shift: np.ndarray, law: Law) -> np.ndarray:
    """E of the order statistics of shift[i] + X_i (independent X_i ~ law),
    in ascending order: :func:`_mixed_order_statistics` of one law; for
    exponential steps ready together, their closed form; and
    for more than EXACT_ORDER_LEARNERS learners ready together, Blom's
    positions on the law's own quantiles and its exact mean of the
    largest. Blom's are off most for few learners of a skewed law (the 2nd
    of 4 exponentials at 0.48 of a mean step, not 0.58)."""
    p = len(shift)
    if p == 1:
        return np.array([shift[0] + law.mean])
    if np.ptp(shift) == 0:
        if getattr(law, "family", None) == "expon":
            # m (H_p - H_{p-k}) in closed form (the grid's quadrature was 1e-8 off)
            return shift[0] + np.array([law.expected_order(k, p) for k in range(1, p + 1)])
        if p > EXACT_ORDER_LEARNERS:
            quantiles = law.quantiles((np.arange(1, p) - 0.375) / (p + 0.25))
            return np.append(shift[0] + quantiles, shift[0] + law.expected_max(p))
    return np.sort(_mixed_order_statistics(shift, [law] * p))


#: learners up to which order statistics are exact, not Blom's
EXACT_ORDER_LEARNERS = 32
#: points of the order statistics' grid spread evenly over its range, and
#: most points it takes at the laws' quantiles (ORDER_LEVELS of each law,
#: evenly spaced in log-odds from 1e-9 to the top)
ORDER_GRID, ORDER_LEVELS = 4096, 1024
#: atoms of a law the grid holds each side of, at most: a measured sample's
#: thousands are as good as continuous on it (and would swell it a
#: thousandfold), so trapezoids take them as they come
GRID_ATOMS = 64
#: Simpson's rule on a pair of cells at most this many times as wide as one
#: another; trapezoids on the rest (a gamma of cv 2 has its low quantiles
#: a float apart at its shift, beside cells of a millisecond: the parabola
#: through such a pair put the first of 16 steps 134 % late)
SIMPSON_RATIO = 8


def _order_grid(columns: list[tuple[float, Law]], p: int) -> tuple[np.ndarray, bool]:
    """Where to integrate the order statistics of ``p`` arrivals, each
    ``shift + X`` for one of ``columns``' (shift, law): from below all of
    them (every law's 1e-9 quantile) to above all (the 1 - 1e-12 / p),
    evenly, plus each law's quantiles at ORDER_LEVELS levels, and each
    side of every atom (where a cdf jumps) of a law with few. The even
    points alone leave a long tail's bulk unresolved: to the top of 32
    lognormals of cv 1.5 is about 400 medians, and the first of them came
    out 164 % high. Also whether every cdf is continuous (Simpson's rule
    then holds)."""
    top = 1 - max(1e-12 / p, 1e-15)
    laws = dict.fromkeys(law for _, law in columns)
    levels = special.expit(np.linspace(special.logit(1e-9), special.logit(top), ORDER_LEVELS))
    quantiles = {law: law.quantiles(levels) for law in laws}
    placed = np.concatenate([s + quantiles[law] for s, law in columns])
    lo, hi = placed.min(), placed.max()
    if hi <= lo:
        return np.array([lo]), True
    placed = np.unique(placed)
    placed = placed[::math.ceil(len(placed) / ORDER_GRID)]
    grid = np.unique(np.concatenate([np.linspace(lo, hi, ORDER_GRID), placed]))
    # points a billionth of the range from the one before go (a law's
    # quantiles that round together): they add nothing but points
    grid = grid[np.concatenate([[True], np.diff(grid) > 1e-9 * (hi - lo)])]
    atoms = {law: law.atoms for law in laws}
    few = [s + atoms[law] for s, law in columns if 0 < len(atoms[law]) <= GRID_ATOMS]
    if few:
        # the cdf reads (s + a) - s, which rounds: the jump lands within an
        # ulp or two of s + a, and the grid holds the floats two each side
        jumps = np.concatenate(few)
        near = [jumps]
        for direction in (-np.inf, np.inf):
            step = jumps
            for _ in range(2):
                step = np.nextafter(step, direction)
                near.append(step)
        grid = np.unique(np.concatenate([grid] + near))
    grid = grid[(grid >= lo) & (grid <= hi)]
    if len(grid) % 2 == 0:                     # Simpson's rule takes the cells in pairs
        widest = int(np.argmax(np.diff(grid)))
        grid = np.insert(grid, widest + 1, (grid[widest] + grid[widest + 1]) / 2)
    return grid, all(len(atoms[law]) == 0 for law in laws)


def _integral(values: np.ndarray, grid: np.ndarray, smooth: bool) -> np.ndarray:
    """The integral over ``grid`` of each row of ``values``: where every cdf
    is continuous, Simpson's rule on each pair of cells of like widths (the
    parabola through its three points; scipy.integrate's rule, which costs a
    second to import) and trapezoids on the others; trapezoids throughout
    where a cdf jumps (exact across a jump whose sides the grid holds, where
    parabolas would ring)."""
    if not smooth:
        return np.trapezoid(values, grid, axis=-1)
    width = np.diff(grid)
    a, b = width[0::2], width[1::2]
    left, middle, right = values[..., 0:-1:2], values[..., 1::2], values[..., 2::2]
    trapezoids = a / 2 * (left + middle) + b / 2 * (middle + right)
    alike = np.maximum(a, b) <= SIMPSON_RATIO * np.minimum(a, b)
    a, b = np.where(alike, a, 1.0), np.where(alike, b, 1.0)
    simpson = (a + b) / 6 * ((2 - b / a) * left + (a + b) ** 2 / (a * b) * middle
                             + (2 - a / b) * right)
    return np.sum(np.where(alike, simpson, trapezoids), axis=-1)


def _exact_orders(done: np.ndarray, grid: np.ndarray, smooth: bool) -> np.ndarray:
    """E of every order statistic of independent arrivals whose cdfs on
    ``grid`` are the rows of ``done`` (the grid from below all of them to
    above all): E[X_(j)] = grid[0] + the integral of P(fewer than j by t),
    the count by t a sum of Bernoullis (Poisson-binomial), built learner by
    learner."""
    p = len(done)
    count = np.zeros((p + 1, len(grid)))       # P(j of the learners so far done by t)
    count[0] = 1.0
    for i, f in enumerate(done):
        count[1:i + 2] = count[1:i + 2] * (1.0 - f) + count[:i + 1] * f
        count[0] *= 1.0 - f
    fewer = np.clip(np.cumsum(count[:p], axis=0), 0.0, 1.0)
    return grid[0] + _integral(fewer, grid, smooth)


# -- sprint: per-node accumulation, a fixed cycle ---------------------------

def predict_sprint(sc: Scenario, costs: Costs) -> Prediction:
    topo, loop, law, run = topology_of(sc), loop_of(sc, costs), costs.compute, Run.of(sc)
    g, slots, T = topo.learners, topo.learners_per_node, costs.cycle_s
    # the steady state with queueing: one node's GPUs share its resources
    stations = _stations(loop, topo, law, "node")
    node_cycle, util, bound = _cycle(stations, slots, law, loop.overhead_s)
    sd = law.std
    # the node's schedule with identical steps: each slot's pace, and how
    # long the run lasts at that pace (an upper bound)
    rough = _sprint_horizon(run, g / (law.mean + loop.overhead_s), law.mean + loop.overhead_s, T)
    walk = int(min(rough / (law.mean + loop.overhead_s) * 1.25 + 8, MAX_SKELETON_STEPS))
    node = _sprint_skeleton(topo, loop, law.mean, walk, sd, T)
    skeleton, units = node.deliveries, node.units
    found = period_of(skeleton)
    paces = _paces(skeleton, found)
    period = float(paces.mean())
    horizon = _sprint_horizon(run, topo.nodes * float((1.0 / paces).sum()), period, T)
    # the transient: until the phases have spread over a whole step, or the
    # run ends; where they spread within one step (exponential steps, say)
    # the phases are as good as uniform from the start
    # (stragglers knock one GPU at a time off the schedule, by rare jumps that
    # RARE_JUMPS below labels: the spread that mixes the phases is the rest's)
    spread_sd = apart_from_stragglers(law).std
    mixing = (period / (2 * spread_sd)) ** 2 * period if spread_sd > 0 and node.paced_by is None \
        else math.inf
    transient = 0.0
    if mixing >= period:
        transient = min(horizon, mixing, MAX_TRANSIENT_STEPS * period)
        # whole windows on either side, and at least the first two: gradients
        # read before the first publication (at 2T) read version 0
        transient = min(horizon, T * math.ceil(max(transient, 2 * T) / T))
    split = transient if transient < horizon else math.inf
    windows = deliveries = None
    if transient > 0:
        spread = SPREAD_OF_SD * sd * (1.0 if node.paced_by else math.sqrt(transient / period))
        mean = _extend(skeleton, int(math.ceil((transient + spread) / paces.min())) + 2, found)
        k = np.arange(1, mean.shape[1] + 1)
        # step noise walks a delivery away from the schedule, unless a
        # saturated resource paces every step
        spreads = np.full(len(k), sd) if node.paced_by else sd * np.sqrt(k)
        deliveries = Deliveries(mean, spreads, topo.nodes, units)
        windows = windows_of(deliveries, T, int(math.ceil(min(split, horizon) / T)) + 1)
    tail, kept, steady = None, 0.0, period      # the pace once started: the tail's, if any
    resource, use = node.waits
    if split < math.inf:
        independent = all(len(u) == 1 for u in units)
        mixed = windows is None or (transient >= mixing and independent)
        # mixed phases across nodes; inside one, GPUs that wait for one
        # another at a resource keep their turns there on the steps whose
        # noise is less than its use, at the schedule's pace, and reshuffle
        # on the others, at independent phases' (mean-value analysis)
        kept = 1.0 - law.apart(use) if mixed and use > 0 and node.paced_by is None else 0.0
        pace = kept * period + (1.0 - kept) * node_cycle
        tail = (_uniform_tail(sc, law, costs, g, pace, T) if mixed
                else _pattern_tail(windows, deliveries, T, split))
        steady = g / tail.gradients_per_s
    expected = min(run.target_gradients, horizon * g / period)
    w_end, gradients, updates = _sprint_end(run, windows, T, split, tail,
                                            math.sqrt(max(expected, 1.0)) * sd / g)
    t_last = (w_end + 2) * T
    if run.time_s is not None and w_end >= math.floor(run.time_s / T) - 2:
        # (the time stop binds: a count's stop ends on a window it filled)
        t_last = _last_update_s(windows, tail, T, split, w_end, t_last)
    minibatch = _sprint_minibatch(windows, w_end, split, tail, gradients, updates)
    staleness = _sprint_staleness(windows, deliveries, T, w_end, split, tail, gradients,
                                  early=g * (1.0 + T / period))
    exact = sd == 0 and tail is None
    in_phase = transient > 0
    turns = (f"keep their turns at {resource} on the {kept:.0%} of steps whose noise is less "
             "than its use" if kept > 0 else "")
    phases = ("exact: identical fixed-time steps, their periodic schedule" if exact else
              "approximation: GPUs that start in phase and drift apart by their step noise"
              + (f", then {turns}" if turns else "") if in_phase else "")
    # phases mixed from the start: a node's GPUs may still keep their turns
    kept_turns = f", a node's GPUs {turns}" if turns else ""
    uniform = _is_exponential(law) and _ideal(sc) and not in_phase
    laws = {
        "epoch_time": (phases or f"mean-value: uniform phases{kept_turns}")
                      + "; the update that reaches the stop",
        "minibatch": ("exact: Poisson(G T / m), given at least one" if uniform
                      else phases or f"approximation: uniform phases{kept_turns}"),
        "staleness": ("exact: 1 + floor(U + X/T)" if uniform
                      else phases or f"approximation: 1 + floor(U + X/T), uniform phase{kept_turns}"),
    }
    if abs(w_end) < 1e-6:
        # the stop comes in the first window: its update, the run's only
        # one, applies gradients that all read the initial weights (80 V100s,
        # 427 gradients: 0.144 from the windows' law, 0 simulated)
        staleness, laws["staleness"] = Pmf.point(0), "exact: one update, of gradients that " \
            "all read the initial weights"
    elif w_end < 1 and laws["staleness"].startswith("exact"):
        # a stop that may come in the first window or the second: the law
        # counts the second window's gradients whether or not the run has
        # them (the same 80 V100s, 500 gradients: 0.144 against 0 simulated)
        laws["staleness"] = laws["staleness"].replace("exact", "approximation", 1) + \
            ", for a run that may end at its first update (its gradients all read the " \
            "initial weights)"
    outside = (_random_contention(util, law, loop.overhead_s)
               or _node_contention(util, law, loop.overhead_s)
               or _turns_reshuffled(stations, slots, law, node_cycle)
               or _accumulated_apart(loop, util, slots, sd, T))
    # a queue's order decides the updates where windows are sparse, and the
    # waiting where the resource is busy; step noise that swaps two GPUs'
    # turns there on some steps but not on most leaves neither the
    # schedule's order nor a random one, and at a resource half busy or more
    # whatever share it swaps
    # (from half busy on, whatever share of turns the noise reorders: the
    # node's own contention label starts at a cv of 0.2 of the whole cycle,
    # and between the two, gamma steps of cv 0.25 to 0.39 on two DGX A100s
    # were 8 to 11 % off, unlabelled; a hunt)
    if (outside is None and in_phase and sd > 0
            and (law.apart(use) < REORDERED
                 or util.get(resource, 0.0) >= NODE_CONTENTION_UTILISATION)
            and node.paced_by is None
            and (_sparse(windows, min(split, horizon), T)
                 or util.get(resource, 0.0) >= CONTENTION_UTILISATION)):
        outside = (f"{OUTSIDE}: GPUs in phase wait for one another at {resource} "
                   f"({util.get(resource, 0.0):.0%} busy, {1e3 * use:.3g} ms a use), and their "
                   f"step noise ({1e3 * sd:.3g} ms) reshuffles that queue's order; the closed "
                   "form keeps the schedule's")
    if outside is None and in_phase and isinstance(law, Straggling):
        jumps = law.probability * horizon / period
        if jumps < RARE_JUMPS:
            outside = (f"{OUTSIDE}: a GPU straggles {jumps:.2g} times on average in the run; "
                       "the closed form takes the drift apart of GPUs that start in phase as a "
                       "smooth random walk, which needs many slow steps")
    if outside is None and isinstance(tail, _Tail) and not tail.stationary and sd > 0:
        outside = (f"{OUTSIDE}: GPUs that share a resource for half a cycle or more keep their "
                   "turns; past the first {:.0f} steps their spacing is taken as the "
                   "skeleton's".format(transient / period))
    if outside is None and sd > 0 and gradients < FIRST_STEPS_ONLY * g:
        # every GPU's first step starts at 0 and reads version 0: a run of a
        # step or two a GPU is all start, whose staleness is those first
        # steps' order statistics against the updates, not the windows of
        # phases that have spread (208 H100s, exponential 467 ms steps, 1.7
        # steps a GPU: 133 closed form against 71 simulated; 244 GPUs at 1.9,
        # 10 % apart)
        outside = (f"{OUTSIDE}: the run stops after {gradients / g:.2g} steps a GPU, all of "
                   "it the start, where the closed form has no staleness law for GPUs whose "
                   "first steps began together")
    step_cv = law.std / (law.mean + loop.overhead_s)
    if outside is None and not in_phase and step_cv > 1 and w_end < FIRST_WINDOWS:
        # phases taken as uniform from the start: but GPUs that start
        # together deliver by the renewal function from 0 at first, many
        # short steps early where steps vary more than exponential ones
        # (16 GPUs, lognormal cv 1.5, 100 gradients under a 0.6 s cycle: the
        # run's one update of 105 to 123, staleness 0; 0.38 closed; a hunt)
        outside = (f"{OUTSIDE}: the run ends within its first {FIRST_WINDOWS} cycles, where "
                   f"GPUs that started together with steps this varied (cv {step_cv:.2g}) "
                   "deliver as their renewal function from 0 says, not at the uniform phases "
                   "the closed form takes")
    if outside is None and tail is not None and tail.stationary and g <= 2 and step_cv > 1.5:
        # one GPU's own earlier gradient in the window before its apply is
        # taken from a step or two back, which clustered deliveries break
        # (one GPU, gamma cv 3, a 50 ms cycle: 0.65 simulated, 0.94; a hunt)
        outside = (f"{OUTSIDE}: {g} GPU{'s' if g > 1 else ''} of steps this varied (cv "
                   f"{step_cv:.2g}) deliver in clusters, and the staleness law reads whether a "
                   "GPU's own earlier gradient shares the window before its apply from a step "
                   "or two back")
    if outside is not None:
        laws["assumptions"] = outside
    return Prediction(
        scenario=sc, t_gpu_s=steady, t_update_s=T, bound=bound,
        epoch_time_s=run.epoch_time(t_last, gradients),
        steady_throughput_samples_per_s=sc.workload.sub_batch * g / steady,
        staleness=staleness, gradients_per_update=minibatch, laws=laws,
        gradients=gradients, updates=updates)


#: share of steps on which two GPUs' turns at a resource swap, below which
#: their order there is neither the schedule's nor a random one: 0.48 where
#: the noise's sd is the use; the closed form's mini-batch is 26 % off at
#: 0.57 (256 K80 dies at 0.34 s steps of cv 0.013, a 3.5 ms read), 12 % at
#: 0.72 and 5 % at 0.81, and a node of 4 P100s beside K80 nodes agrees at 0.68
REORDERED = 0.6

#: slow steps per GPU below which stragglers move the phases by rare jumps
RARE_JUMPS = 10

#: an accumulator this busy, with uses of half a cycle or more, spaces a
#: node's deliveries (labelled: _accumulated_apart)
ACCUMULATOR_BUSY = 0.25

#: cycles within which a SPRINT run of steps of cv above 1 is all start (labelled)
FIRST_WINDOWS = 3

#: steps per GPU below which a SPRINT run is all start (labelled)
FIRST_STEPS_ONLY = 2


def _accumulated_apart(loop: Loop, util: dict[str, float], slots: int, sd: float,
                       T: float) -> str | None:
    """Why independent counts miss a node whose accumulator, busy, takes
    its GPUs' gradients one at a time for half a cycle or more each: the
    node's deliveries are spaced a use apart, so a window holds fewer of
    them together (8 V100s of gamma steps of cv 1, a 6 ms accumulator
    under a 5 ms cycle: a mini-batch of exactly one gradient simulated,
    1.14 closed; under 10 ms, 8.7 % apart; a hunt); or None."""
    use = max((st.duration_s for st in loop.stages if st.holds[0] == "accumulator"), default=0.0)
    busy = util.get("accumulator", 0.0)
    if slots > 1 and sd > 0 and use >= T / 2 and busy >= ACCUMULATOR_BUSY:
        return (f"{OUTSIDE}: a node's accumulator takes its GPUs' gradients one at a time "
                f"({1e3 * use:.3g} ms each, {busy:.0%} busy) against a {1e3 * T:.3g} ms cycle: "
                "its deliveries are spaced a use apart, which the closed form's independent "
                "counts per window do not see")
    return None


def _sparse(windows: Windows, until: float, T: float) -> bool:
    """Whether a window in ten or more holds nothing (then which GPU
    delivers where decides what is an update)."""
    first = int(windows.first[0])
    span = until / T - first
    return span > 0 and float(windows.updates_by(until) - windows.updates_by(first * T)) < 0.9 * span


def _paces(skeleton: np.ndarray, found: tuple[int, np.ndarray] | None) -> np.ndarray:
    """Each slot's mean step in the skeleton's periodic schedule."""
    if found is not None:
        return found[1] / found[0]
    tail = min(8, skeleton.shape[1] - 1)
    return (skeleton[:, -1] - skeleton[:, -1 - tail]) / tail


def _sprint_horizon(run: Run, rate: float, period: float, T: float) -> float:
    """A time by which the run has surely stopped: deliveries at ``rate``
    per second, a GPU's step ``period``, the cycle ``T``."""
    horizon = math.inf
    if run.target_gradients < math.inf:
        horizon = run.target_gradients / rate + 2 * period + 3 * T
    if run.updates:
        horizon = min(horizon, (run.updates + 4) * max(period, T) + 3 * T)
    if run.time_s is not None:
        horizon = min(horizon, run.time_s + T)
    return horizon


@dataclass(frozen=True)
class _NodeSchedule:
    """One node's GPUs with identical steps: when each delivers, which move
    together, and whether a saturated resource sets their pace."""

    deliveries: np.ndarray                  # slots x steps
    units: tuple[tuple[int, ...], ...]
    paced_by: str | None                    # the saturated resource, if any
    waits: tuple[str, float] = ("", 0.0)    # the longest use some GPU waits for, and where


#: steps of a node's schedule walked in the skeleton; a periodic schedule is
#: extended from them, which keeps a prediction of a long run in milliseconds
WALKED_STEPS = 64


def _sprint_skeleton(topo: Topology, loop: Loop, step: float, steps: int, noise_sd: float,
                     T: float) -> _NodeSchedule:
    """The node's periodic schedule, walked in the skeleton.

    Slots move together where, in the settled second half of the walk, they
    follow one another at a shared resource whose use lasts half a cycle or
    more: the one behind cannot come closer than that use (it would wait),
    so two of them rarely deliver in one window, which independent phases
    would often have them do. Noise of an eighth of a step or more reorders
    them within a few steps: then they are independent after all.

    A resource busy all the time (99 % of the settled walk) paces the loop:
    each GPU waits for it every step, which absorbs its step noise, so the
    deliveries keep the schedule and vary by one step's noise only.
    """
    slots = topo.learners_per_node
    steps = max(steps, 4)
    if not loop.stages:       # nothing shared: every GPU delivers every step
        return _NodeSchedule(np.tile(step * np.arange(1, steps + 1), (slots, 1)),
                             tuple((s,) for s in range(slots)), None)
    one = [_resolved(topo, loop.before, s) + [((), step)] + _resolved(topo, loop.after, s)
           for s in range(slots)]
    walked = min(steps, WALKED_STEPS)
    walks = [o * walked for o in one]
    ends = Skeleton().walk([0.0] * slots, walks)
    per_step = len(one[0])
    settled = walked // 2 * per_step
    pairs = queued_behind([w[settled:] for w in walks], ends[:, settled:])
    resource, busy = busiest([w[settled:] for w in walks], ends[:, settled:])
    deliveries = ends[:, per_step - 1::per_step]
    if steps > walked:
        found = period_of(deliveries)
        deliveries = (_extend(deliveries, steps, found) if found is not None else  # else walk all
                      Skeleton().walk([0.0] * slots, [o * steps for o in one])[:, per_step - 1::per_step])
    waited = [(float(np.median([use for _, use in uses])), name) for (name, _, _), uses
              in pairs.items() if np.median([gap for gap, _ in uses]) == 0.0]
    use, name = max(waited, default=(0.0, ""))
    waits = (name.split("[")[0], use)
    if busy >= 0.99 and noise_sd > 0:
        return _NodeSchedule(deliveries, tuple((s,) for s in range(slots)), resource.split("[")[0],
                             waits)
    parent = list(range(slots))

    def root(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    period = float(np.mean(deliveries[:, walked - 1] - deliveries[:, walked // 2])
                   / (walked - 1 - walked // 2))
    settles = 0 < noise_sd <= period / 8
    for (_, ahead, behind), uses in pairs.items():
        if settles and np.median([use for _, use in uses]) >= T / 2:
            parent[root(behind)] = root(ahead)
    groups: dict[int, list[int]] = {}
    for slot in range(slots):
        groups.setdefault(root(slot), []).append(slot)
    return _NodeSchedule(deliveries, tuple(tuple(g) for g in groups.values()), None, waits)


@dataclass(frozen=True)
class _Tail:
    """The run after the transient: steady rates and laws."""

    gradients_per_s: float
    updates_per_s: float
    minibatch: Pmf           # gradients per update
    staleness: Pmf
    early_staleness: Pmf     # of a gradient that read the weights before T
    stationary: bool = True  # independent uniform phases (else the transient's pattern)


def _uniform_tail(sc: Scenario, law: Law, costs: Costs, g: int, per_gpu: float,
                  T: float) -> _Tail:
    """Independent, uniform phases: DESIGN.md's laws."""
    step = law.plus(costs.gpu_overhead_s)
    exponential = _is_exponential(law) and _ideal(sc)
    cycle = step.scaled(per_gpu / step.mean)
    counts, k, _ = _gradients_per_cycle(g, T / per_gpu, step.cv, exponential, cycle)
    nonempty = 1.0 - float(counts[k == 0].sum())
    positive = k >= 1
    width = int(k[1] - k[0]) if len(k) > 1 else 1       # a lattice past MAX_SUPPORT values
    minibatch = Pmf.from_probs(int(k[positive][0]), counts[positive], width)
    # the windows a gradient waits through hold nothing of its own GPU's
    others = 1.0 - (1.0 - nonempty) ** ((g - 1) / g)
    return _Tail(g / per_gpu, nonempty / T, minibatch, _pipelined_staleness(cycle, T, others),
                 _pipelined_staleness(cycle, T, others, before_exists=False))


def _pattern_tail(windows: Windows, d: Deliveries, T: float, split: float) -> _Tail:
    """Phases that never mix (fixed or nearly fixed steps, or GPUs locked by
    queueing): the pattern of the transient's second half goes on."""
    half = split / 2
    grads = float(windows.gradients_by(split) - windows.gradients_by(half))
    ups = float(windows.updates_by(split) - windows.updates_by(half))
    late = windows.first * T >= half
    mean, var = windows.counts()
    minibatch = _grouped(mean, var, windows.width * windows.nonempty * late, positive=True)
    staleness = _grouped(*_staleness_parts(windows, d, half, split))
    return _Tail(grads / (split - half), ups / (split - half), minibatch, staleness, staleness,
                 stationary=False)


def _sprint_end(run: Run, windows: Windows | None, T: float, split: float,
                tail: _Tail | None, sd_n: float) -> tuple[float, float, float]:
    """(the last window, gradients and updates by its end) of the run, in
    expectation: the window whose end first holds the stop condition's
    count, averaged over the spread ``sd_n`` of the time it is reached."""
    exact = sd_n == 0

    def cumulative(name: str, t: np.ndarray) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        inside = np.minimum(t, split)
        out = getattr(windows, name)(inside) if windows is not None else np.zeros_like(t)
        if tail is not None:
            rate = tail.gradients_per_s if name == "gradients_by" else tail.updates_per_s
            out = out + np.maximum(t - split, 0.0) * rate
        return out

    def time_of(name: str, target: float) -> float:
        """When the expected count reaches ``target`` (less half a count
        where the count is random): a time inside the stop's window."""
        goal = target - (0.0 if exact else 0.5)
        ends = [split] if split < math.inf else []
        if windows is not None:
            ends.append((windows.first[-1] + windows.width[-1]) * T)
        top = max(ends) if ends else 0.0
        if float(cumulative(name, top)) >= goal - 1e-9 or tail is None:
            grid = np.union1d(np.column_stack([windows.first, windows.first + windows.width]).ravel()
                              * T, [0.0]) if windows is not None else np.array([0.0, top])
            grid = grid[grid <= top + 1e-12]
            got = cumulative(name, grid)
            i = int(np.searchsorted(got, goal - 1e-9))
            if i >= len(grid):
                return float(grid[-1])
            if i == 0 or got[i] == got[i - 1]:
                return float(grid[i])
            return float(np.interp(goal, got[i - 1:i + 1], grid[i - 1:i + 1]))
        rate = tail.gradients_per_s if name == "gradients_by" else tail.updates_per_s
        return top + (goal - float(cumulative(name, top))) / rate

    times = []
    if run.target_gradients < math.inf:
        times.append(time_of("gradients_by", run.target_gradients))
    if run.updates:
        times.append(time_of("updates_by", run.updates))
    stop = min(times) if times else math.inf
    if exact:
        w_end = float(np.ceil(stop / T - 1e-12) - 1) if stop < math.inf else math.inf
    else:
        w_end = float(expect(lambda x: np.ceil(x / T) - 1, np.array([stop]), np.array([sd_n]))[0])
    if run.time_s is not None:
        w_end = min(w_end, math.floor(run.time_s / T) - 2)
    t = (w_end + 1) * T
    return w_end, float(cumulative("gradients_by", t)), float(cumulative("updates_by", t))


def _last_update_s(windows: Windows | None, tail: _Tail | None, T: float, split: float,
                   w_end: float, t_last: float) -> float:
    """When a run stopped by time applies its last update: the window of
    w_end or, where that one is empty, the last before it that is not
    (window k's at (k + 2) T; each non-empty with its own probability, as
    the windows' law has them apart). GPUs in phase deliver in bursts a step
    apart with empty cycles between, so a stop's last update can come up to
    a step before it (8 TSUBAME-KFC nodes stopped at 6 s: 1,234 s an epoch
    from the last cycle, 1,093 simulated; a hunt)."""
    def nonempty(k: int) -> float:
        if windows is not None and k * T < split:
            # (the windows' cells hold those where a gradient may come; none elsewhere)
            cell = int(np.searchsorted(windows.first, k, side="right")) - 1
            inside = 0 <= cell < len(windows.first) and k < windows.first[cell] + windows.width[cell]
            return float(windows.nonempty[cell]) if inside else 0.0
        return min(1.0, tail.updates_per_s * T) if tail is not None else 1.0

    if not math.isfinite(w_end) or w_end < 0:
        return t_last
    left, total, k = 1.0, 0.0, int(w_end)
    while k >= 0 and left > 1e-12:
        q = nonempty(k)
        total += left * q * (k + 2) * T
        left *= 1.0 - q
        k -= 1
    # (no update at all: the run's figures are the stop's window's)
    return total + left * t_last if left < 1.0 else t_last


def _sprint_minibatch(windows: Windows, w_end: float, split: float, tail: _Tail | None,
                      gradients: float, updates: float) -> Pmf:
    """Gradients per update: the mixture over the run's windows of their
    count laws, given at least one."""
    laws = []
    transient_updates = 0.0
    if windows is not None:
        last = min((w_end + 1), math.ceil(split / windows.T) if split < math.inf else math.inf)
        weight = np.clip(last - windows.first, 0, windows.width) * windows.nonempty
        mean, var = windows.counts()
        transient_updates = float(weight.sum())
        if transient_updates > 0:
            laws.append((transient_updates, _grouped(mean, var, weight, positive=True)))
    if tail is not None and updates > transient_updates:
        laws.append((updates - transient_updates, tail.minibatch))
    total = sum(w for w, _ in laws)
    return _mixture([(w / total, law.values, law.probs) for w, law in laws])


def _sprint_staleness(windows: Windows | None, d: Deliveries | None, T: float, w_end: float,
                      split: float, tail: _Tail | None, gradients: float, early: float) -> Pmf:
    """The mixture of the transient's staleness laws and the tail's; a tail
    from time 0 has ``early`` gradients (those that read the weights in the
    first window, before any could be published) without the window before."""
    parts = []
    transient = 0.0
    if windows is not None:
        means, variances, weights = _staleness_parts(windows, d, 0.0, min((w_end + 1) * T, split))
        transient = float(weights.sum())
        if transient > 0:
            parts.append((transient, _grouped(means, variances, weights)))
    if tail is not None and gradients > transient:
        rest = gradients - transient
        if windows is None:
            # the first window's deliveries read the initial weights and the
            # first update applies them: staleness 0, as many as the run holds
            # (a run that stops at its first update holds only them: 80
            # V100s, 480 to 520 gradients, 0.144 from the early law, 0
            # simulated); the other early ones, read in it and delivered
            # later, take the early law past 0
            early_law = tail.early_staleness
            zero = min(rest, tail.gradients_per_s * T)
            later = min(rest - zero, max(0.0, early - tail.gradients_per_s * T))
            parts.append((zero, Pmf.point(0)))
            if later > 0 and early_law.prob(0) < 1.0:
                parts.append((later, early_law.less(Pmf.point(0), early_law.prob(0))))
            rest -= zero + later
        if rest > 0:
            parts.append((rest, tail.staleness))
    total = sum(w for w, _ in parts)
    return _mixture([(w / total, p.values, p.probs) for w, p in parts])


def _staleness_parts(windows: Windows, d: Deliveries, t_from: float,
                     t_to: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    means, variances, weights = staleness_of(windows, d, t_from, t_to)
    return np.maximum(means, 0.0), variances, weights


#: GPUs beyond which a cycle's binomial count is written where its mass is
MANY_GPUS = 16_384


#: windows of up to this many mean steps take each GPU's count law itself
#: (_renewal_count); longer ones its first two moments, which the central limit makes enough
EXACT_WINDOW_STEPS = 16
#: cells of a window in _renewal_count: a step's law and its sums are held on them
WINDOW_CELLS = 4096


@functools.lru_cache(maxsize=256)
def _renewal_count(law, window: float) -> np.ndarray:
    """P(N = n), n = 0, 1, ..., for the deliveries N in a window of a GPU
    whose steps of ``law`` form a stationary renewal process: the first
    comes after the forward recurrence time A, whose cdf is
    G(x) = (x - E[(x - X)+]) / m, the n-th n - 1 steps S later, so
    P(N >= n) = E[G(window - S)] (exact for n = 1). The step's mass is held
    on the window's cells (its cdf's differences, any law: a mixture's, a
    measured sample's) and its sums convolved there by FFT, each sum of k
    steps k / 2 cells on from its cells' indices. A long-tailed law
    clusters its deliveries: gamma steps of cv 1.5 leave 4 GPUs' window of
    0.37 steps empty far more often than the binomial of one delivery at
    most a GPU says (mini-batch 71 simulated, 56 by the binomial; a hunt)."""
    m, h = law.mean, window / WINDOW_CELLS

    def G(x: np.ndarray) -> np.ndarray:
        x = np.maximum(x, 0.0)
        return (x - np.asarray(law.partial_expectation(x), dtype=float)) / m

    first = float(G(np.array(window)))
    if first <= 0:
        return np.array([1.0])
    step = np.diff(np.asarray(law.cdf(h * np.arange(WINDOW_CELLS + 1)), dtype=float))
    step[0] += float(law.cdf(0.0))             # an atom at 0, if any
    # G at the window less every half cell: a sum of k steps in cell i is at
    # (i + k / 2) h, half cell 2 i + k (past the window, the last: G(0) = 0)
    halves = G(window - 0.5 * h * np.arange(2 * WINDOW_CELLS + 1))
    twice = 2 * np.arange(WINDOW_CELLS)
    at_least, sums, k = [first], step, 1
    while at_least[-1] > 1e-13 and sums.sum() > 1e-13:
        beyond = np.take(halves, twice + k, mode="clip")
        at_least.append(min(at_least[-1], float(sums @ beyond)))
        sums, k = np.clip(_convolve(sums, step)[:WINDOW_CELLS], 0.0, None), k + 1
    # the mean, the sum of P(N >= n), is window / m exactly; the cells'
    # small errors are taken out of n >= 2 by a power of P(N >= n) / P(N >= 1),
    # which keeps them in order
    tail = np.array(at_least[1:]) / first
    sure = tail >= 1.0                    # P(N >= n) = P(N >= 1): no error to take out
    goal = (window / m - first) / first - sure.sum()
    if 0 < goal < (~sure).sum() and tail[~sure].sum() > 0:
        # the sum falls as the power grows: bisect its logarithm
        low, high = math.log(1e-3), math.log(1e3)
        for _ in range(60):
            middle = (low + high) / 2
            low, high = ((middle, high) if np.sum(tail[~sure] ** math.exp(middle)) > goal
                         else (low, middle))
        tail[~sure] **= math.exp((low + high) / 2)
        at_least[1:] = list(first * tail)
    return -np.diff([1.0, *at_least, 0.0])


def _convolve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The full linear convolution of two non-negative arrays, by FFT."""
    size = len(a) + len(b) - 1
    fast = 1 << (size - 1).bit_length()        # a power of two: 8,191 is a prime
    return np.fft.irfft(np.fft.rfft(a, fast) * np.fft.rfft(b, fast), fast)[:size]


def _gradients_per_cycle(g: int, ratio: float, cv: float, exponential: bool,
                         law=None) -> tuple[np.ndarray, np.ndarray, str]:
    """The law of the gradients arriving in one cycle from g independent GPUs.

    ``ratio`` = T / (mean step). Each GPU's steps form a stationary renewal
    process seen through a window of length T:

    - exponential steps: Poisson(g ratio), exact;
    - a window of up to EXACT_WINDOW_STEPS steps of any other random
      ``law`` (the GPU's cycle, mean T / ratio): each GPU's count law
      (``_renewal_count``), the g GPUs' sum by convolution, or past
      MAX_SUPPORT values a count law of its two moments;
    - longer windows, or no ``law`` given (a constant one included): nearly
      constant steps (the renewal variance below a tenth of the lattice's)
      deliver floor(ratio) or one more a GPU, the extra with probability
      frac(ratio) (its phase is uniform), g floor(ratio) +
      Binomial(g, frac(ratio)); others the binomial variance plus the
      renewal variance g (ratio - 1)+ cv^2, in a count law of those two
      moments (``_count_law``).

    Returns (probabilities, counts, description).
    """
    mean = g * ratio
    if exponential:
        # where the mass is (14 standard deviations; a lattice past
        # MAX_SUPPORT values): a billion GPUs' cycles hold hundreds of millions
        k, width = lattice(max(0, math.floor(mean - 14 * math.sqrt(mean))),
                           math.ceil(mean + 14 * math.sqrt(mean)) + 1)
        return width * _poisson_pmf(k, mean), k, "exact: Poisson(G T / m)"
    if law is not None and not law.is_constant and ratio <= EXACT_WINDOW_STEPS:
        one = _renewal_count(law, ratio * law.mean)
        how = "approximation: G independent stationary renewal counts in a window T"
        if g * (len(one) - 1) + 1 <= MAX_SUPPORT:
            size = g * (len(one) - 1) + 1
            total = np.clip(np.fft.irfft(np.fft.rfft(one, size) ** g, size), 0.0, None)
            return total / total.sum(), np.arange(size), how
        n = np.arange(len(one))
        one_var = float(one @ n**2 - (one @ n) ** 2)
        k, probs = _count_law(g * float(one @ n), g * one_var)
        return probs, k, how
    whole, frac = math.floor(ratio), ratio - math.floor(ratio)
    # a window shorter than a step holds at most one delivery per GPU: the
    # renewal variance only builds up over the steps beyond the first
    lattice_var, renewal_var = g * frac * (1 - frac), g * max(0.0, ratio - 1.0) * cv ** 2
    if renewal_var <= 0.1 * lattice_var or renewal_var == 0:
        j, width = np.arange(0, g + 1), 1
        if g > MANY_GPUS:
            # the binomial where its mass is, not every one of the GPUs
            sd = math.sqrt(lattice_var)
            j, width = lattice(max(0, math.floor(g * frac - 14 * sd)),
                               min(g, math.ceil(g * frac + 14 * sd)))
            j = j[j <= g]
        return (width * binomial(j, g, frac), g * whole + j,
                "approximation: G floor(T/m) + Binomial(G, frac(T/m)), near-constant steps")
    k, probs = _count_law(mean, lattice_var + renewal_var)
    return probs, k, "approximation: binomial plus renewal variance G T cv^2 / m"


#: cycle ends during one step beyond which their binomials are mixed in groups
MANY_CYCLE_ENDS = 400


def _pipelined_staleness(step: Law, cycle: float, nonempty: float = 1.0,
                         before_exists: bool = True) -> Pmf:
    """Staleness = 1 + floor(U + X/T), U uniform: the pipelined SPRINT cycle.

    That many cycle ends fall between reading the weights and the update that
    applies the gradient. P(floor(U + Y) = j) = E[max(0, 1 - |Y - j|)], the
    second difference of E[(y - Y)+] at j - 1, j, j + 1.

    A cycle in which no gradient arrived makes no version, so each of those
    cycle ends counts only with probability ``nonempty`` (that another GPU
    delivered in it). Of J cycle ends, the one that applies the window of
    the GPU's previous gradient counts for sure (J >= 2); the one before it
    also holds an earlier gradient of the GPU's own where its steps are short
    against the cycle (probability ``own``, below); the J - 2 between are
    the others' alone: staleness is 1 + Bernoulli(q') + Binomial(J - 2, q)
    for J >= 2 and Bernoulli(q') for J = 1, q' = 1 - (1 - q)(1 - own). A
    gradient that read the weights in the first window has no window before
    (``before_exists`` False: q' = 0).
    """
    last = math.ceil(step.ppf(1 - 1e-13) / cycle) + 2
    pe = step.partial_expectation(np.arange(-1, last + 2) * cycle) / cycle
    probs = np.maximum(pe[2:] - 2 * pe[1:-1] + pe[:-2], 0.0)     # j = 0 .. last
    ends = Pmf.from_probs(1, np.array(probs))
    if nonempty >= 1.0 - 1e-12 and before_exists:
        return ends
    # the GPU delivered in the window before its previous gradient's: the
    # step back from that gradient lands in the window (u, u + T] behind it
    # (u uniform), or two steps do around a short one
    below = step.partial_expectation(np.array([0.0, cycle, 2 * cycle])) / cycle
    miss = 1.0 - (below[2] - below[1]) + below[1] * (1.0 - step.cdf(cycle))
    own = float(np.clip(1.0 - miss, 0.0, 1.0))
    before = 1.0 - (1.0 - nonempty) * (1.0 - own)
    thinned = np.zeros(int(ends.values[-1]) + 2)
    if not before_exists:     # the weights were read in the first window
        before = 0.0
    few = ends.values <= MANY_CYCLE_ENDS
    for count, p in zip(ends.values[few].tolist(), ends.probs[few].tolist()):
        certain = 1 if count >= 2 else 0
        middle = np.ones(1) if count < 2 else binomial(np.arange(count - 1), count - 2, nonempty)
        law = np.convolve(middle, [1.0 - before, before])
        thinned[certain:certain + len(law)] += p * law
    if ends.probs[~few].sum() > 1e-9:
        # steps many cycles long (a heavy tail against a short cycle): their
        # binomials mixed as a few hundred groups of like moments, not one by one
        others, weights = ends.values[~few] - 2.0, ends.probs[~few]
        means, variances = others * nonempty, others * nonempty * (1 - nonempty)
        # counts 0.5 % apart share a group: its mixture's first two moments
        _, group = np.unique(np.floor(np.log(others) / math.log1p(0.005)), return_inverse=True)
        summed = np.bincount(group, weights=weights)
        held = summed > 0                   # groups of counts the law gives no mass
        summed = summed[held]
        mean = np.bincount(group, weights=weights * means)[held] / summed
        var = np.bincount(group, weights=weights * (variances + means**2))[held] / summed - mean**2
        middle = _grouped(mean, np.maximum(var, 0.0), summed)
        share = float(ends.probs[~few].sum())      # the grouped law is normalised
        law = np.convolve(np.bincount(middle.values, weights=middle.probs,
                                      minlength=int(middle.values[-1]) + 1), [1.0 - before, before])
        thinned[1:1 + len(law)] += share * law[:len(thinned) - 1]
    return Pmf.from_probs(0, thinned)
