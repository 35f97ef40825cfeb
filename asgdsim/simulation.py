"""Running a scenario: build -> run -> collect, with no side effects.

``simulate`` builds the cluster from the cost model, runs SimPy until the
first stop condition, and collects the recorder's columns into DataFrames and
the contract's summary. It writes no files (the command line does that) and
owns all its randomness: the same scenario and seed give the same numbers.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import pandas as pd
import simpy

from .analytic import Prediction, predict
from .cluster import Cluster, build_cluster
from .components.slowdown import apply_slowdowns
from .components.weights import Weights
from .costs import Costs, costs_of
from .recorder import Recorder
from .scenario import Scenario
from .summary import measured, summarize

__all__ = ["Result", "simulate"]


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


def simulate(scenario: Scenario, seed: int | None = None) -> Result:
    """Simulate ``scenario`` (with ``seed`` instead of the scenario's, if given)."""
    from .budget import check_learners

    check_learners(scenario, scenario.name)       # the simulator's own bound, not predict's
    started = time.perf_counter()
    seed = scenario.seed if seed is None else seed
    if seed != scenario.seed:
        scenario = scenario.model_copy(update={"seed": seed})
    env = simpy.Environment()
    recorder = Recorder()
    costs = costs_of(scenario)
    prediction = predict(scenario, costs)
    stop = scenario.stop
    weights = Weights(
        env, recorder,
        max_gradients=stop.gradients or math.inf,
        max_samples=(stop.epochs * scenario.workload.dataset_samples if stop.epochs else math.inf),
        max_updates=stop.updates or math.inf)
    cluster: Cluster = build_cluster(env, scenario, costs, weights, recorder, seed)
    apply_slowdowns(cluster, scenario.faults.link_slowdowns)
    failures = _failures(env, scenario, prediction, cluster, weights, seed)
    until = weights.stopped
    if stop.time is not None:
        until = env.any_of([weights.stopped, env.timeout(stop.time)])
    env.run(until=until)

    gradients, updates = recorder.frames(cluster.node_of_learner)
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
                  recorder.nbytes, None if failures is None else failures.outages(env.now))
