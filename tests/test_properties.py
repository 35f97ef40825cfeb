"""Invariants over random small scenarios (hypothesis), and reproducibility."""

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asgdsim import simulate
from asgdsim.cluster import learner_stream

from conftest import make

LAWS = st.sampled_from([
    {"distribution": "deterministic", "mean": 0.05},
    {"distribution": "exponential", "mean": 0.05},
    {"distribution": "gamma", "mean": 0.05, "cv": 0.3},
])


@st.composite
def small_scenarios(draw):
    kind = draw(st.sampled_from(["sprint", "async", "sync", "allreduce", "local-sgd"]))
    communication = draw(st.sampled_from(["ideal", "modelled"]))
    gpus = draw(st.integers(1, 3))
    overrides = dict(
        algorithm__kind=kind,
        cluster__nodes=draw(st.integers(1, 3)),
        cluster__gpus_per_node=gpus,
        cluster__gpus_per_host_link=draw(st.integers(1, 2)),
        workload__model=draw(st.sampled_from(["alexnet", "resnet50", "googlenet"])),
        workload__sub_batch=draw(st.integers(1, 8)),
        timing__compute=draw(LAWS),
        timing__communication=communication,
        stop__gradients=draw(st.integers(20, 150)),
        seed=draw(st.integers(0, 2**32 - 1)),
    )
    if kind == "local-sgd":
        overrides["algorithm__period"] = draw(st.integers(1, 4))
        overrides["algorithm__average"] = draw(st.sampled_from(["allreduce", "server"]))
    if kind == "sprint" and (communication == "ideal" or draw(st.booleans())):
        overrides["timing__update_interval"] = draw(st.sampled_from([0.013, 0.07, 0.31]))
    return make(**overrides)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_scenarios())
def test_invariants(sc):
    res = simulate(sc)
    g, u = res.gradients, res.updates
    assert len(u) > 0
    assert (g["staleness"] >= 0).all()
    assert (g["version_applied"] > g["version_read"]).all()
    assert u["version"].tolist() == list(range(1, len(u) + 1))          # one by one
    assert np.all(np.diff(u["t"]) >= 0)
    assert u["minibatch"].sum() == g["samples"].sum()                     # nothing lost
    per_update = g.groupby("version_applied").size()
    assert per_update.tolist() == u["gradients"].tolist()                 # applied once
    assert not g.duplicated(["learner", "t_start"]).any()                 # no gradient twice
    assert (g["t_start"] <= g["t_end"]).all() and (g["t_end"] <= g["t_applied"]).all()
    assert np.allclose(g["t_applied"].to_numpy(), u["t"].to_numpy()[g["version_applied"] - 1])
    assert all(0.0 <= busy <= 1.0 + 1e-9 for busy in res.utilisation.values()), res.utilisation
    assert res.summary["gradients"] == len(g) and res.summary["updates"] == len(u)


def test_same_seed_same_numbers_other_seed_other_numbers():
    sc = make(algorithm__kind="sprint", cluster__nodes=2, cluster__gpus_per_node=3,
              timing__compute={"distribution": "gamma", "mean": 0.1, "cv": 0.4},
              timing__communication="modelled", stop__gradients=500)
    a, b, c = simulate(sc, seed=5), simulate(sc, seed=5), simulate(sc, seed=6)
    pd.testing.assert_frame_equal(a.gradients, b.gradients)
    pd.testing.assert_frame_equal(a.updates, b.updates)
    assert not a.gradients["t_end"].equals(c.gradients["t_end"])


def test_adding_a_gpu_does_not_change_the_others_draws():
    # with ideal async learners, a learner's times depend on its own draws only
    law = {"distribution": "exponential", "mean": 1.0}
    two = simulate(make(cluster__gpus_per_node=2, timing__compute=law, stop__gradients=300))
    three = simulate(make(cluster__gpus_per_node=3, timing__compute=law, stop__gradients=450))
    times = lambda res: res.gradients.loc[res.gradients.learner == 1, "t_end"].to_numpy()[:100]  # noqa: E731
    assert np.array_equal(times(two), times(three))
    first = learner_stream(7, 1).random(3)
    assert np.array_equal(first, learner_stream(7, 1).random(3))
    assert not np.array_equal(first, learner_stream(7, 2).random(3))


def test_ideal_learners_never_wait():
    res = simulate(make(cluster__gpus_per_node=4, stop__gradients=400))
    # constant 1 s steps, 100 each: busy the whole run
    assert res.utilisation["gpu"] == 1.0
