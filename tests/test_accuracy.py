"""The cost model against public measurements it was not fitted to.

Whole networks (catalog/whole_network.csv): the kernel efficiencies are
fitted on kernels only; the framework's overheads on whole networks, and
checked with each GPU left out of the fit that prices it. Allreduce
(DeepBench): the achieved link rates are fitted on single-node and 2-node
rings; the 4-node rings are the held-out check.
"""

import csv
import statistics
from importlib import resources
from pathlib import Path

import pytest

from asgdsim import catalog, compute, overheads
from asgdsim.costs import ring_allreduce_time
from asgdsim.regress import END, STEP_START, step_time_table
from asgdsim.scenario import LinkSpec

ROOT = Path(__file__).resolve().parents[1]


def test_readme_step_time_table_is_the_measured_one():
    readme = (ROOT / "README.md").read_text()
    assert readme.split(STEP_START, 1)[1].split(END, 1)[0].strip() == step_time_table()


def test_framework_overheads_help_on_gpus_they_were_not_fitted_on():
    rows = compute.whole_networks()
    held_out = overheads.leave_one_out(rows, compute.raw_kernel_times, key=lambda r: r.gpu)
    with_overheads = statistics.median(abs(p / r.step_s - 1) for r, p in held_out)
    without = statistics.median(abs(overheads.predict(compute.raw_kernel_times(r), overheads.NONE)
                                    / r.step_s - 1) for r in rows)
    assert with_overheads < without, (with_overheads, without)
    # every GPU with measurements is in the check, each from two rows up
    assert {r.gpu for r in rows} >= {"K80", "K40", "M40", "P100", "V100", "TitanX-Maxwell"}


def test_fitted_overheads_lie_inside_their_grid():
    fitted = compute.framework_overheads()
    assert overheads.FLOORS[0] < fitted.kernel_floor_s < overheads.FLOORS[-1]
    assert overheads.STEPS[0] < fitted.step_s < overheads.STEPS[-1]


def test_a_step_is_its_kernels_with_the_overheads():
    # breakdown, step_time and the fit's own arithmetic agree
    from asgdsim.scenario import GpuSpec, catalog_model
    gpu, model = GpuSpec.model_validate(catalog.lookup("gpus", "K80")), catalog_model("resnet50")
    cost = compute.KernelModel(use_tables=True)
    raw = compute.KernelModel(use_tables=True, overheads=overheads.NONE).kernel_times(gpu, model, 32)
    assert cost.step_time(gpu, model, 32) == pytest.approx(overheads.predict(raw, cost.overheads))
    assert cost.breakdown(gpu, model, 32)[-1].op == "framework"


def _rings():
    path = resources.files("asgdsim.catalog").joinpath("allreduce.csv")
    rows = csv.DictReader(path.read_text().splitlines())
    return [r for r in rows if r["gpu"] in ("Tesla M40", "GTX Titan X (Maxwell)")
            and 4 * int(r["n_floats"]) >= 16e6]


def _link(name):
    return LinkSpec.model_validate(catalog.lookup("networks", name))


def test_achieved_link_rates_are_the_fitted_medians():
    def algorithm_bandwidth(r):
        p = int(r["n_gpus"])
        return 2 * (p - 1) / p * 4 * int(r["n_floats"]) / (float(r["mean_ms"]) / 1e3)
    two_nodes = [algorithm_bandwidth(r) for r in _rings() if r["n_nodes"] == "2"]
    assert _link("ib-fdr-gpu-staged").bandwidth == pytest.approx(statistics.median(two_nodes), rel=0.02)


def test_held_out_four_node_rings():
    staged = _link("ib-fdr-gpu-staged")
    errors = [abs(ring_allreduce_time(staged, 4 * int(r["n_floats"]), int(r["n_gpus"]))
                  / (float(r["mean_ms"]) / 1e3) - 1)
              for r in _rings() if r["n_nodes"] == "4"]
    assert len(errors) == 10 and statistics.median(errors) <= 0.15, errors
