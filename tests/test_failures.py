"""Learners and nodes that fail and rejoin (faults.failures): every kind
keeps going, the invariants hold under failures (hypothesis), the exact
long-run rate of async with exponential steps, rounds that go on with the
learners that are up, SPRINT's Allreduce with the nodes that are up, and
the same numbers for the same seed."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asgdsim import predict, simulate

from conftest import batch_means_se, make

EXP = {"distribution": "exponential", "mean": 1.0}
Z = 4.0
KNOBS = {"k-sync": {"k": 2}, "k-batch-sync": {"k": 3}, "k-async": {"k": 2},
         "ssp": {"staleness_bound": 1}, "local-sgd": {"period": 2}, "softsync": {"n": 2},
         "k-batch-async": {"k": 2}, "downpour": {"n_push": 2, "n_fetch": 2}}
KIND_NAMES = ["async", "sync", "sprint", "allreduce", "local-sgd", "downpour", "ssp", "k-sync",
              "k-batch-sync", "k-async", "softsync", "k-batch-async"]


def failing(kind: str, scope: str = "learner", mtbf="20 s", repair="5 s", **overrides):
    data = dict(algorithm={"kind": kind, **KNOBS.get(kind, {})}, cluster__nodes=2,
                cluster__gpus_per_node=2, timing__compute=EXP, timing__communication="modelled",
                faults={"failures": {"mtbf": mtbf, "repair": repair, "scope": scope}},
                stop__gradients=400)
    data.update(overrides)
    return make(**data)


def check_invariants(res) -> None:
    g, u, outages = res.gradients, res.updates, res.outages
    # each gradient applied once, the updates' samples are the gradients'
    assert u["gradients"].sum() == len(g)
    assert u["minibatch"].sum() == g["samples"].sum()
    # versions one by one
    assert (u["version"].to_numpy() == np.arange(1, len(u) + 1)).all()
    assert (g["staleness"] >= 0).all()
    # nothing a learner computed overlaps a time it was down
    ends = outages["up_s"].fillna(np.inf)
    for learner, down, up in zip(outages["learner"], outages["down_s"], ends):
        mine = g[g["learner"] == learner]
        assert not ((mine["t_start"] < up) & (mine["t_end"] > down)).any()
    faults = res.summary["faults"]
    assert faults["lost_samples"] == faults["lost_gradients"] * res.scenario.workload.sub_batch
    assert faults["downtime_s"] <= res.summary["simulated_time_s"] * res.scenario.cluster.learners


@pytest.mark.parametrize("scope", ["learner", "node"])
@pytest.mark.parametrize("kind", KIND_NAMES)
def test_every_kind_keeps_going(kind, scope):
    res = simulate(failing(kind, scope))
    assert res.summary["gradients"] >= 400 and res.summary["faults"]["failures"] > 0
    check_invariants(res)
    assert "fail" in res.summary["analytic"]["laws"].get("assumptions", "")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(KIND_NAMES), scope=st.sampled_from(["learner", "node"]),
       mtbf=st.floats(0.5, 50.0), repair=st.floats(0.1, 20.0), seed=st.integers(0, 10_000),
       ideal=st.booleans())
def test_invariants_hold_under_any_failures(kind, scope, mtbf, repair, seed, ideal):
    ideal = ideal and kind != "sprint"        # (ideal SPRINT needs a fixed cycle)
    sc = failing(kind, scope, mtbf=mtbf, repair=repair, seed=seed,
                 timing__communication="ideal" if ideal else "modelled", stop__gradients=150)
    check_invariants(simulate(sc))


@pytest.mark.parametrize("scope", ["learner", "node"])
def test_async_delivers_at_the_failure_free_rate_while_up(scope):
    """Exponential steps are memoryless: given the time each learner was up,
    its gradients are Poisson with that time over the mean step; the long
    run's rate is A L / m, A = mtbf / (mtbf + repair)."""
    sc = make(algorithm={"kind": "async"}, cluster__nodes=4, cluster__gpus_per_node=2,
              timing__compute=EXP, stop__gradients=60_000,
              faults={"failures": {"mtbf": "30 s", "repair": "10 s", "scope": scope}})
    res = simulate(sc)
    end = res.updates["t"].iloc[-1]
    out = res.outages
    down = (out["up_s"].fillna(end).clip(upper=end) - out["down_s"]).clip(lower=0).sum()
    up_time = 8 * end - down
    expected = up_time / 1.0
    assert abs(len(res.gradients) - expected) <= Z * math.sqrt(expected)
    # every failure stops a step in progress (ideal communication: always computing)
    faults = res.summary["faults"]
    assert faults["lost_gradients"] == faults["failures"] * (2 if scope == "node" else 1)
    # the closed form's rate: availability times the failure-free rate
    available = 30 / 40
    assert res.summary["analytic"]["steady_throughput_samples_per_s"] == pytest.approx(8 * available)
    cycles = faults["failures"]
    # the measured share of time up against A: renewal-reward, one cycle per failure
    share = up_time / (8 * end)
    cycle_sd = math.sqrt(30.0**2) / 40.0        # the up time's spread per cycle, over its mean length
    assert abs(share - available) <= Z * cycle_sd * (1 - available) / math.sqrt(cycles) + 0.01


