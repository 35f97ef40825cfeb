"""The planner: closed-form ranking, confirmation by simulation, plan.csv."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from asgdsim import load_scenario, predict
from asgdsim.cli import main
from asgdsim.plan import COLUMNS, plan

ROOT = Path(__file__).resolve().parents[1] / "scenarios"


def in_speed_order(epoch_time_s) -> bool:
    """Fastest first, epoch times within 1 % counting as equal."""
    classes = np.floor(np.log(epoch_time_s.to_numpy()) / np.log1p(0.01))
    return bool(np.all(np.diff(classes) >= 0))
SCENARIO = ROOT / "ideal-sprint-poisson.yaml"


def _scenario(row):
    return load_scenario(SCENARIO, {"cluster.nodes": int(row.nodes),
                                    "cluster.gpus_per_node": int(row.gpus_per_node),
                                    "workload.sub_batch": int(row.sub_batch)})


def test_plan_ranks_confirmed_configurations_first(tmp_path, capsys):
    out = tmp_path / "plan"
    assert main(["plan", str(SCENARIO), "--target-minibatch", "512", "--tolerance", "0.2",
                 "--max-gpus", "64", "--confirm", "2", "--out", str(out)]) == 0
    table = pd.read_csv(out / "plan.csv")
    assert list(table.columns) == COLUMNS and (out / "plan.png").stat().st_size > 0
    assert list(table["rank"]) == list(range(1, len(table) + 1))
    # KFC/DL nodes hold 8 dies: 1..8 GPUs per node, powers of two nodes up to 64 GPUs
    assert set(table["gpus_per_node"]) == set(range(1, 9))
    assert ((table["nodes"] * table["gpus_per_node"]) <= 64).all()
    # VGG-16 at sub-batch 256 needs 17.6 GB at the least: not on a 12 GB K80 die
    assert not table["fits_memory"][table["sub_batch"] == 256].any()
    assert table["fits_memory"][table["sub_batch"] <= 64].all()
    assert table.loc[~table["fits_memory"], "predicted_epoch_time_s"].isna().all()
    assert not table.loc[~table["fits_memory"], "feasible"].any()
    # the first two are confirmed by simulation, in simulated order, then the
    # closed form's choices in its order
    confirmed, rest = table.head(2), table.iloc[2:]
    assert confirmed["feasible"].all() and confirmed["simulated_epoch_time_s"].notna().all()
    assert ((confirmed["simulated_minibatch_mean"] - 512).abs() <= 0.2 * 512).all()
    assert in_speed_order(confirmed["simulated_epoch_time_s"])
    assert rest["simulated_epoch_time_s"].isna().all()
    unconfirmed = rest[rest["feasible"]]
    assert ((unconfirmed["predicted_minibatch_mean"] - 512).abs() <= 0.2 * 512).all()
    assert in_speed_order(unconfirmed["predicted_epoch_time_s"])
    # the figures are the closed form's; a node's idle GPUs are paid for
    best = table.iloc[0]
    pred = predict(_scenario(best))
    assert pred.epoch_time_s == best.predicted_epoch_time_s
    assert pred.staleness.mean == best.predicted_staleness_mean
    assert best.gpu_hours_per_epoch == best.nodes * 8 * best.predicted_epoch_time_s / 3600
    printed = capsys.readouterr().out
    assert "2 confirmed by simulation (2 simulated, 0 refuted)" in printed


def test_a_refuted_candidate_is_never_ranked_first():
    # a band of +-0.3 % around a mini-batch four configurations predict:
    # sampling noise alone puts simulations outside it, so candidates are
    # refuted and the next ones simulated in their place until three hold or
    # none is left
    target = 473.7
    result = plan(SCENARIO, target, 0.003, max_gpus=64, confirm=3)
    t = result.table
    simulated = t[t["simulated_epoch_time_s"].notna()]
    in_band = (simulated["simulated_minibatch_mean"] - target).abs() <= 0.003 * target
    assert (simulated["feasible"] == in_band).all()
    assert result.confirmed == in_band.sum() and result.simulated == len(simulated)
    assert result.simulated > result.confirmed          # something was refuted
    if result.confirmed < 3:                            # then every candidate was tried
        assert result.exhausted and t[t["feasible"]]["simulated_epoch_time_s"].notna().all()
    if result.best is not None:
        assert result.best["simulated_epoch_time_s"] > 0 and result.best["feasible"]
    else:
        assert not t["feasible"].any()


def test_staleness_limit_and_async_note(tmp_path, capsys):
    capped = plan(SCENARIO, 512, 0.2, max_gpus=32, confirm=0, max_staleness=3.0).table
    assert (capped.loc[capped["feasible"], "predicted_staleness_mean"] <= 3.0).all()
    assert (capped.loc[capped["predicted_staleness_mean"] > 3.0, "feasible"] == False).all()  # noqa: E712
    # async: every update is one sub-batch, so only the sub-batch can meet the target
    asynchronous = ROOT / "gpu-asgd-k20x-async.yaml"
    assert main(["plan", str(asynchronous), "--target-minibatch", "64", "--max-gpus", "4",
                 "--confirm", "1", "--set", "stop.epochs=0.02", "--out", str(tmp_path / "a")]) == 0
    printed = capsys.readouterr().out
    assert "the mini-batch is the sub-batch whatever the cluster" in printed
    table = pd.read_csv(tmp_path / "a" / "plan.csv")
    assert set(table.loc[table["feasible"], "sub_batch"]) == {64}


def test_plan_refuses_bad_arguments(tmp_path):
    for bad in (["--target-minibatch", "0"], ["--target-minibatch", "512", "--tolerance", "2"],
                ["--target-minibatch", "512", "--max-staleness", "-1"]):
        assert main(["plan", str(SCENARIO), *bad, "--out", str(tmp_path / "p")]) == 2


def test_equally_fast_configurations_rank_the_cheaper_first(tmp_path):
    # allreduce with ideal communication: 64 x 8 and 512 x 1 GPUs at sub-batch
    # 8 take the same epoch (every round one step); the one that keeps every
    # GPU of its nodes busy ranks first
    result = plan(ROOT / "dgx1-allreduce-resnet50.yaml", 4096, confirm=0,
                  overrides={"timing.communication": "ideal"})
    best = result.table.iloc[0]
    same = result.table[(result.table["predicted_epoch_time_s"]
                         <= best["predicted_epoch_time_s"] * 1.01) & result.table["feasible"]]
    assert len(same) > 1
    assert best["gpu_hours_per_epoch"] == same["gpu_hours_per_epoch"].min()


def test_a_candidate_over_the_budget_is_refused_before_any_simulation(tmp_path, capsys,
                                                                      monkeypatch):
    """Confirming may simulate any feasible candidate (a refuted one hands
    its turn on), so each is estimated before the first starts: the first
    over --max-events is named, with its estimate, and nothing runs."""
    import asgdsim.plan as plan_module

    ranked = plan(SCENARIO, 512, tolerance=0.2, max_gpus=64, confirm=0).table
    first = ranked[ranked["feasible"]].iloc[0]
    monkeypatch.setattr(plan_module, "run_on_dask",
                        lambda *a, **k: pytest.fail("a simulation started"))
    assert main(["plan", str(SCENARIO), "--target-minibatch", "512", "--tolerance", "0.2",
                 "--max-gpus", "64", "--max-events", "100", "--out", str(tmp_path / "p")]) == 2
    err = capsys.readouterr().err
    assert (f"candidate cluster.nodes={first['nodes']}, cluster.gpus_per_node="
            f"{first['gpus_per_node']}, workload.sub_batch={first['sub_batch']}: ") in err
    assert "more than --max-events 100" in err and not (tmp_path / "p" / "plan.csv").exists()
