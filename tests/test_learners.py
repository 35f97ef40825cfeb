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
