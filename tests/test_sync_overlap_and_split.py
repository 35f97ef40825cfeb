"""Sync's two TensorFlow facts: gradients that leave during the backward pass
(``overlap: backward``) and weights split over the shards as whole tensors
(``split: round-robin | greedy``).

Exact results: one learner's round by hand from its stages (the push beside
the last ``share`` of the step, the step done when both are); the shards'
shares by hand on a small network; and, with fixed steps, the closed form's
walk against the simulator to rounding, many learners sharing ports.
"""

import numpy as np
import pytest

from asgdsim import predict, simulate
from asgdsim.algorithms.allreduce import backward_share
from asgdsim.algorithms.server import overlap_shares
from asgdsim.costs import costs_of
from asgdsim.errors import ScenarioError
from asgdsim.structure import loop_of, shard_shares, topology_of

from conftest import make

STEP = 0.2


def sync(**overrides):
    return make(algorithm__kind="sync", timing__communication="modelled",
                timing__compute={"distribution": "deterministic", "mean": STEP},
                workload__sub_batch=4, **overrides)


def rounds_of(result) -> np.ndarray:
    return np.diff(result.updates["t"].to_numpy())


@pytest.mark.parametrize("network", ["10gbe", "ib-edr"])
def test_one_learner_pushes_beside_its_backward_pass(network):
    # 10GbE: the push outlasts the backward pass; EDR: the backward pass outlasts it
    sc = sync(cluster__nodes=1, cluster__gpus_per_node=1, cluster__network=network,
              algorithm__overlap="backward", stop__updates=6)
    costs, loop = costs_of(sc), loop_of(sc, costs_of(sc))
    share = backward_share(sc)
    assert share == pytest.approx(2 / 3)        # a compute law: two thirds of the step
    lead = STEP * share
    after = sum(st.duration_s for st in loop.after)
    round_ = (sum(st.duration_s for st in loop.reply + loop.before) + STEP - lead
              + max(lead, after) + costs.server_update_s)
    assert rounds_of(simulate(sc))[1:] == pytest.approx(round_, rel=1e-9)
    assert predict(sc).t_update_s == pytest.approx(round_, rel=1e-9)
    plain = sync(cluster__nodes=1, cluster__gpus_per_node=1, cluster__network=network,
                 stop__updates=6)
    assert predict(plain).t_update_s == pytest.approx(round_ + min(lead, after), rel=1e-9)


@pytest.mark.parametrize("servers, placement, split", [
    (1, "dedicated", "even"), (3, "colocated", "even"), (2, "dedicated", "round-robin"),
    (4, "colocated", "greedy"), (3, "dedicated", "greedy")])
@pytest.mark.parametrize("overlap", ["none", "backward"])
def test_fixed_steps_walk_as_the_simulator_runs(servers, placement, split, overlap):
    sc = sync(cluster__nodes=4, cluster__gpus_per_node=2, cluster__network="10gbe",
              workload__model="resnet50", algorithm__servers=servers,
              algorithm__placement=placement, algorithm__split=split,
              algorithm__overlap=overlap, stop__updates=40)
    rounds, pred = rounds_of(simulate(sc)), predict(sc)
    assert pred.laws["epoch_time"].startswith("exact")
    # the rounds settle into a cycle of a few; their mean is the closed form's
    assert np.mean(rounds[-24:]) == pytest.approx(pred.t_update_s, rel=1e-6)


def test_overlap_takes_time_off_a_network_bound_round():
    base = dict(cluster__nodes=4, cluster__gpus_per_node=1, cluster__network="10gbe",
                workload__model="resnet50", stop__updates=10)
    plain, overlapped = predict(sync(**base)), predict(sync(algorithm__overlap="backward", **base))
    assert overlapped.t_update_s < plain.t_update_s
    # but never below the step itself
    assert overlapped.t_update_s > STEP


def tensors_model():
    # its tensors in order: conv 3*3*3*8 weights and 8 biases, norm 16, conv
    # 3*3*8*16 and 16, norm 32, fc 16*2*2*10 and 10
    return {"name": "tiny", "input_shape": [3, 4, 4],
            "layers": [{"conv": 8, "kernel": 3, "pad": 1}, {"norm": "batch"},
                       {"conv": 16, "kernel": 3, "pad": 1}, {"norm": "batch"},
                       {"pool": "max", "kernel": 2, "stride": 2}, {"fc": 10}]}


TENSORS = [216, 8, 16, 1152, 16, 32, 640, 10]


@pytest.mark.parametrize("split, servers, loads", [
    ("round-robin", 2, [216 + 16 + 16 + 640, 8 + 1152 + 32 + 10]),
    ("round-robin", 3, [216 + 1152 + 640, 8 + 16 + 10, 16 + 32]),
    # each to the least loaded so far: 216 to 0, 8 to 1, 16 to 1, 1152 to 1, 16 to 0, ...
    ("greedy", 2, [216 + 16 + 32 + 640 + 10, 8 + 16 + 1152]),
    ("greedy", 3, [216 + 10, 8 + 1152, 16 + 16 + 32 + 640]),
])
def test_whole_tensors_dealt_to_the_shards(split, servers, loads):
    sc = sync(workload__model=tensors_model(), algorithm__servers=servers, algorithm__split=split)
    assert [size for layer in sc.workload.model.graph for size in layer.tensors] == TENSORS
    assert shard_shares(sc) == pytest.approx([load / sum(loads) for load in loads])
    # the shards apply their parts at once: the largest part's time
    even = sync(workload__model=tensors_model(), algorithm__servers=servers)
    assert shard_shares(even) is None
    assert costs_of(sc).server_update_s == pytest.approx(
        costs_of(even).server_update_s * servers * max(loads) / sum(loads))


