"""asgdsim validate: the table of published cluster measurements, the
command, the golden medians, and the effects the table asked for
(synthetic input, precision, a collective hidden behind the backward pass)."""

import csv
import json
import re
from importlib import resources
from pathlib import Path

import pandas as pd
import pytest

from asgdsim import catalog, step_time
from asgdsim.algorithms import KINDS
from asgdsim.cli import main
from asgdsim.costs import costs_of
from asgdsim.structure import shard_shares
from asgdsim.validation import (COLUMNS, GOLDEN, SPEEDUP, THROUGHPUT, estimate, fitted_rows,
                                in_fit, measurements, scenario_of, summary, tensor_split,
                                validate)

from conftest import make

ROOT = Path(__file__).resolve().parents[1]
RAW = list(csv.DictReader(resources.files("asgdsim.catalog").joinpath("cluster_measurements.csv")
                          .open(newline="")))
ROWS = measurements()
ARCHITECTURES = {name: catalog.lookup("gpus", name)["architecture"] for name in catalog.names("gpus")}


def test_every_row_has_a_source_and_parses():
    assert len(RAW) == len(ROWS)
    for raw, m in zip(RAW, ROWS):
        # a repository, the commit it was read at, and the file; then the table in it
        assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}:\S+", m.reference), raw
        assert m.table.strip() and m.source.strip() and m.framework.strip(), raw
        assert m.measured > 0 and m.gpus == m.nodes * m.gpus_per_node, raw
        assert m.gpus_per_node % m.gpus_per_learner == 0, raw
        assert m.algorithm in KINDS and m.precision in ("fp32", "tf32", "fp16", "bf16"), raw
        assert m.data in ("synthetic", "cached", "real") and m.metric == THROUGHPUT, raw
        catalog.lookup("gpus", m.gpu), catalog.lookup("models", m.model)
        catalog.lookup("machines", m.machine)


def test_the_table_covers_what_the_issue_asks():
    assert len(ROWS) >= 150
    # independent publishers, not tables: NVIDIA's three READMEs are one
    publishers = {m.source.split("-")[0] for m in ROWS}
    assert len(publishers) >= 5, publishers
    assert {"sync", "allreduce"} <= {m.algorithm for m in ROWS}
    assert len({ARCHITECTURES[m.gpu] for m in ROWS}) >= 3
    assert max(m.gpus for m in ROWS) >= 64 and max(m.nodes for m in ROWS) >= 8


def test_every_row_is_a_valid_scenario():
    for m in ROWS:
        sc = scenario_of(m)
        assert sc.cluster.learners * sc.cluster.gpus_per_learner == m.gpus
        assert sc.workload.precision == m.precision


def test_held_out_rows_are_in_no_fit():
    fitted = fitted_rows()
    held = [m for m in ROWS if m.held_out]
    assert len(held) >= 30
    assert not any(in_fit(m, fitted) for m in held)
    # the check sees the overlap where there is one: the TensorFlow page's single-GPU steps
    assert any(in_fit(m, fitted) for m in ROWS if m.source == "tf-benchmarks")


