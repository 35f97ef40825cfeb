"""Fat trees (cluster.topology): exact timelines through shared up-links,
one leaf the same as one switch, the closed form's price of an
oversubscription against seeded runs, collectives across leaves, and bad
keys refused."""

import math

import numpy as np
import pytest
import simpy

from asgdsim import predict, simulate
from asgdsim.components.link import Link, Path
from asgdsim.costs import costs_of
from asgdsim.scenario import ScenarioError
from asgdsim.structure import loop_of, topology_of

from conftest import batch_means_se, make

#: a network without latency, so a message's time is bytes / bandwidth exactly
WIRE = {"name": "wire", "bandwidth": "10 GB/s", "latency": 0}


def tree(nodes_per_switch, oversubscription=1):
    return {"kind": "fat-tree", "nodes_per_switch": nodes_per_switch,
            "oversubscription": oversubscription}


def modelled(**overrides):
    """One-GPU nodes on WIRE, steps fixed at 1 s, a message per push and pull."""
    # a server's update (a CPU pass over the weights) far shorter than a message
    keys = dict(cluster__gpus_per_node=1, cluster__network=WIRE,
                cluster__host_memory_bandwidth="2 TB/s", timing__communication="modelled")
    return make(**{**keys, **overrides})


# -- the Path: ports end to end, the fabric at its share ---------------------

def test_k_flows_through_an_up_link_take_what_sharing_it_gives():
    """k transfers from k nodes' ports through one up-link of capacity C:
    the last ends k x bytes / C after they started, as sharing C gives, and
    none ends before its own port's time."""
    env = simpy.Environment()
    k, port_s, share = 6, 1.0, 0.5          # the up-link at twice a port's rate
    up = Link(env, "leaf_up[0]")
    ends = []

    def send(i):
        yield from Path(env, [Link(env, f"port_out[{i}]")], [up], share).transfer(port_s)
        ends.append(env.now)

    for i in range(k):
        env.process(send(i))
    env.run()
    assert ends == [1.0, 1.0, 1.5, 2.0, 2.5, 3.0]
    assert max(ends) == k * port_s * share          # k bytes / C
    assert up.busy_s == k * port_s * share


def test_a_path_waits_for_its_ports_and_not_for_the_fabric_s_other_users():
    env = simpy.Environment()
    port, server, up = Link(env, "port_out[0]"), Link(env, "server_port_in"), Link(env, "leaf_up[0]")
    server.free_at = 2.0                    # the server's port busy until 2 s
    log = []

    def send():
        yield from Path(env, [server, port], [up], 0.25).transfer(1.0)
        log.append(env.now)

    env.process(send())
    env.run()
    assert log == [3.0]                      # started at 2 with its ports, 1 s of port time
    assert (up.free_at, up.busy_s) == (2.25, 0.25)
    assert (port.busy_s, server.busy_s) == (1.0, 1.0)


# -- whole clusters, exact -----------------------------------------------------

@pytest.mark.parametrize("kind", ["async", "sync", "sprint", "allreduce"])
def test_one_leaf_is_the_one_switch(kind):
    """Every node (the server's too) under one leaf: nothing crosses the
    fabric, and the run is the default's to the last bit."""
    keys = {"algorithm": {"kind": kind}, "cluster__nodes": 4, "stop__gradients": 80}
    if kind == "sprint":
        keys["timing__update_interval"] = "150 ms"
    base = modelled(**keys)
    fat = modelled(**keys, cluster__topology=tree(5, 1))
    a, b = simulate(base, seed=3), simulate(fat, seed=3)
    assert a.gradients.equals(b.gradients) and a.updates.equals(b.updates)
    assert predict(base).summary == predict(fat).summary


@pytest.mark.parametrize("nodes_per_switch,oversubscription,learners_per_leaf", [
    (1, 1, 1), (1, 4, 1), (4, 8, 4), (4, 2, 4), (2, 6, 2)])
def test_sync_pushes_queue_at_the_slowest_link_on_their_way(nodes_per_switch, oversubscription,
                                                            learners_per_leaf):
    """Sync, fixed steps: every learner's push leaves at once; they reach
    the server one message apart, the message timed at the slowest link they
    share: the server's port (bytes / B) or its leaf's down-link, whose
    capacity is nodes_per_switch x B / oversubscription (bytes / C each). The
    closed form's round is the simulator's."""
    sc = modelled(algorithm__kind="sync", cluster__nodes=8, stop__updates=3,
                  cluster__topology=tree(nodes_per_switch, oversubscription))
    message = costs_of(sc).network_s
    res = simulate(sc)
    first = np.sort(res.gradients["t_end"].to_numpy()[:8])
    per_push = message * max(1.0, oversubscription / nodes_per_switch)
    assert np.diff(first) == pytest.approx(np.full(7, per_push), rel=1e-12)
    pred = predict(sc)
    assert pred.epoch_time_s == pytest.approx(res.summary["epoch_time_s"], rel=1e-9)
    assert pred.laws["epoch_time"].startswith("exact")


