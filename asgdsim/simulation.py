"""Running a scenario: build -> run -> collect, with no side effects.

``simulate`` builds the cluster from the cost model, runs SimPy until the
first stop condition, and collects the recorder's columns into DataFrames and
the contract's summary. It writes no files (the command line does that) and
owns all its randomness: the same scenario and seed give the same numbers.

Two things a caller may ask for that change no number: a
:class:`~asgdsim.timeline.Timeline` to record every interval into (for a
trace), and a ``progress`` callback, called from a SimPy process a few
times a wall-clock second (never per event) with a :class:`Progress`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import pandas as pd
import simpy

from .analytic import Prediction, predict
from .budget import DEFAULT_MAX_EVENTS, DEFAULT_MAX_MEMORY
from .cluster import Cluster, build_cluster
from .components.slowdown import apply_slowdowns
from .components.weights import Weights
from .costs import Costs, costs_of
from .errors import ScenarioError
from .recorder import Recorder
from .scenario import Scenario, scenario_from_dict
from .summary import measured, summarize
from .timeline import Timeline

__all__ = ["Progress", "Result", "simulate"]


class Progress(NamedTuple):
    """How far a run is, against its stop conditions (limits inf where unset)."""

    now_s: float
    gradients: int
    samples: int
    updates: int
    stop_time_s: float
    stop_gradients: float
    stop_samples: float
    stop_updates: float

    @property
    def fraction(self) -> float:
        """The share of the way to the nearest stop condition, 0 to 1."""
        return min(1.0, max(self.now_s / self.stop_time_s, self.gradients / self.stop_gradients,
                            self.samples / self.stop_samples, self.updates / self.stop_updates))


@dataclass(frozen=True)
class Result:
    """One simulation: the resolved scenario, what happened, and how it compares."""

    scenario: Scenario
    seed: int
    gradients: pd.DataFrame
    updates: pd.DataFrame
    prediction: Prediction
    costs: Costs
    utilisation: dict[str, float]
    summary: dict
    #: bytes the recorder's (gradient, update) columns held for this run
    recorded_bytes: tuple[int, int] = (0, 0)
    #: where learners fail: each time one was down (learner, down_s, up_s; up_s
    #: NaN if still down at the end)
    outages: pd.DataFrame | None = None
    #: the intervals recorded for a trace, where one was asked for
    timeline: Timeline | None = None

    def __repr__(self) -> str:
        # the DataFrames and the scenario are attributes to look at, not to print whole
        s = self.summary
        return (f"Result({self.scenario.name!r}, seed {self.seed}: {s['gradients']:,} "
                f"gradient{'s' * (s['gradients'] != 1)}, {s['updates']:,} "
                f"update{'s' * (s['updates'] != 1)}, {s['simulated_time_s']:.4g} s simulated; "
                "epoch time "
                f"{s['epoch_time_s']:.4g} s, staleness mean {s['staleness']['mean']:.4g}, "
                f"mini-batch mean {s['minibatch']['mean']:.4g})")

    @property
    def measured(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """(gradients, updates) the statistics count: after the warm-up, if any."""
        return measured(self.gradients, self.updates,
                        self.summary.get("warmup", {}).get("first_version", 1))


def _failures(env, scenario: Scenario, prediction: Prediction, cluster: Cluster,
              weights: Weights, seed: int):
    """The failing units (each learner, or each node with its learners and,
    for SPRINT, its update thread), or None where nothing fails."""
    spec = scenario.faults.failures
    if spec is None:
        return None
    from .components.failures import Failures

    if spec.scope == "learner":
        units, threads = [[i] for i in range(len(cluster.learners))], None
    else:
        units = [[] for _ in range(int(cluster.node_of_learner.max()) + 1)]
        for learner, node in enumerate(cluster.node_of_learner.tolist()):
            units[node].append(learner)
        threads = cluster.servers.get("node_update")
    # patience: many failure cycles, steps and updates without a gradient
    # applied mean the cluster is stuck, not slow
    patience = 100 * max(spec.mtbf + spec.repair, 10 * prediction.t_gpu_s,
                         10 * prediction.t_update_s)
    return Failures(env, spec, cluster, weights, seed, units, threads, patience)


#: progress is reported about this often, in wall-clock seconds
PROGRESS_EVERY_S = 0.2


def _report_progress(env: simpy.Environment, weights: Weights, stop, samples_limit: float,
                     first_s: float, report: Callable[[Progress], None]):
    """Call ``report`` every so often: a process that sleeps a stretch of
    simulated time, stretched or shrunk so that the calls come about every
    PROGRESS_EVERY_S of wall time, whatever the run's pace. It only reads."""
    every = first_s
    limits = (stop.time or math.inf, stop.gradients or math.inf, samples_limit,
              stop.updates or math.inf)
    last = time.perf_counter()
    while True:
        yield env.timeout(every)
        now = time.perf_counter()
        report(Progress(env.now, weights.gradients_applied, weights.samples_applied,
                        weights.version, *limits))
        every *= min(4.0, max(0.25, PROGRESS_EVERY_S / max(now - last, 1e-6)))
        last = now


def _horizon_s(scenario: Scenario, prediction: Prediction) -> float:
    """Roughly how much simulated time the run takes (for progress only)."""
    stop, guesses = scenario.stop, []
    rate = prediction.throughput_samples_per_s
    if stop.time is not None:
        guesses.append(stop.time)
    if stop.epochs:
        guesses.append(stop.epochs * prediction.epoch_time_s)
    if stop.gradients:
        guesses.append(stop.gradients * scenario.workload.sub_batch / rate)
    if stop.updates:
        guesses.append(stop.updates * prediction.t_update_s)
    finite = [g for g in guesses if g == g and 0 < g < math.inf]
    return min(finite) if finite else 1.0


