"""Speed and memory of the simulator core (issue 2's figures).

    python benchmarks/bench_core.py

1. Ideal async, 16 learners, exponential compute, 200,000 gradients:
   gradients per second of ``asgdsim.simulate`` against a bare SimPy loop
   doing the same work (draw a step, wait, advance the version, record the
   staleness), both in this process, best of three each.
2. The default scenario's wall time.
3. Bytes per recorded gradient: the recorder's columns, and the peak of all
   Python allocations during ``simulate`` (tracemalloc), per gradient.
"""

from __future__ import annotations

import math
import random
import time
import tracemalloc
from pathlib import Path

import simpy

import asgdsim
from asgdsim.scenario import scenario_from_dict

#: the simulator measured alone: without the run's size estimate and its limits
UNLIMITED = {"max_events": math.inf, "max_memory": math.inf}

ROOT = Path(__file__).resolve().parents[1]
LEARNERS, GRADIENTS = 16, 200_000

ASYNC = {
    "name": "bench-async-ideal",
    "workload": {"model": "alexnet", "dataset_samples": 1281167, "sub_batch": 1},
    "cluster": {"nodes": 1, "gpus_per_node": LEARNERS, "gpu": "K80", "network": "ib-fdr"},
    "algorithm": {"kind": "async"},
    "timing": {"compute": {"distribution": "exponential", "mean": 1.0}, "communication": "ideal"},
    "stop": {"gradients": GRADIENTS},
}


def bare_loop(learners: int, gradients: int, seed: int = 0) -> int:
    """The same async cluster in twenty lines of plain SimPy."""
    env, rng = simpy.Environment(), random.Random(seed)
    state = {"version": 0}
    staleness: list[int] = []
    done = env.event()

    def learner():
        version = 0
        while True:
            yield env.timeout(rng.expovariate(1.0))
            state["version"] += 1
            staleness.append(state["version"] - version - 1)
            version = state["version"]
            if len(staleness) >= gradients and not done.triggered:
                done.succeed()

    for _ in range(learners):
        env.process(learner())
    env.run(until=done)
    return len(staleness)


def best_rate(run, repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        count = run()
        best = min(best, time.perf_counter() - start)
    return count / best


def main() -> None:
    scenario = scenario_from_dict(ASYNC)
    sim_rate = best_rate(lambda: asgdsim.simulate(scenario, **UNLIMITED).summary["gradients"])
    bare_rate = best_rate(lambda: bare_loop(LEARNERS, GRADIENTS))
    print(f"async ideal, {LEARNERS} learners, {GRADIENTS} gradients")
    print(f"  asgdsim.simulate   {sim_rate:12,.0f} gradients/s")
    print(f"  bare SimPy loop    {bare_rate:12,.0f} gradients/s")
    print(f"  ratio              {sim_rate / bare_rate:12.2f}   (bar 0.25, aim 0.5)")

    default = asgdsim.load_scenario(ROOT / "scenarios" / "tsubame-kfc-dl-vgg16.yaml")
    start = time.perf_counter()
    result = asgdsim.simulate(default, **UNLIMITED)
    wall = time.perf_counter() - start
    print(f"default scenario: {result.summary['gradients']} gradients, "
          f"{result.summary['updates']} updates in {wall:.2f} s wall")

    tracemalloc.start()
    result = asgdsim.simulate(scenario, **UNLIMITED)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    gradient_bytes, update_bytes = result.recorded_bytes
    rows, updates = result.summary["gradients"], result.summary["updates"]
    print(f"memory: gradient columns {gradient_bytes / rows:.1f} B per gradient, update columns "
          f"{update_bytes / updates:.1f} B per update; peak of all allocations "
          f"in simulate, DataFrames included: {peak / rows:.1f} B per gradient")


if __name__ == "__main__":
    main()
