"""Compute cost per layer: measured kernels where they exist, a calibrated
roofline where they do not.

Each layer of the network costs a forward pass and a backward pass (the
gradient of its input, skipped for the first layer, plus the gradient of its
weights). A pass takes

    max(FLOPs x (1 + c_half / c) / (peak x efficiency),
        bytes / memory rate) + fixed cost per kernel

where the memory rate is what element-wise layers reach (:func:`memory_rate`:
Caffe's on a Titan X, 0.6 of its peak, carried to other GPUs by their
measured STREAM triads) and the efficiency is what GPUs of that
architecture achieve on that kind of kernel: convolutions (3x3 stride 1,
where cuDNN uses Winograd, apart from the rest) per pass, GEMM for fully
connected layers. It is fitted on the
measured kernels of ``kernels.csv`` (DeepBench for Maxwell, Pascal and
Volta) and ``kernels_profiled.csv`` (Hopper: an H200 this project timed
with ``asgdsim profile``) together with a fixed cost per kernel, on the
compute-bound ones (small kernels pay the fixed cost, large ones approach
the efficiency), by least squares on the log of the time: the fitted
roofline is as often fast as slow on the kernels it is fitted on.

A convolution's efficiency also falls with its narrowest channel count c,
the lesser of its input and output channels (per group): its matrix
products are c wide at their narrowest, and a few channels leave most of a
tile, or of Winograd's batched products, idle. c_half, the width at which
half the efficiency is lost, is fitted per family and pass with the
efficiency and fixed cost (0, no dependence, is among the values tried):
DeepBench's Pascal 3x3 kernels give 0 forward and 64 for the filter
gradient, so at 32 channels the filter gradient runs at a third of its
wide efficiency. Fully connected layers are wide: c is infinite.

Kepler's only kernel figures are the Titan Black's under cuDNN R2, a library
without Winograd or FFT; Kepler takes Maxwell's efficiencies scaled by the
Kepler-to-Maxwell ratio that the Titan Black and Titan X show under that
same library (0.86), and the Titan Black keeps its own measured figures.
Ampere and Ada have no kernel table here: they are assumed to reach Volta's FP32
efficiencies, and Blackwell Hopper's.

With ``timing.compute: table`` a GPU that has its own measurements uses its
own efficiencies, and a convolution whose exact geometry was measured on it
takes the measured time at the nearest measured batch, scaled to the batch
asked for by the ratio of the calibrated roofline's times at the two batches
(FLOPs and bytes grow with the batch, the fixed cost does not). ``roofline`` uses the architecture's efficiencies only.

A table may record one algorithm rather than the fastest. DeepBench's first
release (baidu-research/DeepBench@86e6e14, September 2016) let cuDNN's
heuristic pick each convolution's algorithm (``cudnnGet*Algorithm``,
PREFER_FASTEST); it timed them all only from ae66860 (May 2017, "switch to
find from get", with cuDNN 6 support). Its cuDNN 5 sheets (M40, Titan X
Maxwell and Pascal; drivers 352.99 and 367.48, of 2015-16) are of the first
kind: for a TitanX-Pascal convolution of 128 to 256 channels at 56 x 56 the
heuristic took FFT at three times the calibrated roofline. Frameworks
autotune (cudnn.benchmark in jcjohnson/cnn-benchmarks' utils.lua and in
PyTorch runs, cudnn_exhaustive_search in Caffe2's benchmarks), so a kernel
from such a sheet is an upper bound: it costs the lesser of the measured
time and the calibrated roofline (``HEURISTIC_TABLES``).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from . import catalog
from . import overheads
from .layers import Layer
from .overheads import Overheads
from .specs import GpuSpec, ModelSpec

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["LayerTime", "KernelModel", "kernel_table", "efficiencies", "gpu_pass_time", "LAUNCH_S",
           "table_prices", "measured_as",
           "MEMORY_EFFICIENCY", "TRIAD_SHARE", "memory_rate"]

BYTES = 4
#: a kernel's fixed cost on the GPU (its launch and synchronisation there),
#: which replaying kernels in a CUDA graph does not remove; the host's
#: interval between launches is the framework's (overheads.py)
LAUNCH_S = 10e-6
#: share of memory bandwidth that element-wise layers reach (Caffe's AlexNet
#: on Titan X: ReLU1 69 %, pool1 42 % of 336.5 GB/s)
MEMORY_EFFICIENCY = 0.6
#: that share as one of what a STREAM triad reaches, which carries it to any
#: GPU with a measured triad: the Titan X's is 268.7 of its 336.5 GB/s
#: (BabelStream; both in catalog/gpus.yaml): 0.75
TRIAD_SHARE = MEMORY_EFFICIENCY * 336.5 / 268.7
#: architectures without kernel tables, and the one whose efficiencies they take
ASSUMED_LIKE = {"ampere": "volta", "ada": "volta", "blackwell": "hopper", "unknown": "pascal"}
PASSES = ("fwd", "bwd_data", "bwd_filter")
#: kernel tables whose algorithm cuDNN's heuristic chose, not a timed search:
#: DeepBench's cuDNN 5 sheets (see the module's docstring)
HEURISTIC_TABLES = re.compile(r"^CUDA [\d.]+ / cuDNN 5$")
#: the shipped kernel tables: public measurements, and the devices this
#: project profiled (``asgdsim profile``, a source per row)
KERNEL_TABLES = ("kernels.csv", "kernels_profiled.csv")


@dataclass(frozen=True)
class LayerTime:
    """One layer's forward and backward seconds, and where the figures came from."""

    layer: str
    op: str
    forward_s: float
    backward_s: float
    source: str


