"""Speed of the kinds between sync and async, and of downpour, against bare
SimPy loops of the same rules, side by side in one process:

    python benchmarks/bench_family.py

16 learners, exponential steps of mean 1, ideal communication, 200,000
gradients each. A bare loop is the rule in a dozen lines of plain SimPy:
a learner draws its step and waits, then does what its kind says (counts
its gradient into a batch, joins a round that may cancel it, waits at the
staleness bound, pushes every n_push steps). asgdsim records every gradient
and update into its columns as well; the bare loops record nothing.

Then 4096 learners (512 TSUBAME-KFC/DL nodes), ResNet-50, modelled
communication, 200,000 gradients of ``downpour`` (n_fetch 2, n_push 4, 64
dedicated shards): each learner reads its sub-batch from its node's disk and
copies it over its host link, steps, and every n_push steps copies its
gradient out and sends one part to each shard through its node's port and
the shard's; every n_fetch steps it takes a part back from each shard.

With ``--family-4096``, also the kinds between sync and async at 4096
learners on one server, against async's bare loop on the same resources.

The bar (issues 10 and 11): at least 0.5 of the bare loop's gradients per
second.
"""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path

import simpy

import asgdsim
from asgdsim.costs import costs_of
from asgdsim.scenario import scenario_from_dict
from bench_core import best_rate   # benchmarks/ is the script's folder
from bench_kinds import GRADIENTS, LEARNERS, scenario

#: the simulator measured alone: without the run's size estimate and its limits
UNLIMITED = {"max_events": math.inf, "max_memory": math.inf}

ROOT = Path(__file__).resolve().parents[1]

def run_bare(learner, gradients: int, seed: int = 0) -> int:
    """Run LEARNERS copies of ``learner(env, rng, state, index)`` until the
    state counts ``gradients``."""
    env, rng = simpy.Environment(), random.Random(seed)
    state = {"gradients": 0, "version": 0, "done": env.event()}
    for index in range(LEARNERS):
        env.process(learner(env, rng, state, index))
    env.run(until=state["done"])
    return state["gradients"]


def count(state, n: int = 1) -> None:
    state["gradients"] += n
    if state["gradients"] >= GRADIENTS and not state["done"].triggered:
        state["done"].succeed()


def batched(c: int):
    """softsync, k-batch-async: an update every c gradients, nobody waits."""
    def learner(env, rng, state, index):
        while True:
            yield env.timeout(rng.expovariate(1.0))
            count(state)
            if state["gradients"] % c == 0:
                state["version"] += 1
    return learner


def cancelling(k: int, again: bool):
    """k-sync, k-batch-sync: the round closes at its k-th gradient and stops
    every step still computing."""
    def learner(env, rng, state, index):
        if index == 0:
            state.update(closed=env.event(), held=0)
        while True:
            closed = state["closed"]
            while True:
                yield env.timeout(rng.expovariate(1.0)) | closed
                if closed.triggered:
                    break
                state["held"] += 1
                if state["held"] == k:
                    state["held"], state["closed"] = 0, env.event()
                    count(state, k)
                    closed.succeed()
                    break
                if not again:
                    yield closed
                    break
    return learner


def first_k(k: int):
    """k-async: the first k to push make an update and wait for it."""
    def learner(env, rng, state, index):
        if index == 0:
            state.update(round=env.event(), joined=0)
        while True:
            yield env.timeout(rng.expovariate(1.0))
            state["joined"] += 1
            published = state["round"]
            if state["joined"] == k:
                state["joined"], state["round"] = 0, env.event()
                count(state, k)
                published.succeed()
            yield published
    return learner


def bounded(s: int):
    """ssp: step i waits until every learner has pushed i - s gradients."""
    def learner(env, rng, state, index):
        if index == 0:
            state.update(pushed=[0] * LEARNERS, waiting={})
        step = 0
        while True:
            need = step - s
            if min(state["pushed"]) < need:
                event = state["waiting"].setdefault(need, env.event())
                yield event
            yield env.timeout(rng.expovariate(1.0))
            state["pushed"][index] += 1
            count(state)
            slowest = min(state["pushed"])
            if slowest in state["waiting"]:
                state["waiting"].pop(slowest).succeed()
            step += 1
    return learner


def downpour(n_fetch: int, n_push: int):
    """downpour: a message every n_push steps, a fetch every n_fetch."""
    def learner(env, rng, state, index):
        version, step, reads = 0, 0, []
        while True:
            yield env.timeout(rng.expovariate(1.0))
            reads.append(version)                  # each gradient's version, as asgdsim keeps
            step += 1
            if step % n_push == 0:
                state["version"] += 1
                count(state, n_push)
                reads = []
            if step % n_fetch == 0:
                version = state["version"]
    return learner


