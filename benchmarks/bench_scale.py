"""Scale: 512 nodes x 8 GPUs (4096 learners), 10 epochs of ILSVRC2012 at
sub-batch 32 (about 400,000 gradients), modelled communication.

    python benchmarks/bench_scale.py [--epochs 10]

Measures asgdsim.simulate's wall time, gradients per second and peak memory
against a forty-line SimPy skeleton of the same SPRINT cycle (per-node PCIe
contention, the same durations from the cost model) run in this process,
and a sweep's speed-up from 1 to 2 Dask workers.
"""

from __future__ import annotations

import math
import argparse
import random
import resource
import shutil
import tempfile
import time
from pathlib import Path

import simpy

import asgdsim
from asgdsim.costs import costs_of

#: the simulator measured alone: without the run's size estimate and its limits
UNLIMITED = {"max_events": math.inf, "max_memory": math.inf}

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "scenarios" / "tsubame-kfc-dl-vgg16.yaml"


def skeleton(nodes: int, gpus: int, costs, gradients: int, seed: int = 0) -> int:
    """SPRINT in plain SimPy: GPUs share their node's PCIe; one global cycle."""
    env, rng = simpy.Environment(), random.Random(seed)
    pcie = [simpy.Resource(env, 1) for _ in range(nodes)]
    accumulators = [[] for _ in range(nodes)]
    published, state, done = [0] * nodes, {"version": 0, "applied": 0}, env.event()
    copy_in = costs.weights_to_gpu_s + costs.batch_to_gpu_s
    step = costs.compute.mean

    def gpu(node: int):
        while True:
            version = published[node]
            with pcie[node].request() as request:
                yield request
                yield env.timeout(copy_in)
            yield env.timeout(step * rng.lognormvariate(-0.00125, 0.05))
            with pcie[node].request() as request:
                yield request
                yield env.timeout(costs.gradient_to_host_s)
            accumulators[node].append(version)

    def cycle():
        while True:
            swapped = [v for acc in accumulators for v in acc]
            for acc in accumulators:
                acc.clear()
            yield env.timeout(costs.cycle_s)
            if swapped:
                state["version"] += 1
                state["applied"] += len(swapped)
                published[:] = [state["version"]] * nodes
                if state["applied"] >= gradients and not done.triggered:
                    done.succeed()

    for node in range(nodes):
        for _ in range(gpus):
            env.process(gpu(node))
    env.process(cycle())
    env.run(until=done)
    return state["applied"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=float, default=10)
    args = parser.parse_args()
    scenario = asgdsim.load_scenario(DEFAULT, {"cluster.nodes": 512, "stop.epochs": args.epochs})
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    result = asgdsim.simulate(scenario, **UNLIMITED)
    wall = time.perf_counter() - start
    peak_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    n = result.summary["gradients"]
    print(f"asgdsim: {scenario.cluster.learners} learners, {args.epochs:g} epochs: {n} gradients, "
          f"{result.summary['updates']} updates, {result.summary['simulated_time_s']:.0f} s simulated")
    print(f"  wall {wall:.1f} s = {n / wall:,.0f} gradients/s; peak memory +{peak_mib:.0f} MiB "
          f"({peak_mib * 2**20 / n:.0f} B per gradient)")

    start = time.perf_counter()
    bare = skeleton(512, 8, costs_of(scenario), n)
    bare_wall = time.perf_counter() - start
    print(f"skeleton: {bare} gradients in {bare_wall:.1f} s = {bare / bare_wall:,.0f} gradients/s")
    print(f"ratio: {(n / wall) / (bare / bare_wall):.2f}   (bar 0.3, aim 0.5)")

    out = Path(tempfile.mkdtemp())
    grid = {"cluster.nodes": [4, 8], "stop.epochs": [10]}
    times = {1: float("inf"), 2: float("inf")}
    for run, workers in enumerate((1, 2, 1)):      # the first run also warms the imports
        start = time.perf_counter()
        asgdsim.sweep(DEFAULT, grid, replications=2, out=out / str(run), workers=workers)
        times[workers] = min(times[workers], time.perf_counter() - start)
    shutil.rmtree(out)
    print(f"sweep of 4 points (best of runs): 1 worker {times[1]:.1f} s, 2 workers {times[2]:.1f} s, "
          f"speed-up {times[1] / times[2]:.2f}")


if __name__ == "__main__":
    main()
