"""Sweeps on a real local Dask cluster: seeds independent of workers,
resumption with nothing lost or repeated, other sweeps' folders refused."""

import stat
from pathlib import Path

import pandas as pd
import pytest

from asgdsim.cli import main
from asgdsim.sweep import SweepError, grid_points, point_seed, sweep

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "ideal-sprint-poisson.yaml"
GRID = {"cluster.nodes": [1, 2], "timing.update_interval": ["200 ms", "400 ms"],
        "stop.epochs": [0.05]}


def numbers(frame: pd.DataFrame) -> pd.DataFrame:
    return (frame.drop(columns=["wall_time_s"])
            .sort_values(["cluster.nodes", "timing.update_interval", "replication"])
            .reset_index(drop=True))


@pytest.fixture(scope="module")
def two_workers(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep") / "two"
    return out, sweep(SCENARIO, GRID, replications=2, out=out, workers=2)


def test_results_do_not_depend_on_the_worker_count(two_workers, tmp_path):
    out, results = two_workers
    assert len(results) == 8
    one = sweep(SCENARIO, GRID, replications=2, out=tmp_path / "one", workers=1)
    pd.testing.assert_frame_equal(numbers(results), numbers(one))
    on_disk = pd.read_parquet(out / "results.parquet")
    pd.testing.assert_frame_equal(numbers(on_disk), numbers(results))
    assert len(pd.read_csv(out / "results.csv")) == 8
    for name in ("results.csv", "results.parquet", "sweep.json"):   # conftest sets umask 022
        assert stat.S_IMODE((out / name).stat().st_mode) == 0o644, name
    # replications differ, and each seed comes from the point alone
    assert results["seed"].nunique() == 8
    point = grid_points(GRID, 2)[3]
    assert point_seed(10, point) == point_seed(10, grid_points(GRID, 2)[3])


def test_a_rerun_resumes_without_repeating(two_workers):
    out, results = two_workers
    points = sorted((out / "points").glob("*.json"))
    lost = points[:3]                                  # as if the sweep had died before them
    for p in lost:
        p.unlink()
    kept = {p: p.stat().st_mtime_ns for p in points[3:]}
    again = sweep(SCENARIO, GRID, replications=2, out=out, workers=1)
    assert all(p.exists() for p in lost)
    assert all(p.stat().st_mtime_ns == t for p, t in kept.items())      # not run again
    pd.testing.assert_frame_equal(numbers(again), numbers(results))


def test_another_sweep_is_not_written_over(two_workers, capsys):
    out, _ = two_workers
    other_keys = {"cluster.nodes": [1, 2], "stop.epochs": [0.05]}
    with pytest.raises(SweepError):
        sweep(SCENARIO, other_keys, out=out)
    assert main(["sweep", str(SCENARIO), "--grid", "cluster.nodes=4", "--out", str(out)]) == 2
    assert "--overwrite" in capsys.readouterr().err
    # another scenario (a --set for every point) is another sweep too
    assert main(["sweep", str(SCENARIO), "--out", str(out), "--set", "seed=99",
                 *[f"--grid={k}={','.join(map(str, v))}" for k, v in GRID.items()]]) == 2
    assert len(list((out / "points").glob("*.json"))) == 8


def test_a_grid_extended_runs_only_its_new_points(tmp_path):
    out = tmp_path / "grow"
    small = {**GRID, "cluster.nodes": [1]}
    first = sweep(SCENARIO, small, out=out)
    assert len(first) == 2
    before = {p.name: p.stat().st_mtime_ns for p in (out / "points").glob("*.json")}
    grown = sweep(SCENARIO, {**GRID, "cluster.nodes": [1, 2]}, out=out)
    after = {p.name: p.stat().st_mtime_ns for p in (out / "points").glob("*.json")}
    assert len(grown) == 4 and len(after) == 4
    assert all(after[name] == mtime for name, mtime in before.items())   # not run again
    pd.testing.assert_frame_equal(numbers(grown[grown["cluster.nodes"] == 1]), numbers(first))


def test_bad_grids_are_refused_before_anything_runs(tmp_path, capsys):
    assert main(["sweep", str(SCENARIO), "--grid", "cluster.nodez=1,2",
                 "--out", str(tmp_path / "x")]) == 2
    assert "cluster.nodez" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
    assert main(["sweep", str(SCENARIO), "--grid", "nodes", "--out", str(tmp_path / "y")]) == 2
    capsys.readouterr()
    # the results' seed column is each run's own: a grid of seeds is refused, not overwritten
    assert main(["sweep", str(SCENARIO), "--grid", "seed=1,2", "--out", str(tmp_path / "s")]) == 2
    assert "--replications" in capsys.readouterr().err
    assert not (tmp_path / "s").exists()
    assert main(["sweep", str(SCENARIO), "--grid", "cluster.nodes=1", "--workers", "2",
                 "--scheduler", "tcp://127.0.0.1:1", "--out", str(tmp_path / "z")]) == 2


def test_sweep_on_an_existing_scheduler(tmp_path):
    from dask.distributed import LocalCluster
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address="127.0.0.1:0") as cluster:
        assert main(["sweep", str(SCENARIO), "--grid", "cluster.nodes=1,2",
                     "--grid", "stop.epochs=0.02", "--scheduler",
                     cluster.scheduler_address, "--out", str(tmp_path / "s")]) == 0
    assert len(pd.read_csv(tmp_path / "s" / "results.csv")) == 2