CASES = [
    ("softsync, n = 4", scenario("softsync", n=4), batched(LEARNERS // 4)),
    ("k-batch-async, k = 3", scenario("k-batch-async", k=3), batched(3)),
    ("k-sync, k = 4", scenario("k-sync", k=4), cancelling(4, again=False)),
    ("k-batch-sync, k = 24", scenario("k-batch-sync", k=24), cancelling(24, again=True)),
    ("k-async, k = 4", scenario("k-async", k=4), first_k(4)),
    ("ssp, s = 2", scenario("ssp", staleness_bound=2), bounded(2)),
    ("downpour, 2 / 4", scenario("downpour", n_fetch=2, n_push=4), downpour(2, 4)),
]


def hold(env: simpy.Environment, *resources_and_time):
    """Hold every resource given at once for the time given last."""
    *held, seconds = resources_and_time
    requests = [r.request() for r in held]
    yield env.all_of(requests)
    yield env.timeout(seconds)
    for r, request in zip(held, requests):
        r.release(request)


def bare_downpour_modelled(nodes: int, per_node: int, per_link: int, shards: int, costs,
                           n_fetch: int, n_push: int, gradients: int, seed: int = 0) -> int:
    """Modelled downpour in plain SimPy: disks, host links, node and shard ports."""
    env, rng = simpy.Environment(), random.Random(seed)
    resource = lambda count: [simpy.Resource(env, 1) for _ in range(count)]  # noqa: E731
    disks, links = resource(nodes), resource(nodes * per_node // per_link)
    out, into, shard_in, shard_out = resource(nodes), resource(nodes), resource(shards), resource(shards)
    part = costs.network_s / shards if costs.network_s else 0.0
    state = {"gradients": 0, "version": 0}
    done = env.event()
    step, sd = costs.compute.mean, costs.compute.std / costs.compute.mean

    def learner(index: int):
        node, link, steps = index // per_node, index // per_link, 0
        while True:
            yield from hold(env, disks[node], costs.batch_read_s)
            yield from hold(env, links[link], costs.batch_to_gpu_s)
            yield env.timeout(step * rng.lognormvariate(-sd * sd / 2, sd))
            steps += 1
            if steps % n_push == 0:
                yield from hold(env, links[link], costs.gradient_to_host_s)
                for shard in range(shards):
                    yield from hold(env, out[node], shard_in[shard], part)
                state["version"] += 1
                state["gradients"] += n_push
                if state["gradients"] >= gradients and not done.triggered:
                    done.succeed()
            if steps % n_fetch == 0:
                for shard in range(shards):
                    yield from hold(env, shard_out[shard], into[node], part)
                yield from hold(env, links[link], costs.weights_to_gpu_s)

    for index in range(nodes * per_node):
        env.process(learner(index))
    env.run(until=done)
    return state["gradients"]


def bare_k_batch_sync_modelled(nodes: int, per_node: int, per_link: int, costs, k: int,
                               gradients: int, seed: int = 0) -> int:
    """Modelled k-batch-sync in plain SimPy, one server: each learner reads
    and copies its sub-batch, steps, copies its gradient out and pushes it
    through its node's port and the server's, and steps again on the same
    weights; the K-th gradient closes the round, which stops every step
    still computing or queued for the server's port; after the update every
    learner pulls the weights (again if a round closed meanwhile)."""
    env, rng = simpy.Environment(), random.Random(seed)
    resource = lambda count: [simpy.Resource(env, 1) for _ in range(count)]  # noqa: E731
    disks, links = resource(nodes), resource(nodes * per_node // per_link)
    out, into = resource(nodes), resource(nodes)
    server_in, server_out = simpy.Resource(env, 1), simpy.Resource(env, 1)
    state = {"gradients": 0, "version": 0, "held": 0, "closed": env.event(),
             "published": env.event()}
    done = env.event()
    step, sd = costs.compute.mean, costs.compute.std / costs.compute.mean

    def update(closed, published):
        yield env.timeout(costs.server_update_s)
        state["version"] += 1
        state["closed"], state["published"] = env.event(), env.event()
        published.succeed(state["version"])

    def learner(index: int):
        node, link = index // per_node, index // per_link
        while True:
            closed, published = state["closed"], state["published"]
            while not closed.triggered:
                yield from hold(env, disks[node], costs.batch_read_s)
                yield from hold(env, links[link], costs.batch_to_gpu_s)
                yield env.timeout(step * rng.lognormvariate(-sd * sd / 2, sd)) | closed
                if closed.triggered:
                    break
                yield from hold(env, links[link], costs.gradient_to_host_s)
                with out[node].request() as port, server_in.request() as server:
                    yield (port & server) | closed
                    if closed.triggered:
                        break
                    yield env.timeout(costs.network_s)
                state["held"] += 1
                if state["held"] == k:
                    state["held"] = 0
                    state["gradients"] += k
                    if state["gradients"] >= gradients and not done.triggered:
                        done.succeed()
                    closed.succeed()
                    env.process(update(closed, published))
            version = yield published
            while True:
                yield from hold(env, server_out, into[node], costs.network_s)
                yield from hold(env, links[link], costs.weights_to_gpu_s)
                if state["version"] == version:
                    break
                version = state["version"]

    for index in range(nodes * per_node):
        env.process(learner(index))
    env.run(until=done)
    return state["gradients"]


def main() -> None:
    for label, data, learner in CASES:
        sc = scenario_from_dict(data)
        sim = best_rate(lambda: asgdsim.simulate(sc, **UNLIMITED).summary["gradients"])
        bare = best_rate(lambda: run_bare(learner, GRADIENTS))
        print(f"{label:<22} asgdsim {sim:10,.0f}  bare SimPy {bare:10,.0f} gradients/s  "
              f"ratio {sim / bare:.2f}  (bar 0.5)")
    big = asgdsim.load_scenario(ROOT / "scenarios" / "tsubame-kfc-dl-vgg16.yaml", overrides={
        "cluster.nodes": 512, "workload.model": "resnet50",
        "algorithm": {"kind": "downpour", "n_fetch": 2, "n_push": 4, "servers": 64},
        "stop": {"gradients": 200_000}})
    costs, c = costs_of(big), big.cluster
    sim = best_rate(lambda: asgdsim.simulate(big, **UNLIMITED).summary["gradients"], repeats=1)
    bare = best_rate(lambda: bare_downpour_modelled(c.nodes, c.gpus_per_node, c.gpus_per_host_link,
                                                    64, costs, 2, 4, 200_000), repeats=1)
    print(f"{'downpour, 4096 GPUs':<22} asgdsim {sim:10,.0f}  bare SimPy {bare:10,.0f} gradients/s  "
          f"ratio {sim / bare:.2f}  (bar 0.5)")
    if "--family-4096" not in sys.argv:
        return
    # the family on one server at 4096 learners, against async's bare loop
    # on the same disks, links and ports; k-batch-sync, whose learners all
    # pull each round, against a bare loop of its own rule
    for algorithm in ({"kind": "softsync", "n": 64}, {"kind": "k-batch-async", "k": 64},
                      {"kind": "ssp", "staleness_bound": 4}, {"kind": "k-async", "k": 1024},
                      {"kind": "k-sync", "k": 2048}):
        big = asgdsim.load_scenario(ROOT / "scenarios" / "tsubame-kfc-dl-vgg16.yaml", overrides={
            "cluster.nodes": 512, "workload.model": "resnet50", "algorithm": algorithm,
            "stop": {"gradients": 50_000}})
        costs, c = costs_of(big), big.cluster
        sim = best_rate(lambda: asgdsim.simulate(big, **UNLIMITED).summary["gradients"], repeats=1)
        bare = best_rate(lambda: bare_downpour_modelled(c.nodes, c.gpus_per_node,
                                                        c.gpus_per_host_link, 1, costs, 1, 1,
                                                        50_000), repeats=1)
        print(f"{algorithm['kind'] + ', 4096 GPUs':<22} asgdsim {sim:10,.0f}  bare SimPy "
              f"{bare:10,.0f} gradients/s  ratio {sim / bare:.2f}  (bar 0.5)")
    big = asgdsim.load_scenario(ROOT / "scenarios" / "tsubame-kfc-dl-vgg16.yaml", overrides={
        "cluster.nodes": 512, "workload.model": "resnet50",
        "algorithm": {"kind": "k-batch-sync", "k": 1024}, "stop": {"gradients": 20_480}})
    costs, c = costs_of(big), big.cluster
    sim = best_rate(lambda: asgdsim.simulate(big, **UNLIMITED).summary["gradients"], repeats=1)
    bare = best_rate(lambda: bare_k_batch_sync_modelled(c.nodes, c.gpus_per_node,
                                                        c.gpus_per_host_link, costs, 1024,
                                                        20_480), repeats=1)
    print(f"{'k-batch-sync, 4096 GPUs':<22} asgdsim {sim:10,.0f}  bare SimPy "
          f"{bare:10,.0f} gradients/s  ratio {sim / bare:.2f}  (bar 0.5)")


if __name__ == "__main__":
    main()
