"""The asynchronous family between sync and async: softsync, k-sync,
k-batch-sync, k-async, k-batch-async and ssp (asgdsim/algorithms/).

Timelines by hand on tiny clusters with fixed steps; seeded runs against
the exact laws with tolerances from the sample (z standard errors, batch
means where values are correlated); the special cases against the kinds
they generalise; SSP's bound checked at every step.
"""

import math

import numpy as np
import pytest

from asgdsim import predict, simulate
from asgdsim.analytic import batched_staleness
from asgdsim.pmf import Pmf
from asgdsim.scenario import ScenarioError, scenario_from_dict

from conftest import batch_means_se, check_pmf, make, outside_assumptions

EXP = {"distribution": "exponential", "mean": 1.0}
FIXED = {"distribution": "deterministic", "mean": 0.01}
Z = 4.0


def kind(algorithm: dict, learners: int = 4, compute=FIXED, **overrides):
    return make(cluster__gpus_per_node=learners, algorithm=algorithm, timing__compute=compute,
                **overrides)


def harmonic(n: int) -> float:
    return math.fsum(1.0 / i for i in range(1, n + 1))


# -- timelines by hand -----------------------------------------------------------------------

def test_softsync_timeline_by_hand():
    # 4 learners, n = 2: an update every 2 gradients. At 10 ms all push in
    # order: 0 holds (takes version 0), 1 completes update 1 (takes 1), 2
    # holds (takes 1), 3 completes update 2 (takes 2); at 20 ms the same
    # order: updates 3 (learners 0, 1) and 4 (2, 3)
    res = simulate(kind({"kind": "softsync", "n": 2}, stop__updates=4))
    u, g = res.updates, res.gradients
    assert u["t"].tolist() == pytest.approx([0.01, 0.01, 0.02, 0.02])
    assert u["minibatch"].tolist() == [2, 2, 2, 2]
    second = g[g["version_applied"] >= 3].sort_values("learner")
    assert second["version_read"].tolist() == [0, 1, 1, 2]
    assert second["staleness"].tolist() == [2, 1, 2, 1]


def test_k_sync_timeline_by_hand():
    # 3 learners, K = 2: at every 10 ms the first two close the round, the
    # third's gradient is dropped; all restart on the new weights
    res = simulate(kind({"kind": "k-sync", "k": 2}, learners=3, stop__updates=5))
    assert res.updates["t"].tolist() == pytest.approx([0.01, 0.02, 0.03, 0.04, 0.05])
    assert res.updates["minibatch"].tolist() == [2] * 5
    assert res.gradients["learner"].tolist() == [0, 1] * 5
    assert (res.gradients["staleness"] == 0).all()
    assert res.summary["cancelled_steps"] == 5


def test_k_batch_sync_timeline_by_hand():
    # 2 learners, K = 3: at 10 ms both push and start again on the same
    # weights; at 20 ms learner 0's third gradient closes the round and
    # learner 1's is dropped
    res = simulate(kind({"kind": "k-batch-sync", "k": 3}, learners=2, stop__updates=3))
    u, g = res.updates, res.gradients
    assert u["t"].tolist() == pytest.approx([0.02, 0.04, 0.06])
    assert g["learner"].tolist()[:3] == [0, 1, 0]
    assert g["version_read"].tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert res.summary["cancelled_steps"] == 3


@pytest.mark.parametrize("case", ["start", "schedule", "left over"])
def test_k_async_run_of_a_few_steps_from_a_common_start(case):
    """Hunts: (start) 64 learners, K = 4, lognormal steps of cv 0.5, 80
    gradients: the first update is the 4th of 64 fresh steps, not the
    steady spacing (33 % short, unlabelled, without it; 4 % with); (schedule)
    257 learners, K = 4, uniform steps of cv 0.1, 1,032 gradients, a few
    updates past a step: the schedule's bursts, each learner drifting by
    its noise, not a whole step later (8.7 % long; 0.8 %); (left over) 12
    learners, K = 5, steps of cv 0.02, 100 updates: a period's bursts are
    the 10 released learners', the 2 left over wait (19 % short counting
    all 12 a step; 0.0 %)."""
    from asgdsim.agreement import check

    tiny = {"name": "tiny", "parameters": 200000, "forward_flops": "2 GFLOP"}
    if case == "start":
        cluster, law, n = {"gpus_per_node": 8, "nodes": 8}, {"distribution": "lognormal",
                                                             "mean": "779 ms", "cv": 0.5}, 80
    elif case == "schedule":
        cluster, law, n = {"gpus_per_node": 1, "nodes": 257}, {"distribution": "uniform",
                                                               "mean": "2276 ms", "cv": 0.1}, 1032
    else:
        cluster, law, n = {"gpus_per_node": 4, "nodes": 3}, {"distribution": "lognormal",
                                                             "mean": "100 ms", "cv": 0.02}, 500
    row = check({"name": case, "seed": 29,
                 "workload": {"model": tiny, "dataset_samples": 100000, "sub_batch": 32},
                 "cluster": {"gpu": "V100", "network": "ib-edr", **cluster},
                 "algorithm": {"kind": "k-async", "k": 5 if case == "left over" else 4},
                 "timing": {"compute": law, "communication": "ideal"},
                 "stop": {"gradients": n}})
    assert row["agrees"] and not row["outside"] and row["epoch_time_err"] < 0.05, row


def test_k_async_timeline_by_hand():
    # 3 learners, K = 2: at 10 ms learners 0 and 1 make update 1, 2 waits;
    # at 20 ms 0 joins 2 (update 2, released) and 1 waits for the next
    res = simulate(kind({"kind": "k-async", "k": 2}, learners=3, stop__updates=4))
    u, g = res.updates, res.gradients
    assert u["t"].tolist() == pytest.approx([0.01, 0.02, 0.03, 0.04])
    assert g["learner"].tolist()[:4] == [0, 1, 2, 0]
    # learner 2 read version 0 and was applied by update 2: staleness 1
    assert g[(g["learner"] == 2)]["staleness"].tolist()[0] == 1
    # the closed form walks the same schedule
    pred = predict(kind({"kind": "k-async", "k": 2}, learners=3, stop__updates=4))
    check = Pmf.of_samples(g["staleness"].to_numpy())
    assert pred.staleness.values.tolist() == check.values.tolist()
    assert pred.staleness.probs == pytest.approx(check.probs)
    assert pred.epoch_time_s == pytest.approx(res.summary["epoch_time_s"])


