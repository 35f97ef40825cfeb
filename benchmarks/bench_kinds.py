"""Speed of the synchronous kinds (allreduce, local-sgd) against bare SimPy
loops of the same rounds, side by side in one process:

    python benchmarks/bench_kinds.py

16 learners, exponential steps, ideal communication, 200,000 gradients: a
learner draws its step, waits, and joins the round; when all have joined
the round publishes and every learner starts again (local SGD: after
``period`` steps of each). The bar (issue 10): at least 0.5 of the bare
loop's gradients per second.
"""

from __future__ import annotations

import random
import time

import simpy

import asgdsim
from asgdsim.scenario import scenario_from_dict

LEARNERS, GRADIENTS = 16, 200_000


def scenario(kind: str, **algorithm) -> dict:
    return {"name": f"bench-{kind}",
            "workload": {"model": "alexnet", "dataset_samples": 1281167, "sub_batch": 1},
            "cluster": {"nodes": 1, "gpus_per_node": LEARNERS, "gpu": "K80", "network": "ib-fdr"},
            "algorithm": {"kind": kind, **algorithm},
            "timing": {"compute": {"distribution": "exponential", "mean": 1.0},
                       "communication": "ideal"},
            "stop": {"gradients": GRADIENTS}}


def bare_rounds(learners: int, gradients: int, period: int = 1, seed: int = 0) -> int:
    """The same rounds in plain SimPy: a barrier event per round."""
    env, rng = simpy.Environment(), random.Random(seed)
    state = {"joined": 0, "round": env.event(), "gradients": 0}
    done = env.event()

    def learner():
        while True:
            for _ in range(period):
                yield env.timeout(rng.expovariate(1.0))
            state["joined"] += 1
            published = state["round"]
            if state["joined"] == learners:
                state["joined"], state["round"] = 0, env.event()
                state["gradients"] += learners * period
                published.succeed()
                if state["gradients"] >= gradients and not done.triggered:
                    done.succeed()
            yield published

    for _ in range(learners):
        env.process(learner())
    env.run(until=done)
    return state["gradients"]


def best_rate(run, repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        count = run()
        best = min(best, time.perf_counter() - start)
    return count / best


def main() -> None:
    for label, data, period in (("allreduce", scenario("allreduce"), 1),
                                ("local-sgd, period 4", scenario("local-sgd", period=4), 4)):
        sc = scenario_from_dict(data)
        sim = best_rate(lambda: asgdsim.simulate(sc).summary["gradients"])
        bare = best_rate(lambda: bare_rounds(LEARNERS, GRADIENTS, period))
        print(f"{label:<22} asgdsim {sim:10,.0f}  bare SimPy {bare:10,.0f} gradients/s  "
              f"ratio {sim / bare:.2f}  (bar 0.5)")


if __name__ == "__main__":
    main()
