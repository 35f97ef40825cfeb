"""Cost of the closed form against the number of learners (issue 14):

    python benchmarks/bench_predict_scale.py [--learners 64,4096,1000000]
                                             [--timing jitter,exponential,fixed]
                                             [--limit 30] [--kinds sync,async]

For every algorithm kind and three compute laws, a TSUBAME-KFC/DL cluster
(8 K80 dies a node, FDR InfiniBand, VGG-16 at sub-batch 32, one epoch)
with as many nodes as the learner count needs, running at least one epoch
and ten steps a learner (a shorter run of a million learners would end
before any learner saw another's update), timed through
``asgdsim.predict`` (best of three where a prediction takes under a
second). The laws take the closed form's different paths: ``jitter`` the
catalog's step times with 5 % lognormal noise and modelled communication
(mean-value analysis, the learners drifting apart), ``exponential`` the
exact laws of ideal communication, ``fixed`` identical fixed-time steps
with modelled communication (the periodic schedules).

A prediction that takes longer than ``--limit`` seconds is stopped and
shown as ``>LIMIT``. The learner cap of the simulator (16,384) is not the
closed form's: a million learners are predicted, not simulated.
"""

from __future__ import annotations

import argparse
import math
import signal
import time

from asgdsim.algorithms import KINDS
from asgdsim.analytic import predict
from asgdsim.scenario import scenario_from_dict

#: each kind's keys at a learner count (the knobs a share of the learners)
KNOBS = {
    "sprint": lambda n: {}, "async": lambda n: {}, "sync": lambda n: {},
    "allreduce": lambda n: {}, "local-sgd": lambda n: {"period": 4},
    "downpour": lambda n: {"n_fetch": 2, "n_push": 4, "servers": 4},
    "softsync": lambda n: {"n": 4}, "k-sync": lambda n: {"k": max(1, n // 2)},
    "k-batch-sync": lambda n: {"k": max(1, n // 2)}, "k-async": lambda n: {"k": max(1, n // 2)},
    "k-batch-async": lambda n: {"k": max(1, n // 2)}, "ssp": lambda n: {"staleness_bound": 2},
}
TIMINGS = {
    "jitter": {"compute": "table", "jitter": {"distribution": "lognormal", "cv": 0.05}},
    "exponential": {"compute": {"distribution": "exponential", "mean": "1.2 s"},
                    "communication": "ideal"},
    "fixed": {"compute": "table"},
}
PER_NODE = 8
DATASET, SUB_BATCH = 1281167, 32


def scenario(kind: str, learners: int, timing: str):
    timing_keys = dict(TIMINGS[timing])
    if kind == "sprint" and timing_keys.get("communication") == "ideal":
        timing_keys["update_interval"] = "370 ms"
    return scenario_from_dict({
        "name": f"bench-{kind}-{learners}",
        "workload": {"model": "vgg16", "dataset_samples": DATASET, "sub_batch": SUB_BATCH},
        "cluster": {"machine": "tsubame-kfc-dl", "nodes": math.ceil(learners / PER_NODE)},
        "algorithm": {"kind": kind, **KNOBS[kind](learners)},
        "timing": timing_keys,
        "stop": {"epochs": max(1.0, 10 * learners * SUB_BATCH / DATASET)}})


class _TooLong(Exception):
    pass


def _alarm(signum, frame):
    raise _TooLong


def timed(kind: str, learners: int, timing: str, limit: float) -> float | str:
    """Seconds of one prediction (best of three if quick); inf past
    ``limit``; the name of the error where it failed."""
    sc = scenario(kind, learners, timing)
    best = math.inf
    signal.signal(signal.SIGALRM, _alarm)
    for _ in range(3):
        signal.setitimer(signal.ITIMER_REAL, limit)
        try:
            start = time.perf_counter()
            predict(sc)
            best = min(best, time.perf_counter() - start)
        except _TooLong:
            return math.inf
        except (MemoryError, ValueError, ZeroDivisionError, OverflowError) as exc:
            # the closed form could not do it at all: say what stopped it
            return type(exc).__name__
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        if best > 1.0:
            break
    return best


def _fmt(seconds: float | str, limit: float) -> str:
    if isinstance(seconds, str):
        return seconds
    if seconds == math.inf:
        return f">{limit:g} s"
    return f"{1e3 * seconds:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--learners", default="64,4096,1000000")
    parser.add_argument("--timing", default=",".join(TIMINGS))
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--limit", type=float, default=30.0,
                        help="seconds after which a prediction is stopped")
    args = parser.parse_args()
    counts = [int(float(x)) for x in args.learners.split(",")]
    # the scenario validator caps the learners of a simulation; not here
    from asgdsim import scenario as scenario_module
    scenario_module.MAX_LEARNERS = max(scenario_module.MAX_LEARNERS, *counts)
    print(f"{'kind':<14}{'compute':<13}" + "".join(f" {f'L={n:,}':>14}" for n in counts))
    predict(scenario("async", 64, "jitter"))         # imports and catalog caches warm
    for kind in args.kinds.split(","):
        for timing in args.timing.split(","):
            cells = [_fmt(timed(kind, n, timing, args.limit), args.limit) for n in counts]
            print(f"{kind:<14}{timing:<13}" + "".join(f" {c:>14}" for c in cells), flush=True)


if __name__ == "__main__":
    main()