@pytest.mark.parametrize("learners,k", [(5, 2), (7, 3), (16, 5), (12, 12), (9, 1)])
def test_k_async_fixed_steps_agree_exactly(learners, k):
    sc = kind({"kind": "k-async", "k": k}, learners=learners, stop__gradients=40 * learners)
    res, pred = simulate(sc), predict(sc)
    check = Pmf.of_samples(res.gradients["staleness"].to_numpy())
    assert pred.staleness.values.tolist() == check.values.tolist()
    assert pred.staleness.probs == pytest.approx(check.probs)
    assert pred.epoch_time_s == pytest.approx(res.summary["epoch_time_s"])


# -- exact laws, seeded ----------------------------------------------------------------------

@pytest.mark.parametrize("spec", [{"kind": "softsync", "n": 4}, {"kind": "k-batch-async", "k": 3}])
def test_batched_staleness_law(spec):
    # exponential steps: A geometric with mean M - 1; the staleness is
    # floor((r + A) / c), mean (M - 1) / c
    m, n = 16, 120_000
    sc = kind(spec, learners=m, compute=EXP, stop__gradients=n)
    res, pred = simulate(sc), predict(sc)
    c = 4 if spec["kind"] == "softsync" else 3
    staleness = res.gradients["staleness"].to_numpy()[2000:]
    assert abs(staleness.mean() - (m - 1) / c) <= Z * batch_means_se(staleness) + 0.01
    p = 1 / m
    law = batched_staleness(Pmf.from_probs(0, p * (1 - p) ** np.arange(600)), c)
    check_pmf(staleness, law)
    assert pred.staleness.mean == pytest.approx((m - 1) / c, rel=0.01)
    assert (res.updates["minibatch"] == c).all()


def test_batched_staleness_transform_by_hand():
    # A = 5 for sure, c = 2: r = 0 gives floor(5/2) = 2, r = 1 gives 3
    law = batched_staleness(Pmf.point(5), 2)
    assert law.values.tolist() == [2, 3] and law.probs.tolist() == [0.5, 0.5]


