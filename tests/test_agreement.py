"""The agreement suite: the closed form against the simulator on random
scenarios over the whole space a user can write (asgdsim/agreement.py).

The bounds are the issue's (5 % epoch time, 5 % mean mini-batch, 10 % mean
staleness or 0.1 absolute below 1), each widened by three standard errors of
the simulated figure. At least 95 % of the draw must agree; a scenario the
closed form labels as outside its assumptions is reported, and the share
that disagrees without a label is bounded too (see the README for the
regime that still does: GPUs packed at a shared resource that jostle under
small step noise).
"""

import math
from dataclasses import replace

import numpy as np
import pytest

from asgdsim import simulate
from asgdsim.agreement import check, draw, random_scenario, report, run_suite
from asgdsim.analytic import MAX_SKELETON_LEARNERS, predict
from asgdsim.costs import costs_of
from asgdsim.scenario import scenario_from_dict

SCENARIOS, SEED = 200, 0


def test_random_scenarios_span_every_axis():
    data = draw(SCENARIOS, SEED)
    kinds = {d["algorithm"]["kind"] for d in data}
    computes = {d["timing"]["compute"] if isinstance(d["timing"]["compute"], str)
                else d["timing"]["compute"]["distribution"] for d in data}
    assert kinds == {"sprint", "async", "sync", "allreduce", "local-sgd", "downpour", "softsync", "k-sync",
                     "k-batch-sync", "k-async", "k-batch-async", "ssp"}
    assert computes >= {"table", "roofline", "deterministic", "exponential", "shifted-exponential",
                        "uniform", "gamma", "lognormal"}
    assert {d["timing"]["communication"] for d in data} == {"ideal", "modelled"}
    assert {d["workload"].get("input", "real") for d in data} == {"real", "cached", "synthetic"}
    assert any(d["timing"].get("jitter") == "none" for d in data)
    assert any("machine" in d["cluster"] for d in data) and any("gpu" in d["cluster"] for d in data)
    # clusters past the learners the closed form walks one by one, whose
    # rounds it then forms otherwise
    assert any(scenario_from_dict(d).cluster.learners > MAX_SKELETON_LEARNERS for d in data)
    steps = [d for d in data if "epochs" in d["stop"]]
    assert steps and {"gradients", "updates"} <= {k for d in data for k in d["stop"]}
    # every draw is a valid scenario, and the same seed draws the same ones
    for d in data[:20]:
        scenario_from_dict(d)
    assert random_scenario(np.random.default_rng(5)) == random_scenario(np.random.default_rng(5))


def test_closed_form_agrees_with_the_simulator_on_random_scenarios():
    table = run_suite(SCENARIOS, SEED)
    print(report(table))
    agree = table["agrees"].mean()
    unlabelled = (~table["agrees"] & ~table["outside"]).mean()
    assert agree >= 0.95, report(table)
    # the aim is a true unlabelled share of 2.5 % at most; a draw of n
    # scenarios refutes it only beyond two binomial standard errors
    n = len(table)
    assert unlabelled <= 0.025 + 2 * np.sqrt(0.025 * 0.975 / n), report(table)
    for kind, share in table.groupby("algorithm")["agrees"].mean().items():
        assert share >= 0.85, (kind, share)


def test_misbehaving_clusters_are_agreed_on_or_labelled():
    """The same draws with failures or mixed nodes (cluster.groups) on every
    one (issue 12): the closed form is exact for few of them (async with
    exponential steps and failures, sync and async over groups) and labels
    the rest, so the share that agrees is reported, not held to 95 %; what
    disagrees unlabelled is held to the main draw's bound."""
    data = draw(60, SEED, misbehaving=True)
    assert sum("groups" in d["cluster"] for d in data) >= 10
    scopes = {d["faults"]["failures"]["scope"] for d in data if "failures" in d.get("faults", {})}
    assert scopes == {"learner", "node"}
    table = run_suite(60, SEED, misbehaving=True)
    print(report(table))
    unlabelled = (~table["agrees"] & ~table["outside"]).mean()
    assert unlabelled <= 0.025 + 2 * np.sqrt(0.025 * 0.975 / len(table)), report(table)
    # the exact cases do agree: they are not all labelled away
    assert table["agrees"].sum() >= 0.3 * len(table), report(table)


