"""What a run will cost, estimated before it starts, and refused if too much.

A scenario can be valid and still absurd for the machine it runs on: a
million epochs, a stop time of years, an update cycle of a nanosecond. The
simulator's cost is close to proportional to the events it handles: the
gradients (one learner step each) and the update cycles (an update, or an
empty cycle of a node's update thread). The closed form, which costs
milliseconds, says how fast both come; the stop condition says how long the
run lasts. From these :func:`estimate` gives events, memory and wall time
at a rate measured on a small machine, and :func:`check` refuses a run over
the limits, naming the stop key that sets its length and the flag that
lifts the limit. The defaults suit a 2-core, 8 GB machine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .errors import ScenarioError

if TYPE_CHECKING:
    from .scenario import Scenario

__all__ = ["DEFAULT_MAX_EVENTS", "DEFAULT_MAX_MEMORY", "EVENTS_PER_S", "Estimate", "check",
           "check_learners", "estimate"]

#: gradients plus update cycles simulated per second of wall time: the
#: default scenario at 200,000 gradients ran 218,000 in 3.05 s on a 2-core
#: machine; rounded down, since other kinds do more per gradient
EVENTS_PER_S = 50_000
#: about seven minutes at that rate
DEFAULT_MAX_EVENTS = 20_000_000
#: half of an 8 GB machine
DEFAULT_MAX_MEMORY = 4e9
#: bytes held per recorded gradient (its row, and the DataFrame made of the
#: rows; measured: 104 MB more for 180,000 more gradients), per update
#: cycle, per learner (its random streams and processes), and to start
BYTES_PER_GRADIENT, BYTES_PER_CYCLE, BYTES_PER_LEARNER, BYTES_BASE = 600, 200, 20_000, 250e6
#: update cycles per learner step beyond which a fixed cycle is absurd
MAX_CYCLES_PER_STEP = 10_000
#: learner steps in one SPRINT cycle beyond which its closed form, which lays
#: out every step of a cycle, takes seconds (512: about 5 s here; 2,280: 39 s)
MAX_STEPS_PER_CYCLE = 512


@dataclass(frozen=True)
class Estimate:
    """A run's expected size: ``key`` is the stop condition that ends it."""

    gradients: float
    cycles: float
    simulated_s: float
    learners: int
    key: str

    @property
    def events(self) -> float:
        return self.gradients + self.cycles

    @property
    def memory_bytes(self) -> float:
        return (BYTES_BASE + BYTES_PER_GRADIENT * self.gradients + BYTES_PER_CYCLE * self.cycles
                + BYTES_PER_LEARNER * self.learners)

    @property
    def wall_s(self) -> float:
        return self.events / EVENTS_PER_S

    def describe(self) -> str:
        return (f"about {_count(self.gradients)} gradients and {_count(self.cycles)} update cycles "
                f"({self.events:.3g} events, {self.simulated_s:.3g} s simulated), "
                f"{self.memory_bytes / 1e9:.3g} GB of memory and {_duration(self.wall_s)} at "
                f"{EVENTS_PER_S:,} events/s")


def _count(n: float) -> str:
    return f"{n:,.0f}" if n < 1e12 else f"{n:.3g}"


def _duration(seconds: float) -> str:
    for unit, size in (("days", 86400), ("hours", 3600), ("minutes", 60)):
        if seconds >= 2 * size:
            return f"{seconds / size:.3g} {unit}"
    return f"{seconds:.3g} s"