def test_batched_staleness_of_pushers_that_read_before_the_last_update():
    # brute force: floor((r + A) / c), one more for r = 1..missed
    arrivals = Pmf.from_probs(0, np.random.default_rng(7).random(40))
    for c in (2, 3, 8, 41):
        for missed in range(c):
            out = np.zeros((arrivals.values[-1] + c - 1) // c + 2)
            for r in range(c):
                np.add.at(out, (arrivals.values + r) // c + (1 <= r <= missed), arrivals.probs / c)
            got = batched_staleness(arrivals, c, missed)
            expected = Pmf.from_probs(0, out)
            assert np.array_equal(got.values, expected.values), (c, missed)
            assert np.allclose(got.probs, expected.probs, rtol=1e-12, atol=0), (c, missed)


def test_k_batch_async_pushers_at_a_saturated_port_read_before_the_batchs_update():
    # 8 M60 learners on one node, K = 2, the server's port 19.3 ms a
    # message, its update 23.5 ms: the pusher after a batch's last reads
    # while that batch's update applies, one version short (agreement draw
    # seed 6 random-139, shifted: 3.5 closed form against 4.0 simulated,
    # unlabelled): the mean within the sample's error
    data = {"name": "port-bound", "seed": 1551473520,
            "workload": {"model": "resnet152", "dataset_samples": 320288, "sub_batch": 16},
            "cluster": {"gpu": "M60", "network": "ib-edr", "gpus_per_node": 8,
                        "host_link": "pcie4-x16", "nodes": 1},
            "algorithm": {"kind": "k-batch-async", "k": 2},
            "timing": {"compute": {"distribution": "shifted-exponential", "mean": "32.24 ms",
                                   "shift": "23.03 ms"},
                       "communication": "modelled"},
            "stop": {"epochs": 0.5}}
    sc = scenario_from_dict(data, source=data["name"])
    res, pred = simulate(sc), predict(sc)
    assert "1 of every 2 pushers" in pred.laws["staleness"]
    staleness = res.gradients["staleness"].to_numpy()[500:]
    assert abs(staleness.mean() - pred.staleness.mean) <= Z * batch_means_se(staleness) + 0.01


def test_pushes_within_an_update_by_the_equilibrium_chance():
    """Exponential steps and nothing else in the loop: another learner
    pushes within s of a batch's last with chance 1 - exp(-s / mean), each
    independently, so the places missed are Binomial(L - 1, q), at most
    c - 1 (capped: the c-th starts the next batch)."""
    from asgdsim.analytic import read_during_update
    from asgdsim.distributions import law_from_spec
    from asgdsim.specs import LawSpec

    law = law_from_spec(LawSpec(distribution="exponential", mean=1.0))
    q = 1 - math.exp(-0.5)
    counts, probs = read_during_update(0.5, law, 1.0, 4, 8)
    assert list(counts) == [0, 1, 2, 3]
    assert probs == pytest.approx([math.comb(3, k) * q**k * (1 - q)**(3 - k) for k in range(4)],
                                  rel=1e-6)
    # batches of 2: one place can be missed, by any of the three
    counts, probs = read_during_update(0.5, law, 1.0, 4, 2)
    assert list(counts) == [0, 1]
    assert probs == pytest.approx([(1 - q) ** 3, 1 - (1 - q) ** 3], rel=1e-6)
    # steps of at least 1 s: another learner's next push, from a random
    # phase, is within 0.5 s with chance 0.5 / 2 (its survival is 1 there);
    # constant steps are the schedule's, not a chance
    slow = law_from_spec(LawSpec(distribution="shifted-exponential", mean=2.0, shift=1.0))
    counts, probs = read_during_update(0.5, slow, 2.0, 4, 2)
    assert probs[0] == pytest.approx(0.75 ** 3, rel=1e-9)
    assert read_during_update(0.5, law_from_spec(LawSpec(distribution="deterministic", mean=1.0)),
                              1.0, 4, 2) is None


def test_softsync_pushers_that_come_during_an_update_read_before_it():
    # 4 V100s, VGG-16 (its update 54 ms on the host), batches of 2, steps of
    # cv 0.3 over HDR InfiniBand: nothing saturates the server's port, so
    # the noise decides who lands in an update (1.83 simulated; 1.50 closed
    # without them, unlabelled); the closed form within the agreement
    # suite's bound: 10 % of the staleness, widened by three standard errors
    data = {"name": "spread", "seed": 1,
            "workload": {"model": "vgg16", "sub_batch": 32, "dataset_samples": 20000},
            "cluster": {"gpu": "V100", "gpus_per_node": 4, "nodes": 1, "network": "ib-hdr"},
            "algorithm": {"kind": "softsync", "n": 2},
            "timing": {"compute": "table", "jitter": {"distribution": "lognormal", "cv": 0.3}},
            "stop": {"gradients": 4000}}
    sc = scenario_from_dict(data, source=data["name"])
    res, pred = simulate(sc), predict(sc)
    assert pred.outside_assumptions is None and "read the weights before it" in pred.laws["staleness"]
    staleness = res.gradients["staleness"].to_numpy()[500:]
    bound = 0.10 * max(staleness.mean(), 1.0) + 3 * batch_means_se(staleness)
    assert abs(pred.staleness.mean - staleness.mean()) <= bound
    # and it is the missed reads that close the gap: without them, 18 % short
    assert staleness.mean() - 1.5 > bound


def test_k_batch_sync_learners_that_share_a_host_link_queue_there_at_their_first_push():
    # 4 P100s, two to a PCIe link (dgx1-p100 with 2 GPUs a node), K = 4:
    # after a publication a node's two learners start together and push
    # together, so one waits out the other's gradient copy (15.5 ms of a 89
    # ms cycle) every round; the walk of their reads alone left that out
    # (agreement draw seed 15 random-137, shifted: 7.1 % apart, unlabelled).
    # Fixed steps: no sample error; the renewal's K-th event is the
    # approximation, held to 3 % (7.9 % off before, 1.4 % now)
    data = {"name": "shared-link", "seed": 26160748,
            "workload": {"model": "caffenet", "dataset_samples": 93440, "sub_batch": 16},
            "cluster": {"machine": "dgx1-p100", "gpus_per_node": 2, "nodes": 2},
            "algorithm": {"kind": "k-batch-sync", "k": 4},
            "timing": {"compute": "table", "jitter": "none", "communication": "modelled"},
            "stop": {"gradients": 2920}}
    sc = scenario_from_dict(data, source=data["name"])
    res, pred = simulate(sc), predict(sc)
    assert pred.epoch_time_s == pytest.approx(res.summary["epoch_time_s"], rel=0.03)


def test_k_sync_round_is_the_kth_order_statistic():
    # exponential steps: every round is the K-th of L fresh exponentials,
    # m (H_L - H_{L-K}), variance m^2 sum 1/(L-i)^2; rounds independent
    m, k = 12, 4
    sc = kind({"kind": "k-sync", "k": k}, learners=m, compute=EXP, stop__updates=20_000)
    rounds = np.diff(np.concatenate([[0.0], simulate(sc).updates["t"].to_numpy()]))
    mean = harmonic(m) - harmonic(m - k)
    sd = math.sqrt(sum(1 / (m - i) ** 2 for i in range(k)))
    assert abs(rounds.mean() - mean) <= Z * sd / math.sqrt(len(rounds))
    assert predict(sc).t_update_s == pytest.approx(mean, rel=1e-9)


def test_k_sync_round_for_any_law():
    # gamma steps: the closed form's E[X_(K:L)] by quadrature
    m, k = 10, 3
    law = {"distribution": "gamma", "mean": 1.0, "cv": 0.5}
    sc = kind({"kind": "k-sync", "k": k}, learners=m, compute=law, stop__updates=20_000)
    rounds = np.diff(np.concatenate([[0.0], simulate(sc).updates["t"].to_numpy()]))
    pred = predict(sc).t_update_s
    assert abs(rounds.mean() - pred) <= Z * rounds.std(ddof=1) / math.sqrt(len(rounds))


@pytest.mark.parametrize("law", [EXP, {"distribution": "gamma", "mean": 1.0, "cv": 0.5}])
def test_k_batch_sync_round_is_the_kth_event(law):
    # exponential: the superposition is Poisson, K m / L; gamma: the
    # integral of P(N(t) < K) over renewal counts
    m, k = 6, 9
    sc = kind({"kind": "k-batch-sync", "k": k}, learners=m, compute=law, stop__updates=20_000)
    res = simulate(sc)
    rounds = np.diff(np.concatenate([[0.0], res.updates["t"].to_numpy()]))
    pred = predict(sc).t_update_s
    if law is EXP:
        assert pred == pytest.approx(k / m, rel=1e-12)
    assert abs(rounds.mean() - pred) <= Z * rounds.std(ddof=1) / math.sqrt(len(rounds))
    assert (res.gradients["staleness"] == 0).all()
    # every step begun and not applied was cancelled
    assert res.summary["cancelled_steps"] > 0


def test_k_async_exponential_laws():
    # each update: the K-th of L exponentials; its K gradients a uniform
    # K-subset of the learners, so staleness geometric with p = K / L
    m, k = 12, 3
    sc = kind({"kind": "k-async", "k": k}, learners=m, compute=EXP, stop__updates=30_000)
    res, pred = simulate(sc), predict(sc)
    gaps = np.diff(np.concatenate([[0.0], res.updates["t"].to_numpy()]))
    mean = harmonic(m) - harmonic(m - k)
    sd = math.sqrt(sum(1 / (m - i) ** 2 for i in range(k)))
    assert abs(gaps.mean() - mean) <= Z * sd / math.sqrt(len(gaps))
    staleness = res.gradients["staleness"].to_numpy()[1000:]
    p = k / m
    assert abs(staleness.mean() - (1 - p) / p) <= Z * batch_means_se(staleness)
    check_pmf(staleness, Pmf.from_probs(0, p * (1 - p) ** np.arange(400)))
    assert pred.staleness.mean == pytest.approx((1 - p) / p, rel=0.01)
    assert pred.t_update_s == pytest.approx(mean, rel=1e-12)


def test_ssp_barrier_laws():
    # s = 0: rounds of E[max of L]; staleness U + V, uniform ranks
    m = 8
    sc = kind({"kind": "ssp", "staleness_bound": 0}, learners=m, compute=EXP,
              stop__gradients=8 * 20_000)
    res, pred = simulate(sc), predict(sc)
    ends = np.sort(res.gradients["t_applied"].to_numpy()).reshape(-1, m)[:, -1]
    rounds = np.diff(np.concatenate([[0.0], ends]))
    sd = math.sqrt(sum(1 / i**2 for i in range(1, m + 1)))
    assert abs(rounds.mean() - harmonic(m)) <= Z * sd / math.sqrt(len(rounds))
    staleness = res.gradients["staleness"].to_numpy()[m:]
    uniform = np.full(m, 1 / m)
    check_pmf(staleness, Pmf.from_probs(0, np.convolve(uniform, uniform)))
    assert "exact" in pred.laws["staleness"] and "exact" in pred.laws["epoch_time"]


def test_ssp_barrier_rounds_are_no_shorter_than_the_servers_applies():
    # s = 0 over 256 K20 learners with fixed steps, CaffeNet's 244 MB of
    # gradients: the server's CPU applies one in 23.8 ms, 6.10 s a round of
    # 256, while the walked lifts of the barrier came 5.79 s apart and left
    # the CPU's backlog to grow (271.6 s an epoch against 286.6 simulated:
    # agreement draw seed 5 random-144, unlabelled). A round takes at least
    # its applies: within 1 %
    sc = scenario_from_dict({
        "name": "cpu-bound-barrier", "seed": 5,
        "workload": {"model": "caffenet", "dataset_samples": 1536000, "sub_batch": 128,
                     "input": "cached", "input_copy": "uint8"},
        "cluster": {"gpu": "K20", "network": "100gbe", "gpus_per_node": 8,
                    "host_link": "pcie3-x16", "gpus_per_host_link": 2, "nodes": 32,
                    "topology": {"kind": "fat-tree", "nodes_per_switch": 4,
                                 "oversubscription": 2.0}},
        "algorithm": {"kind": "ssp", "staleness_bound": 0},
        "timing": {"compute": {"distribution": "deterministic", "mean": "777.9 ms"},
                   "communication": "modelled"},
        "stop": {"gradients": 12000}})
    res, pred = simulate(sc), predict(sc)
    assert pred.bound == "server"
    assert pred.epoch_time_s == pytest.approx(res.summary["epoch_time_s"], rel=0.01)


@pytest.mark.parametrize("gradients", [9, 12, 16, 17, 101])
def test_ssp_barrier_run_ends_at_its_last_gradients_place_in_its_round(gradients):
    """s = 0, modelled communication, 8 V100 learners over 10GbE: a stop
    inside a round waits for its gradient a pull and a step past the
    barrier, not a pro-rata share of the round (9 gradients: 958 s an epoch
    against the run's 1,508, unlabelled; a hunt). Within 1 %."""
    from asgdsim.agreement import check

    row = check({"name": "ssp0-midround", "seed": 1,
                 "workload": {"model": "resnet50", "dataset_samples": 100000, "sub_batch": 32},
                 "cluster": {"gpu": "V100", "network": "10gbe", "gpus_per_node": 4, "nodes": 2},
                 "algorithm": {"kind": "ssp", "staleness_bound": 0},
                 "timing": {"compute": {"distribution": "deterministic", "mean": "1784 ms"},
                            "communication": "modelled"},
                 "stop": {"gradients": gradients}})
    assert row["epoch_time_closed"] == pytest.approx(row["epoch_time_sim"], rel=0.01), row


@pytest.mark.parametrize("bound", [0, 1])
def test_ssp_fixed_steps_keep_their_order(bound):
    """12 learners' fixed steps end together: the last to push lets the
    others go and starts after them, as it pushed after them, so every
    gradient is stale by 11 as in async (it started first: 11 of 12 were
    stale by 12 and one by 0, a new user's trial; the closed form says
    exact)."""
    sc = kind({"kind": "ssp", "staleness_bound": bound}, learners=12,
              compute={"distribution": "deterministic", "mean": 0.1}, stop__gradients=1200)
    staleness = simulate(sc).gradients["staleness"].to_numpy()
    assert (staleness[12:] == 11).all()
    assert np.array_equal(predict(sc).staleness.values[predict(sc).staleness.probs > 0],
                          np.unique(staleness))


def test_ssp_never_starts_a_step_before_the_bound_lets_it():
    # shifted-exponential steps: a step began at most t_end - shift, and by
    # then every learner had pushed i - s gradients
    m, s, shift = 6, 2, 0.8
    law = {"distribution": "shifted-exponential", "mean": 1.0, "shift": shift}
    g = simulate(kind({"kind": "ssp", "staleness_bound": s}, learners=m, compute=law,
                      stop__gradients=6000)).gradients
    pushed = np.sort(g["t_end"].to_numpy())
    per_learner = {j: np.sort(t) for j, t in g.groupby("learner")["t_end"]}
    # when every learner had pushed c gradients: the latest of their c-th pushes
    def all_pushed(c: int) -> float:
        return max(t[c - 1] for t in per_learner.values()) if c > 0 else 0.0
    waited = 0
    for ends in per_learner.values():
        for i, t_end in enumerate(ends):
            if i - s > 0:
                assert t_end - shift >= all_pushed(i - s) - 1e-12
                waited += t_end - shift - all_pushed(i - s) < 0.2
    assert waited > 0 and len(pushed) == 6000    # the bound did hold learners back


# -- the kinds they generalise ------------------------------------------------------------------

def same(a: dict, b: dict) -> None:
    for key in ("epoch_time_s", "gradients", "updates", "staleness", "minibatch"):
        assert a[key] == b[key], key


@pytest.mark.parametrize("spec", [{"kind": "softsync", "n": 6}, {"kind": "k-batch-async", "k": 1},
                                  {"kind": "k-async", "k": 1},
                                  {"kind": "ssp", "staleness_bound": 1_000_000}])
def test_special_cases_are_async(spec):
    base = dict(learners=6, compute=EXP, stop__gradients=3000)
    same(simulate(kind(spec, **base)).summary, simulate(kind({"kind": "async"}, **base)).summary)


@pytest.mark.parametrize("communication", ["ideal", "modelled"])
def test_k_sync_with_every_learner_is_sync(communication):
    base = dict(learners=6, compute={"distribution": "gamma", "mean": 0.05, "cv": 0.4},
                stop__updates=300, timing__communication=communication)
    ksync = simulate(kind({"kind": "k-sync", "k": 6}, **base)).summary
    same(ksync, simulate(kind({"kind": "sync"}, **base)).summary)
    assert ksync["cancelled_steps"] == 0


def test_k_async_with_every_learner_is_sync():
    base = dict(learners=5, compute=EXP, stop__updates=300)
    same(simulate(kind({"kind": "k-async", "k": 5}, **base)).summary,
         simulate(kind({"kind": "sync"}, **base)).summary)


# -- keys ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("spec,key", [({"kind": "softsync", "n": 9}, "algorithm.n"),
                                      ({"kind": "k-sync", "k": 5}, "algorithm.k"),
                                      ({"kind": "k-async", "k": 5}, "algorithm.k")])