def test_command_on_a_subset_writes_the_contract_columns(tmp_path, capsys):
    out = tmp_path / "v"
    assert main(["validate", "--out", str(out), "--only", "nvidia-dle-tensorflow"]) == 0
    table = pd.read_csv(out / "validation.csv")
    assert list(table.columns[:len(COLUMNS)]) == COLUMNS
    assert set(table["source"]) == {"nvidia-dle-tensorflow"}
    # the row's provenance comes along: its published setting and note
    assert {"setting", "servers", "note", "reference", "table"} <= set(table.columns)
    assert table["setting"].str.contains("horovod", case=False).all()
    assert (table["metric"] == THROUGHPUT).sum() == 14 and (table["metric"] == SPEEDUP).any()
    done = table.dropna(subset=["simulated"])
    assert len(done) == len(table)
    assert ((done["simulated"] - done["measured"]) / done["measured"]).sub(done["rel_err"]).abs().max() < 1e-9
    assert (out / "validation.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = capsys.readouterr().out
    assert "median absolute error of the throughput" in text and "system DGX-2" in text
    assert "held out, system" not in text          # none of these rows is held out


def test_command_prints_the_held_out_medians_by_system(tmp_path, capsys):
    # the issue's bar is on them, and the README's table shows them
    assert main(["validate", "--out", str(tmp_path), "--only", "nvidia-dle-mxnet"]) == 0
    text = capsys.readouterr().out
    for system in ("DGX A100", "DGX-1 V100", "DGX-2"):
        assert re.search(rf"held out, system {system} +\d+ rows +\d+\.\d %", text)


def test_command_refuses_what_it_cannot_do(tmp_path, capsys):
    assert main(["validate", "--out", str(tmp_path / "a"), "--only", "no-such-row"]) == 2
    assert "--only" in capsys.readouterr().err
    assert main(["validate", "--out", str(tmp_path / "b"), "--only", "  "]) == 2
    assert "--only" in capsys.readouterr().err
    # a text matched at the start of a word needs a letter or digit to start one
    assert main(["validate", "--out", str(tmp_path / "b"), "--only", "("]) == 2
    assert "--only" in capsys.readouterr().err and not (tmp_path / "b").exists()
    # a misspelt option: said with validate's own usage, not the top level's
    with pytest.raises(SystemExit) as misspelt:
        main(["validate", "--onyl", "ray"])
    err = capsys.readouterr().err
    assert misspelt.value.code == 2 and "usage: asgdsim validate" in err and "--onyl" in err
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "keep.txt").write_text("mine")
    assert main(["validate", "--out", str(tmp_path / "c"), "--only", "dgx-2"]) == 2
    assert "--overwrite" in capsys.readouterr().err
    with pytest.raises(SystemExit) as empty:
        main(["validate", "--out", "", "--only", "dgx-2"])
    assert empty.value.code == 2 and "--out" in capsys.readouterr().err
    # a folder where it writes a file: refused before simulating, not an internal error after
    (tmp_path / "d" / "validation.png").mkdir(parents=True)
    assert main(["validate", "--out", str(tmp_path / "d"), "--only", "dgx-2", "--overwrite"]) == 2
    assert "validation.png is a folder" in capsys.readouterr().err


def test_command_refuses_a_folder_the_system_will_not_make_before_simulating(capsys):
    # /proc refuses new entries even to root, whom permissions would let
    # through: the folder is tried, not only its permissions read
    assert main(["validate", "--out", "/proc/asgdsim-validate", "--only", "dgx-2"]) == 2
    err = capsys.readouterr()
    assert "cannot make /proc/asgdsim-validate" in err.err and "DGX-2" not in err.out


def test_only_looks_in_what_says_which_cluster_a_row_is_not_in_its_note():
    # notes mention other systems ("the V100's 432" in an A100 PCIe row's,
    # "CSCS report" in the TensorFlow page's p2.8xlarge rows'): not a match
    assert any("v100" in m.note.lower() and "V100" not in m.gpu for m in ROWS)
    assert {m.gpu for m in ROWS if "v100" in m.text} == {"V100", "V100-32GB"}
    assert {m.source for m in ROWS if "cscs" in m.text} == {"cscs-report-2017"}
    assert {m.algorithm for m in ROWS if "allreduce" in m.text} == {"allreduce"}


def test_only_matches_at_the_start_of_a_word():
    # "ray" is Ray's benchmarks, not the Cray XC50 of Piz Daint
    from asgdsim.validation import mentions

    assert {m.source for m in ROWS if mentions(m.text, "ray")} == {"ray-sgd-benchmarks"}
    assert {m.system for m in ROWS if mentions(m.text, "cray")} == {"Piz Daint (Cray XC50)"}
    assert {m.gpu for m in ROWS if mentions(m.text, "V100")} == {"V100", "V100-32GB"}


def test_tensor_shards_place_variables_as_tf_cnn_benchmarks_does():
    rows = [m for m in ROWS if m.system == "AWS p2.xlarge" and (m.servers or 1) > 1]
    assert {tensor_split(m) for m in rows} == {"greedy", "round-robin"}
    for m in rows:
        assert scenario_of(m).algorithm.split == "even"
        whole = scenario_of(m, tensor_shards=True)
        assert whole.algorithm.split == ("round-robin" if "distributed_replicated"
                                         in m.published_setting else "greedy")
        # a shard holds whole tensors: the largest, Inception v3's 2048 x 1001
        # classifier, is a floor under the busiest shard
        fc = max(size for layer in whole.workload.model.graph for size in layer.tensors)
        assert fc == 2048 * 1000
        assert max(shard_shares(whole)) >= fc / whole.workload.model.parameters
    # and the busiest shard's host is the cluster's bottleneck: never faster
    # (the two smallest clusters, one of each placement)
    for m in sorted(rows, key=lambda m: m.nodes)[::2][:2]:
        assert estimate(m, tensor_shards=True)[0] <= estimate(m)[0] * (1 + 1e-9)


@pytest.fixture(scope="module")
def whole_table():
    return validate()


