"""The Python API refuses what it cannot take with a clear exception, as
the commands do: nothing changed behind validation's back runs."""

import math
from pathlib import Path

import pytest

import asgdsim
from asgdsim.errors import ScenarioError

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "ideal-async-exponential.yaml"


def test_a_scenario_changed_with_model_copy_is_checked_before_it_runs():
    sc = asgdsim.load_scenario(SCENARIO)
    bad = sc.model_copy(update={"workload": sc.workload.model_copy(update={"sub_batch": -5})})
    with pytest.raises(ScenarioError, match="workload.sub_batch"):
        asgdsim.simulate(bad)         # it ran, and counted -1500 samples


def test_a_run_too_big_is_refused_by_simulate_as_by_the_commands():
    # a notebook's kernel is not left to run out of memory: refused before
    # the run, naming the arguments that let it through
    sc = asgdsim.load_scenario(SCENARIO, overrides={"stop.epochs": 10})
    with pytest.raises(ScenarioError, match=r"stop.epochs: .*more than max_events 1e\+03.*"
                       r"pass simulate a higher max_events"):
        asgdsim.simulate(sc, max_events=1e3)
    small = asgdsim.load_scenario(SCENARIO, overrides={"stop.gradients": 50})
    assert asgdsim.simulate(small, max_events=1e3).summary["gradients"] == 50


@pytest.mark.parametrize("call, error", [
    (lambda sc: asgdsim.simulate(sc, seed=-1), ValueError),
    (lambda sc: asgdsim.simulate(sc, seed=True), ValueError),
    (lambda sc: asgdsim.simulate(sc, max_memory="8 GB"), ValueError),    # bytes, a number
    (lambda sc: asgdsim.simulate(sc, max_events=None), ValueError),
    (lambda sc: asgdsim.simulate(str(SCENARIO)), TypeError),
    (lambda sc: asgdsim.predict(str(SCENARIO)), TypeError),
    (lambda sc: asgdsim.step_time("K80", "vgg16", 16, cuda_graphs="no"), ValueError),
    (lambda sc: asgdsim.step_time(None, "vgg16", 16), TypeError)])
def test_the_api_refuses_arguments_it_cannot_take(call, error):
    with pytest.raises(error):
        call(asgdsim.load_scenario(SCENARIO))


@pytest.mark.parametrize("command", [
    ["run", str(SCENARIO), "--set", "stop.gradients=100", "--out"],
    ["sweep", str(SCENARIO), "--grid", "cluster.nodes=1", "--set", "stop.gradients=100", "--out"]])
def test_an_output_link_to_nothing_is_refused_before_any_work(command, tmp_path, capsys):
    from asgdsim.cli import main

    link = tmp_path / "out"
    link.symlink_to(tmp_path / "nowhere")
    assert main([*command, str(link)]) == 2
    assert "is a link to" in capsys.readouterr().err and not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize("override, words", [
    ({"stop..gradients": 5}, "cannot set 'stop..gradients': expected a dotted key"),
    ({"stop.gradients": "1e3"}, "stop.gradients: expected a valid integer written out in digits")])
def test_overrides_are_refused_in_words(override, words):
    with pytest.raises(ScenarioError, match=words.replace(".", r"\.").replace("(", r"\(")):
        asgdsim.load_scenario(SCENARIO, overrides=override)


def test_overrides_that_are_no_mapping_are_a_type_error_in_words():
    # a list of pairs raised AttributeError: 'list' object has no attribute 'items'
    with pytest.raises(TypeError, match="overrides: expected a mapping of dotted keys"):
        asgdsim.load_scenario(SCENARIO, overrides=[("cluster.nodes", 3)])


def test_results_show_as_one_line_each_in_a_notebook():
    # a notebook cell that ends in one shows its figures, not every row and
    # atom (IPython's pretty printer, as Jupyter's display uses); a
    # scenario's and a pmf's repr stay whole, for a failing test's report
    from IPython.lib.pretty import pretty

    sc = asgdsim.load_scenario(SCENARIO, overrides={"stop.gradients": 200})
    res = asgdsim.simulate(sc)
    for thing, says in ((sc, "Scenario('ideal-async-exponential': async, 16 learners on 2 nodes,"),
                        (res, "Result('ideal-async-exponential', seed 9: 200 gradients"),
                        (res.prediction, "Prediction('ideal-async-exponential': epoch time"),
                        (res.prediction.staleness, "Pmf(mean ")):
        shown = pretty(thing)
        assert shown.startswith(says) and len(shown) < 200 and "\n" not in shown
    assert "timing=" in repr(sc) and str(sc) == pretty(sc)


def test_a_mapping_without_a_name_gets_one_as_a_file_does():
    from asgdsim.scenario import scenario_from_dict
    sc = scenario_from_dict({"workload": {"model": "resnet50", "dataset_samples": 1000,
                                          "sub_batch": 8},
                             "cluster": {"gpu": "V100", "nodes": 1, "gpus_per_node": 2,
                                         "network": "ib-edr"},
                             "algorithm": {"kind": "async"}})
    assert sc.name == "scenario"


def test_predict_refuses_a_run_that_ends_before_its_first_gradient():
    # it failed inside the closed form (an empty law); the commands refuse it first
    sc = asgdsim.load_scenario(Path(__file__).resolve().parents[1] / "scenarios" /
                               "tsubame-kfc-dl-vgg16.yaml", overrides={"stop": {"time": "0.5 s"}})
    with pytest.raises(ScenarioError, match=r"stop.time: expected at least one learner step"):
        asgdsim.predict(sc)


