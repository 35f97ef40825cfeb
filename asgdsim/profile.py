"""Measuring a real device: per-layer kernel times with PyTorch.

``profile_model`` builds each convolution and fully connected layer of a
network as a PyTorch module on the chosen device and times its three passes
separately (forward, gradient of the input, gradient of the weights): warm-up
runs, then the median of repeats, timed by CUPTI on a GPU (the kernels'
own time, the host's launch left out) and by the wall clock on the CPU.
The rows come out in the format of the package's ``kernels.csv``, so a
scenario can use them through ``timing.kernel_table``. Each repeat's passes
summed are one step's
kernels: ``write_steps`` keeps them for ``timing.compute: {empirical: FILE}``
and ``asgdsim fit``. PyTorch is an optional dependency
(``pip install 'asgdsim[profile]'``).

The rows must mean what the shipped tables mean: FP32 kernels of the
convolution or product alone, at the algorithm an autotuner picks. So the
layers have no bias (DeepBench times none), cuDNN autotunes
(``cudnn.benchmark``, as frameworks run it), and TF32 is off while timing:
PyTorch lets cuDNN's convolutions use TF32 tensor cores by default, and an
Ampere or Hopper table would otherwise price FP32 at TF32's speed.
"""

from __future__ import annotations

import csv
import statistics
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

from .atomic import atomic_text, atomic_write
from .catalog.build_kernels import COLUMNS
from .layers import Layer
from .specs import ModelSpec

__all__ = ["profile_model", "measure", "write_table", "write_steps"]


#: calls of a pass under one CUDA profiling session (its time is their mean)
CALLS_PER_TIMING = 5


def _timer(torch, device: str) -> Callable[[Callable[[], object]], float]:
    if device.startswith("cuda"):
        from torch.profiler import ProfilerActivity, profile

        def timed(fn: Callable[[], object]) -> float:
            # the kernels' own time on the GPU (CUPTI): events around one
            # call would add the host's launch, which on a fast GPU is
            # longer than a short kernel (and the framework's floor prices)
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(CALLS_PER_TIMING):
                    fn()
                torch.cuda.synchronize()
            return _kernel_ms(prof) / CALLS_PER_TIMING
    else:
        def timed(fn: Callable[[], object]) -> float:
            start = time.perf_counter()
            fn()
            return 1e3 * (time.perf_counter() - start)
    return timed


def _kernel_ms(prof) -> float:
    """Milliseconds of every kernel a CUDA profiling session recorded."""
    total_us = 0.0
    for event in prof.key_averages():
        us = getattr(event, "self_device_time_total", None)
        if us is None:                      # its name before PyTorch 2.4
            us = getattr(event, "self_cuda_time_total", 0.0)
        total_us += us
    return total_us / 1e3


def _module(torch, layer: Layer):
    nn = torch.nn
    if layer.op == "conv":
        return nn.Conv2d(layer.in_shape[0], layer.out_shape[0], layer.kernel, layer.stride,
                         layer.pad, groups=layer.groups, bias=False)
    return nn.Linear(layer.in_values, layer.out_values, bias=False)


@contextmanager
def _fp32_autotuned(torch):
    """TF32 off and cuDNN autotuning on while timing; the caller's settings after.

    PyTorch 2.9 and later set TF32 per backend (``fp32_precision``) and
    refuse a mix with the older ``allow_tf32`` flags, so the newer are used
    where they exist."""
    cudnn, matmul = torch.backends.cudnn, torch.backends.cuda.matmul
    conv = getattr(cudnn, "conv", None)
    if conv is not None and hasattr(conv, "fp32_precision"):
        flags = [(cudnn, "benchmark", True), (conv, "fp32_precision", "ieee"),
                 (matmul, "fp32_precision", "ieee")]
    else:
        flags = [(cudnn, "benchmark", True), (cudnn, "allow_tf32", False),
                 (matmul, "allow_tf32", False)]
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in flags]
    for owner, name, value in flags:
        setattr(owner, name, value)
    try:
        yield
    finally:
        for owner, name, value in saved:
            setattr(owner, name, value)


