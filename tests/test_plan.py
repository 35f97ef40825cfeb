"""The planner: closed-form ranking, confirmation by simulation, plan.csv."""

from pathlib import Path

import pandas as pd

from asgdsim import load_scenario, predict
from asgdsim.cli import main
from asgdsim.plan import COLUMNS

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "ideal-sprint-poisson.yaml"


def test_plan_ranks_feasible_configurations_by_epoch_time(tmp_path, capsys):
    out = tmp_path / "plan"
    assert main(["plan", str(SCENARIO), "--target-minibatch", "512", "--tolerance", "0.2",
                 "--max-gpus", "64", "--confirm", "2", "--out", str(out)]) == 0
    table = pd.read_csv(out / "plan.csv")
    assert list(table.columns) == COLUMNS and (out / "plan.png").stat().st_size > 0
    # KFC/DL nodes hold 8 dies: 1..8 GPUs per node, powers of two nodes up to 64 GPUs
    assert set(table["gpus_per_node"]) == set(range(1, 9))
    assert ((table["nodes"] * table["gpus_per_node"]) <= 64).all()
    feasible = table[table["feasible"]]
    assert ((feasible["predicted_minibatch_mean"] - 512).abs() <= 0.2 * 512).all()
    assert feasible["predicted_epoch_time_s"].is_monotonic_increasing
    assert list(feasible["rank"]) == list(range(1, len(feasible) + 1))
    assert feasible.head(2)["simulated_epoch_time_s"].notna().all()
    assert table["simulated_epoch_time_s"].notna().sum() == 2
    # the ranking uses the closed form itself
    best = feasible.iloc[0]
    sc = load_scenario(SCENARIO, {"cluster.nodes": int(best.nodes),
                                  "cluster.gpus_per_node": int(best.gpus_per_node),
                                  "workload.sub_batch": int(best.sub_batch)})
    assert predict(sc).epoch_time_s == best.predicted_epoch_time_s
    assert "configurations" in capsys.readouterr().out


def test_plan_refuses_bad_arguments(tmp_path):
    assert main(["plan", str(SCENARIO), "--target-minibatch", "0", "--out", str(tmp_path / "p")]) == 2
    assert main(["plan", str(SCENARIO), "--target-minibatch", "512", "--tolerance", "2",
                 "--out", str(tmp_path / "p")]) == 2