def test_a_part_carries_its_shards_bytes_and_an_empty_shard_none():
    # ten shards for eight tensors dealt in turn: shards 8 and 9 hold nothing
    sc = sync(workload__model=tensors_model(), algorithm__servers=10, algorithm__split="round-robin",
              cluster__nodes=3, cluster__gpus_per_node=1, cluster__network="10gbe",
              stop__updates=20)
    shares = shard_shares(sc)
    assert shares[8] == shares[9] == 0
    topo, loop = topology_of(sc), loop_of(sc, costs_of(sc))
    network = sc.cluster.network
    for learner in range(3):
        pushes = [st for st in loop.after if st.name == "push"]
        held = [st for st in pushes if topo.holds(st, learner) is not None]
        assert len(held) == 8
        for st in held:
            share = shares[topo.shard_of(learner, st.part)]
            assert topo.duration_s(st, learner) == pytest.approx(
                network.latency + share * costs_of(sc).weights_bytes / network.bandwidth)
    rounds, pred = rounds_of(simulate(sc)), predict(sc)
    assert np.mean(rounds[-12:]) == pytest.approx(pred.t_update_s, rel=1e-6)


def test_an_uneven_split_slows_a_round_at_the_busiest_shard():
    base = dict(cluster__nodes=8, cluster__gpus_per_node=1, cluster__network="10gbe",
                workload__model="resnet50", algorithm__servers=4,
                algorithm__placement="dedicated", stop__updates=10)
    even, dealt = predict(sync(**base)), predict(sync(algorithm__split="round-robin", **base))
    # ResNet-50's tensors alternate convolution and normalisation: dealt to
    # four shards in turn, the convolutions' weights land on two of them
    shares = shard_shares(sync(algorithm__split="round-robin", **base))
    assert max(shares) > 0.45 and min(shares) < 0.01
    assert dealt.t_update_s > even.t_update_s


def test_split_needs_the_models_tensors():
    with pytest.raises(ScenarioError, match="algorithm.split"):
        sync(workload__model={"name": "totals", "parameters": 1000, "forward_flops": 1e6},
             algorithm__servers=2, algorithm__split="greedy")
    with pytest.raises(ScenarioError, match="algorithm.overlap"):
        sync(algorithm__overlap="forward")


def test_each_group_overlaps_its_own_backward_pass():
    def mixed(groups):
        return make(algorithm={"kind": "sync", "overlap": "backward"}, workload__model="resnet50",
                    workload__sub_batch=32, cluster={"groups": groups, "network": "ib-fdr"},
                    timing={"compute": "table", "communication": "modelled"})
    k80, p100 = {"nodes": 1, "gpu": "K80", "gpus_per_node": 2}, {"nodes": 1, "gpu": "P100",
                                                                 "gpus_per_node": 2}
    one, other = mixed([k80, p100]), mixed([p100, k80])
    shares = overlap_shares(one).tolist()
    assert shares[:2] == [backward_share(one, one.cluster.groups[0].gpu)] * 2
    assert shares[2:] == [backward_share(one, one.cluster.groups[1].gpu)] * 2
    assert overlap_shares(other).tolist() == shares[2:] + shares[:2]
    assert all(0.5 < share < 0.8 for share in shares)


@pytest.mark.parametrize("keys", [{"overlap": "backward"},
                                  {"servers": 4, "split": "round-robin"},
                                  {"servers": 4, "split": "greedy", "overlap": "backward"}])
def test_many_learners_alike_on_every_path(keys):
    # 300 learners: past the walked schedule; a slow learner of slowdown 1
    # sends the same cluster down the mixed path
    base = dict(cluster__nodes=300, cluster__gpus_per_node=1, cluster__network="ib-edr",
                workload__model="resnet50", stop__updates=5,
                **{f"algorithm__{key}": value for key, value in keys.items()})
    plain = predict(sync(**base)).t_update_s
    mixed = predict(sync(faults={"slow_learners": {"learners": [0], "slowdown": 1.0}},
                         **base)).t_update_s
    assert plain > STEP and mixed > STEP
    assert mixed == pytest.approx(plain, rel=0.05)


def test_a_failure_loses_the_gradient_on_its_way():
    sc = make(algorithm={"kind": "sync", "overlap": "backward", "servers": 2},
              workload__model="resnet50", workload__sub_batch=32,
              cluster={"nodes": 4, "gpus_per_node": 2, "gpu": "V100", "network": "10gbe"},
              timing={"compute": {"distribution": "exponential", "mean": "100 ms"}},
              faults={"failures": {"mtbf": "3 s", "repair": "1 s"}}, stop={"time": "60 s"}, seed=3)
    res = simulate(sc)
    lost = res.summary["faults"]["lost_gradients"]
    assert res.summary["faults"]["failures"] > 0 and lost > 0
    # every gradient applied or lost, none twice: the rounds hold what was pushed
    assert (res.gradients["staleness"] == 0).all()
    assert res.updates["gradients"].sum() == len(res.gradients)