@cache
def kernel_table(extra: str | None = None) -> pd.DataFrame:
    """The measured kernels shipped with the package (the public tables of
    build_kernels.py, and the devices this project profiled), and those of a
    user's table (``asgdsim profile``) if ``extra`` names one."""
    import pandas as pd   # half a second to import: only where a fit is made

    shipped = []
    for name in KERNEL_TABLES:
        with resources.as_file(resources.files("asgdsim.catalog").joinpath(name)) as p:
            shipped.append(pd.read_csv(p))
    table = pd.concat(shipped, ignore_index=True)
    if extra is not None:
        table = pd.concat([table, read_user_table(extra)], ignore_index=True)
    table["algo"] = table["algo"].fillna("")
    # each row under its GPU's catalog name (a user's entry named p100 is the
    # P100 whose kernels these are) and architecture
    specs = {g: _gpu(g) for g in table["gpu"].unique()}
    table["arch"] = table["gpu"].map(lambda g: specs[g].architecture)
    table["gpu"] = table["gpu"].map(lambda g: specs[g].name)
    conv = table["op"] == "conv"
    ho = (table["h"] + 2 * table["pad_h"] - table["r"]) // table["stride_h"] + 1
    wo = (table["w"] + 2 * table["pad_w"] - table["s"]) // table["stride_w"] + 1
    table["flops"] = np.where(conv, 2.0 * table["n"] * table["k"] * table["c"] * table["r"]
                              * table["s"] * ho * wo,
                              2.0 * table["gemm_m"] * table["gemm_n"] * table["gemm_k"])
    table["bytes"] = BYTES * np.where(
        conv, table["n"] * (table["c"] * table["h"] * table["w"] + table["k"] * ho * wo)
        + table["k"] * table["c"] * table["r"] * table["s"],
        table["gemm_m"] * table["gemm_k"] + table["gemm_k"] * table["gemm_n"]
        + table["gemm_m"] * table["gemm_n"])
    fft = (table["algo"] == "fft").to_numpy()
    table.loc[fft, "flops"] = [_fft_flops(n, c, k, h + 2 * ph, w + 2 * pw) for n, c, k, h, w, ph, pw
                               in table.loc[fft, ["n", "c", "k", "h", "w", "pad_h", "pad_w"]]
                               .itertuples(index=False)]
    table["family"] = np.where(fft, "fft", np.where(
        conv, [_family(r, s, st) for r, s, st in zip(table["r"], table["s"], table["stride_h"])],
        "gemm"))
    table["channels"] = np.where(conv, np.minimum(table["c"], table["k"]), np.inf)
    table["peak"] = peak = np.array([_gpu(g).peak_flops for g in table["gpu"]])
    rate = np.array([memory_rate(_gpu(g)) for g in table["gpu"]])
    compute_s = np.maximum(table["ms"] / 1e3 - LAUNCH_S, 1e-9)
    table["efficiency"] = table["flops"] / (compute_s * peak)
    # compute-bound: at full peak the FLOPs would still outlast the memory traffic
    table["compute_bound"] = table["flops"] / peak > table["bytes"] / rate
    return table