def test_the_medians_hold(whole_table):
    """The golden medians (python -m asgdsim.validation --update regenerates
    them on purpose) and the README's table come from this run."""
    golden = json.loads((ROOT / GOLDEN).read_text())
    now = summary(whole_table)
    for metric, groupings in golden.items():
        for by, groups in groupings.items():
            assert set(now[metric][by]) == set(groups), (metric, by)
            for name, expected in groups.items():
                got = now[metric][by][name]
                assert got["rows"] == expected["rows"], (metric, by, name)
                assert got["median_abs_err"] == pytest.approx(expected["median_abs_err"], abs=0.002), \
                    (metric, by, name)


def test_figure_keeps_each_systems_style_and_marks_the_held_out(whole_table):
    from asgdsim.validation import validation_figure

    def styles(table):
        ax = validation_figure(table).axes[0]
        return {c.get_label(): (tuple(c.get_edgecolor()[0]),
                                (len(c.get_facecolor()) == 0 or c.get_facecolor()[0][3] == 0))
                for c in ax.collections if c.get_label().startswith("AWS p")}
    full = styles(whole_table)
    alone = styles(whole_table[whole_table["system"] == "AWS p3dn.24xlarge"])
    label = next(name for name in full if name.startswith("AWS p3dn"))
    assert alone[label] == full[label]
    edge, hollow = full[label]
    assert hollow and edge[3] > 0                # held out: hollow
    assert not full[next(name for name in full if name.startswith("AWS p2.8xlarge"))][1]


def test_whole_table_is_estimated_and_stays_within_its_bounds(whole_table):
    rows = whole_table[whole_table["metric"] == THROUGHPUT]
    assert rows["simulated"].notna().all(), rows.loc[rows["simulated"].isna(), "method"].tolist()
    assert (rows["method"] == "simulated").all()


def test_synthetic_input_reads_and_copies_nothing():
    real = costs_of(make(timing__communication="modelled"))
    synthetic = costs_of(make(timing__communication="modelled", workload__input="synthetic"))
    assert real.batch_read_s > 0 and real.batch_to_gpu_s > 0
    assert synthetic.batch_read_s == 0 and synthetic.batch_to_gpu_s == 0


def test_cached_input_is_copied_in_the_nodes_memory():
    # the page cache's copy: the sub-batch's bytes read and written once at
    # the host's memory bandwidth, instead of read at the disk's
    sc = make(timing__communication="modelled", workload__input="cached")
    cached, real = costs_of(sc), costs_of(make(timing__communication="modelled"))
    nbytes = sc.workload.sub_batch * sc.workload.sample_bytes
    assert cached.batch_read_s == pytest.approx(2 * nbytes / sc.cluster.host_memory_bandwidth)
    assert real.batch_read_s == pytest.approx(nbytes / sc.cluster.disk_bandwidth)
    assert cached.batch_to_gpu_s == real.batch_to_gpu_s > 0
    # NVIDIA's MXNet rows re-read 32,000 samples after a warm-up epoch
    assert {m.data for m in measurements() if m.source == "nvidia-dle-mxnet"} == {"cached"}


def test_mixed_precision_uses_the_tensor_cores_where_there_are_some():
    fp32 = step_time("V100", "resnet50", 128)
    assert step_time("V100", "resnet50", 128, precision="tf32") == fp32   # Volta has no TF32
    fp16 = step_time("V100", "resnet50", 128, precision="fp16")
    # faster, but not by the peaks' ratio of 8: the memory-bound layers only halve
    assert fp32 / 8 < fp16 < fp32 / 2
    a100 = step_time("A100", "resnet50", 256)
    tf32 = step_time("A100", "resnet50", 256, precision="tf32")
    assert step_time("A100", "resnet50", 256, precision="fp16") < tf32 < a100
    assert step_time("K80", "resnet50", 64, precision="fp16") <= step_time("K80", "resnet50", 64)
    with pytest.raises(ValueError, match="precision"):
        step_time("V100", "resnet50", 128, precision="fp8")


def test_a_pcie_p100_is_a_p100_at_its_clocks():
    # Piz Daint's board: 9.3 against 10.6 TFLOP/s, the same HBM2; its measured
    # kernels carried over from the SXM2's by the roofline's ratio
    assert catalog.lookup("machines", "piz-daint")["gpu"] == "P100-PCIe"
    for model in ("resnet50", "inception3", "vgg16"):
        ratio = step_time("P100-PCIe", model, 64) / step_time("P100", model, 64)
        assert 1.03 < ratio <= 10.6 / 9.3 + 1e-9, model