def test_a_run_of_rounds_spreads_as_its_largest_steps():
    # exponential steps of mean m: the largest of L has variance m^2 sum 1/i^2
    # and mean m H_L; a run of R rounds of that mean spreads by sd / (mean sqrt R)
    import math

    import pandas as pd

    from asgdsim.agreement import _rounds_se
    from asgdsim.distributions import Law

    learners, rounds, m = 6, 25, 0.5
    sc = scenario_from_dict({"name": "rounds", "workload": {"model": "alexnet", "sub_batch": 32, "dataset_samples": 6400},
                             "cluster": {"gpu": "V100", "gpus_per_node": learners, "nodes": 1,
                                         "network": "ib-edr"},
                             "algorithm": {"kind": "sync"}})
    mean = m * sum(1 / i for i in range(1, learners + 1))
    sd = m * math.sqrt(sum(1 / i**2 for i in range(1, learners + 1)))
    u = pd.DataFrame({"t": mean * np.arange(1, rounds + 1)})
    got = _rounds_se(sc, replace(costs_of(sc), compute=Law("exponential", "expon", scale=m)), u)
    assert got == pytest.approx(sd / mean / math.sqrt(rounds), rel=1e-4)


def test_a_slow_learner_spreads_the_rounds_by_its_own_law():
    # 6 learners of exponential steps, mean 0.5 s, learner 0 twice as slow:
    # a round is the largest of the six, whose spread is mostly the slow
    # one's (agreement draw seed 3 random-92, shifted: local SGD with a slow
    # learner, 35 rounds, 9 % apart and unlabelled against a bound taken
    # from the others' law). Against 400,000 seeded rounds: the sd of a
    # sample that large is within 0.5 % of the law's
    import pandas as pd

    from asgdsim.agreement import _rounds_se
    from asgdsim.distributions import Law

    learners, rounds, m = 6, 25, 0.5
    sc = scenario_from_dict({"name": "slow", "workload": {"model": "alexnet", "sub_batch": 32,
                                                         "dataset_samples": 6400},
                             "cluster": {"gpu": "V100", "gpus_per_node": learners, "nodes": 1,
                                         "network": "ib-edr"},
                             "algorithm": {"kind": "sync"},
                             "faults": {"slow_learners": {"learners": [0], "slowdown": 2.0}}})
    costs = replace(costs_of(sc), compute=Law("exponential", "expon", scale=m))
    steps = np.random.default_rng(11).exponential(m, size=(400_000, learners))
    steps[:, 0] *= 2
    largest = steps.max(axis=1)
    mean = largest.mean()
    u = pd.DataFrame({"t": mean * np.arange(1, rounds + 1)})
    expected = largest.std() / mean / math.sqrt(rounds)
    assert _rounds_se(sc, costs, u) == pytest.approx(expected, rel=0.005)
    # the others' law alone understates it by a third
    alone = _rounds_se(sc.model_copy(update={"faults": type(sc.faults)()}), costs, u)
    assert alone < 0.7 * expected


