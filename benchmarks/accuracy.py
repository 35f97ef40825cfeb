"""The cost model against public measurements.

    python benchmarks/accuracy.py

1. Whole-network training steps (catalog/whole_network.csv, a source per
   row), by GPU, with the framework's overheads fitted on every other GPU's
   rows: no GPU's measurements price its own predictions. The kernel
   efficiencies are fitted on kernel tables only, never on these totals.
   ``--rows`` prints every row.
2. DeepBench's Allreduce rings against the alpha-beta ring.
"""

from __future__ import annotations

import csv
import statistics
import sys
from pathlib import Path

from asgdsim import catalog, compute, overheads
from asgdsim.costs import ring_allreduce_time
from asgdsim.scenario import LinkSpec

DATA = Path(__file__).resolve().parents[1] / "asgdsim" / "catalog"

def leave_one_gpu_out(show_rows: bool = False) -> None:
    rows = compute.whole_networks()
    predicted = overheads.leave_one_out(rows, compute.raw_kernel_times, key=lambda r: r.gpu)
    fitted = compute.framework_overheads()
    print(f"Whole networks ({len(rows)} published steps, {len({r.source for r in rows})} sources), "
          "each GPU priced with overheads fitted on the others")
    print(f"(fitted on all: {1e6 * fitted.kernel_floor_s:.0f} us per kernel at least, "
          f"{1e3 * fitted.step_s:.1f} ms per step)")
    print(f"{'GPU':<16}{'rows':>5}{'median err':>12}{'median |err|':>14}")
    for gpu, errors in by_gpu(predicted).items():
        print(f"{gpu:<16}{len(errors):>5}{100 * statistics.median(errors):>+11.1f}%"
              f"{100 * statistics.median(map(abs, errors)):>13.1f}%")
    pooled = [abs(p / r.step_s - 1) for r, p in predicted]
    print(f"all rows: median |err| {100 * statistics.median(pooled):.1f} %")
    if show_rows:
        for r, p in predicted:
            print(f"  {r.gpu:<15}{r.model:<10}{r.batch:>5}{1e3 * r.step_s:>10.1f}{1e3 * p:>10.1f}"
                  f"{100 * (p / r.step_s - 1):>+8.1f}%  {r.framework}")
    print()


def by_gpu(predicted: list) -> dict[str, list[float]]:
    """Relative errors of the leave-one-GPU-out predictions, by GPU."""
    errors: dict[str, list[float]] = {}
    for row, seconds in predicted:
        errors.setdefault(row.gpu, []).append(seconds / row.step_s - 1)
    return dict(sorted(errors.items()))


def main() -> None:
    leave_one_gpu_out(show_rows="--rows" in sys.argv)
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
