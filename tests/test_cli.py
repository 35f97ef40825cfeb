"""The command line: files written, bad input refused with exit 2 and a
message naming the file and key, overrides applied."""

import json
import stat
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from asgdsim import load_scenario
from asgdsim.cli import main
from asgdsim.output import COMPARE_FILES, RUN_FILES

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "scenarios" / "tsubame-kfc-dl-vgg16.yaml"

CONTRACT_SUMMARY_KEYS = {"scenario", "seed", "learners", "gradients", "updates",
                         "simulated_time_s", "epoch_time_s", "throughput_samples_per_s",
                         "staleness", "minibatch", "analytic", "agreement", "wall_time_s"}


def small(tmp_path, **changes) -> Path:
    """A copy of the default scenario, cut short, with dotted-key changes."""
    data = yaml.safe_load(DEFAULT.read_text())
    data["stop"] = {"gradients": 2000}
    for dotted, value in changes.items():
        node = data
        *parents, last = dotted.split(".")
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value
    path = tmp_path / "small.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_default_scenario_writes_every_file(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", str(DEFAULT), "--out", str(out)]) == 0
    for name in RUN_FILES:
        assert (out / name).stat().st_size > 0, name
        # others can read what a run writes (conftest sets umask 022)
        assert stat.S_IMODE((out / name).stat().st_mode) == 0o644, name
    summary = json.loads((out / "summary.json").read_text())
    assert CONTRACT_SUMMARY_KEYS <= summary.keys()
    assert summary["scenario"] == "tsubame-kfc-dl-vgg16" and summary["learners"] == 64
    for block in ("staleness", "minibatch"):
        assert {"mean", "std", "p50", "p95", "pmf"} <= summary[block].keys()
        assert {"mean", "std", "p50", "p95", "pmf"} <= summary["analytic"][block].keys()
    assert set(summary["agreement"]) == {"epoch_time_rel_err", "staleness_mean_rel_err",
                                         "minibatch_mean_rel_err", "staleness_tv", "minibatch_tv"}
    # one epoch of ILSVRC2012 at sub-batch 32
    assert summary["samples"] >= 1281167 > summary["samples"] - summary["minibatch"]["p95"] * 4
    gradients = pd.read_parquet(out / "gradients.parquet")
    assert list(gradients.columns) == ["learner", "node", "version_read", "version_applied",
                                       "staleness", "t_start", "t_end", "t_applied", "samples"]
    updates = pd.read_parquet(out / "updates.parquet")
    assert list(updates.columns) == ["version", "t", "gradients", "minibatch"]
    assert len(gradients) == summary["gradients"] and len(updates) == summary["updates"]
    # the resolved scenario reloads to the same scenario
    assert load_scenario(out / "scenario.yaml") == load_scenario(DEFAULT)
    printed = capsys.readouterr().out
    assert "epoch time" in printed and "staleness mean" in printed


