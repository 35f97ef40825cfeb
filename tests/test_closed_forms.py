"""Seeded runs against DESIGN.md's exact results, with ideal communication.

Tolerances come from the sample: z standard errors, by batch means where
consecutive values are correlated (see conftest.py). Nothing here is tuned
to a particular draw: a different seed passes the same tests.
"""

import math

import numpy as np
import pytest
from scipy import stats

from asgdsim import predict, simulate
from asgdsim.pmf import Pmf

from conftest import batch_means_se, check_pmf, make

EXP = {"distribution": "exponential", "mean": 1.0}
Z = 4.0


def steady(values, fraction=0.02):
    """Drop the start-up transient (all learners begin at time 0 together)."""
    return np.asarray(values)[int(len(values) * fraction):]


def test_async_exponential_staleness_is_geometric(scenario):
    m_learners, n = 8, 100_000
    sc = scenario(cluster__gpus_per_node=m_learners, timing__compute=EXP, stop__gradients=n)
    staleness = steady(simulate(sc).gradients["staleness"].to_numpy())
    p = 1 / m_learners
    geometric = Pmf.from_probs(0, p * (1 - p) ** np.arange(400))      # DESIGN.md's law
    assert abs(staleness.mean() - (m_learners - 1)) <= Z * batch_means_se(staleness)
    check_pmf(staleness, geometric)
    # the closed form: the same geometric law, its mean less what a run's
    # synchronised start and its stop take, M (M - 1) / n in all
    pred = predict(sc).staleness
    assert pred.mean == pytest.approx((m_learners - 1) * (1 - m_learners / n), rel=1e-9)
    ratios = pred.probs[1:20] / pred.probs[:19]
    assert np.allclose(ratios, ratios[0], rtol=1e-9)


def test_async_short_runs_lose_the_start_and_the_stop(scenario):
    """Over a run of n gradients from a synchronised start, the mean staleness
    is (M - 1)(1 - M (1 + c^2) / 2n): the others' first steps start with the
    learner's, and their last are cut off at the stop (exponential: c = 1)."""
    m_learners, n, runs = 8, 80, 300
    means = [simulate(scenario(cluster__gpus_per_node=m_learners, timing__compute=EXP,
                               stop__gradients=n), seed=seed).gradients["staleness"].mean()
             for seed in range(runs)]
    expected = (m_learners - 1) * (1 - m_learners / n)
    assert abs(np.mean(means) - expected) <= Z * np.std(means, ddof=1) / math.sqrt(runs)
    sc = scenario(cluster__gpus_per_node=m_learners, timing__compute=EXP, stop__gradients=n)
    assert predict(sc).staleness.mean == pytest.approx(expected, rel=1e-9)


DOWNPOUR = {"kind": "downpour", "n_fetch": 2, "n_push": 2}


@pytest.mark.parametrize("algorithm, seconds", [({"kind": "async"}, 1.0), ({"kind": "async"}, 1.5),
                                                (DOWNPOUR, 2.0), (DOWNPOUR, 3.0)])
def test_a_time_stop_counts_the_gradients_that_come_within_it(algorithm, seconds):
    """A hunt: 8 V100 learners of ResNet-50 over 25 GbE stopped after 1 s
    had 26 gradients, and the closed form counted the steady pace's 30 from
    0 (epoch 12 % short; downpour 8 to 11 %): the start's lost time is not
    gradients. The same run stopped by its count agreed."""
    from asgdsim.agreement import check

    row = check({"name": "time", "seed": 1,
                 "workload": {"model": "resnet50", "dataset_samples": 100000, "sub_batch": 32},
                 "cluster": {"nodes": 2, "gpus_per_node": 4, "gpu": "V100", "network": "25gbe"},
                 "algorithm": algorithm, "timing": {"compute": "table"},
                 "stop": {"time": seconds}})
    assert row["agrees"] and not row["outside"], row