def test_more_than_the_learners_is_refused(spec, key):
    with pytest.raises(ScenarioError, match=key.replace(".", r"\.") + ".*at most the cluster's 4"):
        kind(spec)


def test_ssp_needs_a_bound_of_at_least_zero():
    with pytest.raises(ScenarioError, match="staleness_bound"):
        kind({"kind": "ssp", "staleness_bound": -1})
    with pytest.raises(ScenarioError, match="staleness_bound"):
        kind({"kind": "ssp"})


def test_a_key_of_another_kind_is_refused():
    with pytest.raises(ScenarioError, match="n"):
        kind({"kind": "k-sync", "k": 2, "n": 2})


def test_the_kth_event_of_long_tailed_steps():
    # the first of 16 events is the minimum of 16 first steps: the renewal
    # integral must give the order statistic, even for a lognormal of cv 2
    from asgdsim.distributions import law_from_spec
    from asgdsim.renewal import kth_event_mean
    from asgdsim.specs import LawSpec
    law = law_from_spec(LawSpec(distribution="lognormal", mean=1.0, cv=2.0))
    assert kth_event_mean(law, 16, 1)[0] == pytest.approx(law.expected_order(1, 16), rel=2e-3)


def test_k_async_round_with_leftovers_is_harmonic_for_exponential_steps():
    # memoryless steps: the left-out learners' residuals are fresh steps, so
    # the fixed point is the K-th of L exponentials, m (H_L - H_{L-K}),
    # whatever the round before took
    from asgdsim.algorithms.kasync import _round_with_leftovers
    from asgdsim.distributions import Law

    exponential = Law("exponential", "expon", scale=2.0)
    for learners, k in [(8, 6), (16, 8), (39, 29), (100, 60)]:
        mean = 2.0 * (harmonic(learners) - harmonic(learners - k))
        assert _round_with_leftovers(exponential, learners, k) == pytest.approx(mean, rel=1e-6)