def refuse_odd_cycles(scenario: Scenario, costs=None) -> None:
    """Refuse an update cycle the closed form cannot lay out, before it
    tries (``costs``: the scenario's, where the caller has them)."""
    interval = scenario.timing.update_interval
    if interval is not None or scenario.algorithm.kind == "sprint":
        # the closed form lays out every cycle of a step and every step of a
        # cycle: refuse first a cycle so short that a step spans millions of
        # them, or so long that it holds thousands of steps
        from .costs import costs_of
        costs = costs_of(scenario) if costs is None else costs
        step_s = costs.compute.mean
        if interval is not None and step_s / interval > MAX_CYCLES_PER_STEP:
            raise ScenarioError("", [("timing.update_interval", (
                f"expected a cycle no shorter than a {MAX_CYCLES_PER_STEP:,}th of a learner step "
                f"({step_s:.3g} s), got {interval:.3g} s: nearly every cycle would be empty"))])
        if step_s > 0 and costs.cycle_s / step_s > MAX_STEPS_PER_CYCLE:
            # the cycle, or the step, is the odd one: whichever the user set
            key = ("timing.update_interval" if interval is not None else "timing.compute"
                   if not isinstance(scenario.timing.compute, str) else "cluster")
            made_of = "" if interval is not None else \
                " (the Allreduce of the weights over the network, and the nodes' update)"
            raise ScenarioError("", [(key, (
                f"expected a SPRINT cycle of at most {MAX_STEPS_PER_CYCLE:,} learner steps, got "
                f"{costs.cycle_s:.3g} s{made_of} against steps of {step_s:.3g} s, "
                f"{costs.cycle_s / step_s:,.0f} steps: the closed form lays out every step of a "
                "cycle (seconds at 512, minutes beyond); a faster network or longer steps"))])


def refuse_short_time(scenario: Scenario, step_s: float, cycle_s: float) -> None:
    """Refuse a stop in seconds that ends the run before its first gradient
    (or SPRINT's first update), from the steady step and cycle."""
    time = scenario.stop.time
    if time is None:
        return
    if step_s > 0 and time < step_s:
        raise ScenarioError("", [("stop.time", f"expected at least one learner step "
                                               f"({step_s:.3g} s), got {time:.3g} s: "
                                               "the run would end before any gradient")])
    first = (math.floor(step_s / cycle_s) + 2) * cycle_s if cycle_s > 0 else 0.0
    if scenario.algorithm.kind == "sprint" and time < first:
        # SPRINT applies a cycle's gradients at the end of the next one: the
        # first gradient's window, two cycles on (a stop between a step and
        # that crashed the closed form on an empty window law; a review)
        raise ScenarioError("", [("stop.time", f"expected at least SPRINT's first update, "
                                               f"the end of the cycle after the first "
                                               f"gradient's ({first:.3g} s), got "
                                               f"{time:.3g} s: the run would end "
                                               "before any update")])


def estimate(scenario: Scenario, prediction=None, costs=None) -> Estimate:
    """The run's size from the closed form's rates and the stop condition
    (the rates of ``prediction``, the run's own closed form, where given)."""
    from .analytic import predict
    from .scenario import Stop

    refuse_odd_cycles(scenario, costs)
    # the rates do not depend on the stop condition; one epoch keeps the
    # closed form in its usual regime whatever the user's stop is
    if prediction is None:
        prediction = predict(scenario.model_copy(update={"stop": Stop(epochs=1)}))
    summary = prediction.summary
    sub_batch = scenario.workload.sub_batch
    per_s = summary["steady_throughput_samples_per_s"] / sub_batch     # gradients per second
    step_s = summary["step_s"]             # a step waits for nothing: the earliest gradient
    cycle_s = summary["t_update_s"]
    failures = scenario.faults.failures
    if failures is not None and step_s > 0:
        # (the closed form counts the time down) and a step finishes only if
        # its learner does not fail first: with failures as often as steps
        # the run crawls, and the failures are events too
        per_s *= math.exp(-min(step_s / failures.mtbf, 700.0))
    stop = scenario.stop
    lengths = {}        # stop key -> gradients until it is reached
    if stop.epochs is not None:
        lengths["stop.epochs"] = stop.epochs * scenario.workload.dataset_samples / sub_batch
    if stop.gradients is not None:
        lengths["stop.gradients"] = float(stop.gradients)
    if stop.updates is not None:
        per_update = max(1.0, summary["minibatch"]["mean"] / sub_batch)
        lengths["stop.updates"] = stop.updates * per_update
    if stop.time is not None:
        refuse_short_time(scenario, step_s, cycle_s)
        lengths["stop.time"] = stop.time * per_s
    key = min(lengths, key=lengths.get)
    gradients = lengths[key]
    simulated = gradients / per_s if per_s > 0 else math.inf
    if key == "stop.time":
        simulated = stop.time
    cycles = simulated / cycle_s if cycle_s > 0 else 0.0
    if scenario.timing.update_interval is not None and cycles > 10 * gradients:
        key = "timing.update_interval"      # the cycles, not the stop, make it long
    if failures is not None:
        # each failure and rejoin stops and restarts its learners
        outages = scenario.cluster.learners * simulated / (failures.mtbf + failures.repair)
        cycles += 2 * outages
        if outages > gradients:
            key = "faults.failures.mtbf"
    return Estimate(gradients, cycles, simulated, scenario.cluster.learners, key)