def test_a_short_run_of_long_tailed_steps_ends_at_its_exact_kth_event(scenario):
    """A hunt: 32 learners of gamma steps of cv 3, 120 gradients: renewal's
    start, (1 - c^2) / 2 = -4 cycles, put the run's end before 0 (a negative
    epoch) and the staleness correction took all of M - 1; the end is now
    the exact mean of the 120th event of 32 processes started together, and
    the staleness is labelled. With one learner 8 times as slow (lognormal
    cv 1, 64 learners, 128 gradients) the staleness law crashed."""
    sc = scenario(cluster__gpus_per_node=32, stop__gradients=120,
                  timing__compute={"distribution": "gamma", "mean": 0.1, "cv": 3.0})
    epochs = np.array([simulate(sc, seed=seed).summary["epoch_time_s"] for seed in range(40)])
    pred = predict(sc)
    assert abs(pred.epoch_time_s - epochs.mean()) <= Z * epochs.std(ddof=1) / math.sqrt(40)
    assert "mostly its start" in pred.outside_assumptions
    slow = scenario(cluster__gpus_per_node=64, stop__gradients=128,
                    timing__compute={"distribution": "lognormal", "mean": 0.1, "cv": 1.0},
                    faults={"slow_learners": {"learners": [0], "slowdown": 8}})
    assert 0 < predict(slow).staleness.mean < 64


def _hunted(kind: dict, law: dict, stop: dict, gpus: int = 8, nodes: int = 1,
            communication: str = "ideal", **more) -> dict:
    return {"name": "hunted", "seed": 1,
            "workload": {"model": "resnet50", "dataset_samples": 100000, "sub_batch": 32},
            "cluster": {"nodes": nodes, "gpus_per_node": gpus, "gpu": "V100", "network": "ib-edr"},
            "algorithm": kind, "timing": {"compute": law, "communication": communication, **more},
            "stop": stop}


GAMMA = {"distribution": "gamma", "mean": "100 ms"}


@pytest.mark.parametrize("data,words", [
    # a node's 6 ms accumulator under a 5 ms cycle: a mini-batch of exactly one
    # gradient simulated, 1.14 closed
    (_hunted({"kind": "sprint"}, {**GAMMA, "cv": 1}, {"gradients": 12000}, communication="modelled",
             update_interval="5 ms"), "accumulator takes"),
    # SPRINT stopped in its first cycles, steps of cv 1.5: one update of 105 to
    # 123 gradients, staleness 0; 0.38 closed
    (_hunted({"kind": "sprint"}, {"distribution": "lognormal", "mean": "100 ms", "cv": 1.5},
             {"gradients": 100}, nodes=2, update_interval="600 ms"), "within its first 3 cycles"),
    # one GPU of gamma steps of cv 3 under a 50 ms cycle: 0.65 simulated, 0.94
    (_hunted({"kind": "sprint"}, {**GAMMA, "cv": 3}, {"gradients": 12000}, gpus=1,
             update_interval="50 ms"), "deliver in clusters"),
    # local SGD stopped before its first round is expected: no update simulated
    (_hunted({"kind": "local-sgd", "period": 3}, {**GAMMA, "cv": 1.5}, {"time": "0.5 s"}),
     "before the first round's update"),
])
def test_hunted_regimes_are_labelled(data, words):
    """Regimes a hunt found the closed form off in, unlabelled: each now says why."""
    from asgdsim.scenario import scenario_from_dict

    assert words in (predict(scenario_from_dict(data, source="hunted")).outside_assumptions or "")


def test_fixed_steps_of_several_rates_keep_their_schedule():
    """A hunt: 32 learners of fixed 0.1 s steps, two of them twice as slow,
    96 gradients: the summed rate said 10.1 s an epoch, the run 13.0; the
    schedule (learner i applies at k m_i) is exact."""
    from asgdsim.scenario import scenario_from_dict

    for stop in ({"gradients": 96}, {"gradients": 1280}, {"time": "1 s"}):
        data = _hunted({"kind": "async"}, {"distribution": "deterministic", "mean": "100 ms"},
                       stop, nodes=4)
        data["faults"] = {"slow_learners": {"learners": [0, 16], "slowdown": 2}}
        sc = scenario_from_dict(data, source="hunted")
        assert predict(sc).epoch_time_s == pytest.approx(simulate(sc).summary["epoch_time_s"],
                                                         rel=1e-9)


