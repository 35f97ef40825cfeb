"""Wall time of the commands a user types first, each in a fresh process
(imports included), median of five:

    python benchmarks/bench_startup.py

The bar (issue 9): ``asgdsim --help`` and ``asgdsim predict`` on the default
scenario answer in well under a second. Each command imports what it needs
when it runs, and the kernel fits are stored (catalog/fitted.json), so
neither pays for pandas, scipy.stats, SimPy, matplotlib or Dask.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = {
    "asgdsim --help": ["--help"],
    "asgdsim predict (default scenario)": ["predict", "scenarios/tsubame-kfc-dl-vgg16.yaml"],
    "asgdsim predict --json (64 nodes)": ["predict", "--json",
                                          "scenarios/tsubame-kfc-dl-vgg16-64nodes.yaml"],
    "asgdsim catalog": ["catalog"],
}


def wall_time(args: list[str], repeats: int = 5) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "asgdsim.cli", *args], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    for label, args in COMMANDS.items():
        print(f"{label:<40}{wall_time(args):6.2f} s")


if __name__ == "__main__":
    main()