def check_warmup(scenario: Scenario, source: str, whole=None) -> None:
    """Refuse a warm-up that would leave nothing of the run to measure, as
    the closed form sees the run (analytic._after_warmup; ``whole``, the
    run's closed form, where the caller has it)."""
    from .analytic import WARMUP_COVERS_RUN, predict

    warmup = scenario.stop.warmup
    if warmup is None:
        return
    # its figures are the whole run's where this is so
    whole = predict(scenario) if whole is None else whole
    if WARMUP_COVERS_RUN not in (whole.laws.get("assumptions") or ""):
        return
    asked = (f"{warmup.time:.4g} s" if warmup.time is not None else
             f"{warmup.updates:,} updates" if warmup.updates is not None else
             f"{warmup.epochs:g} epochs")
    epochs = whole.gradients * scenario.workload.sub_batch / scenario.workload.dataset_samples
    raise ScenarioError(source, [("stop.warmup", (
        f"expected a warm-up shorter than the run, which ends after about "
        f"{_duration(whole.epoch_time_s * epochs)}, {_count(whole.updates)} updates or "
        f"{epochs:.3g} epochs; got {asked}: no gradient would be left to measure"))])


def check_learners(scenario: Scenario, source: str) -> None:
    """Refuse a simulation of more learners than the simulator can hold
    (the closed form takes any number: ``predict`` is not refused here)."""
    from .scenario import MAX_LEARNERS

    learners = scenario.cluster.learners
    if learners > MAX_LEARNERS:
        raise ScenarioError(source, [("cluster.nodes", (
            f"expected at most {MAX_LEARNERS:,} learners to simulate, got {learners:,} "
            f"({scenario.cluster.nodes:,} nodes of {scenario.cluster.learners_per_node:,}): the "
            "simulator holds a process and random streams per learner; asgdsim predict gives "
            "the closed form at any size"))])


#: the limits' names as the commands' flags, and as simulate's arguments
FLAGS = ("--max-events", "--max-memory", "raise the limit with the flag")
ARGUMENTS = ("max_events", "max_memory", "pass simulate a higher max_events or max_memory "
             "(math.inf for none)")


def check(scenario: Scenario, source: str, max_events: float = DEFAULT_MAX_EVENTS,
          max_memory: float = DEFAULT_MAX_MEMORY, simulated: bool = True,
          names: tuple[str, str, str] = FLAGS, prediction=None, costs=None) -> Estimate:
    """Refuse, with the estimate, a run beyond the limits; else return its
    estimate. ``simulated`` False (``predict``) skips the simulator's own
    bound on the learners and keeps the checks of the stop and the cycle.
    ``names``: the limits' names and how to raise them, as the caller's
    user sets them (FLAGS, or simulate's ARGUMENTS). ``prediction``: the
    run's closed form and ``costs``, where the caller has them (simulate),
    not made again."""
    if simulated:
        check_learners(scenario, source)     # first: the estimate itself predicts
    try:
        size = estimate(scenario, prediction, costs)
    except ScenarioError as exc:
        raise ScenarioError(source, exc.problems) from None
    check_warmup(scenario, source, prediction)
    over = []
    if not size.events <= max_events:
        over.append(f"more than {names[0]} {max_events:.3g}")
    if not size.memory_bytes <= max_memory:
        # simulate's argument is in bytes; the flag takes a quantity, said in GB
        limit = f"{max_memory:.3g} bytes" if names is ARGUMENTS else f"{max_memory / 1e9:.3g} GB"
        over.append(f"more than {names[1]} {limit}")
    if over:
        raise ScenarioError(source, [(size.key, f"this run would take {size.describe()}: "
                                                f"{' and '.join(over)}; shorten the run, or "
                                                f"{names[2]} if you mean it")])
    return size
