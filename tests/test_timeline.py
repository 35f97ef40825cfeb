"""Exact timelines with deterministic costs: who does what, at which time."""

import numpy as np
import simpy

from asgdsim import simulate
from asgdsim.components.link import Link, transfer_over


def rows(df, *columns):
    return [tuple(np.round(r, 9)) if isinstance(r, tuple) else r
            for r in df[list(columns)].itertuples(index=False, name=None)]


def test_link_serves_transfers_one_at_a_time():
    env = simpy.Environment()
    link = Link(env, "pcie")
    log = []

    def send(name, duration):
        yield from link.transfer(duration)
        log.append((name, env.now))

    env.process(send("a", 1.0))
    env.process(send("b", 2.0))
    env.run()
    assert log == [("a", 1.0), ("b", 3.0)]
    assert link.busy_s == 3.0


def test_path_transfer_holds_every_link_of_the_path():
    env = simpy.Environment()
    a, b, shared = Link(env, "a"), Link(env, "b"), Link(env, "server")
    log = []

    def send(name, path):
        yield from transfer_over(env, path, 1.0)
        log.append((name, env.now))

    env.process(send("x", [a, shared]))
    env.process(send("y", [b, shared]))
    env.run()
    assert log == [("x", 1.0), ("y", 2.0)]
    assert (a.busy_s, b.busy_s, shared.busy_s) == (1.0, 1.0, 2.0)


def test_async_two_learners_ideal(scenario):
    res = simulate(scenario(stop__gradients=6))
    assert rows(res.gradients, "learner", "version_read", "version_applied", "t_end") == [
        (0, 0, 1, 1.0), (1, 0, 2, 1.0), (0, 1, 3, 2.0), (1, 2, 4, 2.0), (0, 3, 5, 3.0),
        (1, 4, 6, 3.0)]
    assert res.gradients["staleness"].tolist() == [0, 1, 1, 1, 1, 1]
    assert rows(res.updates, "version", "t", "gradients", "minibatch") == [
        (v, float((v + 1) // 2), 1, 1) for v in range(1, 7)]


def test_sync_round_applies_all_learners_at_once(scenario):
    res = simulate(scenario(algorithm__kind="sync", workload__sub_batch=4, stop__updates=3))
    assert rows(res.updates, "version", "t", "gradients", "minibatch") == [
        (1, 1.0, 2, 8), (2, 2.0, 2, 8), (3, 3.0, 2, 8)]
    assert res.gradients["staleness"].tolist() == [0] * 6
    assert rows(res.gradients, "learner", "version_read", "t_applied") == [
        (0, 0, 1.0), (1, 0, 1.0), (0, 1, 2.0), (1, 1, 2.0), (0, 2, 3.0), (1, 2, 3.0)]


def test_sprint_pipelined_cycle(scenario):
    """Gradients arriving during one cycle are applied at the end of the next."""
    res = simulate(scenario(algorithm__kind="sprint", timing__update_interval=1.0,
                            timing__compute={"distribution": "deterministic", "mean": 0.35},
                            stop__updates=3))
    assert rows(res.updates, "version", "t", "gradients") == [(1, 2.0, 4), (2, 3.0, 6), (3, 4.0, 6)]
    learner0 = res.gradients[res.gradients.learner == 0]
    assert rows(learner0, "version_read", "version_applied") == [
        (0, 1), (0, 1), (0, 2), (0, 2), (0, 2), (0, 3), (1, 3), (1, 3)]
    assert np.allclose(learner0["t_end"], 0.35 * np.arange(1, 9))


def _modelled_sprint(scenario, gpus_per_node, gpus_per_host_link=1, disk="100 B/s"):
    """Round numbers: weights 1000 B; each transfer or CPU pass a round time."""
    return scenario(
        algorithm__kind="sprint",
        workload__model={"name": "tiny", "parameters": 250, "forward_flops": 1.0,
                         "input_shape": [1, 1, 25]},
        workload__sample_bytes=100,
        cluster__nodes=2, cluster__gpus_per_node=gpus_per_node,
        cluster__gpus_per_host_link=gpus_per_host_link,
        cluster__network={"name": "net", "bandwidth": "500 B/s", "latency": 0},
        cluster__host_link={"name": "pcie", "bandwidth": "1000 B/s", "latency": 0},
        cluster__disk_bandwidth=disk,
        cluster__host_memory_bandwidth="5000 B/s",
        timing__communication="modelled",
        timing__compute={"distribution": "deterministic", "mean": 2.0},
        stop__updates=2)


def test_sprint_two_nodes_modelled(scenario):
    res = simulate(_modelled_sprint(scenario, gpus_per_node=1))
    c = res.costs
    # weights 1 s, disk 1 s, sub-batch copy 0.1 s, gradient copy 1 s,
    # accumulate 3 x 1000 / 5000 = 0.6 s; Allreduce 2 x 1 x 500 / 500 = 2 s,
    # update 5 x 1000 / 5000 = 1 s
    assert (c.weights_to_gpu_s, c.batch_read_s, c.batch_to_gpu_s, c.gradient_to_host_s,
            c.accumulate_s, c.allreduce_s, c.node_update_s) == (1.0, 1.0, 0.1, 1.0, 0.6, 2.0, 1.0)
    # a step: 0 -> 1 weights -> 2 disk -> 2.1 copy -> 4.1 compute -> 5.1 copy -> 5.7 added;
    # cycles swap at 0, 3, 6, 9, 12: the gradients of 5.7 are applied at 9, of 11.4 at 15
    assert rows(res.gradients, "learner", "node", "version_read", "version_applied",
                "t_start", "t_end", "t_applied") == [
        (0, 0, 0, 1, 0.0, 5.7, 9.0), (1, 1, 0, 1, 0.0, 5.7, 9.0),
        (0, 0, 0, 2, 5.7, 11.4, 15.0), (1, 1, 0, 2, 5.7, 11.4, 15.0)]
    assert rows(res.updates, "version", "t", "gradients") == [(1, 9.0, 2), (2, 15.0, 2)]


def test_gpus_sharing_a_host_link_wait_for_each_other(scenario):
    """Two GPUs of a node, a disk read of 0.1 us. With a link each, the second
    GPU only waits for the accumulator (0.6 s). Sharing one link: GPU 1's
    weights copy waits for GPU 0's (1 to 2), GPU 0's sub-batch copy for GPU 1's
    weights (2 to 2.1), GPU 1's sub-batch copy for that (2.1 to 2.2), so GPU 0
    computes 2.1 to 4.1 and copies its gradient 4.1 to 5.1 while GPU 1's waits
    (5.1 to 6.1); each then adds 0.6 s."""
    def first_gradients(gpus_per_host_link):
        res = simulate(_modelled_sprint(scenario, gpus_per_node=2, disk="1 GB/s",
                                        gpus_per_host_link=gpus_per_host_link))
        node0 = res.gradients[res.gradients.node == 0]
        return node0.groupby("learner")["t_end"].min().round(6).tolist()

    assert first_gradients(1) == [4.7, 5.3]
    assert first_gradients(2) == [5.7, 6.7]
