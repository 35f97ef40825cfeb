"""Whole-network step times predicted from per-layer costs, against the
measurements in shared/data (convnet-benchmarks, forward + backward, ms).

    python benchmarks/accuracy.py

These totals are never used to fit the cost model (it is fitted on kernels
and layers only), so the table is an out-of-sample check.
"""

from __future__ import annotations

import csv
import statistics
from pathlib import Path

from asgdsim import catalog, step_time
from asgdsim.costs import ring_allreduce_time
from asgdsim.scenario import LinkSpec

DATA = Path(__file__).resolve().parents[1] / "asgdsim" / "catalog"

#: (GPU, model, batch, measured ms, what was measured)
MEASURED = [
    ("TitanX-Maxwell", "alexnet", 128, 81, "cuDNN R4 (Torch)"),
    ("TitanX-Maxwell", "overfeat", 128, 268, "cuDNN R4 (Torch)"),
    ("TitanX-Maxwell", "vgg11", 64, 529, "cuDNN R4 (Torch)"),
    ("TitanX-Maxwell", "googlenet", 128, 470, "cuDNN R4 (Torch)"),
    ("TitanBlack", "alexnet", 128, 362, "cuDNN R2 (Torch)"),
    ("TitanBlack", "overfeat", 128, 1258, "cuDNN R2 (Torch)"),
    ("TitanBlack", "vgg11", 32, 802, "cuDNN R2 (Torch)"),
]


def main() -> None:
    print(f"{'GPU':<16}{'model':<11}{'batch':>6}{'measured':>10}{'table':>9}{'err':>8}"
          f"{'roofline':>10}{'err':>8}  measurement")
    errors = {"table": [], "roofline": []}
    for gpu, model, batch, ms, what in MEASURED:
        row = f"{gpu:<16}{model:<11}{batch:>6}{ms:>10.0f}"
        for mode in ("table", "roofline"):
            predicted = 1e3 * step_time(gpu, model, batch, compute=mode)
            errors[mode].append(abs(predicted / ms - 1))
            row += f"{predicted:>9.0f}{100 * (predicted / ms - 1):>+7.0f}%"
        print(row + f"  {what}")
    for mode, errs in errors.items():
        print(f"median absolute error, {mode}: {100 * statistics.median(errs):.0f} %")
    allreduce()


def allreduce() -> None:
    """DeepBench GPU Allreduce (flat rings) against the alpha-beta ring over the
    slowest link, with the achieved link rates fitted in the catalog."""
    p2p = LinkSpec.model_validate(catalog.lookup("networks", "pcie3-p2p-plx"))
    staged = LinkSpec.model_validate(catalog.lookup("networks", "ib-fdr-gpu-staged"))
    print("\nAllreduce: ring over the slowest link (pcie3-p2p-plx in a node, "
          "ib-fdr-gpu-staged between nodes) against DeepBench, M40 and Titan X (Maxwell)")
    print(f"{'floats':>10}{'GPUs':>6}{'nodes':>6}{'measured ms':>13}{'model ms':>10}{'err':>8}")
    errs = []
    for row in csv.DictReader(open(DATA / "allreduce.csv")):
        if row["gpu"] not in ("Tesla M40", "GTX Titan X (Maxwell)"):
            continue
        n_gpus, nodes = int(row["n_gpus"]), int(row["n_nodes"])
        link = p2p if nodes == 1 else staged
        model = 1e3 * ring_allreduce_time(link, 4 * int(row["n_floats"]), n_gpus)
        measured = float(row["mean_ms"])
        errs.append(abs(model / measured - 1))
        print(f"{int(row['n_floats']):>10}{n_gpus:>6}{nodes:>6}{measured:>13.2f}{model:>10.2f}"
              f"{100 * (model / measured - 1):>+7.0f}%")
    print(f"median absolute error: {100 * statistics.median(errs):.0f} %")


if __name__ == "__main__":
    main()
