"""Measured step times: replayed as they are (timing.compute: {empirical:
FILE}) and fitted by a law (asgdsim fit)."""

import itertools
import math

import numpy as np
import pytest
import yaml

from asgdsim.cli import main
from asgdsim.distributions import Empirical
from asgdsim.measured import fit_laws, read_steps
from asgdsim.scenario import ScenarioError, load_scenario
from asgdsim.simulation import simulate

from conftest import make


def _write_steps(path, values):
    path.write_text("step_s\n" + "".join(f"{float(v)!r}\n" for v in values))
    return path


def test_the_empirical_law_is_the_sample_exactly():
    values = [0.3, 0.1, 0.4, 0.1]
    law = Empirical.of(values)
    assert law.mean == pytest.approx(0.225) and law.var == pytest.approx(np.var(values))
    assert law.cdf(0.1) == 0.5 and law.cdf(0.35) == 0.75 and law.cdf(0.05) == 0.0
    assert law.ppf(0.5) == 0.1 and law.ppf(0.51) == 0.3 and law.ppf(1.0) == 0.4
    assert law.partial_expectation(0.35) == pytest.approx(np.mean([0.25, 0.25, 0.05, 0.0]))
    # order statistics by enumerating every draw of 3 from the 4 equally likely values
    draws = np.sort(np.array(list(itertools.product(values, repeat=3))), axis=1)
    for k in (1, 2, 3):
        assert law.expected_order(k, 3) == pytest.approx(draws[:, k - 1].mean(), rel=1e-12)
    assert law.expected_max(3) == pytest.approx(draws[:, 2].mean(), rel=1e-12)
    assert Empirical.of([0.2] * 5).is_constant      # one value: a constant


def test_a_replayed_step_is_always_a_measured_one(tmp_path):
    rng = np.random.default_rng(7)
    measured = np.round(rng.gamma(9.0, 0.01, 50), 6)
    steps = _write_steps(tmp_path / "steps.csv", measured)
    sc = make(timing__compute={"empirical": str(steps)}, timing__communication="ideal",
              workload__dataset_samples=8000, workload__sub_batch=4, stop={"epochs": 1},
              cluster__nodes=2, cluster__gpus_per_node=2, cluster__network="ib-fdr")
    res = simulate(sc)
    g = res.gradients
    durations = (g["t_end"] - g["t_start"]).to_numpy()
    # every step is one of the measured ones (to the clock's rounding)
    nearest = np.abs(durations[:, None] - measured[None, :]).min(axis=1)
    assert nearest.max() < 1e-9
    # and they are drawn evenly: the mean within 4 standard errors of the sample's
    se = measured.std() / math.sqrt(len(durations))
    assert abs(durations.mean() - measured.mean()) < 4 * se
    # async with ideal communication: staleness L - 1 and the throughput of
    # L learners at the measured mean step, in closed form too
    a = res.summary["analytic"]
    assert a["staleness"]["mean"] == pytest.approx(3, abs=0.05)
    assert res.summary["epoch_time_s"] == pytest.approx(a["epoch_time_s"], rel=0.05)


def test_measured_steps_are_found_beside_the_scenario_and_checked(tmp_path, monkeypatch):
    folder = tmp_path / "study"
    folder.mkdir()
    _write_steps(folder / "mine.csv", np.linspace(0.05, 0.07, 20))
    scenario = {"workload": {"model": "alexnet", "dataset_samples": 100, "sub_batch": 2},
                "cluster": {"gpu": "K80", "nodes": 1, "gpus_per_node": 1, "network": "ib-fdr"},
                "algorithm": {"kind": "async"}, "timing": {"compute": {"empirical": "mine.csv"}}}
    (folder / "s.yaml").write_text(yaml.safe_dump(scenario))
    monkeypatch.chdir(tmp_path)
    sc = load_scenario("study/s.yaml")
    assert sc.timing.compute.empirical == str((folder / "mine.csv").resolve())
    (folder / "mine.csv").write_text("step_s\n0.05\nfast\n" + "0.05\n" * 20)
    with pytest.raises(ScenarioError) as error:
        load_scenario("study/s.yaml")
    message = str(error.value)
    assert "timing.compute.empirical" in message and "line 3" in message and "'fast'" in message
    scenario["timing"]["jitter"] = {"distribution": "gamma", "cv": 0.1}
    (folder / "s.yaml").write_text(yaml.safe_dump(scenario))
    _write_steps(folder / "mine.csv", np.linspace(0.05, 0.07, 20))
    with pytest.raises(ScenarioError, match="jitter applies to table or roofline"):
        load_scenario("study/s.yaml")