def test_a_time_stop_counts_the_gradients_of_long_tailed_steps(scenario):
    """A review: with gamma steps of cv 2 the learners' first steps are
    often short, so more gradients come by a time than the steady pace
    says (8 learners, 1 s of 0.1 s steps: 92.5 simulated over 20 seeds, the
    closed form 68, its epoch 16 % long): the count is searched both ways."""
    sc = scenario(cluster__gpus_per_node=8, stop__time=1.0,
                  timing__compute={"distribution": "gamma", "mean": 0.1, "cv": 2.0})
    counts = np.array([simulate(sc, seed=seed).summary["gradients"] for seed in range(20)])
    assert abs(predict(sc).gradients - counts.mean()) <= Z * counts.std(ddof=1) / math.sqrt(20)


@pytest.mark.parametrize("algorithm, batch", [({"kind": "async"}, 1),
                                              ({"kind": "softsync", "n": 16}, 8),
                                              ({"kind": "k-batch-async", "k": 8}, 8)])
@pytest.mark.parametrize("gradients", [70, 100])
@pytest.mark.parametrize("cv", [0.0, 0.01])
def test_a_run_inside_the_first_round_is_stale_by_its_ranks(scenario, algorithm, batch,
                                                               gradients, cv):
    """128 learners of steady steps, a stop after 70 or 100 gradients: all
    on the first weights, the k-th applied (k from 0) is stale by the
    updates before it, floor(k / c) for updates of c (the run ends on an
    update: c ceil(n / c) gradients). Ranks over all 128 learners said 63.5
    for async's 34.5, and a uniform place in a batch 4.56 for softsync's
    4.0. Fixed steps (their periodic schedule, where a review found 4.44)
    and a little noise alike."""
    law = ({"distribution": "lognormal", "mean": 1.0, "cv": cv} if cv else
           {"distribution": "deterministic", "mean": 1.0})
    sc = scenario(cluster__gpus_per_node=128, algorithm=algorithm, stop__gradients=gradients,
                  timing__compute=law)
    applied = batch * math.ceil(gradients / batch)
    exact = np.mean(np.arange(applied) // batch)
    assert simulate(sc).gradients["staleness"].mean() == pytest.approx(exact, rel=1e-12)
    pred = predict(sc)
    assert pred.outside_assumptions is None
    assert pred.staleness.mean == pytest.approx(exact, rel=1e-9)


@pytest.mark.parametrize("law", [
    {"distribution": "gamma", "mean": 1.0, "cv": 0.5},
    {"distribution": "uniform", "mean": 1.0, "cv": 0.3},
    {"distribution": "lognormal", "mean": 1.0, "cv": 1.5},
    {"distribution": "shifted-exponential", "mean": 1.0, "shift": 0.6},
])
def test_async_mean_staleness_is_m_minus_1_for_any_law(scenario, law):
    m_learners = 6
    sc = scenario(cluster__gpus_per_node=m_learners, timing__compute=law, stop__gradients=60_000)
    staleness = steady(simulate(sc).gradients["staleness"].to_numpy())
    assert abs(staleness.mean() - (m_learners - 1)) <= Z * batch_means_se(staleness)


def test_async_constant_compute_staleness_is_exactly_m_minus_1(scenario):
    sc = scenario(cluster__gpus_per_node=5, stop__gradients=100)
    staleness = simulate(sc).gradients["staleness"].to_numpy()
    assert staleness[:5].tolist() == [0, 1, 2, 3, 4]      # the first round
    assert set(staleness[5:]) == {4}


@pytest.fixture(scope="module")
def sprint_exponential():
    """16 GPUs on 2 nodes, exponential steps of mean 1 s, a fixed 1.25 s cycle:
    20 gradients per cycle on average, so an empty cycle has probability 2e-9."""
    from conftest import make
    sc = make(algorithm__kind="sprint", cluster__nodes=2, cluster__gpus_per_node=8,
              timing__compute=EXP, timing__update_interval=1.25, stop__gradients=60_000)
    return sc, simulate(sc), predict(sc)


def test_sprint_gradients_per_update_are_poisson(sprint_exponential):
    sc, res, pred = sprint_exponential
    rate = 16 * 1.25 / 1.0
    poisson = pred.gradients_per_update
    assert poisson.prob(20) == pytest.approx(stats.poisson.pmf(20, rate) / stats.poisson.sf(0, rate))
    counts = steady(res.updates["gradients"].to_numpy())
    assert abs(counts.mean() - poisson.mean) <= Z * batch_means_se(counts)
    check_pmf(counts, poisson)
    assert np.array_equal(res.updates["minibatch"], res.updates["gradients"] * sc.workload.sub_batch)


def _step_law(spec):
    from asgdsim.distributions import Empirical, law_from_spec, straggling
    from asgdsim.scenario import LawSpec

    if spec == "stragglers":            # 5 % of gamma steps of cv 0.5 three times as long
        return straggling(law_from_spec(LawSpec.model_validate(
            {"distribution": "gamma", "mean": 1.0, "cv": 0.5})), 0.05, 3.0)
    if spec == "measured":              # 400 measured steps, replayed
        return Empirical.of(np.random.default_rng(3).gamma(2.0, 0.5, 400))
    return law_from_spec(LawSpec.model_validate({**spec, "mean": 1.0}))


@pytest.mark.parametrize("spec,window", [({"distribution": "gamma", "cv": 1.5}, 0.37),
                                         ({"distribution": "lognormal", "cv": 1.5}, 0.9),
                                         ({"distribution": "uniform", "cv": 0.5}, 2.6),
                                         ({"distribution": "gamma", "cv": 0.5}, 7.3),
                                         ("stragglers", 2.2), ("measured", 3.1)])
def test_renewal_count_in_a_window_is_the_stationary_law(spec, window):
    """One GPU's deliveries in a SPRINT cycle: windows at random places on
    a long renewal sequence of its steps against _renewal_count's law."""
    from asgdsim.analytic import _renewal_count

    law = _step_law(spec)
    window *= law.mean                          # in mean steps
    rng = np.random.default_rng(7)
    arrivals = np.cumsum(law.sample(rng, 2_000_000))
    # windows 20 steps apart, past the first thousand steps: close to independent
    starts = np.arange(1_000.0, arrivals[-1] - 50.0, 20.0) + rng.uniform(0, 20.0)
    counts = (np.searchsorted(arrivals, starts + window) - np.searchsorted(arrivals, starts))
    check_pmf(counts, Pmf.from_probs(0, _renewal_count(law, window)))


def test_sprint_long_tailed_steps_cluster_their_deliveries_in_short_cycles(scenario):
    """A hunt: 4 GPUs of gamma steps of cv 1.5 under a cycle of 0.37 steps:
    several short steps fall in one cycle, so more cycles are empty than
    at most one delivery a GPU would leave (mini-batch 71 simulated, 56
    closed before)."""
    law = {"distribution": "gamma", "mean": 1.0, "cv": 1.5}
    sc = scenario(algorithm={"kind": "sprint"}, cluster__gpus_per_node=4, timing__compute=law,
                  timing__update_interval=0.37, stop__gradients=40_000)
    res, pred = simulate(sc), predict(sc)
    counts = steady(res.updates["gradients"].to_numpy())
    assert abs(counts.mean() - pred.gradients_per_update.mean) <= Z * batch_means_se(counts)
    staleness = steady(res.gradients["staleness"].to_numpy())
    assert abs(staleness.mean() - pred.staleness.mean) <= max(Z * batch_means_se(staleness),
                                                              0.1 * pred.staleness.mean)


def test_sprint_staleness_is_one_plus_floor_u_plus_x_over_t(sprint_exponential):
    sc, res, pred = sprint_exponential
    # the law of 1 + floor(U + X/T) by direct quadrature of its definition
    t = 1.25
    def p(k):
        j = k - 1
        return stats.expon.expect(lambda x: max(0.0, 1 - abs(x / t - j)), lb=0, ub=np.inf,
                                  scale=1.0)
    # the prediction is for the run: the gradients that read the weights in
    # the first cycle (16 GPUs x (1 + T/m) of the 60,000) have no cycle
    # before theirs; the rest follow the law
    early = 16 * (1 + t / 1.0) / 60_000
    for k in (1, 2, 3, 5):
        assert pred.staleness.prob(k) == pytest.approx(p(k), abs=early)
    # E[floor(U + Y)] = E[Y]; the prediction also counts empty cycles, which
    # make no version: P(empty) = exp(-20), so the means differ by < 1e-8.
    # The run's start lowers it: the gradients that read the initial weights
    # (two cycles' worth, as the first update comes two cycles in: 16 x (1 +
    # 2T/m)) each by at most the steady mean, staleness being at least 0
    start = 16 * (1 + 2 * t / 1.0) / 60_000
    assert pred.staleness.mean == pytest.approx(1 + 1.0 / t, abs=start * (1 + 1.0 / t))
    assert pred.staleness.mean < 1 + 1.0 / t
    # the prediction is the whole run's, start and all (the first cycle's
    # gradients at staleness 0 are in it): against the whole run's sample
    staleness = res.gradients["staleness"].to_numpy()
    assert abs(staleness.mean() - pred.staleness.mean) <= Z * batch_means_se(staleness)
    check_pmf(staleness, pred.staleness)


def test_sync_round_takes_m_times_harmonic_number(scenario):
    p_learners = 8
    sc = scenario(algorithm__kind="sync", cluster__gpus_per_node=p_learners, timing__compute=EXP,
                  stop__updates=20_000)
    res = simulate(sc)
    rounds = np.diff(np.concatenate([[0.0], res.updates["t"].to_numpy()]))
    harmonic = sum(1 / k for k in range(1, p_learners + 1))
    # rounds are independent: the max of P fresh exponentials each time
    sd_max = math.sqrt(sum(1 / k**2 for k in range(1, p_learners + 1)))
    assert abs(rounds.mean() - harmonic) <= Z * sd_max / math.sqrt(len(rounds))
    assert predict(sc).t_update_s == pytest.approx(harmonic)
    assert set(res.updates["gradients"]) == {p_learners}
    assert set(res.gradients["staleness"]) == {0}


@pytest.mark.parametrize("kind", ["async", "sync", "sprint"])
@pytest.mark.parametrize("epochs", [1, 2])
def test_constant_compute_epoch_time_is_exact(scenario, kind, epochs):
    sc = scenario(algorithm__kind=kind, cluster__gpus_per_node=3, workload__sub_batch=7,
                  timing__compute={"distribution": "deterministic", "mean": 0.123},
                  timing__update_interval=0.37 if kind == "sprint" else None,
                  stop__epochs=epochs)
    res = simulate(sc)
    assert res.summary["epoch_time_s"] == pytest.approx(predict(sc).epoch_time_s, rel=1e-12)

@pytest.mark.parametrize("cycle", [0.020, 0.040, 0.045])
@pytest.mark.parametrize("gpus", [1, 7])
def test_sprint_fixed_steps_on_cycle_ends_are_all_counted(scenario, cycle, gpus):
    """70 ms steps under a 20 or 40 ms cycle end every other step (or every
    4th) on a cycle's end, a rounding error either side of it: each is
    counted in the window it falls in (the closed form lost the ones whose
    sum came out a rounding error past: 231 of 300 gradients, the epoch
    24 % long). The run ends on the update after the stop's window, to the
    window: a delivery exactly at a cycle's end is in the window that ends
    there for the closed form, in whichever the simulator's float sums say."""
    sc = scenario(algorithm__kind="sprint", cluster__gpus_per_node=gpus,
                  timing__compute={"distribution": "deterministic", "mean": 0.070},
                  timing__communication="ideal", timing__update_interval=cycle,
                  stop__gradients=300 * gpus)
    res, pred = simulate(sc), predict(sc)
    assert pred.gradients == res.summary["gradients"] == 300 * gpus
    t_run = res.summary["simulated_time_s"]
    assert res.summary["epoch_time_s"] == pytest.approx(pred.epoch_time_s,
                                                        rel=cycle / (t_run - cycle) + 1e-9)



def test_async_exponential_epoch_time(scenario):
    """The n-th of M Poisson streams' arrivals: Gamma(n, M/m), mean n m / M."""
    m_learners, sub_batch, dataset = 4, 2, 60_000
    sc = scenario(cluster__gpus_per_node=m_learners, timing__compute=EXP,
                  workload__sub_batch=sub_batch, workload__dataset_samples=dataset,
                  stop__epochs=1)
    n = dataset // sub_batch
    assert predict(sc).epoch_time_s == pytest.approx(n / m_learners)
    assert abs(simulate(sc).summary["epoch_time_s"] - n / m_learners) <= Z * math.sqrt(n) / m_learners


def test_sprint_exponential_epoch_time(sprint_exponential):
    sc, _, _ = sprint_exponential
    sc = sc.model_copy(update={"stop": sc.stop.model_copy(update={"gradients": None, "epochs": 40.0})})
    n = 40 * sc.workload.dataset_samples          # sub-batch 1
    rate = 16 / 1.0
    pred = predict(sc).epoch_time_s * 40
    # arrival of the n-th gradient: Gamma(n, rate); applied at the end of the
    # cycle after the one it arrived in: + T + (time to the next swap, in [0, T));
    # that update applies the n and those that came after it in its cycle
    # (rate x T / 2 on average): the epoch is that time over the epochs applied
    assert pred == pytest.approx((n / rate + 1.5 * 1.25) * n / (n + rate * 1.25 / 2))
    simulated = simulate(sc).summary["epoch_time_s"] * 40
    assert abs(simulated - pred) <= Z * math.sqrt(n) / rate + 1.25 / 2


def test_pmf_statistics_match_numpy():
    rng = np.random.default_rng(0)
    x = rng.poisson(7, size=5000)
    pmf = Pmf.of_samples(x)
    assert pmf.mean == pytest.approx(x.mean())
    assert pmf.std == pytest.approx(x.std())
    for q in (0.05, 0.5, 0.95):
        assert pmf.quantile(q) == np.percentile(x, 100 * q, method="inverted_cdf")


@pytest.mark.parametrize("spec", [
    {"distribution": "exponential", "mean": 1.0},
    {"distribution": "shifted-exponential", "mean": 1.0, "shift": 0.3},
    {"distribution": "gamma", "mean": 1.0, "cv": 0.4},
    {"distribution": "lognormal", "mean": 1.0, "cv": 0.7},
    {"distribution": "uniform", "mean": 1.0, "cv": 0.5},
])
def test_partial_expectations_in_closed_form_equal_the_integral(spec):
    from scipy import integrate
    from asgdsim.distributions import law_from_spec
    from asgdsim.scenario import LawSpec
    law = law_from_spec(LawSpec(**spec)).scaled(1.7)
    for y in (0.2, 1.0, 1.9, 4.0):
        integral = integrate.quad(law.cdf, 0.0, y, limit=200)[0]      # E[(y - X)+] = int F
        assert law.partial_expectation(y) == pytest.approx(integral, abs=1e-8)


def test_rails_spread_a_nodes_gpus_over_its_ports():
    # a parameter server: with two rails, the node's GPUs take its two ports
    # in turn, in the simulator and in the closed form's topology alike
    from asgdsim.structure import topology_of
    sc = make(algorithm__kind="async", cluster__nodes=2, cluster__gpus_per_node=4,
              cluster__rails=2, timing__communication="modelled", stop__gradients=400)
    topo = topology_of(sc)
    assert [topo.instance("port_out", i) for i in range(4)] == \
        ["port_out[0.r0]", "port_out[0.r1]", "port_out[0.r0]", "port_out[0.r1]"]
    assert topo.instances("port_out") == 4 and topo.sharers("port_out") == 2
    res = simulate(sc)
    assert {n for n in ("port_out", "port_in")} <= set(res.utilisation)
    assert res.summary["agreement"]["epoch_time_rel_err"] < 0.05


def test_many_cycle_ends_are_mixed_in_groups_without_changing_the_law(monkeypatch):
    # heavy-tailed steps against a short cycle: tens of thousands of cycle
    # ends per step; their binomials are mixed in groups of like moments
    # (milliseconds instead of minutes), to the one-by-one law within 1e-6
    import asgdsim.analytic as analytic
    from asgdsim.distributions import law_from_spec
    from asgdsim.pmf import total_variation
    from asgdsim.specs import LawSpec
    law = law_from_spec(LawSpec(distribution="lognormal", mean=1.282, cv=0.87))
    grouped = analytic._pipelined_staleness(law, 0.01, 0.12)
    monkeypatch.setattr(analytic, "MANY_CYCLE_ENDS", 10**9)
    one_by_one = analytic._pipelined_staleness(law, 0.01, 0.12)
    assert total_variation(grouped, one_by_one) < 1e-6
    assert grouped.mean == pytest.approx(one_by_one.mean, rel=1e-8)


def test_apart_is_the_law_of_two_steps_difference():
    # |X - X'| of two exponential steps of mean 1 is exponential of mean 1;
    # of two uniform on a width w, P(> g) = (1 - g / w)^2; of fixed steps
    # with stragglers, they differ where exactly one of the two straggles
    from asgdsim.distributions import Law, Straggling, law_from_spec
    from asgdsim.scenario import LawSpec
    exponential = law_from_spec(LawSpec(distribution="exponential", mean=1.0))
    uniform = law_from_spec(LawSpec(distribution="uniform", mean=1.0, cv=0.5))
    width = 0.5 * math.sqrt(12.0)
    for gap in (0.1, 0.5, 1.0):
        assert exponential.apart(gap) == pytest.approx(math.exp(-gap), abs=1e-4)
        assert uniform.apart(gap) == pytest.approx((1 - gap / width) ** 2, abs=1e-4)
    straggling = Straggling(base=Law.constant(1.0), probability=0.05, slowdown=4.0)
    assert straggling.apart(0.5) == pytest.approx(2 * 0.05 * 0.95, abs=1e-9)
    assert Law.constant(1.0).apart(0.1) == 0.0


def test_a_saturated_port_reorders_the_learners_by_their_step_noise():
    """Async on 8 TSUBAME-KFC nodes (64 learners of VGG-16, steps of cv
    0.05) is bound by the server's port, 81 ms a push: each learner is
    served in turn, and its place in the next turn moves as its step and the
    others' vary. The closed form put 99.8 % of the staleness on M - 1 = 63
    (total variation 0.456 from the run, a new user's first variant); the
    places a gradient gains or loses (analytic._reordering) give the run's
    spread."""
    from pathlib import Path

    from asgdsim import load_scenario

    sc = load_scenario(Path(__file__).resolve().parents[1] / "scenarios" /
                       "tsubame-kfc-dl-vgg16.yaml",
                       {"algorithm.kind": "async", "stop": {"epochs": 0.5}})
    pred = predict(sc)
    assert pred.bound.startswith("server_port")
    staleness = simulate(sc).gradients["staleness"].to_numpy()
    assert pred.staleness.std > 1.5          # not the point mass at 63 it was
    check_pmf(staleness, pred.staleness)


def test_sprint_stopped_by_time_ends_at_its_last_update_not_its_last_cycle():
    """SPRINT's GPUs in phase deliver in bursts a step apart, with empty
    cycles between: a run stopped by time ends at its last update, up to a
    step before the stop. The closed form ended it at the last cycle (8
    TSUBAME-KFC nodes, fixed steps, a 5 s stop: 1,534 s an epoch, "exact",
    against 1,110.5; a hunt)."""
    from pathlib import Path

    from asgdsim import load_scenario

    sc = load_scenario(Path(__file__).resolve().parents[1] / "scenarios" /
                       "tsubame-kfc-dl-vgg16.yaml", {"stop": {"time": 5.0},
                                                     "timing.jitter": "none"})
    pred, run = predict(sc), simulate(sc)
    assert pred.laws["epoch_time"].startswith("exact")
    assert pred.epoch_time_s == pytest.approx(run.summary["epoch_time_s"], rel=1e-9)


@pytest.mark.parametrize("cv", [0.2, 0.3, 0.35, 0.45])
def test_sprint_in_phase_at_a_busy_host_link_is_labelled_at_every_noise(cv):
    """Two DGX A100 nodes of ResNet-18 at sub-batch 256, 10 ms gamma steps:
    the host link is 81 % busy. Noise of cv 0.2 was labelled (turns
    reshuffled), 0.42 on (the node's contention), and 0.25 to 0.39 not,
    8 to 11 % off on every figure (a hunt)."""
    from asgdsim.scenario import scenario_from_dict

    sc = scenario_from_dict({
        "name": "gap", "workload": {"model": "resnet18", "dataset_samples": 1281167,
                                    "sub_batch": 256},
        "cluster": {"machine": "dgx-a100", "nodes": 2}, "algorithm": {"kind": "sprint"},
        "timing": {"compute": {"distribution": "gamma", "mean": "10 ms", "cv": cv}},
        "stop": {"gradients": 20000}})
    said = predict(sc).outside_assumptions or ""
    assert "reshuffles that queue's order" in said or "queueing in turns" in said
    if 0.25 <= cv < 0.4:      # the gap: the reshuffled turns' label now
        assert "reshuffles that queue's order" in said


@pytest.mark.parametrize("law, labelled", [("uniform", True), ("gamma", False)])
def test_k_async_leaving_half_out_under_a_bounded_law_is_labelled(law, labelled):
    """8 V100s, K = 4, steps of cv 0.5, ideal links: a round can close on the
    fresh steps and leave the same slow ones out again. Uniform steps were
    7.7 to 9.1 % long, unlabelled (gamma within 3 %; a hunt)."""
    from asgdsim.scenario import scenario_from_dict

    sc = scenario_from_dict({
        "name": "half", "workload": {"model": "resnet50", "dataset_samples": 1281167,
                                     "sub_batch": 32},
        "cluster": {"machine": "dgx1-v100", "nodes": 1},
        "algorithm": {"kind": "k-async", "k": 4},
        "timing": {"compute": {"distribution": law, "mean": "200 ms", "cv": 0.5},
                   "communication": "ideal"},
        "stop": {"gradients": 16000}})
    said = predict(sc).outside_assumptions or ""
    assert ("half the learners left out" in said) == labelled


def test_sprint_stopped_by_time_with_noise_is_within_the_suites_bound():
    """The default scenario stopped at 6 s: 1,234 s an epoch from the last
    cycle against 1,093 and 1,128 simulated (seeds 1 and 4; a hunt); the
    last update's expected time is within the agreement suite's 5 %."""
    from pathlib import Path

    from asgdsim import load_scenario

    sc = load_scenario(Path(__file__).resolve().parents[1] / "scenarios" /
                       "tsubame-kfc-dl-vgg16.yaml", {"stop": {"time": 6.0}})
    closed = predict(sc).epoch_time_s
    for seed in (1, 4):
        simulated = simulate(sc, seed=seed).summary["epoch_time_s"]
        assert abs(closed - simulated) <= 0.05 * simulated, (seed, closed, simulated)
