"""asgdsim profile on the CPU (the same code path as on a GPU), and a
scenario using the table it writes."""

from pathlib import Path

import pandas as pd
import pytest

from asgdsim.cli import main
from asgdsim.compute import KernelModel
from asgdsim.costs import costs_of

from conftest import make


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    path = tmp_path_factory.mktemp("profile") / "alexnet.csv"
    assert main(["profile", "--model", "alexnet", "--batch", "2", "--gpu", "K80",
                 "--repeats", "2", "--out", str(path)]) == 0
    return path


def test_profile_writes_every_weighted_layer_and_pass(table):
    rows = pd.read_csv(table)
    assert len(rows) == 3 * (5 + 3)            # 5 convolutions, 3 fully connected; 3 passes
    assert set(rows["pass"]) == {"fwd", "bwd_data", "bwd_filter"}
    assert (rows["ms"] > 0).all() and set(rows["gpu"]) == {"K80"}
    assert rows["library"].str.startswith("PyTorch").all()


def test_a_scenario_uses_the_profiled_table(table):
    sc = make(workload__model="alexnet", workload__sub_batch=2, cluster__gpu="K80",
              timing__compute="table", timing__kernel_table=str(table))
    rows = pd.read_csv(table)
    layers = KernelModel(True, extra=str(table)).breakdown(sc.cluster.gpu, sc.workload.model, 2)
    weighted = [t for t in layers if t.op in ("conv", "fc")]
    assert all(t.source == "table" for t in weighted)
    assert sum(t.forward_s for t in weighted) == pytest.approx(
        rows.loc[rows["pass"] == "fwd", "ms"].sum() / 1e3)
    first_bwd_data = rows[rows["pass"] == "bwd_data"]["ms"].iloc[0]   # not needed for conv1
    assert sum(t.backward_s for t in weighted) == pytest.approx(
        (rows.loc[rows["pass"] != "fwd", "ms"].sum() - first_bwd_data) / 1e3)
    assert costs_of(sc).compute.mean == pytest.approx(sum(t.forward_s + t.backward_s for t in layers))


def test_profile_refuses_to_overwrite_and_bad_tables_are_named(table, tmp_path, capsys):
    assert main(["profile", "--model", "alexnet", "--batch", "2", "--gpu", "K80",
                 "--out", str(table)]) == 2
    assert "--overwrite" in capsys.readouterr().err
    broken = tmp_path / "broken.csv"
    broken.write_text("gpu,op\nK80,conv\n")
    from asgdsim.scenario import ScenarioError
    with pytest.raises(ScenarioError) as error:
        make(timing__kernel_table=str(broken))
    assert "timing.kernel_table" in str(error.value) and "lacks columns" in str(error.value)


def test_a_table_that_would_price_nothing_is_refused(table, tmp_path):
    import shutil

    import yaml

    from asgdsim import load_scenario
    from asgdsim.scenario import ScenarioError

    shutil.copy(table, tmp_path / "k80.csv")

    def scenario(gpu: str, compute: str = "table") -> Path:
        path = tmp_path / f"{gpu}-{compute}.yaml"
        path.write_text(yaml.safe_dump({
            "workload": {"model": "alexnet", "dataset_samples": 100, "sub_batch": 2},
            "cluster": {"gpu": gpu, "nodes": 1, "gpus_per_node": 1, "network": "ib-fdr"},
            "algorithm": {"kind": "async"},
            "timing": {"compute": compute, "kernel_table": "k80.csv"}}))
        return path
    # K80 kernels price neither a V100 (measured kernels of its own) nor its architecture
    with pytest.raises(ScenarioError, match=r"timing\.kernel_table: .*none of this cluster's "
                       r"GPUs \(V100: neither their kernels nor their architecture's\)"):
        load_scenario(scenario("V100"))
    load_scenario(scenario("K80"))
    # documented: the roofline reads no table (a sweep may compare the two)
    load_scenario(scenario("V100", "roofline"))


def test_a_table_of_a_gpu_priced_as_another_prices_it(tmp_path):
    # the V100-32GB is priced as the V100 (its kernels); profiled under its
    # own name, its own kernels price it
    rows = pd.read_csv(Path(__file__).parent.parent / "asgdsim" / "catalog" / "kernels.csv")
    own = rows[rows["gpu"] == "V100"].assign(gpu="V100-32GB", ms=lambda r: 2 * r["ms"])
    own.to_csv(tmp_path / "mine.csv", index=False)
    plain = make(workload__model="alexnet", workload__sub_batch=64, cluster__gpu="V100-32GB",
                 timing__compute="table", timing__jitter="none")
    mine = make(workload__model="alexnet", workload__sub_batch=64, cluster__gpu="V100-32GB",
                timing__compute="table", timing__jitter="none",
                timing__kernel_table=str(tmp_path / "mine.csv"))
    assert costs_of(mine).compute.mean > 1.2 * costs_of(plain).compute.mean
    # an A100's kernels price the A100-PCIe, which has none of its own: its
    # architecture's efficiencies are fitted on them (not the V100's, measured)
    from asgdsim.compute import _gpu, table_prices
    own.assign(gpu="A100").to_csv(tmp_path / "a100.csv", index=False)
    assert table_prices(str(tmp_path / "a100.csv"), _gpu("A100-PCIe"))
    assert not table_prices(str(tmp_path / "a100.csv"), _gpu("V100"))


