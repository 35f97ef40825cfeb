"""What one learner must hold in GPU memory, and whether it fits.

Training keeps, at the least:

- the weights, their gradients and the momentum buffer: three copies of the
  parameters (FP32, 4 bytes each);
- the activations of the sub-batch that the backward pass needs: the input
  and every layer's output, except activation and dropout layers, which every
  framework of note runs in place over their input;
- while the backward pass works on a layer, the gradients of that layer's
  output and input; the activations above it are freed by then, so the peak
  is the largest, over layers, of what is kept up to the layer plus its two
  gradient buffers.

That is a floor, not an estimate of a framework's peak: cuDNN's workspace,
the CUDA context (a few hundred MB) and allocator slack come on top. So a
configuration refused here fits nowhere, and one accepted may still be tight.
Checked against practice: ResNet-50 at the FP32 batch of NVIDIA's reference
(112 per 16 GB V100, DeepLearningExamples configs.yml) needs 13.0 GB here;
VGG-A at 64 on a 12 GB Titan X (convnet-benchmarks) 4.1 GB.
A model given only by its totals (no layers) counts its weights alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .layers import Layer

__all__ = ["Footprint", "footprint", "BYTES"]

BYTES = 4
#: layers that overwrite their input instead of storing a new output
IN_PLACE = ("act", "dropout")


@dataclass(frozen=True)
class Footprint:
    """Bytes one learner needs, by part, against the GPU's memory."""

    weights: float        # weights + gradients + momentum
    activations: float    # kept for the backward pass, for the whole sub-batch
    backward: float       # the gradients in flight at the backward pass's peak
    capacity: float | None

    @property
    def total(self) -> float:
        return self.weights + self.activations + self.backward

    @property
    def fits(self) -> bool:
        return self.capacity is None or self.total <= self.capacity

    def describe(self, sub_batch: int) -> str:
        gb = lambda b: f"{b / 1e9:.1f} GB"  # noqa: E731
        return (f"weights, gradients and momentum {gb(self.weights)} + activations of "
                f"{sub_batch} samples {gb(self.activations)} + gradients in flight "
                f"{gb(self.backward)} = {gb(self.total)}, at the least")


def footprint(parameters: int, input_shape: tuple[int, ...], graph: list[Layer] | None,
              sub_batch: int, capacity: float | None, activation_bytes: int = BYTES) -> Footprint:
    """``activation_bytes``: the width activations are kept at (2 in mixed
    precision, whose weights, gradients and momentum stay FP32)."""
    weights = 3 * BYTES * parameters
    if graph is None:
        return Footprint(weights, 0.0, 0.0, capacity)
    kept = math.prod(input_shape) + np.cumsum([0 if l.op in IN_PLACE else l.out_values
                                                for l in graph])
    in_flight = np.array([l.in_values + l.out_values for l in graph])
    peak = int(np.argmax(kept + in_flight))
    return Footprint(weights, activation_bytes * sub_batch * float(kept[peak]),
                     activation_bytes * sub_batch * float(in_flight[peak]), capacity)