def test_a_run_of_few_updates_is_rounded_to_the_update_grid():
    # SPRINT on 5 K40s, 6 steps each: 7 updates of a 0.64 s cycle, and the
    # epoch is 1.79 or 1.92 s by seed (agreement seed 2 #76): the bound
    # takes the rounding of the end to a cycle (T / sqrt(12) of the run)
    from asgdsim.agreement import BOUNDS, Z
    data = {"name": "few-updates", "seed": 2011304220,
            "workload": {"model": "resnet152", "dataset_samples": 179, "sub_batch": 32},
            "cluster": {"gpu": "K40", "network": "10gbe", "gpus_per_node": 1,
                        "host_link": "pcie2-x16", "nodes": 5,
                        "topology": {"kind": "fat-tree", "nodes_per_switch": 2,
                                     "oversubscription": 2.0}},
            "algorithm": {"kind": "sprint"},
            "timing": {"compute": "table", "communication": "modelled"},
            "stop": {"epochs": 5.0}}
    sc = scenario_from_dict(data)
    res = simulate(sc)
    t_end, cycle = float(res.updates["t"].iloc[-1]), res.summary["analytic"]["t_update_s"]
    row = check(data)
    assert row["epoch_time_bound"] >= BOUNDS["epoch_time"] + Z * cycle / math.sqrt(12) / t_end
    # (the steps' noise alone gave a bound of 6.1 %, and the run is 6.4 % off)
    assert row["agrees"]


def test_k_async_of_every_learner_is_bounded_as_rounds():
    # K = L is sync: each update waits for every learner, so a run of few
    # rounds spreads by the largest step's sd over sqrt(rounds), not by the
    # renewal spread of its gradients (agreement draw seed 18 random-176,
    # shifted: 133 learners, lognormal steps of cv 1.1, 16 rounds, 12.5 %
    # apart against a bound without it). Here 16 learners, 10 rounds: the
    # rounds' spread is twice the renewal one
    from asgdsim.agreement import BOUNDS, Z, _rounds_se

    data = {"name": "k-is-l", "seed": 5,
            "workload": {"model": "alexnet", "dataset_samples": 2560, "sub_batch": 16},
            "cluster": {"gpu": "V100", "gpus_per_node": 16, "nodes": 1, "network": "ib-edr"},
            "algorithm": {"kind": "k-async", "k": 16},
            "timing": {"compute": {"distribution": "lognormal", "mean": "30 ms", "cv": 1.1},
                       "communication": "ideal"},
            "stop": {"epochs": 1.0}}
    row = check(data)
    sc = scenario_from_dict(data, source="k-is-l")
    res = simulate(sc)
    rounds = _rounds_se(sc, res.costs, res.updates)
    assert rounds > 0.02
    assert row["epoch_time_bound"] >= BOUNDS["epoch_time"] + Z * rounds - 1e-12


def test_k_sync_rounds_spread_as_their_kth_step():
    """A k-sync round is the K-th of L fresh steps; with a heavy tail its
    spread is many times its mean (the 2nd of 16 gamma steps of cv 3: cv
    about 20), and 1,000 rounds sample it poorly: 0.0295 s an epoch
    simulated against the closed form's exact 0.0541 (a helper's hunt,
    judged a disagreement against a bound of 25 %). The bound now takes the
    K-th's spread; its moments are the law's quantile of a Beta(K, L - K + 1)."""
    from asgdsim.distributions import law_from_spec, order_moments
    from asgdsim.specs import LawSpec

    law = law_from_spec(LawSpec.model_validate({"distribution": "lognormal", "mean": 1.0,
                                                "cv": 0.5}))
    kth = np.sort(law.sample(np.random.default_rng(3), 64 * 100_000).reshape(-1, 64), axis=1)[:, 7]
    mean, sd = order_moments(law, 8, 64)
    assert mean == pytest.approx(kth.mean(), abs=4 * kth.std() / math.sqrt(len(kth)))
    assert sd == pytest.approx(kth.std(), rel=0.02)
    # the extremes of many, whose mass sits in the law's far tails (a review
    # found a quadrature over the Beta's probability missing them: the first
    # of 16,384 uniform steps of cv 0.3 at 0.304, sd 0.23, for 0.480, 6e-5)
    uniform = law_from_spec(LawSpec.model_validate({"distribution": "uniform", "mean": 1.0,
                                                    "cv": 0.3}))
    width = 2 * math.sqrt(3) * 0.3
    for k, exact in ((1, 1 - width / 2 + width / 16_385), (16_384, 1 + width / 2 - width / 16_385)):
        mean, sd = order_moments(uniform, k, 16_384)
        # the k-th of n uniforms is a Beta(k, n - k + 1) on the law's span
        assert mean == pytest.approx(exact, rel=1e-9)
        assert sd == pytest.approx(width * math.sqrt(16_384) / 16_385 / math.sqrt(16_386),
                                   rel=1e-6)
    data = {"name": "k-sync-heavy", "seed": 1,
            "workload": {"model": "resnet50", "dataset_samples": 1281167, "sub_batch": 32},
            "cluster": {"gpu": "V100", "gpus_per_node": 8, "nodes": 2, "network": "ib-edr"},
            "algorithm": {"kind": "k-sync", "k": 2},
            "timing": {"compute": {"distribution": "gamma", "mean": "100 ms", "cv": 3},
                       "communication": "ideal"},
            "stop": {"gradients": 2000}}
    row = check(data)
    assert row["epoch_time_err"] > 0.4 and row["agrees"]