def test_ctrl_c_then_rerun_loses_nothing(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "interrupted"
    command = [sys.executable, "-m", "asgdsim.cli", "sweep", str(SCENARIO),
               "--grid", "cluster.nodes=1,2,3,4,5,6", "--grid", "stop.epochs=0.3", "--out", str(out)]
    sweep_process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while len(list(out.glob("points/*.json"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    sweep_process.send_signal(signal.SIGINT)
    _, err = sweep_process.communicate(timeout=120)
    saved = {p: p.stat().st_mtime_ns for p in out.glob("points/*.json")}
    assert sweep_process.returncode == 130 and b"interrupted" in err
    assert 2 <= len(saved) < 6
    assert subprocess.run(command, capture_output=True).returncode == 0
    assert len(list(out.glob("points/*.json"))) == 6
    assert all(p.stat().st_mtime_ns == t for p, t in saved.items())
    assert len(pd.read_csv(out / "results.csv")) == 6


def test_a_failed_point_is_recorded_and_the_sweep_goes_on(tmp_path, monkeypatch):
    """Workers in this process (a threaded Dask cluster), one point made to fail."""
    from dask.distributed import LocalCluster

    import importlib
    # the module, not the function asgdsim.sweep that the package exports
    sweep_module = importlib.import_module("asgdsim.sweep")
    real = sweep_module.simulate

    def failing(scenario, seed=None, **limits):
        if scenario.cluster.nodes == 2:
            raise RuntimeError("node 2 caught fire")
        return real(scenario, seed=seed, **limits)

    monkeypatch.setattr(sweep_module, "simulate", failing)
    grid = {"cluster.nodes": [1, 2, 3], "stop.epochs": [0.02]}
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address="127.0.0.1:0") as cluster:
        results = sweep(SCENARIO, grid, out=tmp_path / "f", scheduler=cluster.scheduler_address)
    assert sorted(results["cluster.nodes"]) == [1, 3]
    errors = list((tmp_path / "f" / "points").glob("*.error.txt"))
    assert len(errors) == 1 and "caught fire" in errors[0].read_text()


def test_a_point_over_the_budget_is_refused_before_any_runs(tmp_path, capsys, monkeypatch):
    """Every point is estimated (budget.py) before the first simulation: a
    point too long, or with more learners than the simulator holds, is named
    with its estimate and the flag, and nothing runs or is written."""
    import asgdsim.sweep as sweep_module
    from asgdsim import budget, load_scenario

    monkeypatch.setattr(sweep_module, "run_on_dask",
                        lambda *a, **k: pytest.fail("a simulation started"))
    out = tmp_path / "s"
    assert main(["sweep", str(SCENARIO), "--grid", "stop.epochs=0.02,5", "--max-events", "1e5",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err
    size = budget.estimate(load_scenario(SCENARIO, {"stop.epochs": 5}))
    assert "stop.epochs: grid point stop.epochs=5: " in err
    assert f"about {size.gradients:,.0f} gradients" in err and "--max-events" in err
    assert "stop.epochs=0.02" not in err and not out.exists()
    # 4,000 nodes of 8 GPUs: more learners than a simulation takes
    assert main(["sweep", str(SCENARIO), "--grid", "cluster.nodes=1,4000", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "cluster.nodes: grid point cluster.nodes=4000: " in err and "32,000" in err
    assert not out.exists()
    # a value the scenario refuses is the point's, not the file's (a new user's trial)
    assert main(["sweep", str(SCENARIO), "--grid", "cluster.nodes=1,two", "--out", str(out)]) == 2
    assert "cluster.nodes: grid point cluster.nodes=two: expected a valid integer" in \
        capsys.readouterr().err


def test_overwrite_replaces_the_sweeps_files_and_keeps_the_users(tmp_path, monkeypatch):
    # the scenario itself in the folder, a note and a folder of the user's:
    # --overwrite replaces the earlier sweep's files, never those
    folder = tmp_path / "mine"
    folder.mkdir()
    scenario = folder / "study.yaml"
    scenario.write_text(SCENARIO.read_text())
    (folder / "notes.txt").write_text("mine")
    (folder / "sub").mkdir()
    (folder / "sub" / "x.txt").write_text("mine too")
    other_keys = {"cluster.nodes": [1]}          # another sweep: --overwrite replaces it
    monkeypatch.chdir(folder)
    assert main(["sweep", "study.yaml", "--grid", "cluster.nodes=1,2", "--grid",
                 "stop.epochs=0.05", "--out", ".", "--overwrite"]) == 0
    assert len(list((folder / "points").glob("*.json"))) == 2
    again = sweep(scenario, other_keys, out=folder, overwrite=True)
    assert len(again) == 1 and len(list((folder / "points").glob("*.json"))) == 1
    assert scenario.read_text() == SCENARIO.read_text()
    assert (folder / "notes.txt").read_text() == "mine"
    assert (folder / "sub" / "x.txt").read_text() == "mine too"