def test_a_table_named_in_a_scenario_file_is_found_beside_it(table, tmp_path, monkeypatch):
    import shutil

    import yaml

    from asgdsim import load_scenario
    folder = tmp_path / "study"
    folder.mkdir()
    shutil.copy(table, folder / "mine.csv")
    (folder / "s.yaml").write_text(yaml.safe_dump({
        "workload": {"model": "alexnet", "dataset_samples": 100, "sub_batch": 2},
        "cluster": {"gpu": "K80", "nodes": 1, "gpus_per_node": 1, "network": "ib-fdr"},
        "algorithm": {"kind": "async"},
        "timing": {"compute": "table", "kernel_table": "mine.csv"}}))
    monkeypatch.chdir(tmp_path)          # not the scenario's folder
    sc = load_scenario("study/s.yaml")
    assert sc.timing.kernel_table == str((folder / "mine.csv").resolve())


def test_profile_keeps_each_repeats_step_for_replay_and_fit(tmp_path, capsys):
    table, steps = tmp_path / "t.csv", tmp_path / "steps.csv"
    assert main(["profile", "--model", "alexnet", "--batch", "2", "--gpu", "K80",
                 "--repeats", "12", "--out", str(table), "--steps", str(steps)]) == 0
    measured = pd.read_csv(steps)["step_s"]
    assert len(measured) == 12 and (measured > 0).all()
    # each step is its repeat's kernels summed: their median is near the
    # table's sum of medians (the same timings, another order of sum and median)
    total = pd.read_csv(table)["ms"].sum() / 1e3
    assert measured.min() <= total * 1.5 and measured.max() >= total / 1.5
    capsys.readouterr()
    assert main(["fit", str(steps)]) == 0
    assert "distribution:" in capsys.readouterr().out
    sc = make(timing__compute={"empirical": str(steps)})
    assert costs_of(sc).compute.mean == pytest.approx(measured.mean())


def test_profile_steps_are_enough_for_fit_by_default(tmp_path, capsys, monkeypatch):
    """A new user's trial: --steps wrote one step for each of the default 5
    repeats, and both next steps it suggested (fit, the empirical law)
    refused fewer than 10. With --steps the default is 30 (the repeats asked
    of the measurement, which the test above times for real); fewer than 10
    is refused before anything is timed."""
    import asgdsim.profile as profile

    asked = []

    def measure(model, batch, gpu, device, repeats):
        asked.append(repeats)
        raise SystemExit(0)        # the repeats asked are the point, not the timing

    monkeypatch.setattr(profile, "measure", measure)
    common = ["profile", "--model", "alexnet", "--batch", "1", "--gpu", "K80",
              "--out", str(tmp_path / "t.csv")]
    for extra, repeats in (([], 5), (["--steps", str(tmp_path / "s.csv")], 30)):
        with pytest.raises(SystemExit):
            main(common + extra)
        assert asked[-1] == repeats
    assert main(common + ["--steps", str(tmp_path / "few.csv"), "--repeats", "5"]) == 2
    assert "at least 10" in capsys.readouterr().err
    assert asked == [5, 30]


def _fp32_flags(torch):
    """(autotuned, TF32 allowed for convolutions, for matrix products)."""
    conv = getattr(torch.backends.cudnn, "conv", None)
    if conv is not None and hasattr(conv, "fp32_precision"):       # PyTorch 2.9+
        return (torch.backends.cudnn.benchmark, conv.fp32_precision == "tf32",
                torch.backends.cuda.matmul.fp32_precision == "tf32")
    return (torch.backends.cudnn.benchmark, torch.backends.cudnn.allow_tf32,
            torch.backends.cuda.matmul.allow_tf32)


def test_profile_times_fp32_autotuned_kernels_without_bias(monkeypatch):
    # the rows mean what the shipped tables mean: no TF32 (PyTorch's default
    # for cuDNN convolutions), cuDNN autotuned, the product alone; and the
    # caller's settings come back, after an error too
    import torch

    from asgdsim import profile
    from asgdsim.specs import catalog_model

    seen = []
    real_timer = profile._timer

    def spying_timer(torch_, device):
        seen.append(_fp32_flags(torch_))
        return real_timer(torch_, device)

    monkeypatch.setattr(profile, "_timer", spying_timer)
    before = _fp32_flags(torch)
    model = catalog_model("alexnet")
    profile.measure(model, 1, "K80", repeats=1, warmup=0)
    assert seen == [(True, False, False)] and _fp32_flags(torch) == before
    monkeypatch.setattr(profile, "_module", lambda *_: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        profile.measure(model, 1, "K80", repeats=1, warmup=0)
    assert _fp32_flags(torch) == before
    monkeypatch.undo()
    assert all(profile._module(torch, layer).bias is None
               for layer in model.graph if layer.op in ("conv", "fc"))


def test_a_cuda_profile_sums_its_kernels_device_time():
    from asgdsim.profile import _kernel_ms

    class Event:
        def __init__(self, us):
            self.self_device_time_total = us

    class Old:                      # before PyTorch 2.4
        self_cuda_time_total = 250.0

    class Profile:
        def key_averages(self):
            return [Event(1000.0), Event(0.0), Event(500.0), Old()]

    assert _kernel_ms(Profile()) == pytest.approx(1.75)