@pytest.mark.parametrize("learners,k", [(8, 6), (39, 29), (16, 8)])
@pytest.mark.parametrize("law", [{"distribution": "gamma", "mean": 1.0, "cv": 0.5},
                                 {"distribution": "uniform", "mean": 1.0, "cv": 0.3},
                                 {"distribution": "shifted-exponential", "mean": 1.0,
                                  "shift": 0.5}])
def test_k_async_with_half_the_learners_a_round_keeps_no_drift(learners, k, law):
    # L <= 2K: every learner restarts at a close, so the rounds stay near
    # the steps' order statistics (not the exponential formula, 10 to 30 %
    # longer here); the fixed point is an approximation, within 3 % of the
    # simulator for steps up to cv 0.5 (module docstring), plus the sample's
    # error (batch means: consecutive rounds are correlated)
    sc = kind({"kind": "k-async", "k": k}, learners=learners, compute=law, stop__updates=6_000)
    res, pred = simulate(sc), predict(sc)
    gaps = np.diff(res.updates["t"].to_numpy())[500:]
    assert abs(pred.t_update_s - gaps.mean()) <= 0.03 * gaps.mean() + Z * batch_means_se(gaps)
    assert "assumptions" not in pred.laws


def test_neighbours_whose_steps_differ_by_more_than_their_turns_are_labelled():
    # softsync on 7 p2.xlarge nodes: the server's ports 95 % busy, turns at
    # them 0.32 s apart; a step's noise (sd 0.29 s) is under that, but two
    # neighbours' steps differ by sqrt(2) x 0.29 = 0.41 s, so their order
    # reshuffles and they queue in random turns: 8 % apart, unlabelled
    # before (agreement draw, seed 9 random-133)
    data = {"name": "reshuffled", "seed": 1734331842,
            "workload": {"model": "resnet18", "dataset_samples": 1050112, "sub_batch": 256},
            "cluster": {"machine": "aws-p2.xlarge", "nodes": 7,
                        "topology": {"kind": "fat-tree", "nodes_per_switch": 4,
                                     "oversubscription": 4.0}},
            "algorithm": {"kind": "softsync", "n": 1},
            "timing": {"compute": "roofline", "jitter": {"distribution": "uniform", "cv": 0.187},
                       "communication": "modelled"},
            "stop": {"updates": 586}}
    why = outside_assumptions(data)
    assert why is not None and "they queue in random turns" in why
    # the same cluster with steps a third as noisy keeps the schedule's turns
    data["timing"]["jitter"]["cv"] = 0.06
    assert "random turns" not in (outside_assumptions(data) or "")


def test_k_sync_whose_server_cannot_send_every_learner_the_weights_is_labelled():
    # K = 2 of 32 learners on 4 p2.8xlarge nodes, AlexNet's 244 MB over
    # 10 Gb/s: a round is bounded by every learner of a node pulling and
    # reading through its port, but the server's port reaches about 8 of
    # the 32 a round, so only those pull and read again (simulated 0.39 s a
    # round against 1.66 s: 53 % apart, unlabelled; agreement seed 11 #71)
    data = {"name": "k-sync-pulls", "seed": 1851421663,
            "workload": {"model": "alexnet", "dataset_samples": 768000, "sub_batch": 128},
            "cluster": {"machine": "aws-p2.8xlarge", "nodes": 4,
                        "topology": {"kind": "fat-tree", "nodes_per_switch": 1,
                                     "oversubscription": 1.0}},
            "algorithm": {"kind": "k-sync", "k": 2},
            "timing": {"compute": {"distribution": "gamma", "mean": "10.41 ms", "cv": 0.582},
                       "communication": "modelled"},
            "stop": {"updates": 6000}}
    why = outside_assumptions(data)
    assert why is not None and "which of them pull and read is not modelled" in why


def test_k_batch_sync_pulls_go_out_one_node_after_another():
    # 56 K80 dies on 7 nodes, K = 112: the first steps' reads run on every
    # node's disk at once, so the learners ask for the weights (and read,
    # and step) one from each node in turn, not a node's 8 back to back at
    # its disk (which the closed form walked: 2.63 s a round against the
    # simulated 2.48 s, 5.5 % apart; agreement seed 13 #58)
    data = {"name": "k-batch-sync-order", "seed": 986523661,
            "workload": {"model": "resnet18", "dataset_samples": 1536000, "sub_batch": 128},
            "cluster": {"machine": "tsubame-kfc-dl", "nodes": 7},
            "algorithm": {"kind": "k-batch-sync", "k": 112},
            "timing": {"compute": {"distribution": "deterministic", "mean": "1001 ms"},
                       "communication": "modelled"},
            "stop": {"epochs": 1.0}}
    sc = scenario_from_dict(data, source=data["name"])
    simulated, closed = simulate(sc).summary["epoch_time_s"], predict(sc).epoch_time_s
    assert closed == pytest.approx(simulated, rel=0.01)