def test_simulate_without_limits_refuses_a_run_that_ends_before_its_first_gradient():
    """math.inf lifts the size limits, not the check that a run has a
    gradient at all: it simulated nothing and reported an epoch of NaN (a
    hunt), where the closed form said 4,004 s."""
    sc = asgdsim.load_scenario(Path(__file__).resolve().parents[1] / "scenarios" /
                               "k80-sync-baseline.yaml", overrides={"stop": {"time": "10 ms"}})
    with pytest.raises(ScenarioError, match=r"stop.time: expected at least one learner step"):
        asgdsim.simulate(sc, max_events=math.inf, max_memory=math.inf)


SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"


def test_a_time_stop_after_the_first_step_runs_though_the_learners_wait_longer():
    """The refusal read the closed form's T_gpu, which for async is a
    learner's whole cycle with its waits for a saturated server (3.91 s):
    a stop at 2 s was refused as "before any gradient" though each step
    takes 0.42 s with its copies (a new user)."""
    sc = asgdsim.load_scenario(SCENARIOS / "gpu-asgd-k20x-async-saturated.yaml",
                               overrides={"stop": {"time": "2 s"}})
    pred = asgdsim.predict(sc)
    assert pred.step_s < 2.0 < pred.t_gpu_s
    assert len(asgdsim.simulate(sc).gradients) > 0
    short = sc.model_copy(update={"stop": sc.stop.model_copy(update={"time": 0.9 * pred.step_s})})
    with pytest.raises(ScenarioError, match=r"stop.time: expected at least one learner step"):
        asgdsim.simulate(short)


def test_the_learner_step_is_compute_and_stages_whatever_the_kind():
    """step_s: the compute law's mean and the loop's stages, no waits; for
    sync the closed form's T_gpu already is that; for a mixed cluster the
    fastest group's."""
    from asgdsim.costs import costs_of
    from asgdsim.structure import loop_of

    sync = asgdsim.load_scenario(SCENARIOS / "k80-sync-baseline.yaml")
    assert asgdsim.predict(sync).step_s == pytest.approx(asgdsim.predict(sync).t_gpu_s, rel=1e-12)
    busy = asgdsim.load_scenario(SCENARIOS / "gpu-asgd-k20x-async-saturated.yaml")
    c = costs_of(busy)
    assert asgdsim.predict(busy).step_s == pytest.approx(
        c.compute.mean + loop_of(busy, c).overhead_s, rel=1e-12)
    # downpour pushes every n_push steps and fetches every n_fetch: those
    # stages spread over the steps (0.333 s a step said, longer than the
    # 0.272 s cycle with its waits; a review)
    sharded = asgdsim.predict(asgdsim.load_scenario(SCENARIOS / "downpour-k20x-sharded.yaml"))
    assert sharded.step_s < sharded.t_gpu_s
    mixed = asgdsim.predict(asgdsim.load_scenario(SCENARIOS / "mixed-k80-p100-async.yaml"))
    steps = {g["gpu"]: g["mean_step_s"] for g in mixed.summary["groups"]}
    assert mixed.step_s == pytest.approx(min(steps.values()), rel=1e-9)
    assert mixed.summary["step_s"] == mixed.step_s


def test_a_time_stop_before_the_first_update_is_refused_not_crashed():
    """k-batch-sync of 32 gradients on 8 learners of 100 ms steps updates
    first at 0.4 s: a stop at 0.35 s crashed run and compare on an empty
    staleness law, and the closed form called its 500 s epoch exact (a
    hunt). The run refuses with the key; the closed form labels it."""
    from asgdsim.scenario import scenario_from_dict

    sc = scenario_from_dict({
        "name": "early", "workload": {"model": "resnet50", "dataset_samples": 1281167,
                                      "sub_batch": 32},
        "cluster": {"machine": "dgx1-v100", "nodes": 1},
        "algorithm": {"kind": "k-batch-sync", "k": 32},
        "timing": {"compute": {"distribution": "deterministic", "mean": "100 ms"},
                   "communication": "ideal"},
        "stop": {"time": "350 ms"}})
    assert "before the first update" in asgdsim.predict(sc).outside_assumptions
    with pytest.raises(ScenarioError, match=r"stop.time: expected at least the first update"):
        asgdsim.simulate(sc)
    later = sc.model_copy(update={"stop": sc.stop.model_copy(update={"time": 0.45})})
    assert asgdsim.predict(later).outside_assumptions is None
    assert len(asgdsim.simulate(later).updates) == 1


def test_a_sprint_time_stop_with_no_update_in_the_closed_form_is_refused():
    """A stop after the fastest GPU's first step but before any of the
    closed form's windows holds a gradient crashed predict and run with an
    internal error (a mixed K80 and P100 SPRINT cluster at 0.2 s; a fat tree
    at 1.24 s; a review): refused, naming stop.time."""
    for name, time in (("mixed-shapes-kfc-p100-sprint", 0.2), ("tsubame2.5-vgg16-fat-tree", 1.2412)):
        sc = asgdsim.load_scenario(SCENARIOS / f"{name}.yaml", overrides={"stop": {"time": time}})
        with pytest.raises(ScenarioError, match=r"stop.time: expected"):
            asgdsim.predict(sc)
