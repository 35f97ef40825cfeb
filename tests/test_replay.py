"""Convergence replay: a small real model trained with the run's schedule."""

import numpy as np
import pandas as pd
import pytest

from asgdsim.cli import main
from asgdsim.replay import ReplayOptions, replay
from asgdsim.simulation import simulate

from conftest import make


def _gradients(**changes):
    sc = make(timing__communication="ideal", stop={"epochs": 1}, workload__dataset_samples=6000,
              workload__sub_batch=8, cluster__nodes=2, cluster__gpus_per_node=2,
              cluster__network="ib-fdr", **changes)
    return simulate(sc).gradients


@pytest.mark.parametrize("task", ["digits", "digits-mlp"])
def test_staleness_zero_and_a_constant_minibatch_is_plain_minibatch_sgd_exactly(task):
    g = _gradients(algorithm={"kind": "sync"},
                   timing__compute={"distribution": "exponential", "mean": "50 ms"})
    assert (g["staleness"] == 0).all()
    for options in (ReplayOptions(task=task), ReplayOptions(task=task, momentum=0.9,
                                                            staleness_aware=True)):
        table = replay(g, options)
        assert np.array_equal(table["loss"], table["sync_loss"])
        assert np.array_equal(table["accuracy"], table["sync_accuracy"])
        assert np.array_equal(table["update"], table["sync_update"])
        assert table["samples_seen"].iloc[-1] == g["samples"].sum()


def test_the_run_s_schedule_is_what_is_replayed():
    g = _gradients(algorithm={"kind": "async"},
                   timing__compute={"distribution": "exponential", "mean": "50 ms"})
    plain = replay(g, ReplayOptions(learning_rate=0.5))
    # every update of the run is applied, the samples in full, the curve in order
    assert plain["update"].iloc[-1] == g["version_applied"].max()
    assert plain["samples_seen"].iloc[-1] == g["samples"].sum()
    assert plain["samples_seen"].is_monotonic_increasing
    assert (plain["loss"] > 0).all() and plain["accuracy"].between(0, 1).all()
    # async (staleness 3 here) applies each sub-batch as its own update: not sync's curve
    assert not np.array_equal(plain["loss"], plain["sync_loss"])
    # a staleness-aware rate divides each step by the staleness: other weights
    aware = replay(g, ReplayOptions(learning_rate=0.5, staleness_aware=True))
    assert not np.allclose(aware["loss"], plain["loss"])
    # and training works: the loss falls and the accuracy is far above chance
    assert plain["loss"].iloc[-1] < plain["loss"].iloc[0] / 2 and plain["accuracy"].iloc[-1] > 0.8


def test_replay_from_the_command_line(tmp_path, capsys):
    run = tmp_path / "run"
    g = _gradients(algorithm={"kind": "async"})
    run.mkdir()
    g.to_parquet(run / "gradients.parquet")
    assert main(["replay", str(run)]) == 0
    table = pd.read_csv(run / "replay.csv")
    assert list(table.columns) == ["update", "samples_seen", "loss", "accuracy",
                                   "sync_update", "sync_loss", "sync_accuracy"]
    assert (run / "figures" / "replay.png").stat().st_size > 10_000
    assert "synchronous SGD" in capsys.readouterr().out
    # nothing is replaced without asking; a folder without the events is refused by name
    assert main(["replay", str(run)]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert main(["replay", str(tmp_path)]) == 2
    assert "gradients.parquet" in capsys.readouterr().err
    assert main(["replay", str(run), "--out", str(tmp_path / "other"), "--task", "digits-mlp",
                 "--momentum", "0.9"]) == 0
    # another folder that holds files (another run's) is not written into unasked
    (tmp_path / "another-run").mkdir()
    (tmp_path / "another-run" / "summary.json").write_text("{}")
    assert main(["replay", str(run), "--out", str(tmp_path / "another-run")]) == 2
    assert "--overwrite to write replay.csv and figures/replay.png there" in capsys.readouterr().err
    assert not (tmp_path / "another-run" / "replay.csv").exists()
    assert main(["replay", str(run / "gradients.parquet")]) == 2
    assert "a file, not a folder" in capsys.readouterr().err
    # a table without a column the replay reads is refused naming the column
    (tmp_path / "cut").mkdir()
    g.drop(columns=["staleness"]).to_parquet(tmp_path / "cut" / "gradients.parquet")
    assert main(["replay", str(tmp_path / "cut")]) == 2
    assert "lacks the column staleness;" in capsys.readouterr().err
    for bad in (["--momentum", "1"], ["--learning-rate", "0"], ["--task", "cifar"]):
        with pytest.raises(SystemExit) as exit_:
            main(["replay", str(run), *bad])
        assert exit_.value.code == 2


def test_an_update_that_applied_nothing_changes_nothing():
    # version 2 applied no gradient (a SPRINT cycle without any): a gradient
    # that read version 2 read the weights of version 1
    def table(reads, applied):
        n = len(reads)
        return pd.DataFrame({"version_read": reads, "version_applied": applied,
                             "staleness": [a - 1 - r for r, a in zip(reads, applied)],
                             "samples": [32] * n, "t_end": np.arange(n, dtype=float)})
    skipping = replay(table([0, 0, 2, 2, 3], [1, 1, 3, 3, 4]), ReplayOptions())
    plain = replay(table([0, 0, 1, 1, 2], [1, 1, 2, 2, 3]), ReplayOptions())
    assert np.array_equal(skipping["loss"], plain["loss"])
    assert skipping["update"].iloc[-1] == 4 and plain["update"].iloc[-1] == 3


def test_what_cannot_be_replayed_is_refused_by_name(tmp_path, capsys):
    local = make(algorithm={"kind": "local-sgd", "period": 4}, timing__communication="ideal",
                 stop={"epochs": 1}, workload__dataset_samples=2000, workload__sub_batch=8)
    res = simulate(local)
    from asgdsim.output import write_run
    write_run(res, tmp_path / "local")
    assert main(["replay", str(tmp_path / "local")]) == 2
    assert "local-sgd" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    res.gradients.iloc[:0].to_parquet(empty / "gradients.parquet")
    assert main(["replay", str(empty)]) == 2
    assert "applied no gradients" in capsys.readouterr().err
    assert replay(res.gradients.iloc[:0], ReplayOptions()).empty


@pytest.mark.parametrize("change, said", [
    (lambda g: g.assign(version_read=g["version_applied"] + 1),
     "version_read is not below its version_applied"),
    (lambda g: g.assign(samples=0), "a gradient of no samples"),
    (lambda g: g.assign(samples=-8), "a gradient of no samples"),
    (lambda g: g.assign(staleness=-1), "hold a negative number"),
    (lambda g: g.assign(version_applied=g["version_applied"].astype(str)),
     "column version_applied holds"),
    (lambda g: g.assign(samples=10**9), "sums to more than 1,000,000,000"),
])
def test_a_gradients_table_no_run_wrote_is_refused_by_its_column(tmp_path, capsys, change, said):
    """Each crashed (KeyError, a log scale of 0, no array to concatenate,
    TypeError) or streamed a billion samples a row."""
    res = simulate(make(algorithm={"kind": "async"}, timing__communication="ideal",
                        stop={"gradients": 40}, workload__sub_batch=8))
    from asgdsim.output import write_run
    write_run(res, tmp_path / "run")
    change(res.gradients).to_parquet(tmp_path / "run" / "gradients.parquet")
    assert main(["replay", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert said in err and "gradients.parquet" in err