def test_k_batch_sync_rounds_wait_for_every_learners_read():
    # 12 V100s on 3 nodes, 56 ms a read from each node's disk, steps of 6 ms:
    # every round cancels every learner's step, so each pulls and reads
    # again, and a node's disk serves its 4 reads a round (225 ms). The
    # closed form had a learner's repeated steps only (98 ms a round,
    # against the simulated 244: agreement seed 6 #75, drawn before sync's
    # keys had a stream of their own); the disk's round is a bound that
    # leaves out its wait for the first pull to reach the node (3 pulls of
    # 6.6 ms: 8 % under)
    data = {"name": "k-batch-sync-disk", "seed": 1796662195,
            "workload": {"model": "googlenet", "dataset_samples": 662016, "sub_batch": 256},
            "cluster": {"gpu": "V100-32GB", "network": "ib-qdr", "gpus_per_node": 4,
                        "host_link": "pcie3-x16", "gpus_per_host_link": 2, "nodes": 3},
            "algorithm": {"kind": "k-batch-sync", "k": 2},
            "timing": {"compute": {"distribution": "shifted-exponential", "mean": "5.751 ms",
                                   "shift": "2.086 ms"}, "communication": "modelled"},
            "stop": {"updates": 600}}
    sc = scenario_from_dict(data, source=data["name"])
    rounds = np.diff(simulate(sc).updates["t"].to_numpy())[100:]
    closed = predict(sc)
    assert "node's busiest resource" in closed.laws["epoch_time"]
    assert 0.9 * rounds.mean() < closed.t_update_s < rounds.mean()


def test_sprint_gpus_whose_steps_reshuffle_their_turns_are_labelled():
    # 8 K80 dies a node sharing its disk (8.8 ms a read), lognormal steps of
    # 30 ms and cv 0.37: the steps differ by more than a read on most steps,
    # so the dies take the disk in random turns; the cycle simulates to
    # 83 ms, not the closed form's rhythm (70 ms): 12 % apart (agreement
    # seed 11 #12)
    data = {"name": "sprint-turns", "seed": 1487157032,
            "workload": {"model": "resnet101", "dataset_samples": 420096, "sub_batch": 64},
            "cluster": {"machine": "gce-k80x8", "nodes": 14},
            "algorithm": {"kind": "sprint"},
            "timing": {"compute": {"distribution": "lognormal", "mean": "29.95 ms", "cv": 0.374},
                       "communication": "modelled"},
            "stop": {"epochs": 1.0}}
    why = outside_assumptions(data)
    assert why is not None and "random order" in why
    # steps a tenth as noisy keep the rhythm
    data["timing"]["compute"]["cv"] = 0.037
    assert "random order" not in (outside_assumptions(data) or "")


def test_a_sprint_run_of_a_step_or_two_a_gpu_is_labelled():
    # 208 H100s, exponential steps of 467 ms, 230 updates: 1.7 steps a GPU,
    # every one of them read at version 0 or just after, and the staleness
    # 71 simulated against 133 closed form (agreement draw seed 4
    # random-148, shifted, unlabelled). Ten times the updates is not
    data = {"name": "all-start", "seed": 1698225304,
            "workload": {"model": "resnet18", "dataset_samples": 3072000, "sub_batch": 128,
                         "input": "cached"},
            "cluster": {"machine": "dgx-h100", "nodes": 26},
            "algorithm": {"kind": "sprint"},
            "timing": {"compute": {"distribution": "exponential", "mean": "467.4 ms"},
                       "communication": "modelled"},
            "stop": {"updates": 230}}
    why = outside_assumptions(data)
    assert why is not None and "all of it the start" in why
    data["stop"] = {"updates": 2300}
    assert "the start" not in (outside_assumptions(data) or "")


def test_sprint_gpus_in_phase_that_swap_turns_on_some_steps_are_labelled():
    # 256 K80 dies in phase (371 ms steps of cv 0.012, 4.5 ms): two dies'
    # reads (3.5 ms) swap on about half the steps; the closed form keeps the
    # schedule's order, and its mean mini-batch is 27 % off (agreement seed
    # 13 #121, its noise given as a law, so that the kernels' pricing does
    # not move it); with steps of cv 0.05 the order is random on most steps
    data = {"name": "sprint-swaps", "seed": 332256551,
            "workload": {"model": "resnet50", "dataset_samples": 96000, "sub_batch": 16},
            "cluster": {"machine": "tsubame-kfc-dl", "nodes": 32,
                        "topology": {"kind": "fat-tree", "nodes_per_switch": 16,
                                     "oversubscription": 1.0}},
            "algorithm": {"kind": "sprint"},
            "timing": {"compute": {"distribution": "lognormal", "mean": "371 ms", "cv": 0.012},
                       "communication": "modelled"},
            "stop": {"updates": 187}}
    why = outside_assumptions(data)
    assert why is not None and "reshuffles that queue's order" in why
    data["timing"]["compute"]["cv"] = 0.05
    assert "reshuffles" not in (outside_assumptions(data) or "")


def test_sprint_gpus_in_phase_with_rare_stragglers_are_labelled():
    # 128 M40s with fixed 0.74 s steps and 5 % stragglers, about 9 steps
    # each: the GPUs that have not straggled stay in phase (the simulated
    # mean mini-batch is 7 times the uniform phases' that the spread of the
    # steps with their stragglers made of it; agreement seed 16 #29)
    data = {"name": "sprint-rare-stragglers", "seed": 1293951894,
            "workload": {"model": "resnet34", "dataset_samples": 3852, "sub_batch": 16},
            "cluster": {"gpu": "M40", "network": "ib-hdr", "gpus_per_node": 8,
                        "host_link": "pcie4-x16", "gpus_per_host_link": 2, "nodes": 16,
                        "topology": {"kind": "fat-tree", "nodes_per_switch": 4,
                                     "oversubscription": 4.0}},
            "algorithm": {"kind": "sprint"},
            "timing": {"compute": {"distribution": "deterministic", "mean": "741 ms"},
                       "communication": "modelled"},
            "stop": {"gradients": 1204},
            "faults": {"stragglers": {"probability": 0.05, "slowdown": 4.0}}}
    why = outside_assumptions(data)
    assert why is not None and "straggles" in why