def _passes(torch, module, x) -> dict[str, Callable[[], object]]:
    """The three passes of one layer: forward, input gradient, weight gradient."""
    weights = list(module.parameters())
    y = module(x)
    grad = torch.ones_like(y)
    return {
        "fwd": lambda: module(x),
        "bwd_data": lambda: torch.autograd.grad(y, x, grad, retain_graph=True),
        "bwd_filter": lambda: torch.autograd.grad(y, weights, grad, retain_graph=True),
    }


def profile_model(model: ModelSpec, batch: int, gpu: str, device: str = "cpu",
                  warmup: int = 2, repeats: int = 5) -> list[dict]:
    """Time every convolution and fully connected layer of ``model``; return
    kernel rows labelled with the catalog GPU name ``gpu``."""
    return measure(model, batch, gpu, device, warmup, repeats)[0]


def measure(model: ModelSpec, batch: int, gpu: str, device: str = "cpu",
            warmup: int = 2, repeats: int = 5) -> tuple[list[dict], list[float]]:
    """(:func:`profile_model`'s kernel rows, the seconds of each repeat's
    step): repeat r's step is the sum of every timed pass's r-th timing, the
    convolution and fully connected kernels of one forward and backward
    pass (element-wise layers and the framework's own time are not in it)."""
    import torch  # optional dependency: imported only when profiling

    with _fp32_autotuned(torch):
        return _measure(torch, model, batch, gpu, device, warmup, repeats)


def _measure(torch, model: ModelSpec, batch: int, gpu: str, device: str,
             warmup: int, repeats: int) -> tuple[list[dict], list[float]]:
    timed = _timer(torch, device)
    library = f"PyTorch {torch.__version__} ({device})"
    rows, steps = [], [0.0] * repeats
    for layer in model.graph:
        if layer.op not in ("conv", "fc"):
            continue
        module = _module(torch, layer).to(device)
        shape = (batch, *layer.in_shape) if layer.op == "conv" else (batch, layer.in_values)
        x = torch.randn(shape, device=device, requires_grad=True)
        for pass_, fn in _passes(torch, module, x).items():
            for _ in range(warmup):
                fn()
            times = [timed(fn) for _ in range(repeats)]
            steps = [s + t / 1e3 for s, t in zip(steps, times)]
            rows.append(_row(layer, pass_, batch, statistics.median(times), gpu, library))
    return rows, steps


def _row(layer: Layer, pass_: str, batch: int, ms: float, gpu: str, library: str) -> dict:
    source = "asgdsim profile (median of repeats after warm-up)"
    if layer.op == "conv":
        c, h, w = layer.in_shape
        return {"gpu": gpu, "op": "conv", "pass": pass_, "n": batch, "c": c, "h": h, "w": w,
                "k": layer.out_shape[0], "r": layer.kernel[0], "s": layer.kernel[1],
                "pad_h": layer.pad[0], "pad_w": layer.pad[1], "stride_h": layer.stride,
                "stride_w": layer.stride, "ms": ms, "algo": "", "library": library,
                "source": source}
    # y = x W^T: a GEMM of M = outputs, N = batch, K = inputs
    return {"gpu": gpu, "op": "gemm", "pass": pass_, "gemm_m": layer.out_values,
            "gemm_n": batch, "gemm_k": layer.in_values, "ms": ms, "algo": "",
            "library": library, "source": source}


def write_table(rows: list[dict], path: Path) -> None:
    def write(tmp: str) -> None:
        with open(tmp, "w", newline="") as f:
            writer = csv.DictWriter(f, COLUMNS, restval="")
            writer.writeheader()
            writer.writerows(rows)
    atomic_write(path, write)


def write_steps(steps: list[float], path: Path) -> None:
    """The step times in the format ``timing.compute: {empirical: FILE}`` and
    ``asgdsim fit`` read: a column ``step_s``."""
    atomic_text(path, "step_s\n" + "".join(f"{s:.9g}\n" for s in steps))
