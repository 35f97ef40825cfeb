"""Speed of the synchronous kinds (allreduce, local-sgd) against bare SimPy
loops of the same rounds, side by side in one process:

    python benchmarks/bench_kinds.py

1. 16 learners, exponential steps, ideal communication, 200,000 gradients:
   a learner draws its step, waits, and joins the round; when all have
   joined the round publishes and every learner starts again (local SGD:
   after ``period`` steps of each).
2. 4096 learners (512 TSUBAME-KFC/DL nodes), VGG-16, modelled
   communication, 400,000 gradients: each learner reads its sub-batch from
   its node's disk and copies it over its shared host link before its step;
   the round ends with the collective.

The bar (issue 10): at least 0.5 of the bare loop's gradients per second.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import simpy

import asgdsim
from asgdsim.costs import costs_of
from asgdsim.scenario import scenario_from_dict
from bench_core import best_rate   # benchmarks/ is the script's folder

#: the simulator measured alone: without the run's size estimate and its limits
UNLIMITED = {"max_events": math.inf, "max_memory": math.inf}

ROOT = Path(__file__).resolve().parents[1]

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


def bare_modelled_rounds(nodes: int, per_node: int, per_link: int, costs, gradients: int,
                         seed: int = 0) -> int:
    """Rounds with each node's disk and host links shared, in plain SimPy."""
    env, rng = simpy.Environment(), random.Random(seed)
    disks = [simpy.Resource(env, 1) for _ in range(nodes)]
    links = [simpy.Resource(env, 1) for _ in range(nodes * (per_node // per_link))]
    learners = nodes * per_node
    state = {"joined": 0, "round": env.event(), "gradients": 0}
    done = env.event()
    step, sd = costs.compute.mean, costs.compute.std / costs.compute.mean

    def learner(index: int):
        node, link = index // per_node, index // per_link
        while True:
            for resource, seconds in ((disks[node], costs.batch_read_s),
                                      (links[link], costs.batch_to_gpu_s)):
                with resource.request() as request:
                    yield request
                    yield env.timeout(seconds)
            yield env.timeout(step * rng.lognormvariate(-sd * sd / 2, sd))
            state["joined"] += 1
            published = state["round"]
            if state["joined"] == learners:
                state["joined"], state["round"] = 0, env.event()
                state["gradients"] += learners
                env.process(publish(published))
            yield published

    def publish(event):
        yield env.timeout(costs.collective_s)
        event.succeed()
        if state["gradients"] >= gradients and not done.triggered:
            done.succeed()

    for index in range(learners):
        env.process(learner(index))
    env.run(until=done)
    return state["gradients"]


def main() -> None:
    for label, data, period in (("allreduce", scenario("allreduce"), 1),
                                ("local-sgd, period 4", scenario("local-sgd", period=4), 4)):
        sc = scenario_from_dict(data)
        sim = best_rate(lambda: asgdsim.simulate(sc, **UNLIMITED).summary["gradients"])
        bare = best_rate(lambda: bare_rounds(LEARNERS, GRADIENTS, period))
        print(f"{label:<22} asgdsim {sim:10,.0f}  bare SimPy {bare:10,.0f} gradients/s  "
              f"ratio {sim / bare:.2f}  (bar 0.5)")
    big = asgdsim.load_scenario(ROOT / "scenarios" / "tsubame-kfc-dl-vgg16.yaml", overrides={
        "cluster.nodes": 512, "algorithm": {"kind": "allreduce"}, "stop": {"gradients": 400_000}})
    costs, c = costs_of(big), big.cluster
    sim = best_rate(lambda: asgdsim.simulate(big, **UNLIMITED).summary["gradients"], repeats=1)
    bare = best_rate(lambda: bare_modelled_rounds(c.nodes, c.gpus_per_node, c.gpus_per_host_link,
                                                  costs, 400_000), repeats=1)
    print(f"{'allreduce, 4096 GPUs':<22} asgdsim {sim:10,.0f}  bare SimPy {bare:10,.0f} gradients/s  "
          f"ratio {sim / bare:.2f}  (bar 0.5)")


if __name__ == "__main__":
    main()
