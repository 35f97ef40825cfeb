"""What crosses the host link for each sample (``workload.input_copy``): the
finished float32 tensor, the decoded uint8 crop, or the stored sample that
the GPU decodes.

Exact results: the copy of a sub-batch is one alpha-beta transfer over the
node's host link of sub_batch x values x 4 bytes (float32), x 1 byte
(uint8), or sub_batch x sample_bytes (encoded); synthetic input copies
nothing whatever it names.
"""

import math

import pytest

from asgdsim.costs import costs_of
from asgdsim.errors import ScenarioError
from asgdsim.simulation import simulate
from asgdsim.validation import measurements, scenario_of

from conftest import make

REAL = {"timing__communication": "modelled", "cluster__network": "10gbe",
        "workload__sub_batch": 64, "workload__input": "real"}


@pytest.mark.parametrize("copy, per_sample", [
    ("float32", lambda sc: 4 * math.prod(sc.workload.model.input_shape)),
    ("uint8", lambda sc: math.prod(sc.workload.model.input_shape)),
    ("encoded", lambda sc: sc.workload.sample_bytes)])
def test_the_copy_carries_what_the_host_hands_over(copy, per_sample):
    sc = make(**REAL, workload__input_copy=copy)
    link = sc.cluster.host_link
    expected = link.latency + 64 * per_sample(sc) / link.bandwidth
    assert costs_of(sc).batch_to_gpu_s == pytest.approx(expected, rel=1e-12)


def test_float32_is_the_default():
    assert make(**REAL).workload.input_copy == "float32"
    assert costs_of(make(**REAL)).batch_to_gpu_s == \
        costs_of(make(**REAL, workload__input_copy="float32")).batch_to_gpu_s


@pytest.mark.parametrize("copy", ["float32", "uint8", "encoded"])
def test_synthetic_input_copies_nothing(copy):
    sc = make(**{**REAL, "workload__input": "synthetic"}, workload__input_copy=copy)
    assert costs_of(sc).batch_to_gpu_s == 0.0


def test_a_smaller_copy_shortens_a_host_link_bound_step():
    # two GPUs share one slow host link: the copies queue there, so the
    # cluster is faster the less each copy carries
    base = {**REAL, "cluster__gpus_per_node": 2, "cluster__gpus_per_host_link": 2,
            "cluster__host_link": {"name": "slow", "bandwidth": "1 GB/s", "latency": "5 us"},
            "timing__compute": {"distribution": "deterministic", "mean": 0.01},
            "stop__gradients": 200, "algorithm__kind": "allreduce"}
    rates = [simulate(make(**base, workload__input_copy=c)).summary["throughput_samples_per_s"]
             for c in ("float32", "uint8", "encoded")]
    assert rates[0] < rates[1] < rates[2]


def test_an_unknown_copy_is_refused_by_its_key():
    with pytest.raises(ScenarioError, match="workload.input_copy"):
        make(**REAL, workload__input_copy="float16")


def test_every_validation_row_records_what_its_pipeline_copies():
    # NVIDIA's MXNet runner decodes on the GPU (DALI's GPU backend), its
    # PyTorch runs on the host into uint8 crops (DALI's CPU backend), and
    # TensorFlow's pipelines hand over float32 images
    expected = {"nvidia-dle-mxnet": "encoded", "nvidia-dle-pytorch": "uint8"}
    for m in measurements():
        assert m.input_copy == expected.get(m.source, "float32"), m
        assert scenario_of(m).workload.input_copy == m.input_copy
