"""The alpha-beta communication model and the durations a scenario implies."""

import pytest

from asgdsim.costs import (costs_of, hierarchical_allreduce_time, ring_allreduce_time,
                           transfer_time, tree_allreduce_time)
from asgdsim.scenario import LinkSpec

from conftest import make

LINK = LinkSpec(name="l", bandwidth=1e9, latency=1e-6)


def test_transfer_is_latency_plus_bytes_over_bandwidth():
    assert transfer_time(LINK, 2e9) == pytest.approx(2.000001)


def test_ring_tree_and_hierarchical_allreduce():
    nbytes = 8e6
    assert ring_allreduce_time(LINK, nbytes, 1) == 0.0
    assert ring_allreduce_time(LINK, nbytes, 4) == pytest.approx(2 * 3 * (1e-6 + 2e6 / 1e9))
    assert tree_allreduce_time(LINK, nbytes, 5) == pytest.approx(2 * 3 * (1e-6 + 8e6 / 1e9))
    fast = LinkSpec(name="f", bandwidth=1e10, latency=0.0)
    assert hierarchical_allreduce_time(fast, LINK, nbytes, 8, 2) == pytest.approx(
        2 * 7 * (1e6 / 1e10) + ring_allreduce_time(LINK, nbytes, 2))
    # one GPU per node: only the nodes' ring
    assert hierarchical_allreduce_time(fast, LINK, nbytes, 1, 3) == ring_allreduce_time(LINK, nbytes, 3)


def test_sprint_cycle_uses_the_chosen_allreduce():
    def cycle(kind):
        sc = make(algorithm__kind="sprint", algorithm__allreduce=kind, cluster__nodes=16,
                  timing__communication="modelled")
        c = costs_of(sc)
        assert c.cycle_s == pytest.approx(c.allreduce_s + c.node_update_s)
        return c.allreduce_s

    weights = 4 * 61_100_840
    fdr = make().cluster.network
    assert cycle("ring") == pytest.approx(ring_allreduce_time(fdr, weights, 16))
    assert cycle("tree") == pytest.approx(tree_allreduce_time(fdr, weights, 16))


def test_update_interval_replaces_the_modelled_cycle():
    sc = make(algorithm__kind="sprint", timing__communication="modelled",
              timing__update_interval="370 ms")
    c = costs_of(sc)
    assert (c.cycle_s, c.allreduce_s, c.node_update_s) == (0.37, 0.37, 0.0)


def test_ideal_communication_costs_nothing_but_compute():
    c = costs_of(make(algorithm__kind="async"))
    assert (c.weights_to_gpu_s, c.batch_read_s, c.gradient_to_host_s, c.accumulate_s,
            c.network_s, c.server_update_s, c.allreduce_s) == (0,) * 7
    assert c.compute.mean == 1.0