def test_sync_rounds_go_on_with_the_learners_that_are_up():
    sc = make(algorithm={"kind": "sync"}, cluster__gpus_per_node=4, timing__compute=EXP,
              stop__updates=3000,
              faults={"failures": {"mtbf": "10 s", "repair": "20 s"}})
    res = simulate(sc)
    u, out = res.updates, res.outages
    assert res.summary["faults"]["failures"] > 50
    ends = out["up_s"].fillna(np.inf).to_numpy()
    for t, n in zip(u["t"].to_numpy(), u["gradients"].to_numpy()):
        down_now = ((out["down_s"].to_numpy() < t) & (ends > t)).sum()
        # at most one gradient from each learner, none from one down all round
        assert n <= 4
        assert n >= 1
    sizes = u["gradients"].value_counts()
    assert sizes.index.min() < 4         # rounds of fewer learners happened
    check_invariants(res)


def test_sprint_allreduce_goes_on_without_a_failed_node():
    sc = make(algorithm={"kind": "sprint"}, cluster__nodes=3, cluster__gpus_per_node=2,
              timing__communication="modelled",
              timing__compute={"distribution": "gamma", "mean": 0.05, "cv": 0.1},
              stop__time="200 s", faults={"failures": {"mtbf": "30 s", "repair": "20 s", "scope": "node"}})
    res = simulate(sc)
    out, u = res.outages, res.updates
    check_invariants(res)
    # while a node is down the others' updates go on
    node_down = out[out["learner"] % 2 == 0]
    during = [((u["t"] > d + 1) & (u["t"] < e - 1)).sum() for d, e in
              zip(node_down["down_s"], node_down["up_s"].fillna(200.0)) if e - d > 5]
    assert during and min(during) > 0


def test_the_same_seed_fails_alike():
    a, b = simulate(failing("async")), simulate(failing("async"))
    assert a.summary["faults"] == b.summary["faults"]
    assert a.outages.equals(b.outages)
    c = simulate(failing("async", seed=7))
    assert not c.outages.equals(a.outages)