def test_a_sprint_run_of_one_update_has_no_staleness():
    # 80 V100s, exponential steps of 118.7 ms, SPRINT's fixed 824.9 ms
    # cycle, 427 gradients: the stop comes in the first window, whose update
    # (at two cycles) is the run's only one, so every gradient read the
    # initial weights. The steady windows' law said 0.144 (agreement draw
    # seed 18 random-86, unlabelled)
    sc = scenario_from_dict({
        "name": "one-update", "seed": 5,
        "workload": {"model": "vgg11", "dataset_samples": 10931, "sub_batch": 128},
        "cluster": {"gpu": "V100", "network": "ib-qdr", "gpus_per_node": 4,
                    "host_link": "pcie2-x16", "gpus_per_host_link": 2, "rails": 2, "nodes": 20},
        "algorithm": {"kind": "sprint"},
        "timing": {"compute": {"distribution": "exponential", "mean": "118.7 ms"},
                   "communication": "ideal", "update_interval": "824.9 ms"},
        "stop": {"gradients": 427}})
    pred = predict(sc)
    assert pred.staleness.mean == 0 and pred.laws["staleness"].startswith("exact")
    for seed in range(3):
        res = simulate(sc, seed=seed)
        assert len(res.updates) == 1 and (res.gradients["staleness"] == 0).all()


def test_sprint_gpus_keep_their_turns_at_a_link_they_share():
    # agreement seed 12 random-84: SPRINT on DGX-1 nodes of 2 GPUs, which
    # share a PCIe link (49 % busy: 6.5 ms of weights in, 6.5 of gradient
    # out, per 54 ms step), under uniform steps of cv 0.094. Two steps
    # differ by more than a transfer on 23 % of steps only, so the GPUs
    # mostly keep their turns at the link, at the schedule's pace (64.8 ms
    # a step), and reshuffle on the rest, at independent phases' (54.3 ms);
    # simulated 62.0 ms. After the phases mix across nodes the closed form
    # took the latter: the epoch 11.5 % short, now within 2 %
    data = {"name": "random-84", "seed": 92239317,
            "workload": {"model": "resnet50", "dataset_samples": 19200, "sub_batch": 8},
            "cluster": {"machine": "dgx1-v100", "gpus_per_node": 2, "nodes": 10},
            "algorithm": {"kind": "sprint"},
            "timing": {"compute": "table", "jitter": {"distribution": "uniform", "cv": 0.094},
                       "communication": "modelled"},
            "stop": {"epochs": 5.0}}
    row = check(data)
    assert row["agrees"] and not row["outside"]
    assert row["epoch_time_err"] < 0.02 and row["minibatch_mean_err"] < 0.02
