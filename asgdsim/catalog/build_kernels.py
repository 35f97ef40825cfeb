"""Rebuild ``kernels.csv`` from the public measurements it was built from.

    python -m asgdsim.catalog.build_kernels DATA_DIR

DATA_DIR holds ``deepbench_conv.csv``, ``deepbench_gemm.csv`` and
``layer_times.csv``: DeepBench's training results
(baidu-research/DeepBench@da81ba7, results/train/*.xlsx) and the layer
tables of soumith/convnet-benchmarks (@b458aab and @6468ba7), flattened to
CSV with a source per row. They are not shipped with the package; the
kernels.csv they make is, with the same sources in its ``source`` column.
Then ``python -m asgdsim.catalog.refit`` stores the new fits.

One row per measured kernel, in the package's long format: the GPU (catalog
name), the operation (conv or gemm), the pass (fwd, bwd_data, bwd_filter),
the geometry, the time in milliseconds, the library and the source. Only
FP32 rows are kept; GPUs the catalog does not name are dropped.
"""

from __future__ import annotations

import csv
import re
import sys
from pathlib import Path

OUT = Path(__file__).with_name("kernels.csv")
COLUMNS = ["gpu", "op", "pass", "n", "c", "h", "w", "k", "r", "s", "pad_h", "pad_w",
           "stride_h", "stride_w", "gemm_m", "gemm_n", "gemm_k", "ms", "algo", "library", "source"]

GPU_NAMES = {"Tesla M40": "M40", "GTX Titan X (Maxwell)": "TitanX-Maxwell",
             "Titan X (Pascal)": "TitanX-Pascal", "GTX 1080 Ti": "GTX1080Ti",
             "Tesla P100": "P100", "Tesla V100 (DGX-1)": "V100", "GTX Titan Black": "TitanBlack"}

# soumith layer-wise set: "128x3x128x128 k3->96 11x11 s1" (batch x C x H x W, C->K, RxS, stride)
SOUMITH = re.compile(r"(\d+)x(\d+)x(\d+)x(\d+) k(\d+)->(\d+) (\d+)x(\d+) s(\d+)")


def deepbench_conv(data: Path) -> list[dict]:
    rows = []
    for r in csv.DictReader(open(data / "deepbench_conv.csv")):
        if r["precision"] != "fp32" or r["gpu"] not in GPU_NAMES:
            continue
        for pass_, column in (("fwd", "fwd_ms"), ("bwd_data", "bwd_data_ms"),
                              ("bwd_filter", "bwd_filter_ms")):
            if r[column] in ("", "NA"):
                continue
            rows.append({"gpu": GPU_NAMES[r["gpu"]], "op": "conv", "pass": pass_, "n": r["N"],
                         "c": r["C"], "h": r["H"], "w": r["W"], "k": r["K"], "r": r["filter_h"],
                         "s": r["filter_w"], "pad_h": r["pad_h"], "pad_w": r["pad_w"],
                         "stride_h": r["stride_h"], "stride_w": r["stride_w"], "ms": r[column],
                         "algo": _algo(r["fwd_algo"]) if pass_ == "fwd" else "",
                         "library": r["software"], "source": r["source"]})
    return rows


def _algo(cudnn_name: str) -> str:
    name = cudnn_name.upper()
    return "fft" if "FFT" in name else "winograd" if "WINOGRAD" in name else "gemm" if name else ""


def deepbench_gemm(data: Path) -> list[dict]:
    return [{"gpu": GPU_NAMES[r["gpu"]], "op": "gemm", "pass": "fwd", "gemm_m": r["M"],
             "gemm_n": r["N"], "gemm_k": r["K"], "ms": r["time_ms"], "library": r["software"],
             "source": r["source"]}
            for r in csv.DictReader(open(data / "deepbench_gemm.csv"))
            if r["precision"] == "fp32" and r["gpu"] in GPU_NAMES]


