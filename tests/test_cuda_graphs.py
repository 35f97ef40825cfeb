"""Kernels replayed in CUDA graphs (``workload.cuda_graphs``): the host
no longer issues each kernel, and its cost per step is left out.

Exact results: such a step is the sum of its kernels as the GPU runs them,
with neither the framework's launch interval (the least a kernel costs)
nor its fixed cost per step; without graphs the step is the same kernels,
each at least the launch interval, plus the cost per step.
"""

import pytest

from asgdsim.compute import KernelModel, framework_overheads
from asgdsim.costs import costs_of
from asgdsim.errors import ScenarioError
from asgdsim.overheads import NONE
from asgdsim.validation import measurements, scenario_of

from conftest import make

MODELLED = {"workload__model": "resnet50", "workload__sub_batch": 32, "cluster__gpu": "V100",
            "timing__compute": "table", "timing__jitter": "none"}


def test_a_graph_step_is_its_kernels_alone():
    sc = make(**MODELLED, workload__cuda_graphs=True)
    gpu, model = sc.cluster.gpu, sc.workload.model
    kernels = KernelModel(use_tables=True, overheads=NONE).kernel_times(gpu, model, 32)
    assert costs_of(sc).compute.mean == pytest.approx(kernels.sum(), rel=1e-12)


def test_without_a_graph_each_kernel_waits_for_its_launch_and_the_step_for_the_host():
    sc = make(**MODELLED)
    o = framework_overheads()
    assert o.kernel_floor_s > 0 and o.step_s > 0          # else the test could not fail
    kernels = KernelModel(use_tables=True, overheads=NONE).kernel_times(
        sc.cluster.gpu, sc.workload.model, 32)
    expected = kernels.clip(min=o.kernel_floor_s).sum() + o.step_s
    assert costs_of(sc).compute.mean == pytest.approx(expected, rel=1e-12)
    assert sc.workload.cuda_graphs is False


def test_the_roofline_drops_the_same_host_costs():
    plain = make(**{**MODELLED, "timing__compute": "roofline"})
    graph = make(**{**MODELLED, "timing__compute": "roofline"}, workload__cuda_graphs=True)
    saved = costs_of(plain).compute.mean - costs_of(graph).compute.mean
    assert saved >= framework_overheads().step_s


@pytest.mark.parametrize("value", ["sometimes", "on", 1])
def test_a_non_boolean_is_refused_by_its_key(value):
    with pytest.raises(ScenarioError, match="workload.cuda_graphs: expected a valid boolean"):
        make(**MODELLED, workload__cuda_graphs=value)


def test_a_user_kernel_table_is_kept_under_graphs(tmp_path):
    # a user's table of the V100's convolutions at twice their shipped times:
    # the graph drops the same host costs from the slower step
    from importlib import resources

    import pandas as pd

    shipped = pd.read_csv(resources.files("asgdsim.catalog").joinpath("kernels.csv"))
    slow = shipped[(shipped["gpu"] == "V100") & (shipped["op"] == "conv")].copy()
    assert len(slow) > 0
    slow["ms"] *= 2
    path = tmp_path / "slow.csv"
    slow.to_csv(path, index=False)
    table = {"timing__kernel_table": str(path)}
    def step(**keys):
        return costs_of(make(**MODELLED, **table, **keys)).compute.mean
    assert step() > costs_of(make(**MODELLED)).compute.mean
    assert step() - step(workload__cuda_graphs=True) >= framework_overheads().step_s


def test_a_learner_split_by_layers_drops_the_step_cost_once():
    keys = {**MODELLED, "cluster__gpus_per_node": 2, "cluster__gpus_per_learner": 2,
            "cluster__learner_split": "layers"}
    saved = costs_of(make(**keys)).compute.mean - \
        costs_of(make(**keys, workload__cuda_graphs=True)).compute.mean
    o = framework_overheads()
    assert o.step_s <= saved


def test_only_nvidia_s_mxnet_22_10_runs_replay_graphs():
    # its runner sets MXNET_ENABLE_CUDA_GRAPHS=1 from release 22.10 on (the
    # DGX A100 table); the 20.12 runner of the DGX-1 and DGX-2 tables did not
    for m in measurements():
        assert m.cuda_graphs == (m.framework == "MXNet 22.10 NGC"), m
        assert scenario_of(m).workload.cuda_graphs == m.cuda_graphs
    assert sum(m.cuda_graphs for m in measurements()) == 6
