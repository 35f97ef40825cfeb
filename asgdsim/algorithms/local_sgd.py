"""``local-sgd``: model averaging, the data parallelism of the commodity-
cluster seed. Each learner takes ``period`` steps on its own copy (each
reading its sub-batch), then a round averages every learner's weights, by a
collective or through the server: one update applying the P x period
gradients taken since the last (staleness 0)."""

from __future__ import annotations

from functools import partial
from typing import Literal

from ..specs import StepsBetween, _Spec
from . import allreduce, server
from .kind import Kind


class Spec(_Spec):
    kind: Literal["local-sgd"]
    period: StepsBetween
    average: Literal["allreduce", "server"] = "allreduce"


def loop(scenario, c):
    by_collective = scenario.algorithm.average == "allreduce"
    return (allreduce.loop if by_collective else server.loop)(scenario, c)


def aggregate_s(scenario, weights: float) -> float:
    """Averaging by a collective: the weights summed as gradients are, then
    divided in place on each GPU (read and write)."""
    from ..compute import gpu_pass_time

    cluster = scenario.cluster
    if scenario.algorithm.average != "allreduce":
        return 0.0
    return (allreduce.collective_time(cluster, weights, "hierarchical")
            + max(gpu_pass_time(weights, gpu, streams=2) for gpu in allreduce.gpus(cluster)))


def _round_s(scenario, costs) -> float:
    return costs.collective_s if scenario.algorithm.average == "allreduce" else costs.server_update_s


def build(env, scenario, costs, weights, recorder, seed):
    from ..components.server import LocalLearner, SyncServer

    algorithm = scenario.algorithm
    rounds = SyncServer(env, weights, recorder, _round_s(scenario, costs), scenario.cluster.learners,
                        whole=True)
    name = "collective" if algorithm.average == "allreduce" else "server"
    return server.wire(env, scenario, costs, seed, name, rounds,
                       partial(LocalLearner, period=algorithm.period))


def predict(scenario, costs):
    from ..analytic import predict_rounds
    return predict_rounds(scenario, costs, _round_s(scenario, costs), scenario.algorithm.period)


def draw(rng, ideal: bool, learners: int):
    period = int(rng.choice([1, 2, 4, 8, 16]))
    keys = {"period": period, "average": str(rng.choice(["allreduce", "server"]))}
    return keys, {}, lambda learners: learners * period


KIND = Kind(Spec, loop, build, predict, aggregate_s, draw)