#: convnet-benchmarks layer sets used: (gpu in the file, library, catalog gpu, algorithm)
SOUMITH_SETS = [("GTX Titan Black", "CuDNN R2", "TitanBlack", "gemm"),   # the Kepler calibration
                ("GTX Titan X (Maxwell)", "fbfft", "TitanX-Maxwell", "fft"),  # FFT convolution
                ('GTX Titan X (Maxwell) [logged as "Graphics Device"]',
                 "nn.SpatialConvolutionCuFFT (fbfft/cuFFT)", "TitanX-Maxwell", "fft")]


def soumith_layers(data: Path) -> list[dict]:
    """Layers L1-L5 of convnet-benchmarks (batch 128, stride 1, no padding)."""
    rows = []
    for r in csv.DictReader(open(data / "layer_times.csv")):
        match = [s for s in SOUMITH_SETS if (r["gpu"], r["library"]) == s[:2]]
        if not match:
            continue
        _, library, gpu, algo = match[0]
        m = SOUMITH.search(r["input_shape"])
        if not m:
            continue
        n, c, h, w, _, k, kh, kw, stride = m.groups()
        for pass_, column in (("fwd", "forward_ms"), ("bwd_data", "bwd_data_ms"),
                              ("bwd_filter", "bwd_weight_ms")):
            if r[column]:
                rows.append({"gpu": gpu, "op": "conv", "pass": pass_, "n": n, "c": c,
                             "h": h, "w": w, "k": k, "r": kh, "s": kw, "pad_h": 0, "pad_w": 0,
                             "stride_h": stride, "stride_w": stride, "ms": r[column],
                             "algo": algo, "library": f"{library} (Torch)", "source": r["source"]})
    return rows


def same_library_pairs(data: Path) -> list[dict]:
    """Titan Black (Kepler) and Titan X (Maxwell) under one library, cuDNN R2,
    on layers L1-L5: how far Kepler's efficiency falls short of Maxwell's."""
    rows = []
    for r in csv.DictReader(open(data / "layer_times.csv")):
        gpu = {"GTX Titan Black": "TitanBlack", "GTX Titan X (Maxwell)": "TitanX-Maxwell"}.get(r["gpu"])
        m = SOUMITH.search(r["input_shape"])
        if gpu is None or r["library"] != "CuDNN R2" or not m:
            continue
        for pass_, column in (("fwd", "forward_ms"), ("bwd", "backward_ms")):
            if r[column]:
                rows.append({"gpu": gpu, "layer": r["layer"], "pass": pass_, "ms": r[column],
                             "library": "cuDNN R2", "source": r["source"]})
    return rows


def main(data: str) -> None:
    rows = deepbench_conv(Path(data)) + deepbench_gemm(Path(data)) + soumith_layers(Path(data))
    with open(OUT, "w", newline="") as f:
        writer = csv.DictWriter(f, COLUMNS, restval="")
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {len(rows)} kernels to {OUT}")
    pairs = same_library_pairs(Path(data))
    with open(OUT.with_name("same_library.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, ["gpu", "layer", "pass", "ms", "library", "source"])
        writer.writeheader()
        writer.writerows(pairs)
    print(f"wrote {len(pairs)} paired layer times to same_library.csv")
    # the GPU Allreduce measurements, for calibrating and checking collectives
    allreduce = OUT.with_name("allreduce.csv")
    with open(Path(data) / "deepbench_allreduce.csv") as src, open(allreduce, "w") as dst:
        dst.write(src.read())
    print(f"copied {allreduce}")


INPUTS = ("deepbench_conv.csv", "deepbench_gemm.csv", "layer_times.csv")

if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m asgdsim.catalog.build_kernels DATA_DIR (see the module's docstring)")
    missing = [name for name in INPUTS if not (Path(sys.argv[1]) / name).is_file()]
    if missing:
        print(f"build_kernels: {sys.argv[1]} lacks {', '.join(missing)}; see "
              "python -m pydoc asgdsim.catalog.build_kernels for what they are", file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1])
