"""Learners that span several GPUs of a node (cluster.gpus_per_learner):
their count, their step time, their memory, and what is refused."""


import pytest

from asgdsim import simulate
from asgdsim.costs import COMPUTE_COSTS, costs_of, ring_allreduce_time, transfer_time
from asgdsim.errors import ScenarioError

from conftest import make

BASE = dict(cluster__nodes=2, cluster__gpus_per_node=4, workload__model="resnet50",
            workload__sub_batch=32, timing__compute="table", timing__jitter="none",
            timing__communication="modelled", algorithm__kind="async", stop__gradients=60)


def test_a_learner_of_k_gpus_counts_once():
    sc = make(cluster__gpus_per_learner=2, **BASE)
    assert sc.cluster.learners == 4 and sc.cluster.learners_per_node == 2
    res = simulate(sc)
    assert res.summary["learners"] == 4 and res.gradients["learner"].nunique() == 4
    assert res.gradients.groupby("learner")["node"].first().tolist() == [0, 0, 1, 1]


def test_data_split_steps_a_kth_of_the_batch_then_sums_the_gradients():
    sc = make(cluster__gpus_per_learner=4, cluster__learner_split="data", **BASE)
    c, cost = sc.cluster, COMPUTE_COSTS["table"]
    expected = (cost.step_time(c.gpu, sc.workload.model, 8)
                + ring_allreduce_time(c.host_link, 4 * sc.workload.model.parameters, 4))
    assert costs_of(sc).compute.mean == pytest.approx(expected, rel=1e-12)


def test_layer_split_steps_the_whole_network_and_crosses_its_cuts():
    one = make(**BASE)
    two = make(cluster__gpus_per_learner=2, cluster__learner_split="layers", **BASE)
    single = costs_of(one).compute.mean
    crossing = costs_of(two).compute.mean - single
    # one cut: activations of a sub-batch forward, their gradients back
    smallest = 2 * transfer_time(two.cluster.host_link, 4 * 32 * min(
        layer.out_values for layer in two.workload.model.graph))
    assert crossing >= smallest > 0


def test_splitting_the_data_lets_a_bigger_sub_batch_fit():
    big = dict(BASE, workload__model="vgg16", workload__sub_batch=256, cluster__gpu="K80")
    with pytest.raises(ScenarioError) as error:
        make(**big)
    assert "workload.sub_batch" in str(error.value)
    sc = make(cluster__gpus_per_learner=4, **big)
    assert sc.footprint.fits and sc.footprint.activations < make(
        **dict(big, workload__sub_batch=64)).footprint.activations * 1.01


def test_what_cannot_be_split_is_refused():
    with pytest.raises(ScenarioError) as error:
        make(cluster__gpus_per_learner=3, **BASE)
    assert "cluster.gpus_per_learner" in str(error.value) and "divisor" in str(error.value)
    with pytest.raises(ScenarioError) as error:
        make(cluster__gpus_per_learner=2, cluster__learner_split="layers",
             **dict(BASE, workload__model={"name": "t", "parameters": 1000000,
                                           "forward_flops": "1 GFLOP"}))
    assert "cluster.learner_split" in str(error.value)


def test_the_slowest_of_k_draws_has_the_maximums_exact_moments():
    """The max of k: of uniforms a scaled Beta(k, 1), of exponentials the
    sum of 1/i-scaled exponentials (mean H_k, variance sum of 1/i^2)."""
    import math

    from asgdsim.distributions import law_from_spec, slowest_of
    from asgdsim.specs import LawSpec

    for k in (2, 8):
        half = math.sqrt(3) * 0.1
        law = slowest_of(law_from_spec(LawSpec(distribution="uniform", mean=1.0, cv=0.1)), k)
        assert law.mean == pytest.approx(1 - half + 2 * half * k / (k + 1), rel=1e-9)
        assert law.std == pytest.approx(2 * half * math.sqrt(k / ((k + 1) ** 2 * (k + 2))),
                                        rel=1e-6)
        law = slowest_of(law_from_spec(LawSpec(distribution="exponential", mean=1.0)), k)
        assert law.mean == pytest.approx(sum(1 / i for i in range(1, k + 1)), rel=1e-9)
        assert law.std == pytest.approx(math.sqrt(sum(1 / i**2 for i in range(1, k + 1))),
                                        rel=1e-6)
        # a lognormal's slowest stays a lognormal, a gamma's a gamma
        for family in ("lognormal", "gamma"):
            one = law_from_spec(LawSpec(distribution=family, mean=1.0, cv=0.3))
            assert slowest_of(one, k).name == family and slowest_of(one, k).mean > one.mean
    assert slowest_of(law_from_spec(LawSpec(distribution="gamma", mean=1.0, cv=0.3)), 1) \
        == law_from_spec(LawSpec(distribution="gamma", mean=1.0, cv=0.3))


def test_a_data_split_learner_waits_for_its_slowest_gpu():
    """Each of a learner's k GPUs jitters on its own and the ring waits for
    the slowest, as k sync learners would: the step is the GPU's step times
    the slowest of k jitters, plus the ring; the simulator steps by it."""
    import math

    import numpy as np

    k, cv = 4, 0.1
    jittered = dict(BASE, timing__jitter={"distribution": "uniform", "cv": cv},
                    timing__communication="ideal", stop__gradients=4000)
    sc = make(cluster__gpus_per_learner=k, cluster__learner_split="data", **jittered)
    c, cost = sc.cluster, COMPUTE_COSTS["table"]
    gpu_step = cost.step_time(c.gpu, sc.workload.model, 32 // k)
    ring = ring_allreduce_time(c.gpu_to_gpu, 4 * sc.workload.model.parameters, k)
    half = math.sqrt(3) * cv
    law = costs_of(sc).compute
    assert law.mean == pytest.approx(gpu_step * (1 - half + 2 * half * k / (k + 1)) + ring,
                                     rel=1e-9)
    assert law.std == pytest.approx(gpu_step * 2 * half * math.sqrt(k / ((k + 1) ** 2 * (k + 2))),
                                    rel=1e-6)
    # one GPU a learner keeps the jitter's own spread
    assert costs_of(make(**jittered)).compute.cv == pytest.approx(cv, rel=1e-12)
    g = simulate(sc).gradients
    steps = (g["t_end"] - g["t_start"]).to_numpy()
    # 4,000 steps: the mean within 4 standard errors
    assert abs(steps.mean() - law.mean) < 4 * law.std / np.sqrt(len(steps))
