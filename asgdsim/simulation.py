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

    @property
    def measured(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """(gradients, updates) the statistics count: after the warm-up, if any."""
        return measured(self.gradients, self.updates,
                        self.summary.get("warmup", {}).get("first_version", 1))


def simulate(scenario: Scenario, seed: int | None = None) -> Result:
    """Simulate ``scenario`` (with ``seed`` instead of the scenario's, if given)."""
    started = time.perf_counter()
    seed = scenario.seed if seed is None else seed
    if seed != scenario.seed:
        scenario = scenario.model_copy(update={"seed": seed})
    env = simpy.Environment()
    recorder = Recorder()
    costs = costs_of(scenario)
    stop = scenario.stop
    weights = Weights(
        env, recorder,
        max_gradients=stop.gradients or math.inf,
        max_samples=(stop.epochs * scenario.workload.dataset_samples if stop.epochs else math.inf),
        max_updates=stop.updates or math.inf)
    cluster: Cluster = build_cluster(env, scenario, costs, weights, recorder, seed)
    apply_slowdowns(cluster, scenario.faults.link_slowdowns)
    until = weights.stopped
    if stop.time is not None:
        until = env.any_of([weights.stopped, env.timeout(stop.time)])
    env.run(until=until)

    gradients, updates = recorder.frames(cluster.node_of_learner)
    prediction = predict(scenario, costs)
    utilisation = cluster.utilisation(env.now)
    # kinds that cancel steps (k-sync, k-batch-sync) count them on their server
    cancelled = [part.cancelled for parts in cluster.servers.values() for part in parts
                 if hasattr(part, "cancelled")]
    summary = summarize(scenario, gradients, updates, env.now, prediction, utilisation,
                        wall_time_s=time.perf_counter() - started,
                        cancelled_steps=sum(cancelled) if cancelled else None)
    return Result(scenario, seed, gradients, updates, prediction, costs, utilisation, summary,
                  recorder.nbytes)
