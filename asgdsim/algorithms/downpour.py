"""``downpour``: the parameter server of DistBelief (Dean et al. 2012) and
GPU A-SGD. A learner fetches the weights every ``n_fetch`` steps and pushes
the sum of its last ``n_push`` gradients as one message, without waiting
for it to be applied; the weights are split evenly over ``servers`` shards,
and every message goes to all of them. ``async`` is the case n_fetch =
n_push = 1 (push, then take the newest weights), and runs on the same
components."""

from __future__ import annotations

from functools import partial
from typing import Literal

from ..specs import StepsBetween
from .kind import Kind
from .server import ASYNC, Shards, draw_shards, loop, wire


class Spec(Shards):
    kind: Literal["downpour"]
    n_fetch: StepsBetween = 1
    n_push: StepsBetween = 1


def build(env, scenario, costs, weights, recorder, seed):
    from ..components.server import AsyncServer, DownpourLearner

    algorithm = scenario.algorithm
    if algorithm.n_fetch == algorithm.n_push == 1:
        # async's learner: the same timeline, with the per-step bookkeeping
        # of messages and fetches left out of the hot loop
        return ASYNC.build(env, scenario, costs, weights, recorder, seed)
    server = AsyncServer(env, weights, recorder, costs.server_update_s)
    return wire(env, scenario, costs, seed, "server", server,
                partial(DownpourLearner, n_fetch=algorithm.n_fetch, n_push=algorithm.n_push))


def predict(scenario, costs):
    from ..analytic import predict_downpour
    return predict_downpour(scenario, costs)


def draw(rng, ideal: bool, learners: int):
    keys = {"n_fetch": int(rng.choice([1, 1, 2, 3, 8])), "n_push": int(rng.choice([1, 1, 2, 4, 8])),
            **draw_shards(rng)}
    return keys, {}, lambda learners: 1


KIND = Kind(Spec, loop, build, predict, draw=draw)
