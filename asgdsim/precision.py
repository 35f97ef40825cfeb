"""Arithmetic precision of a training step: FP32, TF32 or mixed FP16/BF16.

The kernel tables and the roofline's efficiencies price FP32 kernels. Since
Volta, frameworks train in mixed precision (NVIDIA's AMP: FP16 or BF16
activations and matrix products, FP32 master weights) or, on Ampere and
later, with TF32 matrix products, and both run the matrix products on the
GPU's tensor cores. A step at another precision is priced from its FP32
kernels by two public facts:

- **matrix products** (convolutions, fully connected layers) run at the
  tensor cores' peak instead of the FP32 peak (``GpuSpec.peak_tensor_flops``
  is the dense FP16 peak; TF32's is half of it, as NVIDIA's A100 and H100
  datasheets give: 156 against 312 TFLOP/s, 494.7 against 989.4), at the
  same efficiency as the FP32 kernel: its time scales by the ratio of the
  peaks, but never below the time to move its operands at the precision's
  width through memory;
- **everything else** (normalisation, activations, pooling, additions) is
  bound by memory traffic, which halves with 2-byte activations (FP16,
  BF16) and stays with TF32 (FP32 storage).

A GPU without tensor cores of that kind (TF32 or BF16 before Ampere, any
before Volta) computes in FP32; FP16's storage still halves its traffic
and, on GPUs with fast FP16 (P100), ``peak_fp16_flops`` is its peak.
Activations kept for the backward pass take the precision's width in
memory (:mod:`asgdsim.memory`); weights, gradients and momentum stay FP32.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from .specs import GpuSpec

__all__ = ["LAYOUTS", "PRECISIONS", "Layout", "Precision", "activation_bytes", "matmul_peak",
           "on_tensor_cores"]

Precision = Literal["fp32", "tf32", "fp16", "bf16"]
PRECISIONS: tuple[str, ...] = ("fp32", "tf32", "fp16", "bf16")
#: how activations lie in memory: channels last (what tensor cores take) or first
Layout = Literal["nhwc", "nchw"]
LAYOUTS: tuple[str, ...] = ("nhwc", "nchw")
#: architectures whose tensor cores take TF32 and BF16 (Ampere and later)
TF32_BF16 = {"ampere", "ada", "hopper", "blackwell"}
#: the TF32 tensor peak over the FP16 one (A100: 156 / 312; H100 SXM: 494.7 / 989.4)
TF32_OF_FP16 = 0.5


def activation_bytes(precision: str) -> int:
    """Bytes of one stored activation value: 2 for FP16 and BF16."""
    return 2 if precision in ("fp16", "bf16") else 4


def on_tensor_cores(gpu: GpuSpec, precision: str) -> bool:
    """Whether ``gpu`` runs matrix products of ``precision`` on tensor cores."""
    if gpu.peak_tensor_flops is None or precision == "fp32":
        return False
    return precision == "fp16" or gpu.architecture.lower() in TF32_BF16


def matmul_peak(gpu: GpuSpec, precision: str) -> float:
    """FLOP/s a matrix-multiply kernel peaks at on ``gpu`` in ``precision``."""
    if on_tensor_cores(gpu, precision):
        return gpu.peak_tensor_flops * (TF32_OF_FP16 if precision == "tf32" else 1.0)
    if precision == "fp16":
        return gpu.peak_fp16_flops or gpu.peak_flops
    return gpu.peak_flops