def test_failures_faster_than_steps_are_refused_before_the_run(tmp_path, capsys):
    """A step finishes only if its learner does not fail first: failures as
    often as steps would make the run crawl, and the estimate says so."""
    from asgdsim.cli import main

    path = tmp_path / "crawl.yaml"
    path.write_text("name: crawl\nworkload: {model: alexnet, dataset_samples: 64000, sub_batch: 64}\n"
                    "cluster: {machine: tsubame-kfc-dl, nodes: 2}\nalgorithm: {kind: sync}\n"
                    "faults: {failures: {mtbf: 1 ms, repair: 1 ms}}\nstop: {epochs: 1}\n")
    assert main(["run", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "faults.failures.mtbf" in err and "--max-events" in err
    assert not (tmp_path / "out").exists()


def test_a_run_with_few_failures_is_outside_the_long_run_form():
    from asgdsim import predict

    few = make(algorithm={"kind": "async"}, cluster__gpus_per_node=4, timing__compute=EXP,
               stop__gradients=400, faults={"failures": {"mtbf": "100 s", "repair": "10 s"}})
    assert "failures are expected in the run" in predict(few).laws["assumptions"]
    many = make(algorithm={"kind": "async"}, cluster__gpus_per_node=4, timing__compute=EXP,
                stop__gradients=40_000, faults={"failures": {"mtbf": "10 s", "repair": "1 s"}})
    assert "assumptions" not in predict(many).laws


def test_a_stuck_cluster_stops_with_a_clear_error(monkeypatch):
    """Failures never stop, so a cluster that can no longer apply anything
    would run on forever: the watch stops it. Stuck on purpose here: a
    repaired learner counts as up but never starts again, and the rounds
    never learn who failed."""
    from asgdsim.components import failures, server

    monkeypatch.setattr(failures.Failures, "_rejoin",
                        lambda self, index: self.membership.set(index, True))
    monkeypatch.setattr(server.SyncServer, "member_changed", lambda self, learner, up: None)
    sc = make(algorithm={"kind": "sync"}, cluster__gpus_per_node=4, timing__compute=EXP,
              stop__gradients=100_000, faults={"failures": {"mtbf": "20 s", "repair": "1 s"}})
    with pytest.raises(failures.Stalled, match="no gradient applied in .* learners up"):
        simulate(sc)


def test_a_learner_back_from_repair_joins_at_the_next_round():
    """Local SGD rounds of 16 steps on a cluster that fails every half a
    step: were a round to wait for each learner repaired meanwhile, none
    would ever close (misbehaving seed 3 #32 stalled). A learner that
    comes back starts on the next round's weights, so rounds close with
    the learners that were in them."""
    sc = make(algorithm={"kind": "local-sgd", "period": 16}, cluster__nodes=2,
              cluster__gpus_per_node=4, timing__compute=EXP, stop__updates=20,
              faults={"failures": {"mtbf": "4 s", "repair": "0.1 s"}})
    res = simulate(sc)
    check_invariants(res)
    assert len(res.updates) == 20 and res.summary["faults"]["failures"] > 100
    update_t = res.updates["t"].to_numpy()
    g, out = res.gradients, res.outages
    joined_late = 0
    for learner, up in zip(out["learner"], out["up_s"]):
        downs = out["down_s"][(out["learner"] == learner) & (out["down_s"] > up)]
        until = downs.min() if downs.size else np.inf
        mine = g["t_start"][(g["learner"] == learner) & (g["t_start"] >= up) & (g["t_start"] < until)]
        if np.isnan(up) or mine.empty:
            continue            # still down at the end, or failed before it pushed
        # it starts at once where nobody else is in a round, else at the
        # update of the round in progress, from its weights, or when that
        # round's last learner fails before the round closes
        first = mine.min()
        if first != pytest.approx(up):
            failed = out["down_s"][(out["down_s"] >= up) & (out["learner"] != learner)]
            assert first == pytest.approx(update_t[update_t >= up][0]) \
                or np.isclose(failed, first, rtol=0, atol=1e-9).any()
            joined_late += 1
    assert joined_late >= 3


def test_learners_waiting_to_join_start_when_the_round_loses_its_last_learner():
    # A is repaired while B is in a round, so A waits to join the next; B
    # fails before it pushes: no round is left to close, and A starts at
    # once on the weights as they are, not when B is repaired
    import simpy

    from asgdsim.components.server import SyncServer

    class Up:
        count = 0

    class Weights:
        version = 7

    env = simpy.Environment()
    server = SyncServer(env, Weights(), recorder=None, update_s=0.0, learners=2, whole=True)
    server.membership = Up()
    Up.count = 1                          # B is up, in a round
    server.member_changed(0, up=False)    # A was down: nothing to close
    Up.count = 2
    server.member_changed(0, up=True)     # A is back: it waits to join
    joined = server.admission(0)
    assert joined is not None and not joined.triggered
    Up.count = 1
    server.member_changed(1, up=False)    # B fails before pushing
    assert joined.triggered and joined.value == 7
    assert server.admission(0) is None and server._need == 1


def test_async_staleness_counts_the_others_over_a_step_not_cut_short():
    # failures every two steps: a step that finishes is one its learner's
    # failure did not cut short, Exp(1 / m + 1 / mtbf) long, over which the
    # others up deliver U mtbf / (m + mtbf) on average (2.50 without it)
    sc = make(algorithm={"kind": "async"}, cluster__nodes=2, cluster__gpus_per_node=8,
              timing__compute={"distribution": "exponential", "mean": "100 ms"},
              stop__gradients=20_000, seed=4,
              faults={"failures": {"mtbf": "200 ms", "repair": "1 s"}})
    res = simulate(sc)
    # the others up in this run, over its gradients' steps: its own share of time up
    end = res.updates["t"].iloc[-1]
    out = res.outages
    up = 16 * end - (out["up_s"].fillna(end).clip(upper=end) - out["down_s"]).clip(lower=0).sum()
    others_up = 15 * up / (16 * end)
    expected = others_up * 0.2 / (0.2 + 0.1)
    staleness = res.gradients["staleness"].to_numpy()
    assert predict(sc).staleness.mean == pytest.approx(15 * (0.2 / 1.2) * 0.2 / 0.3, rel=1e-6)
    assert abs(staleness.mean() - expected) < 4 * batch_means_se(staleness)