def test_fit_finds_the_law_that_made_the_steps():
    # 3000 lognormal steps with sigma 0.5: the lognormal wins, and its
    # fitted sigma and mean lie within 4 standard errors (sigma / sqrt(2n) and
    # the sample mean's own)
    n, sigma, mean = 3000, 0.5, 0.08
    scale = mean * math.exp(-sigma**2 / 2)
    steps = scale * np.exp(sigma * np.random.default_rng(11).standard_normal(n))
    fits = fit_laws(steps)
    best = fits[0]
    assert best.distribution == "lognormal"
    assert abs(best.entry["shape"] - sigma) < 4 * sigma / math.sqrt(2 * n)
    fitted_mean = float(best.entry["mean"].split()[0]) / 1e3
    assert abs(fitted_mean - mean) < 4 * mean * math.sqrt(math.exp(sigma**2) - 1) / math.sqrt(n)
    assert [f.aic for f in fits] == sorted(f.aic for f in fits)
    assert best.ks_pvalue > 0.01 and fits[-1].ks_pvalue < 1e-6    # exponential: far off


def test_fit_writes_an_entry_a_scenario_takes_and_a_qq_figure(tmp_path, capsys):
    steps = _write_steps(tmp_path / "steps.csv",
                         np.random.default_rng(5).gamma(16.0, 0.005, 400))
    out = tmp_path / "law.yaml"
    assert main(["fit", str(steps), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "AIC" in printed and "KS p-value" in printed
    entry = yaml.safe_load(out.read_text())
    sc = make(timing__compute=entry["timing"]["compute"])
    assert sc.timing.compute.distribution in ("gamma", "lognormal")
    from PIL import Image
    with Image.open(out.with_suffix(".png")) as figure:
        assert figure.size[0] > 300 and figure.size[1] > 300
    # nothing written is overwritten without asking
    assert main(["fit", str(steps), "--out", str(out)]) == 2
    assert "--overwrite" in capsys.readouterr().err


@pytest.mark.parametrize("text, named", [
    ("steps\n0.1\n", "column step_s"),
    ("step_s\n" + "0.1\n" * 5 + "-0.2\n" + "0.1\n" * 5, "line 7"),
    ("step_s\n0.1\n0.1\n", "at least 10"),
])
def test_fit_refuses_what_is_not_a_column_of_steps(tmp_path, capsys, text, named):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    assert main(["fit", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and named in err and "Traceback" not in err
    with pytest.raises(ValueError, match=named):
        read_steps(str(path))


def test_the_empirical_quantile_is_exact_at_every_level():
    # every q = k / n exactly: the smallest value whose cdf reaches it
    for n in (7, 25, 199):
        law = Empirical.of(np.arange(1.0, n + 1))
        for k in range(1, n + 1):
            assert law.ppf(k / n) == k, (n, k)
            assert law.cdf(law.ppf(k / n)) >= k / n - 1e-15
    # E[(y - X)+] from the running sum, as the definition has it, on a grid
    values = np.random.default_rng(3).gamma(4.0, 0.01, 500)
    law, grid = Empirical.of(values), np.linspace(0.0, 0.2, 41)
    assert np.allclose(law.partial_expectation(grid),
                       [np.maximum(y - values, 0).mean() for y in grid], rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("spread", [1e-7, 3e-6])
def test_fit_takes_steps_nearly_alike(spread):
    # alike to the digits an entry keeps: deterministic; a little wider: the
    # laws scipy can fit (its gamma root finder fails on such a sample)
    steps = np.r_[np.full(49, 0.25), 0.25 * (1 + spread)]
    fits = fit_laws(steps)
    if spread < 1e-6:
        assert [f.distribution for f in fits] == ["deterministic"]
    else:
        assert {"exponential", "uniform"} <= {f.distribution for f in fits}
    # every entry offered is one a scenario takes (6 digits: a shift of 250 ms
    # on a mean of 250 ms is not)
    for f in fits:
        make(timing__compute=f.entry)


def test_measured_steps_with_a_rare_slow_mode_are_labelled_where_read_by_moments(tmp_path):
    """1,000 measured steps of 1.28 s, 2 % of them five times slower: k-async
    (8 of 16 learners) read them by their moments, an epoch of 8,899 s
    against 4,653 simulated, unlabelled, where the same law written as
    faults.stragglers is right (a hunt). Labelled; steady steps are not
    (10 of 16 here: 8 of 16 leaves half out, which has its own label)."""
    from asgdsim.analytic import predict
    from asgdsim.scenario import scenario_from_dict

    rng = np.random.default_rng(3)
    steps = 1.28 * rng.lognormal(0.0, 0.01, 1000)
    slow = steps.copy()
    slow[rng.choice(1000, 20, replace=False)] *= 5
    for name, values in (("slow.csv", slow), ("steady.csv", steps)):
        (tmp_path / name).write_text("step_s\n" + "\n".join(f"{v:.6f}" for v in values) + "\n")

    def scenario(name):
        return scenario_from_dict({
            "name": "rare", "workload": {"model": "resnet50", "dataset_samples": 1281167,
                                         "sub_batch": 32},
            "cluster": {"gpu": "V100", "nodes": 4, "gpus_per_node": 4, "network": "ib-edr"},
            "algorithm": {"kind": "k-async", "k": 10},
            "timing": {"compute": {"empirical": str(tmp_path / name)},
                       "communication": "ideal"},
            "stop": {"gradients": 16000}})

    assert "rare slow mode" in (predict(scenario("slow.csv")).outside_assumptions or "")
    assert "rare slow mode" not in (predict(scenario("steady.csv")).outside_assumptions or "")
