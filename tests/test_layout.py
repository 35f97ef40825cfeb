"""The activations' layout: tensor cores take NHWC, so a convolution on them
in an NCHW framework (PyTorch's default, tf_cnn_benchmarks', MXNet's FP32)
also runs cuDNN's transposes, each pass's two tensors in and out (compute.py).

Exact results: the NCHW step is the NHWC step plus one transpose kernel per
convolution pass, each a read and a write of the pass's two tensors at the
element-wise rate; nothing changes off the tensor cores.
"""

import pytest

from asgdsim import catalog
from asgdsim.compute import LAUNCH_S, KernelModel, memory_rate
from asgdsim.costs import costs_of
from asgdsim.precision import activation_bytes
from asgdsim.specs import GpuSpec, catalog_model
from asgdsim.timing import step_time
from asgdsim.validation import measurements

from conftest import make


def gpu(name):
    return GpuSpec.model_validate(catalog.lookup("gpus", name))


@pytest.mark.parametrize("name, precision", [("A100", "tf32"), ("A100", "fp16"),
                                             ("V100", "fp16")])
def test_nchw_adds_a_transpose_per_convolution_pass(name, precision):
    model, batch, cost = catalog_model("resnet50"), 64, KernelModel(use_tables=True)
    g = gpu(name)
    floor = cost.overheads.kernel_floor_s
    width = activation_bytes(precision)
    extra = 0.0
    for i, layer in enumerate(model.graph):
        if layer.op != "conv":
            continue
        transpose = LAUNCH_S + 2 * width * batch * (layer.in_values + layer.out_values) \
            / memory_rate(g)
        passes = 2 if i == 0 else 3          # the input's gradient is never computed
        extra += passes * max(transpose, floor)
    nhwc = cost.step_time(g, model, batch, precision, "nhwc")
    assert cost.step_time(g, model, batch, precision, "nchw") == pytest.approx(nhwc + extra,
                                                                              rel=1e-12)


@pytest.mark.parametrize("name, precision", [("A100", "fp32"), ("V100", "fp32"),
                                             ("V100", "tf32"), ("K80", "fp16"), ("P100", "fp16")])
def test_off_the_tensor_cores_the_layout_costs_nothing(name, precision):
    # FP32 kernels and GPUs without tensor cores (of that precision) run NCHW natively
    assert step_time(name, "resnet50", 32, precision=precision, layout="nchw") == \
        step_time(name, "resnet50", 32, precision=precision, layout="nhwc")


def test_a_scenario_carries_its_layout():
    sc = make(workload__layout="nchw", workload__precision="fp16", cluster__gpu="V100",
              workload__model="resnet50", timing__compute="table")
    nhwc = make(workload__precision="fp16", cluster__gpu="V100", workload__model="resnet50",
                timing__compute="table")
    assert costs_of(sc).compute.mean > costs_of(nhwc).compute.mean
    with pytest.raises(ValueError, match="layout"):
        step_time("V100", "resnet50", 32, layout="chwn")


def test_every_validation_row_records_its_layout():
    rows = measurements()
    assert {r.layout for r in rows} == {"nchw", "nhwc"}
    # NVIDIA's mixed-precision runs are channels last (MXNet's runner,
    # PyTorch's configs.yml); their TF32/FP32 runs and TensorFlow's are NCHW
    for r in rows:
        nhwc = r.source in ("nvidia-dle-mxnet", "nvidia-dle-pytorch") and r.precision == "fp16"
        assert r.layout == ("nhwc" if nhwc else "nchw"), r
