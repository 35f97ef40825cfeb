"""What a training framework adds to its kernels, fitted on whole networks.

The kernel model (:mod:`asgdsim.compute`) prices each kernel as the GPU
runs it. A framework adds two things, both missing from kernel tables:

- **a launch interval per kernel**: the host issues kernels asynchronously,
  so launching overlaps with the GPU's work and costs nothing while kernels
  are long; a kernel shorter than the host's time to issue the next one
  leaves the GPU idle. Each kernel therefore costs at least ``kernel_floor_s``
  (small networks and small batches, where most kernels are short, feel it);
- **a fixed cost per step**: the framework's own bookkeeping, the loss, the
  synchronisation at the end of the step (``step_s``).

Both are the host's: kernels captured in CUDA graphs and replayed
(``workload.cuda_graphs``; MXNet's ``MXNET_ENABLE_CUDA_GRAPHS``) are issued
by the driver a graph at a time, not by the framework a kernel at a time,
so such a step is priced with neither (:data:`NONE`). Leaving out all of
the cost per step is an upper bound on the saving: MXNet captures a graph
per bulk segment, and Horovod's collective and the optimizer stay outside
them. Each kernel's own cost on the GPU (``compute.LAUNCH_S``) stays.

Both are fitted on published whole-network training step times
(a measurement that includes the optimizer's step gets the update kernels
too: one per parameter tensor, reading weights, gradients and momentum and
writing weights and momentum at the GPU's memory bandwidth)
(``catalog/whole_network.csv``, a source per row) by least squares on the
log of predicted over measured time, over a grid (1 us, 0.1 ms). The rows
used are single-GPU FP32 runs of catalog networks on catalog GPUs with
cuDNN v4 or later (the library generation the kernel tables measure):
libraries without cuDNN, XLA, cuDNN R1 to v3 and the Caffe performance page
of 2014 are left out, as is mixed or TF32 precision.
``benchmarks/accuracy.py`` reports the error with each GPU left out of the
fit that prices it.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources

import numpy as np

__all__ = ["Overheads", "Measurement", "measurements", "fit", "NONE"]

#: frameworks whose kernels or library generation the kernel tables do not describe
OTHER_LIBRARIES = re.compile(
    r"not cuDNN|XLA|cuda-convnet|SpatialConvolutionMM|neon|fbfft|cuDNN R[123]\b|cuDNN v3|"
    r"BVLC docs|Chainer", re.IGNORECASE)


@dataclass(frozen=True)
class Overheads:
    kernel_floor_s: float      # the least a kernel costs: the host's launch interval
    step_s: float              # the framework's fixed cost per step


NONE = Overheads(0.0, 0.0)


@dataclass(frozen=True)
class Measurement:
    """One published whole-network training step."""

    gpu: str
    model: str
    batch: int
    step_s: float
    framework: str
    source: str
    includes_update: bool      # the optimizer's step is inside the time (not fwd+bwd only)


def measurements(gpus: set[str], models: set[str]) -> list[Measurement]:
    """The rows of whole_network.csv the fit and the accuracy check use."""
    text = resources.files("asgdsim.catalog").joinpath("whole_network.csv").read_text("utf-8")
    return [Measurement(r["gpu"], r["model"], int(r["batch"]), float(r["step_ms"]) / 1e3,
                        r["framework"], r["source"], r["measured"] != "fwd+bwd")
            for r in csv.DictReader(text.splitlines())
            if r["precision"] == "fp32" and r["gpu"] in gpus and r["model"] in models
            and not OTHER_LIBRARIES.search(r["framework"])]


FLOORS = np.arange(0.0, 150e-6, 1e-6)
STEPS = np.arange(0.0, 20e-3, 0.1e-3)


def fit(kernels: Sequence[np.ndarray], measured: Sequence[float]) -> Overheads:
    """The overheads that best turn each row's raw kernel times into its
    measured step (least squares on the log ratio, over the grid)."""
    measured = np.asarray(measured, dtype=float)
    best = (np.inf, NONE)
    for floor in FLOORS:
        floored = np.array([np.maximum(k, floor).sum() for k in kernels])
        # every step cost on the grid at once: rows x steps
        error = np.log((floored[:, None] + STEPS[None, :]) / measured[:, None])
        score = (error**2).mean(axis=0)
        i = int(np.argmin(score))
        if score[i] < best[0]:
            best = (score[i], Overheads(float(floor), float(STEPS[i])))
    return best[1]


def predict(kernels: np.ndarray, overheads: Overheads) -> float:
    """A step's seconds from its raw kernel times."""
    return float(np.maximum(kernels, overheads.kernel_floor_s).sum() + overheads.step_s)


def leave_one_out(rows: Sequence[Measurement], kernels: Callable[[Measurement], np.ndarray],
                  key: Callable[[Measurement], str]) -> list[tuple[Measurement, float]]:
    """(row, predicted seconds) with the overheads fitted on the rows of every
    other group (``key``: a GPU), so no group prices its own predictions."""
    raw = [kernels(r) for r in rows]
    out = []
    for group in sorted({key(r) for r in rows}):
        train = [i for i, r in enumerate(rows) if key(r) != group]
        fitted = fit([raw[i] for i in train], [rows[i].step_s for i in train])
        out += [(r, predict(raw[i], fitted)) for i, r in enumerate(rows) if key(r) == group]
    return out
