"""Every algorithm kind works end to end from a scenario file: ``predict``,
``compare``, ``sweep`` (on one real Dask cluster shared by the kinds) and
``plan``, and the properties every kind keeps: samples conserved, nothing
applied twice, staleness >= 0, busy time within the elapsed."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from asgdsim import load_scenario, simulate
from asgdsim.algorithms import KINDS
from asgdsim.cli import main
from asgdsim.plan import COLUMNS

#: one valid ``algorithm`` of each kind for 2 nodes of 4 V100s
ALGORITHMS = {
    "sprint": {"kind": "sprint"},
    "async": {"kind": "async"},
    "sync": {"kind": "sync"},
    "allreduce": {"kind": "allreduce"},
    "local-sgd": {"kind": "local-sgd", "period": 2},
    "downpour": {"kind": "downpour", "n_fetch": 2, "n_push": 3, "servers": 2},
    "softsync": {"kind": "softsync", "n": 2},
    "k-sync": {"kind": "k-sync", "k": 3},
    "k-batch-sync": {"kind": "k-batch-sync", "k": 6},
    "k-async": {"kind": "k-async", "k": 3},
    "k-batch-async": {"kind": "k-batch-async", "k": 3},
    "ssp": {"kind": "ssp", "staleness_bound": 1},
}


def test_every_kind_is_here():
    assert set(ALGORITHMS) == set(KINDS)


def write(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / f"{kind}.yaml"
    path.write_text(yaml.safe_dump({
        "name": f"every-{kind}", "seed": 4,
        "workload": {"model": "resnet50", "dataset_samples": 20_000, "sub_batch": 32},
        "cluster": {"nodes": 2, "gpus_per_node": 4, "gpu": "V100", "network": "ib-edr"},
        "algorithm": ALGORITHMS[kind],
        "timing": {"compute": "table", "communication": "modelled"},
        "stop": {"epochs": 1}}))
    return path


@pytest.mark.parametrize("kind", ALGORITHMS)
def test_predict_and_compare(kind, tmp_path, capsys):
    path = write(tmp_path, kind)
    assert main(["predict", str(path), "--json"]) == 0
    assert main(["compare", str(path), "--out", str(tmp_path / "out")]) == 0
    table = pd.read_csv(tmp_path / "out" / "comparison.csv")
    assert len(table) and (tmp_path / "out" / "summary.json").exists()


@pytest.mark.parametrize("kind", ALGORITHMS)
def test_properties(kind, tmp_path):
    res = simulate(load_scenario(write(tmp_path, kind)))
    g, u, s = res.gradients, res.updates, res.summary
    assert u["minibatch"].sum() == g["samples"].sum() == s["samples"]
    assert not g.duplicated(["learner", "t_start", "t_end"]).any()     # nothing applied twice
    assert (g["staleness"] >= 0).all()
    assert all(0.0 <= busy <= 1.0 + 1e-9 for busy in s["utilisation"].values())
    assert np.all(np.diff(u["version"]) == 1)


@pytest.fixture(scope="module")
def scheduler():
    from dask.distributed import LocalCluster
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address="127.0.0.1:0") as cluster:
        yield cluster.scheduler_address


@pytest.mark.parametrize("kind", ALGORITHMS)
def test_sweep(kind, tmp_path, scheduler):
    assert main(["sweep", str(write(tmp_path, kind)), "--grid", "cluster.nodes=1,2",
                 "--set", "stop.epochs=0.2", "--scheduler", scheduler,
                 "--out", str(tmp_path / "s")]) == 0
    results = pd.read_csv(tmp_path / "s" / "results.csv")
    assert sorted(results["cluster.nodes"]) == [1, 2]
    assert results["epoch_time_s"].notna().all()


@pytest.mark.parametrize("kind", ALGORITHMS)
def test_plan(kind, tmp_path, capsys):
    path = write(tmp_path, kind)
    data = yaml.safe_load(path.read_text())
    data["stop"] = {"epochs": 0.2}
    path.write_text(yaml.safe_dump(data))
    assert main(["plan", str(path), "--target-minibatch", "256", "--tolerance", "0.5",
                 "--max-gpus", "8", "--confirm", "1", "--out", str(tmp_path / "p")]) == 0
    plan = pd.read_csv(tmp_path / "p" / "plan.csv")
    knob = KINDS[kind].knob
    assert (knob is None) == (len(plan.columns) == len(COLUMNS))   # the knob is one more column
    assert plan["fits_memory"].any()
