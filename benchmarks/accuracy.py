"""Whole-network step times predicted from per-layer costs, against the
measurements in shared/data (convnet-benchmarks, forward + backward, ms).

    python benchmarks/accuracy.py

These totals are never used to fit the cost model (it is fitted on kernels
and layers only), so the table is an out-of-sample check.
"""

from __future__ import annotations

import statistics

from asgdsim import step_time

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


if __name__ == "__main__":
    main()