def read_user_table(path: str) -> pd.DataFrame:
    """A kernel table in the package's format; ValueError says what is wrong."""
    import pandas as pd

    from .inputs import MAX_TABLE_BYTES, check_file

    try:
        check_file(path, MAX_TABLE_BYTES)      # not a device, a pipe, or gigabytes
        table = pd.read_csv(path)
    except (OSError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise ValueError(f"cannot read kernel table {path} ({reason})") from None
    except pd.errors.EmptyDataError:
        raise ValueError(f"kernel table {path} is empty; expected a header with gpu, op, pass, "
                         "ms and a row per kernel") from None
    required = {"gpu", "op", "pass", "ms"}
    if missing := required - set(table.columns):
        raise ValueError(f"kernel table {path} lacks columns {', '.join(sorted(missing))}")
    # a time that is text, missing, infinite or not positive would become a
    # NaN or negative step deep inside the run: refuse it here, by line
    ms = pd.to_numeric(table["ms"], errors="coerce")
    bad = ~(np.isfinite(ms) & (ms > 0))
    if bad.any():
        rows = [int(i) + 2 for i in table.index[bad][:5]]      # +2: the header, 1-based
        raise ValueError(f"kernel table {path}: column ms, line {', '.join(map(str, rows))}"
                         f"{' ...' if bad.sum() > 5 else ''}: expected a positive number of "
                         f"milliseconds, got {table['ms'][bad].iloc[0]!r}")
    table["ms"] = ms
    for name in table["gpu"].unique():
        catalog.lookup("gpus", str(name))      # an unknown GPU is refused by name
    return table


@cache
def table_gpus(path: str) -> frozenset[str]:
    """The catalog names of the GPUs whose kernels a user's table holds."""
    return frozenset(_gpu(str(name)).name for name in read_user_table(path)["gpu"].unique())


def measured_as(gpu: GpuSpec, extra: str | None = None) -> str:
    """The name whose kernels price ``gpu``: its own where the user's table
    ``extra`` measured it, else the GPU it is priced as (``priced_as``)."""
    return gpu.name if extra is not None and gpu.name in table_gpus(extra) else gpu.kernels_of


def table_prices(path: str, gpu: GpuSpec) -> bool:
    """Whether the user's table ``path`` changes how ``gpu`` is priced: it
    holds the GPU's kernels, or it changes the efficiencies the GPU takes
    (those of its architecture, where the GPU has no kernels of its own)."""
    name = measured_as(gpu, path)
    return name in table_gpus(path) or (
        efficiencies(gpu.architecture, name, path) != efficiencies(gpu.architecture, name))


@cache
def _gpu(name: str) -> GpuSpec:
    return GpuSpec.model_validate(catalog.lookup("gpus", name))


def _family(r: int, s: int, stride: int) -> str:
    return "conv3x3s1" if (r, s, stride) == (3, 3, 1) else "conv"


def _fft_flops(n: int, c: int, k: int, h: int, w: int) -> float:
    """FLOPs of an FFT convolution on padded h x w planes: transform the C
    input and K output planes (5 m log2 m each) and multiply point-wise in
    frequency (C x K per point), independent of the kernel's size."""
    m = h * w
    return 2.0 * n * m * (c * k + 5.0 * (c + k) * math.log2(m))


def _fft_eligible(layer: Layer) -> bool:
    """cuDNN's and fbfft's FFT convolutions: stride 1, kernels of 5 x 5 and up."""
    return layer.stride == 1 and layer.groups == 1 and layer.kernel[0] * layer.kernel[1] >= 25


#: fewer compute-bound kernels than this in a family: fit its efficiency only
MIN_KERNELS_FOR_OVERHEAD = 8
#: the values of c_half the fit tries (see the module's docstring)
HALF_CHANNELS = (0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0)


class Fit(NamedTuple):
    """How a family of kernels is priced: FLOPs x (1 + half_channels / c) /
    (peak x efficiency) + overhead_s, for a kernel c channels wide."""

    efficiency: float
    overhead_s: float
    half_channels: float = 0.0


def _fit(rows: pd.DataFrame) -> dict[tuple[str, str], Fit]:
    """The :class:`Fit` of each (family, pass).

    For each c_half tried, (1 / efficiency, overhead) by least squares on the
    log of predicted over measured time, so small and large kernels both
    count and the prediction is as often fast as slow (least squares on the
    relative error, its first guess, shrinks predictions: on DeepBench's
    P100 convolutions it priced them 5 to 19 % fast, family by family and
    pass by pass); the c_half with the least error wins. With few kernels,
    the median efficiency and the launch cost alone.
    """
    from scipy import optimize

    rows = rows[rows["compute_bound"]]
    fitted = {}
    for key, group in rows.groupby(["family", "pass"]):
        # the median efficiency and the launch cost alone
        fitted[key] = Fit(float(np.exp(np.log(group["efficiency"]).median())), LAUNCH_S)
        if len(group) < MIN_KERNELS_FOR_OVERHEAD:
            continue
        seconds = group["ms"].to_numpy() / 1e3
        ideal = group["flops"].to_numpy() / group["peak"].to_numpy()
        channels = group["channels"].to_numpy(dtype=float)
        best = (np.inf, None)
        # (matrix products are wide: c infinite, every c_half alike)
        for half in HALF_CHANNELS if np.isfinite(channels).any() else (0.0,):
            work = ideal * (1 + half / channels)
            (slope, overhead), _ = optimize.nnls(np.column_stack([work / seconds, 1 / seconds]),
                                                 np.ones(len(seconds)))
            if slope <= 0:
                continue
            # scaled to order one: seconds per ideal second, and microseconds
            def log_error(x: np.ndarray) -> np.ndarray:
                return np.log((x[0] * work + x[1] * 1e-6) / seconds)
            solution = optimize.least_squares(
                log_error, [slope, overhead * 1e6], bounds=([1e-9, 0.0], [np.inf, np.inf]))
            residual = float(np.sum(solution.fun ** 2))
            if residual < best[0] * (1 - 1e-9):
                slope, overhead = solution.x
                best = (residual, Fit(1.0 / slope, float(overhead) * 1e-6, half))
        fitted[key] = best[1] or fitted[key]
    return fitted


def efficiencies(arch: str, gpu: str | None = None,
                 extra: str | None = None) -> dict[tuple[str, str], Fit]:
    """The :class:`Fit` of each (family, pass): fitted on one
    GPU's kernels if it has them and ``gpu`` is given, else on its
    architecture's."""
    _follow_catalog()
    if extra is None and (shipped := shipped_fits()) is not None:
        key = gpu if gpu in shipped["measured"] else arch
        if key in shipped["fits"]:
            return shipped["fits"][key]
    return _fitted(arch, gpu, extra)


@cache
def _fitted(arch: str, gpu: str | None = None,
            extra: str | None = None) -> dict[tuple[str, str], Fit]:
    """:func:`efficiencies`, fitted afresh from the tables."""
    table = kernel_table(extra)
    if gpu is not None and (table["gpu"] == gpu).any():
        own = _fit(table[table["gpu"] == gpu])
        # measured figures win; a Kepler GPU's are cuDNN R2's, so it borrows
        # nothing from Kepler's Maxwell-based assumption (no FFT, no Winograd)
        base = _with_fallbacks(dict(own)) if arch == "kepler" else _fitted(arch)
        return {**base, **own}
    if arch == "kepler":
        # Kepler's kernel figures are cuDNN R2's (2014): no Winograd or FFT,
        # which the cuDNN 5+ of later frameworks brought to it. Take Maxwell's
        # modern efficiencies, scaled by how Kepler fares against Maxwell
        # under one library (Titan Black against Titan X, both cuDNN R2)
        ratio = kepler_to_maxwell()
        return {key: fit._replace(efficiency=fit.efficiency * ratio)
                for key, fit in _fitted("maxwell").items()}
    arch = arch if (table["arch"] == arch).any() else ASSUMED_LIKE.get(arch, "pascal")
    fitted = _fit(table[table["arch"] == arch])
    # FFT kernels were measured on Maxwell only (fbfft); later architectures
    # are assumed to reach the same share of their peak
    maxwell = _fit(table[(table["arch"] == "maxwell") & (table["family"] == "fft")])
    return _with_fallbacks({**maxwell, **fitted})


def _with_fallbacks(fitted: dict) -> dict:
    """A family without kernels borrows its other convolutions' efficiency."""
    for family in ("conv", "conv3x3s1", "gemm"):
        for pass_ in PASSES:
            fallback = fitted.get(("conv", pass_)) or fitted.get(("conv3x3s1", pass_)) or \
                fitted.get(("gemm", "fwd"))
            fitted.setdefault((family, pass_), fallback)
    return fitted


@cache
def kepler_to_maxwell() -> float:
    """Median over layers and passes of Kepler's efficiency over Maxwell's,
    both under cuDNN R2 (same_library.csv): (t_Maxwell P_Maxwell) / (t_Kepler P_Kepler)."""
    import pandas as pd

    path = resources.files("asgdsim.catalog").joinpath("same_library.csv")
    with resources.as_file(path) as p:
        pairs = pd.read_csv(p).pivot_table(index=["layer", "pass"], columns="gpu", values="ms")
    ratio = (pairs["TitanX-Maxwell"] * _gpu("TitanX-Maxwell").peak_flops
             / (pairs["TitanBlack"] * _gpu("TitanBlack").peak_flops))
    return float(ratio.median())


def memory_rate(gpu: GpuSpec) -> float:
    """Bytes per second an element-wise kernel moves on ``gpu``: the Titan
    X's share (MEMORY_EFFICIENCY of its peak, TRIAD_SHARE of its STREAM
    triad) of the GPU's own measured triad where one is published (memory
    systems differ: a triad reaches 0.74 of a K80 die's peak with ECC on,
    0.93 of a V100's), else that share of its peak."""
    if gpu.stream_bandwidth is None:
        return gpu.memory_bandwidth * MEMORY_EFFICIENCY
    return gpu.stream_bandwidth * TRIAD_SHARE


def gpu_pass_time(nbytes: float, gpu: GpuSpec, streams: int) -> float:
    """A memory-bound GPU kernel touching ``streams`` arrays of ``nbytes`` each."""
    return streams * nbytes / memory_rate(gpu)


def _pass_time(flops: float, nbytes: float, fit: Fit, gpu: GpuSpec,
               channels: float = math.inf) -> float:
    return max(flops * (1 + fit.half_channels / channels) / (gpu.peak_flops * fit.efficiency),
               nbytes / memory_rate(gpu)) + fit.overhead_s


@dataclass(frozen=True)
class _Kernels:
    """One layer's kernels as the GPU runs them, before the framework's overheads."""

    layer: str
    op: str
    forward: tuple[float, ...]
    backward: tuple[float, ...]
    source: str


class KernelModel:
    """The :class:`~asgdsim.costs.ComputeCost` built on kernel measurements,
    with the framework's overheads (:mod:`asgdsim.overheads`) on top:
    ``overheads`` None takes the fitted ones."""

    def __init__(self, use_tables: bool, extra: str | None = None,
                 overheads: Overheads | None = None):
        self.use_tables, self.extra, self._overheads = use_tables, extra, overheads

    @property
    def overheads(self) -> Overheads:
        return self._overheads if self._overheads is not None else framework_overheads()

    def step_time(self, gpu: GpuSpec, model: ModelSpec, batch: int,
                  precision: str = "fp32", layout: str = "nhwc") -> float:
        return float(sum(t.forward_s + t.backward_s
                         for t in self.breakdown(gpu, model, batch, precision, layout)))

    def breakdown(self, gpu: GpuSpec, model: ModelSpec, batch: int,
                  precision: str = "fp32", layout: str = "nhwc") -> list[LayerTime]:
        """Per layer, forward and backward seconds (each kernel at least the
        framework's launch interval), then the framework's cost per step."""
        o = self.overheads
        def floored(kernels: tuple[float, ...]) -> float:
            return float(sum(max(k, o.kernel_floor_s) for k in kernels))
        kernels = self._kernels(gpu, model, batch)
        if precision != "fp32":
            kernels = _at_precision(kernels, model, gpu, batch, precision, layout)
        layers = [LayerTime(k.layer, k.op, floored(k.forward), floored(k.backward), k.source)
                  for k in kernels]
        if o.step_s:
            layers.append(LayerTime("(per step)", "framework", o.step_s, 0.0,
                                    "fitted on whole networks"))
        return layers

    def kernel_times(self, gpu: GpuSpec, model: ModelSpec, batch: int) -> np.ndarray:
        """Every kernel's seconds of one step, without the framework's overheads."""
        return np.array([t for k in self._kernels(gpu, model, batch) for t in (*k.forward, *k.backward)])

    def _kernels(self, gpu: GpuSpec, model: ModelSpec, batch: int) -> list[_Kernels]:
        name = measured_as(gpu, self.extra)
        eff = efficiencies(gpu.architecture, name if self.use_tables else None, self.extra)
        if model.graph is None:
            return [self._whole(gpu, model, batch, eff)]
        measured = _measured(name, self.extra) if self.use_tables \
            and has_measurements(name, self.extra) else {}
        return [self._layer(layer, i == 0, gpu, batch, eff, measured)
                for i, layer in enumerate(model.graph)]

    def _layer(self, layer: Layer, first: bool, gpu: GpuSpec, n: int,
               eff: dict, measured: dict) -> _Kernels:
        if layer.op in ("conv", "fc"):
            return self._weighted(layer, first, gpu, n, eff, measured)
        # element-wise: forward reads the input and writes the output; backward
        # reads the output's gradient (and input) and writes the input's
        seconds = n * BYTES * (layer.in_values + layer.out_values) / memory_rate(gpu)
        fwd = seconds + LAUNCH_S
        bwd = () if first else (1.5 * seconds + LAUNCH_S,)
        return _Kernels(layer.name, layer.op, (fwd,), bwd, "roofline")

    def _weighted(self, layer: Layer, first: bool, gpu: GpuSpec, n: int,
                  eff: dict, measured: dict) -> _Kernels:
        flops = n * layer.flops
        weights = BYTES * layer.params
        inputs, outputs = n * BYTES * layer.in_values, n * BYTES * layer.out_values
        family = "gemm" if layer.op == "fc" else _family(*layer.kernel, layer.stride)
        channels = (min(layer.in_shape[0], layer.out_shape[0]) / layer.groups
                    if layer.op == "conv" else math.inf)
        if layer.op == "conv":
            key = ("conv", *layer.in_shape, layer.out_shape[0], *layer.kernel, *layer.pad,
                   layer.stride)
        else:
            key = ("gemm", layer.out_values, layer.in_values)
        rows = measured.get(key) if layer.groups == 1 else None
        times, sources = {}, set()
        fft_flops = (_fft_flops(n, layer.in_shape[0], layer.out_shape[0],
                                layer.in_shape[1] + 2 * layer.pad[0], layer.in_shape[2] + 2 * layer.pad[1])
                     if _fft_eligible(layer) else None)
        def modelled(pass_: str, batch: int, on: GpuSpec = gpu) -> float:
            """The calibrated roofline at ``batch`` (the autotuner's best algorithm)."""
            scale = batch / n
            fit = eff[(family, "fwd" if family == "gemm" else pass_)]
            best = _pass_time(flops * scale, traffic_at(pass_, batch), fit, on, channels)
            if fft_flops is not None and ("fft", pass_) in eff:
                best = min(best, _pass_time(fft_flops * scale, traffic_at(pass_, batch),
                                            eff[("fft", pass_)], on, channels))
            return best

        # a GPU priced as another (its kernels measured on that one): the
        # roofline's ratio between the two carries them over
        priced_as = measured_as(gpu, self.extra)
        measured_on = _gpu(priced_as) if priced_as != gpu.name else gpu

        def traffic_at(pass_: str, batch: int) -> float:
            return weights + (inputs + outputs) * batch / n

        for pass_ in PASSES:
            if pass_ == "bwd_data" and first:
                continue           # nobody needs the gradient of the network's input
            measured_s = _nearest(rows, pass_, n) if rows is not None else None
            if measured_s is not None:
                # the nearest measured batch, scaled by the roofline's own ratio
                seconds, batch, upper_bound = measured_s
                times[pass_] = seconds * modelled(pass_, n) / modelled(pass_, batch, measured_on)
                if upper_bound:
                    # the heuristic's algorithm: an autotuner runs the fastest
                    times[pass_] = min(times[pass_], modelled(pass_, n))
                sources.add("table")
            else:
                times[pass_] = modelled(pass_, n)
                sources.add("roofline")
        backward = tuple(times[p] for p in ("bwd_data", "bwd_filter") if p in times)
        return _Kernels(layer.name, layer.op, (times["fwd"],), backward, "+".join(sorted(sources)))

    def _whole(self, gpu: GpuSpec, model: ModelSpec, n: int, eff: dict) -> _Kernels:
        """A model known by its totals: one compute-bound pass per direction."""
        flops = n * model.forward_flops
        fit = eff[("conv", "fwd")]
        fwd = _pass_time(flops, BYTES * model.parameters, fit, gpu)
        bwd = 2 * _pass_time(flops, BYTES * model.parameters, fit, gpu)
        return _Kernels(model.name, "model", (fwd,), (bwd,), "roofline (totals)")


def _at_precision(kernels: list[_Kernels], model: ModelSpec, gpu: GpuSpec, n: int,
                  precision: str, layout: str = "nhwc") -> list[_Kernels]:
    """The FP32 kernels priced at another precision (see :mod:`asgdsim.precision`):
    matrix products at the precision's peak, no faster than their operands'
    traffic at its width; memory-bound kernels by the width alone; and, for
    NCHW tensors on tensor cores, each convolution's transposes."""
    from .precision import activation_bytes, matmul_peak, on_tensor_cores

    width = activation_bytes(precision) / BYTES
    speedup = matmul_peak(gpu, precision) / gpu.peak_flops
    if width == 1 and speedup == 1:
        return kernels          # TF32 without TF32 tensor cores: FP32 throughout
    bandwidth = memory_rate(gpu)
    layers = {layer.name: layer for layer in model.graph or ()}
    out = []
    for k in kernels:
        layer = layers.get(k.layer)
        if k.op in ("conv", "fc", "model"):
            values = (n * (layer.in_values + layer.out_values) + layer.params) if layer else 0.0
            floor = width * BYTES * values / bandwidth
            scale = lambda t, floor=floor: max(t / speedup, floor)  # noqa: E731
        else:
            # traffic-bound: the launch stays, the bytes shrink with the width
            scale = lambda t: LAUNCH_S + max(t - LAUNCH_S, 0.0) * width  # noqa: E731
        forward, backward = tuple(map(scale, k.forward)), tuple(map(scale, k.backward))
        if layout == "nchw" and k.op == "conv" and layer and on_tensor_cores(gpu, precision):
            # tensor cores take NHWC: cuDNN transposes each pass's two
            # activation tensors in and out of NCHW (forward x and y, data
            # gradient dy and dx, filter gradient x and dy), each a read and
            # a write at the element-wise rate
            transpose = LAUNCH_S + 2 * width * BYTES * n * (layer.in_values + layer.out_values) \
                / bandwidth
            forward += (transpose,)
            backward += (transpose,) * len(backward)
        out.append(_Kernels(k.layer, k.op, forward, backward, f"{k.source} at {precision}"))
    return out


def has_measurements(gpu: str, extra: str | None = None) -> bool:
    """Whether the kernel tables hold measurements of this GPU."""
    _follow_catalog()
    if extra is None and (shipped := shipped_fits()) is not None:
        return gpu in shipped["measured"]
    return bool((kernel_table(extra)["gpu"] == gpu).any())


# --- caches that follow the catalog ------------------------------------------
# The tables, fits and GPU specs below are derived from catalog entries (a
# GPU's peak prices its kernels); they are cached until the catalog changes.

_catalog_seen: tuple[str, int] | None = None


def _follow_catalog() -> None:
    global _catalog_seen
    if catalog.fingerprint() != _catalog_seen:
        for derived in (kernel_table, _gpu, _fitted, kepler_to_maxwell, _fitted_overheads,
                        _measured):
            derived.cache_clear()
        _catalog_seen = catalog.fingerprint()


# --- the shipped fits -------------------------------------------------------
# Fitting the kernel tables needs pandas and scipy.optimize (a second and a
# half of imports) for a result that only changes with the tables. The fits
# of the shipped tables are therefore stored beside them, in fitted.json,
# under a digest of every file they depend on; a stale or missing file, a
# user's kernel table or a user catalog (which may redefine a GPU's peak)
# make them be fitted afresh. tests/test_catalog.py keeps the file current:
#     python -m asgdsim.catalog.refit

FIT_INPUTS = (*KERNEL_TABLES, "same_library.csv", "gpus.yaml", "models.yaml", "whole_network.csv")
FITTED = "fitted.json"


def fit_digest() -> str:
    """SHA-256 over the files the fits are made from."""
    digest = hashlib.sha256()
    for name in FIT_INPUTS:
        digest.update(resources.files("asgdsim.catalog").joinpath(name).read_bytes())
    return digest.hexdigest()


_refitting = False


def fresh_fits() -> dict:
    """Every architecture's fits and every measured GPU's own, as fitted.json
    holds them, all fitted afresh: the framework's overheads are fitted on
    kernels priced by the fresh fits, not by a stored file whose digest
    cannot see a change to the fitting code."""
    global _refitting
    _refitting = True
    _fitted_overheads.cache_clear()
    try:
        table = kernel_table()
        archs = {spec["architecture"] for spec in catalog.entries("gpus").values()} | set(ASSUMED_LIKE)
        measured = sorted(str(g) for g in table["gpu"].unique())
        fits = {arch: _fitted(arch) for arch in sorted(archs)}
        fits |= {gpu: _fitted(_gpu(gpu).architecture, gpu) for gpu in measured}
        framework = _fitted_overheads()
    finally:
        _refitting = False
        _fitted_overheads.cache_clear()
    return {"digest": fit_digest(), "measured": measured,
            "fits": {key: [[family, pass_, *fit] for (family, pass_), fit in fit_of.items()]
                     for key, fit_of in fits.items()},
            "framework": [framework.kernel_floor_s, framework.step_s]}


def whole_networks() -> list[overheads.Measurement]:
    """The published whole-network steps the framework's overheads are fitted on."""
    return overheads.measurements(set(catalog.names("gpus")), set(catalog.names("models")))


def raw_kernel_times(row: overheads.Measurement) -> np.ndarray:
    """A measurement's kernels as the (table) kernel model prices them,
    without overheads, with the optimizer's where the measurement has them."""
    from .specs import catalog_model

    gpu, model = _gpu(row.gpu), catalog_model(row.model)
    kernels = KernelModel(use_tables=True, overheads=overheads.NONE).kernel_times(gpu, model, row.batch)
    return np.append(kernels, update_kernel_times(gpu, model)) if row.includes_update else kernels


def update_kernel_times(gpu: GpuSpec, model: ModelSpec) -> np.ndarray:
    """Momentum SGD on the GPU, one kernel per parameter tensor (a layer's
    weights, and its bias or normalisation shift): read weights, gradients
    and momentum, write weights and momentum."""
    sizes = []
    for layer in model.graph or ():
        if layer.params == 0:
            continue
        shift = layer.out_shape[0] if layer.op in ("conv", "fc", "norm") else 0
        sizes += [layer.params - shift, shift] if 0 < shift < layer.params else [layer.params]
    return np.array([gpu_pass_time(BYTES * n, gpu, streams=5) + LAUNCH_S for n in sizes])


@cache
def _fitted_overheads() -> Overheads:
    rows = whole_networks()
    return overheads.fit([raw_kernel_times(r) for r in rows], [r.step_s for r in rows])


def framework_overheads() -> Overheads:
    """The framework's overheads: stored in fitted.json, or fitted afresh
    where it is stale. A property of frameworks, fitted on the shipped
    catalog: a user's catalog or kernel table does not refit them."""
    if (shipped := _shipped_file()) is not None:
        return shipped["framework"]
    return _fitted_overheads()


@cache
def _shipped_file() -> dict | None:
    try:
        data = json.loads(resources.files("asgdsim.catalog").joinpath(FITTED).read_text())
    except (OSError, ValueError):
        return None
    if data.get("digest") != fit_digest():
        return None
    return {"measured": set(data["measured"]),
            "fits": {key: {(family, pass_): Fit(*fit) for family, pass_, *fit in rows}
                     for key, rows in data["fits"].items()},
            "framework": Overheads(*data["framework"])}


def shipped_fits() -> dict | None:
    """The stored fits, or None where they do not apply (see above)."""
    if os.environ.get(catalog.USER_CATALOG) or _refitting:
        return None
    return _shipped_file()


@cache
def _measured(gpu: str, extra: str | None) -> dict[tuple, dict[str, tuple[np.ndarray, np.ndarray, bool]]]:
    """A GPU's measured kernels by exact geometry: convolutions, and GEMMs
    with all three passes (as ``asgdsim profile`` writes fully connected
    layers); for each, per pass, the batches and seconds measured, and
    whether they are only an upper bound (``HEURISTIC_TABLES``)."""
    table = kernel_table(extra)
    rows = table[table["gpu"] == gpu]
    conv = rows[rows["op"] == "conv"]
    groups = {("conv", *key): group for key, group in conv.groupby(
        ["c", "h", "w", "k", "r", "s", "pad_h", "pad_w", "stride_h"])}
    gemm = rows[(rows["op"] == "gemm")]
    for key, group in gemm.groupby(["gemm_m", "gemm_k"]):
        if set(group["pass"]) >= set(PASSES):
            groups[("gemm", *key)] = group.drop(columns="n").rename(columns={"gemm_n": "n"})
    return {key: {pass_: (part["n"].to_numpy(dtype=float), part["ms"].to_numpy(dtype=float) / 1e3,
                          bool(part["library"].fillna("").str.match(HEURISTIC_TABLES).all()))
                  for pass_, part in group.groupby("pass")}
            for key, group in groups.items()}


def _nearest(measured: dict[str, tuple[np.ndarray, np.ndarray, bool]], pass_: str,
             n: int) -> tuple[float, int, bool] | None:
    """(seconds, batch, upper bound) of the measurement nearest to batch n, by ratio."""
    if pass_ not in measured:
        return None
    batches, seconds, upper_bound = measured[pass_]
    i = int(np.argmin(np.abs(np.log(batches / n))))
    return float(seconds[i]), int(batches[i]), upper_bound