def simulate(scenario: Scenario, seed: int | None = None, *, timeline: Timeline | None = None,
             progress: Callable[[Progress], None] | None = None,
             max_events: float = DEFAULT_MAX_EVENTS, max_memory: float = DEFAULT_MAX_MEMORY
             ) -> Result:
    """Simulate ``scenario`` (with ``seed`` instead of the scenario's, if given).

    ``timeline``: record every compute step, transfer and update into it.
    ``progress``: called every so often with a :class:`Progress`.
    A run estimated beyond ``max_events`` events or ``max_memory`` bytes is
    refused before it starts, as the commands refuse it (budget.py): a
    notebook's kernel is not left to run out of memory; ``math.inf`` for no
    limit (callers that estimated the run already pass it)."""
    from .budget import ARGUMENTS, check, check_learners, refuse_odd_cycles, refuse_short_time

    if not isinstance(scenario, Scenario):
        raise TypeError(f"simulate takes a Scenario (asgdsim.load_scenario(path)), got "
                        f"{type(scenario).__name__}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise ValueError(f"seed: expected a whole number from 0, got {seed!r}")
    # a scenario changed with model_copy(update=...) was never checked: check it
    # (a negative sub-batch ran, and counted negative samples)
    scenario = scenario_from_dict(scenario.model_dump(mode="json", exclude_none=True,
                                                      by_alias=True), source=scenario.name,
                                  resolved=True)
    for name, limit in (("max_events", max_events), ("max_memory", max_memory)):
        if isinstance(limit, bool) or not isinstance(limit, (int, float)) or not limit > 0:
            raise ValueError(f"{name}: expected a positive number (math.inf for no limit), "
                             f"got {limit!r}")
    check_learners(scenario, scenario.name)       # the simulator's own bound, not predict's
    started = time.perf_counter()
    seed = scenario.seed if seed is None else seed
    if seed != scenario.seed:
        scenario = scenario.model_copy(update={"seed": seed})
    env = simpy.Environment()
    recorder = Recorder()
    costs = costs_of(scenario)
    limited = not (math.isinf(max_events) and math.isinf(max_memory))
    # the run's size from its own closed form, made once; but a stop in
    # seconds is judged on the steady rates first (the closed form of a run
    # shorter than a step has nothing to say), and an odd cycle is refused
    # before the closed form would lay it out for minutes
    early = limited and scenario.stop.time is not None
    if early:
        check(scenario, scenario.name, max_events, max_memory, simulated=False, names=ARGUMENTS,
              costs=costs)
    elif limited:
        try:
            refuse_odd_cycles(scenario, costs)
        except ScenarioError as exc:
            raise ScenarioError(scenario.name, exc.problems) from None
    prediction = predict(scenario, costs)
    if not limited:
        # a stop in seconds before the first gradient is no run, whatever the limits
        try:
            refuse_short_time(scenario, prediction.step_s, prediction.t_update_s)
        except ScenarioError as exc:
            raise ScenarioError(scenario.name, exc.problems) from None
    if limited and not early:
        check(scenario, scenario.name, max_events, max_memory, simulated=False, names=ARGUMENTS,
              prediction=prediction, costs=costs)
    stop = scenario.stop
    weights = Weights(
        env, recorder,
        max_gradients=stop.gradients or math.inf,
        max_samples=(stop.epochs * scenario.workload.dataset_samples if stop.epochs else math.inf),
        max_updates=stop.updates or math.inf)
    cluster: Cluster = build_cluster(env, scenario, costs, weights, recorder, seed)
    apply_slowdowns(cluster, scenario.faults.link_slowdowns)
    failures = _failures(env, scenario, prediction, cluster, weights, seed)
    if timeline is not None:
        timeline.instrument(env, cluster)
    if progress is not None:
        env.process(_report_progress(
            env, weights, stop, stop.epochs * scenario.workload.dataset_samples if stop.epochs
            else math.inf, _horizon_s(scenario, prediction) / 200, progress))
    until = weights.stopped
    if stop.time is not None:
        until = env.any_of([weights.stopped, env.timeout(stop.time)])
    env.run(until=until)

    gradients, updates = recorder.frames(cluster.node_of_learner)
    if updates.empty and stop.time is not None:
        # a stop in seconds before the first update: nothing to report (the
        # refusal before the run reads one step; a round of several takes longer)
        raise ScenarioError(scenario.name, [("stop.time", (
            f"expected at least the first update; the run applied none by {stop.time:.3g} s: "
            "a later stop"))])
    if scenario.cluster.groups is not None:
        from .groups import group_of_learner
        gradients.insert(gradients.columns.get_loc("node") + 1, "group",
                         group_of_learner(scenario.cluster)[gradients["learner"].to_numpy()])
    utilisation = cluster.utilisation(env.now)
    # kinds that cancel steps (k-sync, k-batch-sync) count them on their server
    cancelled = [part.cancelled for parts in cluster.servers.values() for part in parts
                 if hasattr(part, "cancelled")]
    faults = None if failures is None else {
        "failures": failures.failures, "lost_gradients": failures.lost_gradients,
        "lost_samples": failures.lost_samples, "downtime_s": failures.downtime_s(env.now)}
    summary = summarize(scenario, gradients, updates, env.now, prediction, utilisation,
                        wall_time_s=time.perf_counter() - started,
                        cancelled_steps=sum(cancelled) if cancelled else None, faults=faults)
    return Result(scenario, seed, gradients, updates, prediction, costs, utilisation, summary,
                  recorder.nbytes, None if failures is None else failures.outages(env.now),
                  timeline)
