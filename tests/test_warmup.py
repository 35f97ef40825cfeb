"""stop.warmup: the start of a run left out of its statistics, in the
simulation and in the closed form alike."""

import math

import pytest

from asgdsim import predict, simulate
from asgdsim.cli import main

from conftest import batch_means_se, make


def test_the_first_updates_and_their_gradients_are_left_out():
    sc = make(stop__gradients=400, stop__warmup={"updates": 50}, cluster__gpus_per_node=4,
              timing__compute={"distribution": "exponential", "mean": 1.0}, seed=3)
    res = simulate(sc)
    w, (g, u) = res.summary["warmup"], res.measured
    assert w["first_version"] == 51 and w["excluded_updates"] == 50
    assert (g["version_applied"] > 50).all() and len(g) == len(res.gradients) - w["excluded_gradients"]
    assert (u["version"] > 50).all() and len(u) == len(res.updates) - 50
    assert w["excluded_until_s"] == res.updates["t"].iloc[49]
    assert res.summary["staleness"]["mean"] == pytest.approx(g["staleness"].mean())
    # the epoch time is the whole run's
    assert res.summary["epoch_time_s"] == simulate(sc.model_copy(update={"stop": sc.stop.model_copy(
        update={"warmup": None})})).summary["epoch_time_s"]


@pytest.mark.parametrize("warmup", [{"time": 20.0}, {"epochs": 0.1}])
def test_a_warmup_by_time_or_epochs_starts_at_the_first_update_after_it(warmup):
    sc = make(stop__gradients=300, stop__warmup=warmup, cluster__gpus_per_node=3,
              timing__compute={"distribution": "exponential", "mean": 1.0},
              workload__dataset_samples=1000)
    res = simulate(sc)
    u, first = res.updates, res.summary["warmup"]["first_version"]
    if "time" in warmup:
        assert u["t"].iloc[first - 1] >= 20.0 > u["t"].iloc[first - 2]
    else:
        samples = u["minibatch"].cumsum().to_numpy()
        assert samples[first - 2] >= 100 > samples[first - 3]


def test_fixed_steps_agree_exactly_after_the_warmup():
    # identical steps: the closed form walks the exact schedule, before and after
    sc = make(stop__gradients=3000, stop__warmup={"updates": 200}, cluster__gpus_per_node=8,
              timing__compute={"distribution": "deterministic", "mean": 1.0})
    res = simulate(sc)
    assert res.summary["agreement"]["staleness_tv"] < 1e-9
    assert "warm-up left out" in predict(sc).laws["staleness"]


def test_exponential_learners_after_the_warmup_see_m_minus_one_updates():
    # Mitliagkas et al.: in steady state the staleness is geometric with mean
    # M - 1; leaving out the start removes the first round's fresher gradients
    m = 8
    sc = make(stop__gradients=20000, stop__warmup={"updates": 400}, cluster__gpus_per_node=m,
              timing__compute={"distribution": "exponential", "mean": 1.0}, seed=5)
    res = simulate(sc)
    staleness = res.measured[0]["staleness"].to_numpy()
    se = batch_means_se(staleness)
    assert abs(staleness.mean() - predict(sc).staleness.mean) < 4 * se
    assert abs(predict(sc).staleness.mean - (m - 1)) < 4 * se


def test_a_warmup_longer_than_the_run_is_said():
    sc = make(stop__gradients=100, stop__warmup={"updates": 1000})
    assert "warm-up covers the whole run" in predict(sc).outside_assumptions


@pytest.mark.parametrize("command", ["run", "compare", "predict"])
@pytest.mark.parametrize("warmup", ["{time: 1000 s}", "{updates: 100}", "{epochs: 0.5}"])
def test_the_commands_refuse_a_warmup_that_covers_the_whole_run(command, warmup, tmp_path, capsys):
    # 100 one-GPU gradients of 32 samples, one update each: about 100 s, 0.05 epochs
    path = tmp_path / "w.yaml"
    path.write_text("name: w\nworkload: {model: resnet50, dataset_samples: 64000, sub_batch: 32}\n"
                    "cluster: {nodes: 1, gpus_per_node: 1, gpu: V100, network: ib-edr}\n"
                    "algorithm: {kind: async}\ntiming: {compute: {distribution: deterministic, mean: 1 s}}\n"
                    f"stop: {{gradients: 100, warmup: {warmup}}}\n")
    out = tmp_path / "out"
    args = [command, str(path)] + ([] if command == "predict" else ["--out", str(out)])
    assert main(args) == 2
    err = capsys.readouterr().err
    assert f"{path}: stop.warmup: expected a warm-up shorter than the run" in err
    assert "Traceback" not in err and not out.exists()


def test_a_run_that_ends_within_its_warmup_is_refused_after_it():
    # past the commands' estimate (simulate is called directly): no empty statistics
    from asgdsim.errors import ScenarioError

    sc = make(stop__gradients=100, stop__warmup={"time": 1e6})
    with pytest.raises(ScenarioError, match="stop.warmup: .* all within the warm-up"):
        simulate(sc, max_events=math.inf, max_memory=math.inf)    # no estimate first
    # with its estimate (the default), simulate refuses it before, as the commands do
    with pytest.raises(ScenarioError, match="stop.warmup: expected a warm-up shorter than the run"):
        simulate(sc)


@pytest.mark.parametrize("epochs", [0.0001, 0.99, 1, 1.01, 2])
def test_the_epoch_time_is_scaled_by_the_samples_applied(epochs):
    # the update that passes the stop applies more than asked: 32-sample
    # updates a second apart over 100 samples take 3.125 s an epoch, whatever
    # the stop (0.0001 ends after one update: 1 s over 0.32 epochs)
    sc = make(stop__epochs=epochs, workload__dataset_samples=100, workload__sub_batch=32,
              cluster__gpus_per_node=1,
              timing__compute={"distribution": "deterministic", "mean": 1.0},
              timing__communication="ideal")
    res = simulate(sc)
    u, s = res.updates, res.summary
    applied = u["minibatch"].sum() / 100
    assert applied >= epochs and s["epoch_time_s"] == pytest.approx(u["t"].iloc[-1] / applied)
    assert s["epoch_time_s"] == pytest.approx(3.125 * u["t"].iloc[0])
    basis = f"measured over {epochs:g} epoch" if epochs >= 1 else f"scaled from {applied:.3g} epochs"
    assert s["epoch_time_basis"].startswith(basis)
    assert predict(sc).epoch_time_s == pytest.approx(s["epoch_time_s"], rel=1e-9)


def test_an_update_longer_than_an_epoch_is_said():
    # 32-sample updates a second apart over a 10-sample dataset: 3.2 epochs
    # an update, so an epoch takes 1 / 3.2 s, less than an update
    from asgdsim.cli import _prediction_text

    sc = make(stop__updates=2, workload__dataset_samples=10, workload__sub_batch=32,
              cluster__gpus_per_node=1,
              timing__compute={"distribution": "deterministic", "mean": 1.0},
              timing__communication="ideal")
    s = simulate(sc).summary
    assert s["epoch_time_s"] == pytest.approx(1 / 3.2)
    assert "the first update alone applying 3.2 (its mini-batch of 32 samples exceeds the " \
           "dataset of 10)" in s["epoch_time_basis"]
    assert "an update spans 3.2 epochs" in _prediction_text(predict(sc))