def test_one_leaf_s_learners_share_its_up_link():
    """Four learners under one leaf push together through its up-link, at
    half a port's rate (4 ports / 8), and into the server's leaf through its
    down-link, as fast: they arrive 2 message-times apart, the last 4 x
    bytes / C after they left, C the links' capacity."""
    sc = modelled(algorithm__kind="sync", cluster__nodes=4, stop__updates=1,
                  cluster__topology=tree(4, 8))
    message = costs_of(sc).network_s
    res = simulate(sc)
    ends = np.sort(res.gradients["t_end"].to_numpy())
    pushed_at = ends[0] - 2 * message
    assert ends - pushed_at == pytest.approx(2 * message * np.arange(1, 5), rel=1e-12)


def test_collectives_across_leaves_see_the_up_link_s_share():
    """SPRINT's ring across nodes of two leaves at 4:1: the bandwidth term at
    a quarter of the node's rails; inside one leaf, or at 1:1, unchanged."""
    keys = dict(cluster__nodes=8, algorithm={"kind": "sprint"}, cluster__rails=2)
    one_switch = costs_of(modelled(**keys)).allreduce_s
    weights = costs_of(modelled(**keys)).weights_bytes
    latency_part = 2 * 7 * 0.0
    bandwidth_part = 2 * 7 * (weights / 8) / (2 * 10e9)
    assert one_switch == pytest.approx(latency_part + bandwidth_part, rel=1e-12)
    assert costs_of(modelled(**keys, cluster__topology=tree(4, 4))).allreduce_s == \
        pytest.approx(4 * bandwidth_part, rel=1e-12)
    assert costs_of(modelled(**keys, cluster__topology=tree(8, 4))).allreduce_s == one_switch
    assert costs_of(modelled(**keys, cluster__topology=tree(4, 1))).allreduce_s == one_switch


# -- the closed form's price of an oversubscription, against seeded runs ------

