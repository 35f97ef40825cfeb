"""Step time by name: the cost model's answer for one GPU, model and batch."""

from __future__ import annotations

from . import catalog
from .costs import kernel_cost
from .precision import LAYOUTS, PRECISIONS
from .specs import GpuSpec, ModelSpec, catalog_model

__all__ = ["step_time"]


def step_time(gpu: str | GpuSpec, model: str | ModelSpec, batch: int,
              compute: str = "table", precision: str = "fp32", layout: str = "nhwc",
              cuda_graphs: bool = False) -> float:
    """Seconds of forward + backward for one sub-batch on one GPU (no data
    loading), at ``precision``: fp32, tf32, fp16 or bf16 (see precision.py),
    the activations in ``layout``: nhwc or nchw (see compute.py), the
    kernels replayed in CUDA graphs or not (``workload.cuda_graphs``)."""
    if isinstance(gpu, (str, dict)):     # a catalog name, or an inline spec
        gpu = GpuSpec.model_validate(catalog.lookup("gpus", gpu) if isinstance(gpu, str) else gpu)
    if not isinstance(gpu, GpuSpec):
        raise TypeError(f"gpu must be a catalog name, an inline spec or a GpuSpec, got {gpu!r}")
    if isinstance(model, str):
        model = catalog_model(model)
    if not isinstance(model, ModelSpec):
        raise TypeError(f"model must be a catalog name or a ModelSpec, got {model!r}")
    if not isinstance(cuda_graphs, bool):
        raise ValueError(f"cuda_graphs must be True or False, got {cuda_graphs!r}")
    if not isinstance(batch, int) or isinstance(batch, bool) or batch <= 0:
        raise ValueError(f"batch must be a positive integer, got {batch!r}")
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
    if compute not in ("table", "roofline"):
        raise ValueError(f"compute must be table or roofline, got {compute!r}")
    return kernel_cost(compute, cuda_graphs=cuda_graphs).step_time(gpu, model, batch,
                                                                        precision, layout)