def test_existing_output_is_not_overwritten_without_asking(tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    keep = out / "notes.txt"
    keep.write_text("mine")
    assert main(["run", str(small(tmp_path)), "--out", str(out)]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert keep.read_text() == "mine" and not (out / "summary.json").exists()
    assert main(["run", str(small(tmp_path)), "--out", str(out), "--overwrite"]) == 0
    assert keep.read_text() == "mine" and (out / "summary.json").exists()


@pytest.mark.parametrize("command", ["run", "compare"])
def test_the_scenario_read_is_never_overwritten_even_when_asked(tmp_path, capsys, command):
    """A scenario kept as scenario.yaml in the folder its run goes to would
    be replaced by the run's resolved copy (comments and all) under
    --overwrite, whose message promises that only the run's files change."""
    folder = tmp_path / "mine"
    folder.mkdir()
    mine = folder / "scenario.yaml"
    small(tmp_path).rename(mine)
    text = mine.read_text()
    assert main([command, str(mine), "--out", str(folder), "--overwrite", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "scenario.yaml is the file this command reads" in err and "--out" in err
    assert mine.read_text() == text and not (folder / "summary.json").exists()


def test_a_bad_value_from_set_is_said_to_come_from_set(tmp_path, capsys):
    """The file holds a good sub_batch; the bad one is the command line's."""
    path = small(tmp_path)
    assert main(["predict", str(path), "--set", "workload.sub_batch=abc"]) == 2
    err = capsys.readouterr().err
    assert f"{path}: workload.sub_batch: expected a valid integer" in err
    assert "(from --set workload.sub_batch=abc)" in err
    # a problem of the file's own is not blamed on a --set of another key
    bad = small(tmp_path, **{"workload.sub_batch": "many"})
    assert main(["predict", str(bad), "--set", "stop.gradients=100"]) == 2
    assert "--set" not in capsys.readouterr().err


def test_set_and_seed_override_the_file(tmp_path):
    out = tmp_path / "run"
    assert main(["run", str(small(tmp_path)), "--out", str(out), "--seed", "9",
                 "--set", "workload.sub_batch=64", "--set", "cluster.nodes=2"]) == 0
    resolved = yaml.safe_load((out / "scenario.yaml").read_text())
    assert resolved["seed"] == 9
    assert resolved["workload"]["sub_batch"] == 64 and resolved["cluster"]["nodes"] == 2
    assert set(pd.read_parquet(out / "gradients.parquet")["samples"]) == {64}


def test_a_stop_set_on_the_command_line_replaces_the_files(tmp_path):
    """A new user's trial: a file's epochs kept beside --set stop.gradients
    ended the run at whichever came first, without a word."""
    scenario = small(tmp_path, **{"stop.epochs": 0.001, "stop.warmup": {"updates": 5}})
    out = tmp_path / "run"
    assert main(["run", str(scenario), "--out", str(out), "--set", "stop.gradients=300"]) == 0
    resolved = yaml.safe_load((out / "scenario.yaml").read_text())
    assert resolved["stop"]["gradients"] == 300 and resolved["stop"].get("epochs") is None
    assert resolved["stop"]["warmup"] == {"updates": 5}
    # (SPRINT: the update that reaches 300 applies its whole window)
    assert 300 <= len(pd.read_parquet(out / "gradients.parquet")) < 400


def test_predict_json_is_the_analytic_object(tmp_path, capsys):
    assert main(["predict", str(small(tmp_path)), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert {"epoch_time_s", "staleness", "minibatch"} <= printed.keys()


def test_predict_says_the_step_apart_from_the_waits(capsys):
    """A new user read "learner step 0.64 s" for a 0.1 s ResNet-50 step: it
    was an async learner's cycle, waits for the server and all. The step
    line says the step; the waits show in the gradients a learner applies."""
    path = Path(__file__).resolve().parents[1] / "scenarios" / "gpu-asgd-k20x-async-saturated.yaml"
    assert main(["predict", str(path), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert main(["predict", str(path)]) == 0
    printed = capsys.readouterr().out
    assert f"learner step         {s['step_s']:.4f} s" in printed
    per_learner = s["steady_throughput_samples_per_s"] / 128 / 64       # sub-batch 128, 64 learners
    assert f"applied              {per_learner:.4g} gradients a second a learner" in printed
    assert 1 / per_learner > 5 * s["step_s"]           # a saturated server: mostly waiting


def test_catalog_lists_every_kind(capsys):
    assert main(["catalog"]) == 0
    printed = capsys.readouterr().out
    for name in ("K80", "ib-fdr", "vgg16", "tsubame-kfc-dl", "source:"):
        assert name in printed


BAD = [
    # (what to change in the file, key the message must name, words it must say)
    ({"workload.sub_bach": 32}, "workload.sub_bach", "unknown key"),
    ({"workload.sub_batch": "many"}, "workload.sub_batch", "integer"),
    ({"cluster.nodes": -2}, "cluster.nodes", "greater than 0"),
    ({"cluster.nodes": 0}, "cluster.nodes", "greater than 0"),
    ({"cluster.gpu": "K8"}, "cluster.gpu", "unknown GPU"),
    ({"cluster.machine": "tsubame9"}, "cluster.machine", "unknown machine"),
    ({"workload.model": "vgg17"}, "workload.model", "unknown model"),
    ({"timing.update_interval": "370 parsecs"}, "timing.update_interval", "unit"),
    ({"cluster.network": {"name": "x", "bandwidth": "fast"}}, "cluster.network.bandwidth", "bandwidth"),
    ({"timing.compute": {"distribution": "gamma", "mean": "1 s"}}, "timing.compute", "cv or shape"),
    ({"timing.compute": "tabel"}, "timing.compute", "table"),
    ({"algorithm.kind": "hogwild"}, "algorithm.kind", "sprint"),
    ({"stop": {}}, "stop", "at least one of"),
    ({"timing.communication": "ideal"}, "timing.update_interval", "update_interval"),
    # each algorithm kind takes only its own keys
    ({"algorithm": {"kind": "async", "allreduce": "tree"}}, "algorithm.allreduce", "a key of sprint"),
    ({"algorithm": {"kind": "sync"}, "timing.update_interval": "1 s"}, "timing.update_interval",
     "only sprint"),
    ({"algorithm.allreduc": "tree"}, "algorithm.allreduc", "did you mean 'allreduce'"),
    # SPRINT applies its first cycle's gradients two cycles in
    ({"timing.update_interval": "1 s", "stop": {"time": "1.8 s"}}, "stop.time", "first update"),
]


@pytest.mark.parametrize("changes, key, words", BAD, ids=[b[1] + "-" + b[2] for b in BAD])
def test_bad_scenario_is_refused_naming_the_key(tmp_path, capsys, changes, key, words):
    path = small(tmp_path, **changes)
    assert main(["run", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"{path}: {key}:" in err and words in err, err
    assert "Traceback" not in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("text, words", [
    ("", "empty"),
    ("workload: [unclosed", "not valid YAML"),
    ("- just\n- a list\n", "mapping"),
    ("workload:\n  model: vgg16\n\tsub_batch: 3\n", "not valid YAML"),
])
def test_unreadable_scenario_files(tmp_path, capsys, text, words):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and words in err, err


def test_bad_arguments(tmp_path, capsys):
    assert main(["run", str(tmp_path / "missing.yaml")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["run", str(small(tmp_path)), "--set", "sub_batch"]) == 2
    assert "KEY=VALUE" in capsys.readouterr().err
    assert main(["run", str(small(tmp_path)), "--set", "workload.model.layers=3"]) == 2
    assert "workload.model" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        main(["run", str(small(tmp_path)), "--seed", "one"])
    assert exit_.value.code == 2


def test_console_script_has_no_traceback_on_a_mistake(tmp_path):
    path = small(tmp_path, **{"cluster.gpus_per_node": 0})
    done = subprocess.run([sys.executable, "-m", "asgdsim.cli", "run", str(path)],
                          capture_output=True, text=True)
    assert done.returncode == 2
    assert "cluster.gpus_per_node" in done.stderr and "Traceback" not in done.stderr


def test_timing_prints_every_layer(capsys):
    assert main(["timing", "V100", "vgg16", "--batch", "16"]) == 0
    printed = capsys.readouterr().out
    assert printed.count("conv") >= 13 and "table" in printed and "total" in printed
    assert main(["timing", "V100", "vgg17", "--batch", "16"]) == 2
    assert "unknown model 'vgg17'" in capsys.readouterr().err
    assert main(["timing", "V100", "vgg16", "--batch", "0"]) == 2


def test_timing_under_a_cuda_graph_drops_the_framework_row(capsys):
    def total(argv):
        assert main(argv) == 0
        printed = capsys.readouterr().out
        return printed, float(printed.rsplit("= ", 1)[1].split(" ms")[0])

    eager, eager_ms = total(["timing", "V100", "resnet50", "--batch", "32"])
    graph, graph_ms = total(["timing", "V100", "resnet50", "--batch", "32", "--cuda-graphs"])
    assert "(per step)" in eager and "(per step)" not in graph and "CUDA graphs" in graph
    from asgdsim.compute import framework_overheads
    assert eager_ms - graph_ms >= 1e3 * framework_overheads().step_s - 0.01


def test_compare_writes_the_table_and_checks(tmp_path, capsys):
    ideal = ROOT / "scenarios" / "ideal-sprint-poisson.yaml"
    out = tmp_path / "cmp"
    assert main(["compare", str(ideal), "--out", str(out), "--set", "stop.epochs=0.2",
                 "--check", "0.1"]) == 0
    printed = capsys.readouterr().out
    assert "staleness wasserstein" in printed and "within 0.1" in printed
    table = pd.read_csv(out / "comparison.csv")
    assert {"figure", "simulated", "closed_form", "rel_err", "checked"} <= set(table.columns)
    # the rows marked checked are the summary's agreement figures, with their values
    agreement = json.loads((out / "summary.json").read_text())["agreement"]
    checked = table[table["checked"]]
    assert len(checked) == len(agreement) == 5
    assert sorted(checked["rel_err"].fillna(checked["simulated"])) == \
        pytest.approx(sorted(agreement.values()))
    # every file compare writes is named in its last line, and nothing else is written
    for name in COMPARE_FILES:
        assert (out / name).stat().st_size > 0 and name in printed
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.*")) == sorted(COMPARE_FILES)
    # a tolerance nothing meets fails the check with status 1
    assert main(["compare", str(ideal), "--out", str(out), "--overwrite",
                 "--set", "stop.epochs=0.2", "--check", "0"]) == 1
    assert "--check fails: worse than 0" in capsys.readouterr().err


def test_compare_says_where_the_closed_form_does_not_apply(tmp_path, capsys):
    # 16 learners with exponential steps queueing at a server 86 % busy: the
    # closed form's mean-value analysis treats them as independent, and says so
    exponential = ROOT / "scenarios" / "ideal-async-exponential.yaml"
    args = ["compare", str(exponential), "--out", str(tmp_path / "cmp"),
            "--set", "timing.communication=modelled", "--set", "timing.compute.mean=130 ms",
            "--set", "stop.gradients=2000"]
    assert main(args + ["--check", "1"]) == 1
    captured = capsys.readouterr()
    warning = "outside the closed form's assumptions: server is 86% busy"
    assert warning in captured.out.splitlines()[1]          # above the table
    assert "--check fails: " + warning in captured.err
    # and, at a tolerance it also misses, the figures beyond it as well
    assert main(args + ["--overwrite", "--check", "0"]) == 1
    failures = capsys.readouterr().err.splitlines()
    assert failures[0].startswith("--check fails: " + warning)
    assert failures[1].startswith("--check fails: worse than 0: ")
    assert main(["predict", *args[1:2], *args[4:10]]) == 0
    assert warning in capsys.readouterr().out


@pytest.mark.parametrize("samples", ["6400000000000", str(2**53)])
def test_figures_too_wide_for_their_column_stay_apart(samples, tmp_path, capsys):
    # an epoch of ~1e11 s or ~1e13 s (2^53 samples, the most a count may be):
    # in significant digits, the columns apart
    path = tmp_path / "big.yaml"
    path.write_text(f"name: big\nworkload: {{model: resnet50, dataset_samples: {samples}, "
                    "sub_batch: 32}\n"
                    "cluster: {nodes: 1, gpus_per_node: 2, gpu: V100, network: ib-edr}\n"
                    "algorithm: {kind: async}\nstop: {gradients: 200}\n")
    for command in (["run", str(path), "--out", str(tmp_path / "r")],
                    ["compare", str(path), "--out", str(tmp_path / "c")]):
        assert main(command) == 0
        line = next(l for l in capsys.readouterr().out.splitlines() if "epoch time (s)" in l)
        simulated, closed, err, percent = line.split()[-4:]
        assert float(simulated) > 1e10 and float(closed) > 1e10 and percent == "%"
    assert main(["timing", "K80", "vgg16", "--batch", "100000000"]) == 0
    out = capsys.readouterr().out
    conv1 = next(l for l in out.splitlines() if l.split()[:1] == ["conv1"])
    assert len(conv1.split()) == 5                        # layer, op, forward, backward, source
    assert "does not fit in the K80's 12 GB" in out


def test_refusals_name_one_cause_and_the_right_line(tmp_path, capsys):
    base = ("name: m\nworkload: {model: resnet50, dataset_samples: 100000, sub_batch: 32}\n"
            "cluster: {nodes: 2, gpus_per_node: 4, gpu: GPU, network: ib-edr}\n"
            "algorithm: {kind: async}\nstop: STOP\n")
    cases = [("V1000", "{updates: 200}", "cluster.gpu: unknown GPU 'V1000'"),
             ("V100", "{epochs: .inf}", "(got inf)"),
             ("V100", "{updates: 200\n\n", "line 5: not valid YAML (the file ends while "
                                           "parsing a flow mapping opened here")]
    for gpu, stop, words in cases:
        path = tmp_path / "m.yaml"
        path.write_text(base.replace("GPU", gpu).replace("STOP", stop))
        assert main(["predict", str(path)]) == 2
        err = capsys.readouterr().err
        assert words in err and len(err.strip().splitlines()) == 1, err   # no knock-on line
    grouped = tmp_path / "g.yaml"       # a group's unknown GPU: once, at the group
    grouped.write_text("name: g\nworkload: {model: resnet50, dataset_samples: 100000, "
                       "sub_batch: 32}\ncluster:\n  network: ib-edr\n  groups:\n"
                       "    - {nodes: 1, gpus_per_node: 2, gpu: V1000}\n"
                       "    - {nodes: 1, gpus_per_node: 2, gpu: P100}\n"
                       "algorithm: {kind: async}\nstop: {gradients: 200}\n")
    assert main(["predict", str(grouped)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{grouped}: cluster.groups.0.gpu: unknown GPU") and err.count("\n") == 1
    path.write_text(base.replace("GPU", "V100").replace("STOP", "{updates: 200}"))
    assert main(["sweep", str(path), "--grid", "cluster.nodes=1,,2", "--out",
                 str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    assert "--grid 'cluster.nodes=1,,2': an empty value" in err and str(path) not in err
    assert main(["sweep", str(path), "--grid", "cluster.nodes=1,", "--out", str(tmp_path / "s")]) == 2
    assert "an empty value" in capsys.readouterr().err


@pytest.mark.parametrize("args, said", [
    (["--grid", "cluster.nodes=1", "--replications", "1000000000000"],
     "1,000,000,000,000 runs; expected at most 100,000"),
    (["--grid", "cluster.nodes=1,2", "--grid", "workload.sub_batch=" + ",".join(
        str(b) for b in range(1, 60_001))], "120,000 points; expected at most 100,000"),
    (["--grid", "cluster.nodes=1,1"], "a value given twice"),
])
def test_a_sweep_too_large_or_repeating_a_point_is_refused_before_any_work(tmp_path, capsys,
                                                                          args, said):
    """10^12 replications held 4.5 GB after 32 s and wrote nothing; a point
    given twice ran twice as two points."""
    out = tmp_path / "sweep"
    assert main(["sweep", str(small(tmp_path)), "--out", str(out), *args]) == 2
    assert said in capsys.readouterr().err
    assert not out.exists() or not any(out.iterdir())


def test_a_grid_value_may_be_a_flow_mapping():
    """A new user's trial: --grid cut a YAML flow mapping at its commas,
    though --set takes one."""
    from asgdsim.cli import _grid

    grid = _grid(["cluster.topology={kind: fat-tree, nodes_per_switch: 4},{kind: non-blocking}",
                  "cluster.nodes=2,4"])
    assert grid == {"cluster.topology": [{"kind": "fat-tree", "nodes_per_switch": 4},
                                         {"kind": "non-blocking"}],
                    "cluster.nodes": [2, 4]}