def _per_gradient(sc, seeds=range(3)):
    """Simulated seconds per gradient after the first tenth of the run, and
    its standard error by batch means over the seeds' intervals."""
    gaps = []
    for seed in seeds:
        t = np.sort(simulate(sc, seed=seed).gradients["t_end"].to_numpy())
        gaps.append(np.diff(t[len(t) // 10:]))
    gaps = np.concatenate(gaps)
    return float(gaps.mean()), batch_means_se(gaps)


def test_oversubscription_4_raises_the_async_cycle_by_what_the_closed_form_predicts():
    """Async, transfer bound (16 learners, exponential steps far shorter
    than 16 messages): the server's port sets the pace under one switch. In
    a fat tree of two nodes a leaf at 4:1 the server's leaf links carry half
    a port's rate, and each message takes twice as long there. The closed
    form's rise of the time per gradient against the simulator's, within
    four standard errors of the simulated difference."""
    keys = dict(algorithm={"kind": "async"}, cluster__nodes=16, stop__gradients=3000,
                timing__compute={"distribution": "exponential", "mean": "20 ms"})
    flat, fat = modelled(**keys), modelled(**keys, cluster__topology=tree(2, 4))
    (a, se_a), (b, se_b) = _per_gradient(flat), _per_gradient(fat)
    predicted = predict(fat).t_update_s - predict(flat).t_update_s
    message = costs_of(flat).network_s
    assert predicted == pytest.approx(message, rel=0.01)    # 2 message-times a gradient, not 1
    assert abs((b - a) - predicted) <= 4 * math.hypot(se_a, se_b) + 1e-9 * b


@pytest.mark.parametrize("kind,keys,tolerance", [
    # fixed steps: the skeleton walks the fabric as the simulator does
    ("async", {}, 1e-9),
    ("downpour", {"n_fetch": 2, "n_push": 2}, 1e-9),
    ("local-sgd", {"period": 4, "average": "server"}, 1e-9),
    ("allreduce", {"collective": "ring"}, 1e-9),
])
def test_closed_form_agrees_on_fixed_steps_across_leaves(kind, keys, tolerance):
    sc = modelled(algorithm={"kind": kind, **keys}, cluster__nodes=8, cluster__gpus_per_node=2,
                  stop__gradients=800, cluster__topology=tree(2, 4))
    sim, pred = simulate(sc).summary, predict(sc)
    assert "assumptions" not in pred.laws
    assert pred.epoch_time_s == pytest.approx(sim["epoch_time_s"], rel=tolerance)


@pytest.mark.parametrize("servers,placement,gpus_per_node,nodes", [
    (2, "dedicated", 1, 4), (4, "colocated", 3, 2), (3, "colocated", 2, 5), (4, "dedicated", 3, 3),
])
def test_sharded_sync_with_fixed_steps_is_its_walk(servers, placement, gpus_per_node, nodes):
    # every part of a message holds its shard's port and its node's at once,
    # and a part that fits in the idle time another left takes it; the
    # round's walk (skeleton.py) books them the same way (booking.py), so
    # fixed steps agree round for round, but where two transfers are asked
    # for at one instant: the walk times a round from 0, the run from its
    # publication, and the two sums may round apart in the last bit, which
    # orders the two differently (3 shards on 5 nodes: 1 round in 7 of the
    # run 1 % shorter). (The server's port as one queue was 6 % off.)
    sc = modelled(algorithm={"kind": "sync", "servers": servers, "placement": placement},
                  cluster__nodes=nodes, cluster__gpus_per_node=gpus_per_node,
                  stop__gradients=60 * nodes * gpus_per_node)
    res, pred = simulate(sc), predict(sc)
    assert "assumptions" not in pred.laws
    rounds = np.diff(res.updates["t"].to_numpy())
    assert np.mean(np.isclose(rounds, pred.t_update_s, rtol=1e-9)) >= 0.8
    assert pred.epoch_time_s == pytest.approx(res.summary["epoch_time_s"], rel=1e-3)


@pytest.mark.parametrize("kind,keys", [
    ("async", {}), ("sync", {}), ("softsync", {"n": 4}), ("k-batch-async", {"k": 4}),
    ("downpour", {"n_fetch": 2, "n_push": 2})])
@pytest.mark.parametrize("nodes_per_switch,oversubscription,mean", [
    (2, 4, "100 ms"),       # the server's leaf's links at half a port's rate set the pace
    (2, 4, "3 s"),          # the GPUs do, the fabric a quarter busy
    (1, 2, "1 s"),          # in between: the server's leaf's down-link 65 % busy
])
def test_closed_form_agrees_on_random_steps_across_leaves(kind, keys, nodes_per_switch,
                                                          oversubscription, mean):
    """Exponential steps: the agreement suite's 5 % on epoch time, widened
    by three standard errors of the simulated epoch time, and no label."""
    sc = modelled(algorithm={"kind": kind, **keys}, cluster__nodes=8, cluster__gpus_per_node=2,
                  stop__gradients=4000, timing__compute={"distribution": "exponential", "mean": mean},
                  cluster__topology=tree(nodes_per_switch, oversubscription))
    times = [simulate(sc, seed=s).summary["epoch_time_s"] for s in range(3)]
    se = float(np.std(times, ddof=1) / math.sqrt(len(times)))
    pred = predict(sc)
    assert "assumptions" not in pred.laws
    assert abs(pred.epoch_time_s - np.mean(times)) <= 0.05 * pred.epoch_time_s + 3 * se


def test_k_batch_sync_times_its_messages_at_the_slower_fabric():
    """The agreement draw's case that found it (seed 2, random-345): 56
    V100s under leaves of two DGX-1 nodes at 4:1, whose links take twice a
    port's time; k-batch-sync's renewal count of a learner's step and
    messages must take the links' time, or its epoch is 10.8 % short. Held to
    the agreement suite's own bound (agreement.check)."""
    from asgdsim.agreement import check

    row = check({"name": "random-345", "seed": 309582569,
                 "workload": {"model": "resnet152", "dataset_samples": 36768, "sub_batch": 32},
                 "cluster": {"machine": "dgx1-v100", "nodes": 7, "topology": tree(2, 4.0)},
                 "algorithm": {"kind": "k-batch-sync", "k": 4},
                 "timing": {"compute": "table", "jitter": {"distribution": "uniform", "cv": 0.018},
                            "communication": "modelled"},
                 "stop": {"epochs": 5.0}})
    assert row["agrees"] and not row["outside"]


def test_sharded_sync_rounds_that_hang_on_their_ties_are_labelled():
    # 192 K80 dies (24 GCE nodes of 8), two colocated shards, leaves of two
    # nodes, fixed steps: the rounds' parts meet at the leaves' links in
    # ties; walked in the order the learners asked the rounds settle at 89 s
    # (the simulator's first round, 85.7 s, exactly; its later ones 110 down
    # to 83), walked the other way elsewhere: the mean of the rounds walked
    # was 15 % off the run's (agreement draw seed 10 random-119, shifted,
    # unlabelled). The sharded runs above, as fixed, hang on nothing
    from conftest import outside_assumptions

    data = {"name": "tied-rounds", "seed": 108393528,
            "workload": {"model": "vgg19", "dataset_samples": 3072000, "sub_batch": 128},
            "cluster": {"machine": "gce-k80x8", "nodes": 24,
                        "topology": {"kind": "fat-tree", "nodes_per_switch": 2,
                                     "oversubscription": 1.0}},
            "algorithm": {"kind": "sync", "servers": 2, "placement": "colocated"},
            "timing": {"compute": "table", "jitter": "none", "communication": "modelled"},
            "stop": {"updates": 62}}
    why = outside_assumptions(data)
    assert why is not None and "hang on their order" in why


@pytest.mark.parametrize("placement", ["dedicated", "colocated"])
def test_shards_across_busy_leaves_are_labelled(placement):
    """Four shards across 4:1 leaves, their links busy: the closed form (23 %
    short dedicated, 52 % colocated, against the simulator) says it is
    outside its assumptions; one shard, as busy, is within them."""
    keys = dict(cluster__nodes=8, cluster__gpus_per_node=2, stop__gradients=400,
                timing__compute={"distribution": "exponential", "mean": "100 ms"},
                cluster__topology=tree(2, 4))
    sharded = modelled(algorithm={"kind": "downpour", "servers": 4, "placement": placement}, **keys)
    assert "outside the closed form's assumptions" in predict(sharded).laws["assumptions"]
    assert "assumptions" not in predict(modelled(algorithm={"kind": "downpour"}, **keys)).laws


def test_the_fabric_is_a_station_of_the_closed_form():
    sc = modelled(cluster__nodes=8, cluster__topology=tree(2, 4))
    topo, loop = topology_of(sc), loop_of(sc, costs_of(sc))
    stations = {name: (demand, leaves) for name, demand, leaves in topo.fabric_demands(loop.stages)}
    message = costs_of(sc).network_s
    # the server on node 8, leaf 4 of its own: every push leaves a learner's
    # leaf (4 of them) and enters the server's, at 4 / (1 x 2) of a port's time
    assert stations == {"leaf_up": (pytest.approx(2 * message), 4),
                        "server_leaf_down": (pytest.approx(2 * message), 1),
                        "leaf_down": (pytest.approx(2 * message), 4),
                        "server_leaf_up": (pytest.approx(2 * message), 1)}
    assert topo.leaf_of(topo.server_node(0)) == 4


# -- the keys ----------------------------------------------------------------

@pytest.mark.parametrize("topology,key", [
    ({"kind": "torus"}, "cluster.topology.kind"),
    ({"kind": "fat-tree"}, "cluster.topology.nodes_per_switch"),
    ({"kind": "fat-tree", "nodes_per_switch": 0}, "cluster.topology.nodes_per_switch"),
    ({"kind": "fat-tree", "nodes_per_switch": 2.5}, "cluster.topology.nodes_per_switch"),
    ({"kind": "fat-tree", "nodes_per_switch": 4, "oversubscription": 0.5},
     "cluster.topology.oversubscription"),
    ({"kind": "fat-tree", "nodes_per_switch": 4, "oversubscription": "lots"},
     "cluster.topology.oversubscription"),
    ({"kind": "fat-tree", "nodes_per_switch": 4, "oversubscription": True},
     "cluster.topology.oversubscription"),
    ({"kind": "fat-tree", "nodes_per_switch": 4, "spines": 2}, "cluster.topology.spines"),
    ({"kind": "non-blocking", "nodes_per_switch": 4}, "cluster.topology.nodes_per_switch"),
])
def test_bad_topologies_are_refused_at_their_key(topology, key):
    with pytest.raises(ScenarioError) as caught:
        make(cluster__topology=topology)
    assert key in str(caught.value)


def test_oversubscription_as_data_sheets_write_it():
    assert make(cluster__topology=tree(16, "4:1")).cluster.topology.oversubscription == 4.0
    assert make().cluster.topology.kind == "non-blocking"
