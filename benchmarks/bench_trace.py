"""What a trace costs (issue 15): the default scenario simulated without a
timeline, with one, and the trace built and written.

    python benchmarks/bench_trace.py [--max-events 200000]

Prints CPU seconds (best of three; CPU time, not wall time, so that other
work on the machine counts less), the trace's events and its size. A run
without --trace records nothing more than before: compare the first line
with the same script on an older checkout.
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

import asgdsim
from asgdsim.timeline import Timeline
from asgdsim.trace import DEFAULT_MAX_EVENTS, trace_events, write_trace

#: the simulator measured alone: without the run's size estimate and its limits
UNLIMITED = {"max_events": math.inf, "max_memory": math.inf}

ROOT = Path(__file__).resolve().parents[1]


def best(f, times: int = 3) -> tuple[float, object]:
    out, fastest = None, math.inf
    for _ in range(times):
        started = time.process_time()
        out = f()
        fastest = min(fastest, time.process_time() - started)
    return fastest, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-events", type=int, default=DEFAULT_MAX_EVENTS)
    args = parser.parse_args()
    sc = asgdsim.load_scenario(ROOT / "scenarios" / "tsubame-kfc-dl-vgg16.yaml")
    plain_s, plain = best(lambda: asgdsim.simulate(sc, **UNLIMITED))
    traced_s, res = best(lambda: asgdsim.simulate(sc, timeline=Timeline(limit=args.max_events), **UNLIMITED))
    build_s, trace = best(lambda: trace_events(res, (0.0, math.inf), args.max_events))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.json"
        write_s, _ = best(lambda: write_trace(trace, res, path))
        size = path.stat().st_size
    print(f"{sc.name}: {plain.summary['gradients']:,} gradients")
    print(f"  simulate, no trace     {plain_s:6.2f} s CPU")
    print(f"  simulate, timeline     {traced_s:6.2f} s CPU")
    print(f"  build the trace        {build_s:6.2f} s CPU")
    print(f"  write trace.json       {write_s:6.2f} s CPU: {size / 1e6:.1f} MB")
    print(f"  {trace.describe()}")


if __name__ == "__main__":
    main()