def test_k_async_exponential_steps_queue_for_the_weights_at_the_port():
    # 27 learners, K = 20, exponential steps, a 33 ms message each way at
    # the server's port: the K released after a round take the new weights
    # one after another, so their next pushes start staggered; the harmonic
    # formula at the mean cycle left that queue out (2.69 s a round against
    # 2.94 s simulated, agreement draw seed 18 random-17, unlabelled). The
    # released round is an approximation (its arrivals' means through a
    # FIFO port): within 3 % plus the sample's error
    data = {"name": "released", "seed": 1814348754,
            "workload": {"model": "resnet50", "dataset_samples": 96000, "sub_batch": 16},
            "cluster": {"gpu": "TitanX-Pascal", "network": "25gbe", "gpus_per_node": 3,
                        "host_link": "pcie3-x16", "nodes": 9},
            "algorithm": {"kind": "k-async", "k": 20},
            "timing": {"compute": {"distribution": "exponential", "mean": "1989 ms"},
                       "communication": "modelled"},
            "stop": {"updates": 2000}}
    update_gaps_agree(data, settle=200, within=0.03)


def test_k_async_released_learners_queue_at_their_nodes_disk():
    # 8 M40 learners on one node, K = 6 of them released together after
    # each update: their pulls leave the server's port 6.9 ms apart, but
    # each then reads its sub-batch from the node's one disk for 28.2 ms,
    # so they reach their compute a read apart, not a pull apart; the
    # burst at the port alone left that queue out (429.6 s an epoch
    # against 499.5 s simulated, agreement draw seed 17 random-50,
    # unlabelled). The released round is an approximation (steps of cv
    # 0.031 keep the released learners' order, taken at expected times):
    # within 5 % plus the sample's error
    data = {"name": "disk", "seed": 1237368033,
            "workload": {"model": "resnet18", "dataset_samples": 768000, "sub_batch": 128},
            "cluster": {"gpu": "M40", "network": "ib-fdr", "gpus_per_node": 8,
                        "host_link": "pcie4-x16", "nodes": 1},
            "algorithm": {"kind": "k-async", "k": 6},
            "timing": {"compute": "roofline", "jitter": {"distribution": "gamma", "cv": 0.031},
                       "communication": "modelled"},
            "stop": {"updates": 2000}}
    update_gaps_agree(data, settle=200, within=0.05)


def test_k_sync_rounds_take_the_mean_of_the_ports_queue_not_its_value_at_mean_arrivals():
    # 24 V100 learners pulled 44.5 ms apart by a server port that is never
    # idle, lognormal steps (cv 0.29), K = 12 pushes of 44.5 ms: arrivals
    # about a message apart make the push queue form and drain at random,
    # and its mean finish is 6 % past its finish at the arrivals' expected
    # order statistics (agreement draw seed 10 random-48, unlabelled at
    # 6.2 %). The rest of the round is walked at expected times: within
    # 2 % plus the sample's error (batch means)
    data = {"name": "queued", "seed": 513816597,
            "workload": {"model": "resnet101", "dataset_samples": 307200, "sub_batch": 128},
            "cluster": {"gpu": "V100-32GB", "network": "ib-qdr", "gpus_per_node": 2,
                        "host_link": "pcie4-x16", "nodes": 12},
            "algorithm": {"kind": "k-sync", "k": 12},
            "timing": {"compute": {"distribution": "lognormal", "mean": "207.1 ms", "cv": 0.291},
                       "communication": "modelled"},
            "stop": {"updates": 1200}}
    update_gaps_agree(data, settle=100, within=0.02)


def test_async_at_the_knee_of_a_saturated_port_loses_turns():
    # 6 learners on two TSUBAME 2.5 nodes, ResNet-34, the server's ports
    # 21.8 ms a message and about as many learners as keep them busy,
    # lognormal steps of cv 0.86 (sd 20 ms): a learner late by part of a
    # turn leaves the port idle, and the turn is not made up. Mean-value
    # analysis with arrivals as random as a learner's cycle put the port at
    # its bound, 9.7 % short (agreement draw seed 19 random-30, k-async
    # with K = 1, unlabelled); the turns are walked on seeded draws, the
    # rest of the cycle at its mean: within 3 % plus the sample's error
    data = {"name": "knee", "seed": 907535941,
            "workload": {"model": "resnet34", "dataset_samples": 2810880, "sub_batch": 128},
            "cluster": {"machine": "tsubame2.5", "nodes": 2},
            "algorithm": {"kind": "async"},
            "timing": {"compute": {"distribution": "lognormal", "mean": "23.52 ms", "cv": 0.856},
                       "communication": "modelled"},
            "stop": {"updates": 6000}}
    update_gaps_agree(data, settle=600, within=0.03)


def update_gaps_agree(data: dict, settle: int, within: float):
    """A draw kept as a test: the closed form's time between updates against
    the simulated gaps after the first ``settle``, ``within`` that share of
    them plus the sample's error (batch means: consecutive gaps correlate).
    ``within`` is what the approximation is held to in that regime, under
    the agreement suite's 5 % and set before the draw was run again, not
    fitted to it: each test's comment names what the approximation leaves
    out (expected times for random ones, the mean of seeded draws)."""
    sc = scenario_from_dict(data)
    res, pred = simulate(sc), predict(sc)
    gaps = np.diff(res.updates["t"].to_numpy())[settle:]
    assert abs(pred.t_update_s - gaps.mean()) <= within * gaps.mean() + Z * batch_means_se(gaps)


def test_k_sync_port_that_only_just_cannot_send_every_learner_the_weights():
    # 10 M40 learners, K = 5, AlexNet's weights 35.8 ms a message out of
    # the server's port: ten pulls take 2.0 ms (0.56 %) more than a round,
    # so the port is never idle, but what is left of them when it publishes
    # is those 2.0 ms, not half a pull, 17.9 ms (agreement draw seed 16
    # random-77: 4.0 % long, within its bound of 5.9 %). The round is
    # walked at expected times: within 2 % plus the sample's error
    data = {"name": "just", "seed": 1261871763,
            "workload": {"model": "alexnet", "dataset_samples": 384000, "sub_batch": 32},
            "cluster": {"gpu": "M40", "network": "ib-fdr", "gpus_per_node": 2,
                        "host_link": "pcie2-x16", "nodes": 5},
            "algorithm": {"kind": "k-sync", "k": 5},
            "timing": {"compute": "table", "jitter": {"distribution": "uniform", "cv": 0.161},
                       "communication": "modelled"},
            "stop": {"updates": 2400},
            "faults": {"stragglers": {"probability": 0.01, "slowdown": 4.0}}}
    update_gaps_agree(data, settle=200, within=0.02)


