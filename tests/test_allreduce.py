"""The allreduce kind: synchronous data parallelism without a server.

Each round every learner computes, then the collective sums the gradients
and every learner updates its copy: one update of P gradients per round,
staleness 0. Exact results: with ideal communication a round lasts the
slowest of P steps, m H_P for exponential steps; with fixed steps and a
modelled collective, the simulator and the closed form agree to rounding.
"""

import math

import numpy as np
import pytest

from asgdsim import predict, simulate
from asgdsim.costs import costs_of, hierarchical_allreduce_time
from asgdsim.errors import ScenarioError

from conftest import make


def allreduce(**overrides):
    return make(algorithm__kind="allreduce", **overrides)


def test_fixed_steps_make_fixed_rounds():
    sc = allreduce(cluster__nodes=2, cluster__gpus_per_node=3, stop__updates=5,
                   timing__compute={"distribution": "deterministic", "mean": 0.2},
                   timing__communication="modelled", workload__sub_batch=4)
    res, costs = simulate(sc), costs_of(sc)
    u = res.updates
    # every round: read and copy the sub-batch, compute, collective + update
    # (the six learners share their nodes' disks and host links)
    assert u["gradients"].tolist() == [6] * 5 and u["minibatch"].tolist() == [24] * 5
    assert (res.gradients["staleness"] == 0).all()
    rounds = np.diff(np.concatenate([[0.0], u["t"].to_numpy()]))
    assert np.allclose(rounds[1:], rounds[1])                 # periodic
    assert rounds[0] > 0.2 + costs.collective_s
    pred = predict(sc)
    assert pred.epoch_time_s == pytest.approx(res.summary["epoch_time_s"], rel=1e-9)
    assert pred.t_update_s == pytest.approx(rounds[1], rel=1e-9)


def test_exponential_rounds_last_the_slowest_of_p_steps():
    p, m, rounds = 8, 0.1, 4000
    sc = allreduce(cluster__gpus_per_node=p, stop__updates=rounds, seed=11,
                   timing__compute={"distribution": "exponential", "mean": m})
    t = simulate(sc).updates["t"].to_numpy()
    durations = np.diff(np.concatenate([[0.0], t]))
    harmonic = sum(1 / k for k in range(1, p + 1))
    # the max of P exponentials: mean m H_P, variance m^2 sum 1/k^2; rounds independent
    se = m * math.sqrt(sum(1 / k**2 for k in range(1, p + 1)) / rounds)
    assert abs(durations.mean() - m * harmonic) < 4 * se
    assert predict(sc).t_update_s == pytest.approx(m * harmonic, rel=1e-12)
    assert predict(sc).laws["epoch_time"].startswith("exact")


def test_the_collective_and_its_overlap():
    base = dict(cluster__nodes=4, cluster__gpus_per_node=2, timing__communication="modelled")
    sc = allreduce(**base)
    weights = 4 * sc.workload.model.parameters
    c = sc.cluster
    collective = hierarchical_allreduce_time(c.host_link, c.network, weights, 2, 4)
    update = costs_of(sc).collective_s - collective
    assert update > 0                        # each learner's momentum step on its GPU
    half = allreduce(algorithm__overlap=0.5, **base)
    assert costs_of(half).collective_s == pytest.approx(0.5 * collective + update)
    ring = allreduce(algorithm__collective="ring", **base)
    assert costs_of(ring).collective_s != costs_of(sc).collective_s


@pytest.mark.parametrize("changes, key", [
    ({"algorithm__overlap": 1.5}, "algorithm.overlap"),
    ({"algorithm__collective": "butterfly"}, "algorithm.collective"),
    ({"algorithm__allreduce": "ring"}, "algorithm.allreduce"),
])
def test_its_keys_are_checked(changes, key):
    with pytest.raises(ScenarioError) as error:
        allreduce(**changes)
    assert key in str(error.value)
    with pytest.raises(ScenarioError) as error:
        make(algorithm__kind="sprint", algorithm__collective="ring",
             timing__update_interval=0.1)
    assert "a key of allreduce" in str(error.value)


def test_gpus_with_a_link_of_their_own_use_it_inside_the_node():
    through_host = allreduce(cluster__machine="dgx1-v100", cluster__nodes=2,
                             cluster__gpu_link=None, timing__communication="modelled")
    over_nvlink = allreduce(cluster__machine="dgx1-v100", cluster__nodes=2,
                            timing__communication="modelled")
    assert over_nvlink.cluster.gpu_link.name == "nvlink2" and through_host.cluster.gpu_link is None
    assert costs_of(over_nvlink).collective_s < costs_of(through_host).collective_s
