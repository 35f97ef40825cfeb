"""``softsync`` (Rudra's n-softsync, Zhang, Gupta et al. 2016) and
``k-batch-async`` (Dutta et al. 2018): the server applies an update each
time it holds c gradients, from any learners (c = max(1, floor(L / n)) for
n-softsync, K for K-batch-async). A learner never waits: after each push it
takes the newest weights, including the update its push completed, and goes
on. With c = 1 both are ``async``, and run on its components.

The closed form rests on one observation. The gradients arrive exactly as
in ``async`` (the learners never wait for a batch; the update's CPU time is
spread over the c pushes of its batch). A gradient pushed as the j-th of
the run, whose learner pushed before as the (j - A - 1)-th, so that A
others arrived in between (``async``'s staleness), read the version of
floor((j - A - 1) / c) updates and is applied by update ceil(j / c): its
staleness is floor((r + A) / c), r = (j - A - 1) mod c. In steady state r
is uniform on 0..c-1 and independent of A (the pushes' count modulo c is a
doubly stochastic chain), so E = E[A] / c: Zhang et al.'s "about n" is
(L - 1) / c.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import ClassVar, Literal

import numpy as np

from ..specs import Count, _Spec
from .kind import Kind, draw_k, powers_of_two
from .server import ASYNC, loop, predict_async, wire


class SoftsyncSpec(_Spec):
    kind: Literal["softsync"]
    #: the server applies an update every max(1, floor(L / n)) gradients
    n: Count
    at_most_learners: ClassVar[tuple[str, ...]] = ("n",)


class KBatchAsyncSpec(_Spec):
    kind: Literal["k-batch-async"]
    #: the server applies an update every k gradients, from any learners
    k: Count


def batch_of(scenario) -> int:
    """Gradients per update."""
    algorithm = scenario.algorithm
    if algorithm.kind == "softsync":
        return max(1, scenario.cluster.learners // algorithm.n)
    return algorithm.k


def build(env, scenario, costs, weights, recorder, seed):
    from ..components.family import BatchServer
    from ..components.server import ServerLearner

    batch = batch_of(scenario)
    if batch == 1:
        return ASYNC.build(env, scenario, costs, weights, recorder, seed)
    server = BatchServer(env, weights, recorder, costs.server_update_s, batch)
    return wire(env, scenario, costs, seed, "server", server, ServerLearner)


def predict(scenario, costs):
    from ..analytic import OUTSIDE, SCHEDULED_APPLIES, Run, missed_pushers, stops_before_first
    from ..analytic import predict_async as closed_form
    from ..pmf import Pmf

    c, learners = batch_of(scenario), scenario.cluster.learners
    if c == 1:
        return predict_async(scenario, costs)
    run = Run.of(scenario)
    # the run ends with the update that completes the c-th of a batch
    target = run.target_gradients
    stop = scenario.stop
    if target != math.inf:
        stop = stop.model_copy(update={"epochs": None, "gradients": c * math.ceil(target / c)})
    elif stop.updates:
        stop = stop.model_copy(update={"updates": c * stop.updates})
    gradients_run = scenario.model_copy(update={"stop": stop})
    # the update's CPU time, spread over the c pushes of its batch
    base = closed_form(gradients_run, replace(costs, server_update_s=costs.server_update_s / c),
                       batch=c)
    gradients = base.gradients
    if target == math.inf:
        gradients = c * math.floor(gradients / c)
    # a time stop before the first batch is complete: one update's figures,
    # labelled (an epoch of NaN said nothing: 29 gradients by 3.9 s, batches
    # of 32; a review)
    before_first = gradients < c and scenario.stop.time is not None
    gradients = max(gradients, c)
    t_last = base.epoch_time_s * base.gradients * scenario.workload.sub_batch \
        / scenario.workload.dataset_samples
    # (the port spaces the pushes by its message time a: the pushers i a
    # after a batch completes (i < c), while its update (s long) applies,
    # read the weights before it; base's staleness counts them)
    missed = missed_pushers(costs.server_update_s, base.bound, base.t_update_s, c)
    staleness = base.staleness
    exact = base.laws["staleness"].startswith("exact") and costs.server_update_s == 0
    # async's staleness law names the schedule where it walked one
    scheduled = SCHEDULED_APPLIES in base.laws["staleness"] and not missed
    laws = {
        "minibatch": f"exact: {c} gradients per update",
        "epoch_time": base.laws["epoch_time"] + " (async's arrivals: nobody waits for a batch)",
        "staleness": (("exact: " if exact else "approximation: ") + (
            f"the periodic schedule's applies, in updates of {c}" if scheduled else
            f"floor((r + A) / {c}), A async's staleness, r uniform on 0..{c - 1} "
            "(0 for the first round's gradients, all on the first weights)"
            + ("" if exact else "; " + base.laws["staleness"].split(": ", 1)[-1]))),
    }
    if costs.server_update_s and not base.outside_assumptions:
        laws["epoch_time"] += "; the pusher that completes a batch waits for its update, " \
                              "counted as 1/c of an update per push"
    if missed:
        # the mean counts them (three port-bound draws of 8 to 15 learners:
        # 4.0, 3.96 and 2.25 simulated, 3.5, 3.48 and 2.0 without, 4.0, 3.98
        # and 2.25 with); which pusher misses the update, though, is the
        # ports' schedule's (a pull queued at the way out reads later than
        # its push), not its place's: the law's shape is the approximation's
        laws["staleness"] += (f"; at the saturated port the {missed} of every {c} pushers "
                              "that follow a batch's last by less than its update read the "
                              "weights before it, one version more")
    if before_first:
        laws["assumptions"] = stops_before_first(
            scenario.stop.time, f"batch of {c} gradients",
            f"{base.gradients:.0f} gradients by then")
    elif base.outside_assumptions:
        laws["assumptions"] = base.outside_assumptions
    elif base.bound == "server":
        # async's staleness has each pusher wait for its own update; here
        # only a batch's completing pusher does, and the batches queue at
        # the CPU while the others read weights the queue has not reached
        laws["assumptions"] = (
            f"{OUTSIDE}: the server's CPU sets the pace: batches queue for it while the "
            f"pushers that did not complete one read weights the queue has not reached, "
            "which async's staleness (each pusher waiting for its own update) does not count")
    elif costs.server_update_s and learners * costs.compute.cv < 1 and staleness.mean < 10:
        # the pusher that completes a batch waits for its update; where the
        # step's noise is small against the learners' spacing (L x cv < 1:
        # 4 learners at cv 0.014 keep their order, 128 at 0.02 reshuffle it,
        # as their runs show) the learners keep that order: r follows the lockstep
        # schedule, not uniform, which moves each staleness by up to one version
        laws["assumptions"] = (
            f"{OUTSIDE}: steps this steady (cv {costs.compute.cv:.2g}, under 1 / L for "
            f"{learners} learners) keep the learners' pushes in one order, in which the batch's "
            f"completing pusher waits for its update, so the pushes' count modulo {c} follows "
            f"the schedule, not uniform on 0..{c - 1}: the staleness (mean "
            f"{staleness.mean:.2g}) can be off by up to one version")
    return replace(base, scenario=scenario, t_update_s=c * base.t_update_s,
                   epoch_time_s=run.epoch_time(t_last, gradients),
                   staleness=staleness, gradients_per_update=Pmf.point(c), laws=laws,
                   gradients=gradients, updates=gradients / c)


def draw_softsync(rng, ideal: bool, learners: int):
    n = min(learners, int(rng.choice([1, 2, 4, 8, 16, 64])))
    return {"n": n}, {}, lambda learners: max(1, learners // n)


SOFTSYNC = Kind(SoftsyncSpec, loop, build, predict, draw=draw_softsync,
                knob=lambda learners: ("n", powers_of_two(learners)))
K_BATCH_ASYNC = Kind(KBatchAsyncSpec, loop, build, predict, draw=draw_k([0.125, 0.25, 0.5, 1, 2]),
                     knob=lambda learners: ("k", powers_of_two(4 * learners)))