def test_k_sync_rounds_of_long_tailed_steps():
    # 32 V100 learners, K = 4, lognormal steps of cv 3: the first four
    # arrivals lie in the bulk, hundreds of medians below the top of the
    # largest, where an even grid to that top put them (0.330 s a round
    # against 0.116 s simulated). Within 2 % plus the sample's error
    data = {"name": "long-tailed", "seed": 5,
            "workload": {"model": "resnet50", "dataset_samples": 1281167, "sub_batch": 32},
            "cluster": {"nodes": 4, "gpus_per_node": 8, "gpu": "V100", "network": "ib-edr"},
            "algorithm": {"kind": "k-sync", "k": 4},
            "timing": {"compute": {"distribution": "lognormal", "mean": "100 ms", "cv": 3.0},
                       "communication": "modelled"},
            "stop": {"updates": 5000}}
    update_gaps_agree(data, settle=100, within=0.02)


@pytest.mark.parametrize("cv", [0.028, 0.5])
def test_k_sync_rounds_are_whole_pulls_where_the_port_is_never_idle(cv):
    # 5 K80 dies, k-sync K = 1, the server's port always busy with pulls:
    # they end a pull apart, and a round, from the first pull after the one
    # under way when the last was published, ends on that lattice (steps of
    # cv 0.028 with 5 % stragglers: the closed form's round, half a pull's
    # wait after the round, was 9 % off, labelled; agreement seed 0 #107).
    # Within 2 % plus the sample's error, unlabelled
    data = {"name": "k-sync-stragglers", "seed": 329614157,
            "workload": {"model": "resnet34", "dataset_samples": 245088, "sub_batch": 32},
            "cluster": {"machine": "aws-p2.xlarge", "gpus_per_node": 1, "nodes": 5},
            "algorithm": {"kind": "k-sync", "k": 1},
            "timing": {"compute": "table", "jitter": {"distribution": "lognormal", "cv": cv},
                       "communication": "modelled"},
            "stop": {"updates": 1500},
            "faults": {"stragglers": {"probability": 0.05, "slowdown": 4.0}}}
    assert outside_assumptions(data) is None
    update_gaps_agree(data, settle=100, within=0.02)


@pytest.mark.parametrize("cv", [0.5, 2.0])
def test_k_sync_lattice_takes_the_race_of_learners_a_pull_apart(cv):
    """8 nodes of 4 V100s, VGG-16's 81 ms pulls, K = 1, gamma steps: the
    round's first gradient is the earliest of learners that get the
    weights a pull apart, (j - 1) out + X_j, skewed far to the right with
    cv 2 (a normal spread about the round said 6.1 % long, the first of 4
    steps started together 9.9 %; a review). Within 1.5 % plus the
    sample's error."""
    data = {"name": "race", "seed": 1,
            "workload": {"model": "vgg16", "dataset_samples": 1281167, "sub_batch": 32},
            "cluster": {"nodes": 8, "gpus_per_node": 4, "gpu": "V100", "network": "ib-fdr"},
            "algorithm": {"kind": "k-sync", "k": 1},
            "timing": {"compute": {"distribution": "gamma", "mean": "100 ms", "cv": cv},
                       "communication": "modelled"},
            "stop": {"updates": 3000}}
    update_gaps_agree(data, settle=100, within=0.015)


@pytest.mark.parametrize("case", ["port-in", "seed-6"])
def test_k_batch_sync_pushes_queue_at_random_at_the_port(case):
    """(port-in) 5 GoogLeNet learners on p2.xlarge, K = 10, gamma steps of
    cv 0.5: the pushes, 170 ms each, queue at the server's port more than
    at their expected times, and each learner's next step waits for its
    push: 10.0 % short, unlabelled (a hunt); (seed-6) 104 P100s on an
    oversubscribed fat tree, K = 13, VGG-11 (agreement seed 6 random-81,
    the one unlabelled draw of 4,000: 6.3 % short). The pushes are walked
    through the port on seeded draws of the steps."""
    from asgdsim.agreement import check

    if case == "port-in":
        data = {"name": case, "seed": 9,
                "workload": {"model": "googlenet", "dataset_samples": 100000, "sub_batch": 32},
                "cluster": {"machine": "aws-p2.xlarge", "nodes": 5},
                "algorithm": {"kind": "k-batch-sync", "k": 10},
                "timing": {"compute": {"distribution": "gamma", "mean": "686 ms", "cv": 0.5},
                           "communication": "modelled"},
                "stop": {"updates": 1500}}
        within = 0.01
    else:
        data = {"name": case, "seed": 605684950,
                "workload": {"model": "vgg11", "dataset_samples": 96000, "sub_batch": 8},
                "cluster": {"machine": "dgx1-p100", "nodes": 13,
                            "topology": {"kind": "fat-tree", "nodes_per_switch": 2,
                                         "oversubscription": 4.0}},
                "algorithm": {"kind": "k-batch-sync", "k": 13},
                "timing": {"compute": {"distribution": "uniform", "mean": "349.8 ms", "cv": 0.239},
                           "communication": "modelled"},
                "stop": {"epochs": 1.0}}
        within = 0.04
    row = check(data)
    assert row["agrees"] and row["epoch_time_err"] < within, row


def test_k_sync_round_through_a_never_idle_port_is_three_pulls():
    """4 p2.xlarge nodes, VGG-11 (3.40 s a pull at 1.25 Gb/s), K = 1,
    exponential 150 ms steps: a round takes 7.09 s with the port free at
    its start, so it ends on the third pull after the one its predecessor's
    first pull followed, 10.20 s (simulated 10.21); half a pull's wait said
    8.79 s, 14 % short and unlabelled (a new user's trial)."""
    data = {"name": "three-pulls", "seed": 22,
            "workload": {"model": "vgg11", "dataset_samples": 200000, "sub_batch": 64},
            "cluster": {"machine": "aws-p2.xlarge", "nodes": 4},
            "algorithm": {"kind": "k-sync", "k": 1},
            "timing": {"compute": {"distribution": "exponential", "mean": "150 ms"}},
            "stop": {"updates": 200}}
    update_gaps_agree(data, settle=20, within=0.01)