def test_mixed_precision_keeps_activations_in_two_bytes():
    big = dict(workload__model="resnet50", workload__sub_batch=256,
               cluster__gpu="V100", cluster__gpus_per_node=1)
    with pytest.raises(Exception, match="does not fit"):
        make(**big)
    assert make(**big, workload__precision="fp16").footprint.fits


def test_a_collective_hidden_behind_the_backward_pass():
    base = dict(algorithm={"kind": "allreduce", "collective": "ring"}, cluster__gpu="V100",
                workload__model="vgg16", workload__sub_batch=32, cluster__gpus_per_node=8,
                timing={"compute": "table", "communication": "modelled", "jitter": "none"})
    exposed = costs_of(make(**base)).collective_s
    hidden = costs_of(make(**{**base, "algorithm": {**base["algorithm"], "overlap": "backward"}})).collective_s
    assert 0 < hidden < exposed


def test_the_readme_quotes_the_golden_medians():
    from asgdsim.validation import README_END, README_START, readme_table

    golden = json.loads((ROOT / GOLDEN).read_text())
    readme = (ROOT / "README.md").read_text()
    table = readme.split(README_START, 1)[1].split(README_END, 1)[0].strip()
    assert table == readme_table(golden)
    prose = readme.split(README_END, 1)[1].split("\n## ", 1)[0]
    t, s = golden[THROUGHPUT], golden[SPEEDUP]
    for figure in (s["all"]["all"], s["held_out"]["yes"], t["all"]["all"], t["held_out"]["yes"],
                   s["held_out_system"]["AWS p2.xlarge"], t["held_out_system"]["AWS p2.8xlarge"],
                   t["held_out_system"]["DGX A100"]):
        assert f"{100 * figure['median_abs_err']:.1f} %" in prose
    # "within 15 % on every held-out system but AWS p2.xlarge", and the
    # throughputs "by system, every one is under it"
    assert [k for k, v in s["held_out_system"].items() if v["median_abs_err"] > 0.15] == ["AWS p2.xlarge"]
    assert [k for k, v in t["held_out_system"].items() if v["median_abs_err"] > 0.15] == []
    fitted = fitted_rows()
    assert f"`in_fit` marks those {sum(in_fit(m, fitted) for m in ROWS)} rows" in " ".join(readme.split())
    # a V100 32 GB row is in the fit through the V100 that prices it
    assert any(in_fit(m, fitted) for m in ROWS if m.gpu == "V100-32GB")
    held = [m for m in ROWS if m.held_out]
    assert f"{sum(m.model == 'inception3' for m in held)} of its {len(held)} rows are Inception v3, " \
           f"{sum(m.model == 'inception3' and m.gpu == 'K80' for m in held)} of them on" in " ".join(prose.split())


def test_timing_prices_a_precision(capsys):
    assert main(["timing", "V100", "resnet50", "--batch", "64", "--precision", "fp16"]) == 0
    text = capsys.readouterr().out
    assert "batch 64, fp16" in text and "table at fp16" in text


def test_the_closed_form_stands_in_for_clusters_too_large_to_simulate(monkeypatch):
    import asgdsim.validation as validation

    row = next(m for m in ROWS if m.gpus == 64 and m.source == "tf-benchmarks")
    simulated, method = validation.estimate(row)
    monkeypatch.setattr(validation, "MAX_SIMULATED_LEARNERS", 4)
    closed, stand_in = validation.estimate(row)
    assert (method, stand_in) == ("simulated", "closed form")
    assert closed == pytest.approx(simulated, rel=0.05)


def test_only_given_again_keeps_the_rows_that_mention_every_text(tmp_path):
    both = tmp_path / "both"
    assert main(["validate", "--out", str(both), "--only", "ddp", "--only", "fp16"]) == 0
    table = pd.read_csv(both / "validation.csv")
    ddp = [m for m in ROWS if "DistributedDataParallel" in m.published_setting]
    expected = {(m.source, m.system, m.gpus) for m in ddp if m.precision == "fp16"}
    assert set(zip(table["source"], table["system"], table["gpus"])) == expected
    assert set(table["precision"]) == {"fp16"} and len(expected) < len(ddp)


def test_the_developer_commands_refuse_outside_a_clone(monkeypatch, tmp_path, capsys):
    """Rewriting the golden medians and the README needs the clone the
    package runs from: an install without one is refused, not a traceback
    or a README.md of the working folder rewritten."""
    from asgdsim import regress, validation

    monkeypatch.setattr(regress, "ROOT", tmp_path)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "README.md").write_text("mine")
    with pytest.raises(SystemExit) as refused:
        validation.main(["--readme"])
    assert refused.value.code == 2 and "editable install" in capsys.readouterr().err
    assert (tmp_path / "README.md").read_text() == "mine"
