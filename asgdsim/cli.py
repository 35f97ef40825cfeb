"""The ``asgdsim`` command line.

Exit status: 0 on success, 2 on a bad scenario or arguments (one message per
problem, naming the file and key, never a traceback), 1 on an internal
error. argparse already answers bad arguments with status 2.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import budget, catalog
from .errors import OutputExists, ScenarioError, UsageError
from .names import component_name
from .precision import LAYOUTS, PRECISIONS

if TYPE_CHECKING:
    from .analytic import Prediction
    from .plan import Plan
    from .simulation import Result

# Each command imports what it needs when it runs: pandas, SciPy, SimPy,
# matplotlib and Dask together take seconds to import, which `--help` and
# `predict` (milliseconds of work) should not pay.

__all__ = ["main"]

USAGE_ERROR = 2


def _bounded(kind: type, low: float, high: float = math.inf, *, low_open: bool = False):
    """An argparse type: a finite ``kind`` in [low, high] (or (low, high])."""
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {'an integer' if kind is int else 'a number'}"
                                             f", got {text!r}") from None
        if not math.isfinite(value) or value < low or (low_open and value == low) or value > high:
            bound = f"{'above' if low_open else 'at least'} {low:,}" + \
                (f" and at most {high:,}" if high < math.inf else "")
            what = "an integer" if kind is int else "a finite number"
            raise argparse.ArgumentTypeError(f"expected {what} {bound}, got {text!r}")
        return value
    parse.__name__ = kind.__name__      # argparse names the type in its messages
    return parse


POSITIVE_INT = _bounded(int, 1)
#: the runs a sweep may hold (grid points times replications)
MAX_SWEEP_POINTS = 100_000
#: the planner ranks every (nodes, GPUs per node, sub-batch) up to this many
#: GPUs with the closed form; beyond it the candidates alone take minutes
MAX_PLAN_GPUS = 65_536


def _device(text: str) -> str:
    """A PyTorch device asgdsim can time kernels on."""
    if not re.fullmatch(r"cpu|mps|cuda(:\d+)?", text):
        raise argparse.ArgumentTypeError(f"expected cpu, mps, cuda or cuda:N, got {text!r}")
    return text


def _value(text: str) -> Any:
    """A command-line value read as YAML would read it (64 an integer, "1 s"
    text), by the same strict loader as files; what is not YAML stays text."""
    from .safeyaml import YamlProblem, load

    try:
        return load(text)
    except YamlProblem:
        return text


def _overrides(pairs: list[str]) -> dict[str, Any]:
    out = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--set {pair!r}: expected KEY=VALUE, e.g. workload.sub_batch=64")
        if key.strip() in out:
            # the last would win silently: the run would not be the one on the command line
            raise UsageError(f"--set {key.strip()}: given twice; give each key once")
        out[key.strip()] = _value(text)
    return out


def _load(args: argparse.Namespace):
    from .scenario import load_scenario

    overrides = _overrides(args.set)
    if getattr(args, "seed", None) is not None:
        overrides["seed"] = args.seed
    with _blaming_set(args):
        return load_scenario(args.scenario, overrides)


@contextlib.contextmanager
def _blaming_set(args: argparse.Namespace):
    """A problem at a key the command line set is said to come from there,
    not from the file, which may hold a good value."""
    try:
        yield
    except ScenarioError as exc:
        given = {key.strip(): f"--set {key.strip()}={text}"
                 for key, _, text in (pair.partition("=") for pair in args.set or ())}
        if getattr(args, "seed", None) is not None:
            given["seed"] = f"--seed {args.seed}"
        if not given:
            raise

        def blamed(key: str, what: str) -> str:
            for setting, flag in given.items():
                if key == setting or key.startswith(setting + "."):
                    return f"{what} (from {flag})"
            return what
        raise ScenarioError(exc.source, [(key, blamed(key, what) if key else what)
                                         for key, what in exc.problems]) from None


def _cell(value: float, fmt: str, width: int) -> str:
    """``value`` right-aligned in ``width`` with a space before it at least:
    in ``fmt``, or in as many significant digits as fit where it would not."""
    for spec in (fmt, ".6g", ".4g", ".3g", ".2g"):
        text = f"{value:{spec}}"
        if len(text) < width:
            break
    return f"{text:>{width}}"


def _row(label: str, simulated: float, analytic: float, fmt: str, err: float | None = None) -> str:
    err_text = "" if err is None else f"{_cell(100 * err, '.2f', 9)} %"
    return f"  {label:<24}{_cell(simulated, fmt, 14)}{_cell(analytic, fmt, 14)}{err_text}"


def _caveat(pred: Prediction) -> list[str]:
    """The line that warns the closed form does not describe this scenario."""
    return [] if pred.outside_assumptions is None else [f"  {pred.outside_assumptions}"]


def headline(result: Result) -> str:
    """The short table ``run`` prints: simulated against closed form."""
    return summary_headline(result.summary)


def summary_headline(s: dict) -> str:
    """:func:`headline` from a run's summary.json alone (what ``report`` reads)."""
    a, g = s["analytic"], s["agreement"]
    assumptions = a.get("laws", {}).get("assumptions")
    lines = [
        f"{s['scenario']}: {s['algorithm']}, {s['learners']} learners, seed {s['seed']}: "
        f"{s['gradients']} gradients, {s['updates']} updates, "
        f"{s['simulated_time_s']:.1f} s simulated in {s['wall_time_s']:.2f} s",
        *([] if assumptions is None else [f"  {assumptions}"]),
        f"  {'':<24}{'simulated':>14}{'closed form':>14}{'rel. err':>11}",
        _row("epoch time (s)", s["epoch_time_s"], a["epoch_time_s"], ".2f", g["epoch_time_rel_err"]),
        _row("throughput (samples/s)", s["throughput_samples_per_s"],
             a["throughput_samples_per_s"], ".1f"),
        _row("staleness mean", s["staleness"]["mean"], a["staleness"]["mean"], ".3f",
             g["staleness_mean_rel_err"]),
        _row("staleness p95", s["staleness"]["p95"], a["staleness"]["p95"], ".0f"),
        _row("mini-batch mean", s["minibatch"]["mean"], a["minibatch"]["mean"], ".1f",
             g["minibatch_mean_rel_err"]),
        _row("mini-batch p95", s["minibatch"]["p95"], a["minibatch"]["p95"], ".0f"),
        f"  total variation: staleness {g['staleness_tv']:.3f}, mini-batch {g['minibatch_tv']:.3f};"
        f" throughput bound: {component_name(a['bound'])}",
    ]
    if not s["epoch_time_basis"].startswith("measured"):
        lines.append(f"  epoch time {s['epoch_time_basis']}")
    return "\n".join(lines)


def _prediction_text(pred: Prediction) -> str:
    s, fastest = pred.summary, _fastest(pred)
    return "\n".join([
        f"{pred.scenario.name}: {pred.scenario.algorithm.kind}, "
        f"{pred.scenario.cluster.learners} learners (closed form)",
        *_caveat(pred),
        f"  epoch time           {_cell(s['epoch_time_s'], '.2f', 14).strip()} s   "
        f"({s['laws']['epoch_time']})",
        f"  throughput           {s['throughput_samples_per_s']:.1f} samples/s over the run "
        f"({s['steady_throughput_samples_per_s']:.1f} once started), bound by "
        f"{component_name(s['bound'])}",
        f"  learner step         {s['step_s']:.4f} s with its data and copies, waiting for "
        f"nothing{fastest}",
        f"  applied              {_per_learner(pred)} gradients a second a learner"
        f"{' on average over the learners' if fastest else ''}, its waits included; "
        f"an update every {s['t_update_s']:.4f} s",
        f"  staleness            mean {s['staleness']['mean']:.3f}, p50 {s['staleness']['p50']}, "
        f"p95 {s['staleness']['p95']}   ({s['laws']['staleness']})",
        f"  mini-batch           mean {s['minibatch']['mean']:.1f}, p50 {s['minibatch']['p50']}, "
        f"p95 {s['minibatch']['p95']}   ({s['laws']['minibatch']})",
        *(_group_line(i, g) for i, g in enumerate(s.get("groups", []))),
        *_symbols(s["laws"]),
        *_spans_epochs(s["minibatch"]["mean"], pred.scenario.workload.dataset_samples),
    ])


def _fastest(pred: Prediction) -> str:
    """Whose step the line gives, where the learners' steps differ."""
    sc = pred.scenario
    return " (the fastest learners')" if sc.cluster.groups or sc.faults.slow_learners else ""


def _per_learner(pred: Prediction) -> str:
    """Gradients applied a second per learner, waits and all: a rate, so
    that learners of different speeds average as they add."""
    rate = pred.summary["steady_throughput_samples_per_s"] / pred.scenario.workload.sub_batch
    return f"{rate / pred.scenario.cluster.learners:.4g}"


def _spans_epochs(minibatch: float, dataset: int) -> list[str]:
    """The line that says an update is longer than an epoch, where it is."""
    if minibatch <= dataset:
        return []
    return [f"  an update spans {minibatch / dataset:.3g} epochs: its mean mini-batch "
            f"({minibatch:,.0f} samples) exceeds the dataset ({dataset:,}), so an epoch takes "
            "less time than an update"]


def _group_line(index: int, group: dict) -> str:
    """A mixed cluster's group as the closed form sees it (what it has)."""
    known = [f"{label} {fmt.format(group[key])}" for key, label, fmt in (
        ("throughput_share", "share of the samples", "{:.1%}"), ("mean_step_s", "mean step", "{:.4f} s"),
        ("staleness_mean", "staleness mean", "{:.3f}")) if group.get(key) is not None]
    return (f"  group {index} ({group['learners']} x {group['gpu']}): "
            + (", ".join(known) if known else "no closed form of its own"))


#: the letters the laws are written in
SYMBOLS = {"G": "GPUs", "M": "learners", "P": "learners of a round", "m": "mean learner step",
           "T": "update cycle", "U": "uniform on [0, 1)", "X": "a learner step",
           "cv": "coefficient of variation of a step"}


def _symbols(laws: dict[str, str]) -> list[str]:
    """The key to the letters the printed laws use, if they use any."""
    words = set(re.findall(r"\b[A-Za-z]+\b", " ".join(laws.values())))
    used = [f"{k} = {v}" for k, v in SYMBOLS.items() if k in words]
    return [f"  in the laws above: {'; '.join(used)}"] if used else []


def _tracing(args: argparse.Namespace) -> bool:
    """--trace, or a trace option that implies it."""
    return bool(getattr(args, "trace", False) or getattr(args, "trace_window", None)
                or getattr(args, "trace_max_events", None))


def _simulate_into(args: argparse.Namespace, suffix: str = "",
                   events: bool = True) -> tuple[Result, Path]:
    """Simulate the command's scenario and write its files (run and compare;
    ``events`` False leaves out the per-gradient and per-update tables)."""
    scenario = _load(args)      # first: a mistake is answered before the heavy imports
    budget.check_learners(scenario, args.scenario)      # so is a cluster too big to simulate
    from .output import COMPARE_FILES, RUN_FILES, check_writable, write_run

    out = Path(args.out) if args.out else Path("runs") / f"{scenario.name}{suffix}"
    # refuse before spending the simulation
    check_writable(out, args.overwrite, files=RUN_FILES if events else COMPARE_FILES,
                   reads=(args.scenario,))
    budget.check(scenario, args.scenario, args.max_events, args.max_memory)
    timeline = None
    if _tracing(args):
        from .timeline import Timeline
        from .trace import DEFAULT_MAX_EVENTS

        args.trace_max_events = args.trace_max_events or DEFAULT_MAX_EVENTS
        # the timeline keeps no more than the trace can show
        since, until = args.trace_window or (0.0, math.inf)
        timeline = Timeline(until=until, limit=args.trace_max_events, since=since)
    from .progress import RunBar, shown
    from .simulation import simulate

    bar = RunBar(scenario.name) if shown(args.quiet) else None
    try:
        # estimated against the limits already (budget.check above)
        result = simulate(scenario, timeline=timeline, progress=bar, max_events=math.inf,
                          max_memory=math.inf)
    except ScenarioError as exc:        # said of the scenario's name: of its file here
        raise ScenarioError(args.scenario, exc.problems) from None
    finally:
        if bar is not None:
            bar.close()
    trace = None
    if timeline is not None:
        from .trace import trace_events

        trace = trace_events(result, args.trace_window or (0.0, math.inf), args.trace_max_events)
    write_run(result, out, overwrite=True, events=events, trace=trace)
    if trace is not None:
        print(f"trace.json: {trace.describe()}", file=sys.stderr)
    return result, out


def cmd_run(args: argparse.Namespace) -> int:
    result, out = _simulate_into(args)
    from .output import RUN_FILES

    print(headline(result))
    print(f"wrote {out}/: {', '.join(RUN_FILES + (('trace.json',) if _tracing(args) else ()))}")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    if args.check is not None and not (math.isfinite(args.check) and args.check >= 0):
        raise UsageError(f"--check must be a non-negative tolerance, got {args.check}")
    result, out = _simulate_into(args, "-compare", events=False)
    import pandas as pd

    from .compare import comparison
    from .output import COMPARE_FILES

    table = comparison(result)
    print(f"{result.scenario.name}: simulated against the closed form "
          f"({result.summary['gradients']} gradients, {result.summary['updates']} updates; "
          f"epoch time {result.summary['epoch_time_basis']})")
    for line in _caveat(result.prediction):
        print(line)
    width = max(26, *(len(f) + 1 for f in table["figure"]))    # a group's lines are longer
    print(f"  {'figure':<{width}}{'simulated':>14}{'closed form':>14}{'rel. err':>11}")
    for row in table.itertuples(index=False):
        err = "" if pd.isna(row.rel_err) else f"{_cell(100 * row.rel_err, '.2f', 9)} %"
        right = "" if pd.isna(row.closed_form) else _number(row.closed_form)
        left = "" if pd.isna(row.simulated) else _number(row.simulated)
        print(f"{'*' if row.checked else ' '} {row.figure:<{width}}{left:>14}{right:>14}{err}")
    print("  * the figures --check holds to its tolerance: relative errors of epoch time and "
          "the means (staleness relative to at least 1), total-variation distances; "
          "ks and wasserstein are the Kolmogorov-Smirnov and Wasserstein-1 distances")
    print(f"wrote {out}/: {', '.join(COMPARE_FILES)}")
    if args.check is not None:
        worse = {k: v for k, v in result.summary["agreement"].items() if v > args.check}
        # every reason it fails, each on its line
        reasons = ([result.prediction.outside_assumptions]
                   if result.prediction.outside_assumptions is not None else [])
        if worse:
            reasons.append(f"worse than {args.check:g}: "
                           + ", ".join(f"{k} {v:.4f}" for k, v in worse.items()))
        if reasons:
            print("\n".join(f"--check fails: {r}" for r in reasons), file=sys.stderr)
            return 1
        print(f"--check passes: the {len(result.summary['agreement'])} checked figures (*) "
              f"are within {args.check}")
    return 0


def _number(x: float) -> str:
    """A figure as people read it: integers whole, large values with one decimal."""
    if float(x).is_integer() and abs(x) < 1e15:
        text = f"{int(x):,}"
    else:
        text = f"{x:,.1f}" if abs(x) >= 100 else f"{x:.4f}"
    return text if len(text) < 14 else f"{x:.6g}"     # wider than its column: significant digits


def _top_level_split(text: str) -> list[str]:
    """``text`` cut at its commas outside brackets and braces: a value may be
    a YAML flow mapping or list, as ``--set`` takes ({kind: fat-tree, ...})."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch in "[{") - (ch in "]}")
        if ch == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    return items + [text[start:]]


def _grid(pairs: list[str]) -> dict[str, list]:
    grid = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key.strip() or not text:
            raise UsageError(f"--grid {pair!r}: expected KEY=V1,V2,..., e.g. cluster.nodes=4,8,16")
        if key.strip() in grid:
            raise UsageError(f"--grid {key.strip()}: given twice; give each key once, with "
                             "all its values (KEY=V1,V2,...)")
        items = _top_level_split(text)
        if any(not item.strip() for item in items):
            raise UsageError(f"--grid {pair!r}: an empty value; expected "
                             "KEY=V1,V2,..., e.g. cluster.nodes=4,8,16")
        values = [_value(item) for item in items]
        if len({json.dumps(v, sort_keys=True) for v in values}) < len(values):
            # the same point twice is one point run twice: --replications says that
            raise UsageError(f"--grid {pair!r}: a value given twice; give each once "
                             "(--replications runs a point several times)")
        grid[key.strip()] = values
    if math.prod(len(values) for values in grid.values()) > MAX_SWEEP_POINTS:
        raise UsageError(f"--grid: {math.prod(len(v) for v in grid.values()):,} points; "
                         f"expected at most {MAX_SWEEP_POINTS:,}")
    return grid


def _check_scheduler(address: str | None) -> None:
    """Knock on a Dask scheduler's port before any work: Dask itself waits
    30 s for a scheduler that is not there, then raises."""
    if address is None:
        return
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    try:
        host, port = parts.hostname, parts.port
    except ValueError:
        host = port = None
    if parts.scheme not in ("tcp", "tls") or not host or port is None:
        raise UsageError(f"--scheduler {address!r}: expected an address such as "
                         "tcp://127.0.0.1:8786")
    try:
        socket.create_connection((host, port), timeout=2).close()
    except OSError as exc:
        raise UsageError(f"--scheduler {address}: no scheduler answers there "
                         f"({exc.strerror or exc}); start one (dask scheduler) or leave out "
                         "--scheduler for local workers") from None


def cmd_sweep(args: argparse.Namespace) -> int:
    if args.workers is not None and args.scheduler is not None:
        raise UsageError("give --workers or --scheduler, not both")
    _check_scheduler(args.scheduler)
    from .progress import PointsBar, shown
    from .sweep import SweepError, sweep

    from .output import check_writable
    check_writable(Path(args.out), True)       # a folder it can write in (sweep keeps its own rules)
    grid = _grid(args.grid)
    if (points := math.prod(len(v) for v in grid.values()) * args.replications) > MAX_SWEEP_POINTS:
        raise UsageError(f"--grid and --replications: {points:,} runs; expected at most "
                         f"{MAX_SWEEP_POINTS:,} (each is a point to hold and a file to write)")
    bar = PointsBar("sweep") if shown(args.quiet) else None
    try:
        results = sweep(args.scenario, grid, args.replications, out=args.out,
                        workers=1 if args.workers is None else args.workers,
                        scheduler=args.scheduler, overwrite=args.overwrite,
                        progress=bar, overrides=_overrides(args.set),
                        max_events=args.max_events, max_memory=args.max_memory)
    except SweepError as exc:
        raise UsageError(str(exc)) from None
    finally:
        if bar is not None:
            bar.close()
    failed = len(list(Path(args.out, "points").glob("*.error.txt")))
    # (a row is a run: a point's replications are rows of their own)
    rows = f"{len(results)} {'runs' if args.replications > 1 else 'points'}"
    print(f"{rows} in {args.out}/results.parquet and results.csv"
          + (f"; {failed} failed (see {args.out}/points/*.error.txt; rerun to retry)" if failed else ""))
    return 0


#: sub-batch sizes the planner tries (plan.SUB_BATCHES, not imported: pandas)
PLAN_SUB_BATCHES = 6


def _plan_too_wide(max_gpus: int) -> str:
    """Why --max-gpus is refused, with what ranking up to it would cost."""
    if max_gpus < 1:
        return f"--max-gpus: expected an integer from 1 to {MAX_PLAN_GPUS:,}, got {max_gpus}"
    # node counts 1, 2, 4, ... up to max_gpus, for each GPU count per node and
    # sub-batch, and for the kinds with a knob each of its powers of two
    counts = max_gpus.bit_length()
    per_count = counts * PLAN_SUB_BATCHES * (counts + 1)
    return (f"--max-gpus: expected an integer from 1 to {MAX_PLAN_GPUS:,}, got {max_gpus:,}: "
            f"the plan ranks every configuration up to it by the closed form, {counts} node "
            f"counts x {PLAN_SUB_BATCHES} sub-batches x up to {counts + 1} values of a kind's knob "
            f"(k, n or the staleness bound) = about {per_count:,} closed forms per GPU count per "
            f"node, and simulates the best; lower --max-gpus (the machine's size bounds it too)")


def _with_knob(path: str, overrides: dict) -> dict:
    """The overrides, and the kind's knob at its first value where the file
    and the overrides leave it out: the plan searches it, so the scenario
    need not give one."""
    from . import safeyaml
    from .inputs import read_text
    from .algorithms import KINDS
    from .scenario import apply_overrides

    try:
        raw = safeyaml.load(read_text(path, safeyaml.MAX_BYTES))
        algorithm = apply_overrides(raw, overrides, path).get("algorithm")
    except Exception:          # noqa: BLE001 (loading the scenario says what is wrong)
        return overrides
    kind = KINDS.get(algorithm.get("kind")) if isinstance(algorithm, dict) else None
    if kind is None or kind.knob is None:
        return overrides
    key, values = kind.knob(1)
    return overrides if key in algorithm else {**overrides, f"algorithm.{key}": values[0]}


def cmd_plan(args: argparse.Namespace) -> int:
    problems = [
        *([] if math.isfinite(args.target_minibatch) and args.target_minibatch > 0 else
          [f"--target-minibatch: expected a finite number above 0, got {args.target_minibatch}"]),
        *([] if 0 < args.tolerance < 1 else
          [f"--tolerance: expected a number between 0 and 1, got {args.tolerance}"]),
        *([] if 1 <= args.max_gpus <= MAX_PLAN_GPUS else [_plan_too_wide(args.max_gpus)]),
        *([] if args.confirm >= 0 else [f"--confirm: expected at least 0, got {args.confirm}"]),
        *([] if 0 <= args.same_speed < 1 else
          [f"--same-speed: expected a number at least 0 and below 1, got {args.same_speed}"]),
        *([] if args.max_staleness is None or (math.isfinite(args.max_staleness)
                                                 and args.max_staleness >= 0) else
          [f"--max-staleness: expected a finite number at least 0, got {args.max_staleness}"]),
    ]
    if problems:
        raise UsageError("; ".join(problems))
    from .atomic import atomic_write
    from .output import check_writable
    from .plan import plan, plan_figure
    from .scenario import load_scenario

    overrides = _with_knob(args.scenario, _overrides(args.set))
    with _blaming_set(args):
        scenario = load_scenario(args.scenario, overrides)
    out = Path(args.out) if args.out else Path("runs") / f"{scenario.name}-plan"
    check_writable(out, args.overwrite, files=("plan.csv", "plan.png"))
    if args.confirm:
        _check_scheduler(args.scheduler)
    from .progress import PointsBar, shown

    bar = PointsBar("confirming", " simulations", "refuted") if shown(args.quiet) else None
    try:
        result = plan(args.scenario, args.target_minibatch, args.tolerance, args.max_gpus,
                      args.confirm, workers=args.workers or 1, scheduler=args.scheduler,
                      overrides=overrides, max_staleness=args.max_staleness, progress=bar,
                      max_events=args.max_events, max_memory=args.max_memory,
                      same_speed=args.same_speed)
    finally:
        if bar is not None:
            bar.close()
    atomic_write(out / "plan.csv", lambda tmp: result.table.to_csv(tmp, index=False))
    figure = plan_figure(result, scenario.name)
    atomic_write(out / "plan.png", lambda tmp: figure.savefig(tmp, dpi=120, format="png"))
    print(plan_text(result, scenario.name))
    print(f"wrote {out}/plan.csv and plan.png")
    return 0


def plan_text(result: Plan, name: str) -> str:
    """What ``plan`` prints: the counts, what the simulation settled, the best rows."""
    import pandas as pd

    t = result.table
    band = f"a mean mini-batch within {result.tolerance:.0%} of {result.target:g}"
    if result.max_staleness is not None:
        band += f" and a mean staleness of at most {result.max_staleness:g}"
    too_big = int((~t["fits_memory"]).sum())
    lines = [f"{name}: {len(t)} configurations"
             + (f" ({too_big} do not fit in GPU memory)" if too_big else "")
             + f"; {band}:"]
    if result.wanted == 0:
        lines.append("  ranked by the closed form alone (--confirm 0): nothing is confirmed")
    elif result.simulated == 0:
        lines.append("  no candidate is in the target by the closed form: nothing to simulate")
    elif result.exhausted:
        lines.append(f"  only {result.confirmed} of {result.simulated} simulated candidates are "
                     f"feasible by simulation, and no candidate is left (asked for "
                     f"{result.wanted})")
    else:
        lines.append(f"  {result.confirmed} confirmed by simulation "
                     f"({result.simulated} simulated, {result.simulated - result.confirmed} "
                     "refuted)")
    if result.minibatch_is_sub_batch:
        # which sub-batches were tried, and which of them a GPU holds
        tried = sorted(set(t["sub_batch"]))
        held = sorted(set(t.loc[t["fits_memory"], "sub_batch"]))
        lines.append("  every configuration here applies one learner's gradient an update: the "
                     "mini-batch is the sub-batch, so only the sub-batch can meet the target; "
                     "nodes and GPUs change speed, staleness and cost (sub-batches tried: "
                     f"{', '.join(map(str, tried))}; fitting in GPU memory: "
                     f"{', '.join(map(str, held))})")
    shown = t[t["feasible"] | t["simulated_epoch_time_s"].notna()].head(12)
    if shown.empty:
        lines.append("  no configuration meets the target; widen --tolerance, raise --max-gpus "
                     "or --max-staleness")
        return "\n".join(lines)
    knob = result.knob
    # a uniform cluster's nodes and GPUs per node; a mixed one's nodes per group
    # and the cap on GPUs per node (a group whose nodes hold fewer uses its own)
    if result.groups:
        names = [g.gpu.name for g in result.groups]
        heads = [f"{n} nodes" + (f" ({i})" if names.count(n) > 1 else "")
                 for i, n in enumerate(names)]
        heads += ["GPUs/node", "idle GPUs"]
    else:
        heads = ["nodes", "GPUs/node", "idle/node"]
    widths = [max(5, len(h)) for h in heads]
    knob_width = max(5, len(knob)) if knob else 0
    lines.append(f"  {'rank':>4} " + "".join(f"{h:>{w}} " for h, w in zip(heads, widths))
                 + f"{'sub-batch':>9} " + (f"{knob:>{knob_width}} " if knob else "")
                 + f"{'epoch (s)':>10} {'mini-batch':>10} {'staleness':>9} {'GPU-h/epoch':>11} "
                 f"{'sim. epoch':>10} {'sim. batch':>10}  verdict")
    for _, r in shown.iterrows():
        simulated = not pd.isna(r["simulated_epoch_time_s"])
        verdict = ("confirmed" if simulated and r["feasible"] else "refuted by simulation"
                   if simulated else "closed form only")
        sim = (f"{r['simulated_epoch_time_s']:>10.1f} {r['simulated_minibatch_mean']:>10.1f}"
               if simulated else f"{'':>10} {'':>10}")
        if result.groups:
            idle = sum(n * (g.node_gpus - used) for n, g, used in result.booked(r))
            cells = [int(r[c]) for c in result.group_columns] + [int(r["gpus_per_node"]), idle]
        else:
            cells = [int(r["nodes"]), int(r["gpus_per_node"]),
                     result.node_gpus - int(r["gpus_per_node"])]
        lines.append(f"  {int(r['rank']):>4} "
                     + "".join(f"{c:>{w}} " for c, w in zip(cells, widths))
                     + f"{int(r['sub_batch']):>9} "
                     + (f"{int(r[knob]):>{knob_width}} " if knob else "")
                     + f"{r['predicted_epoch_time_s']:>10.1f} "
                     f"{r['predicted_minibatch_mean']:>10.1f} "
                     f"{r['predicted_staleness_mean']:>9.2f} {r['gpu_hours_per_epoch']:>11.2f} "
                     f"{sim}  {verdict}")
    if knob == "staleness_bound":
        lines.append("  staleness_bound counts a learner's steps ahead of the slowest; staleness, "
                     "the updates between a gradient's read and its apply")
    if result.best is not None:
        lines.append(f"  choice: {result.describe(result.best)}")
    if not t["feasible"].any():
        lines.append("  no configuration meets the target; widen --tolerance, raise --max-gpus "
                     "or --max-staleness")
    elif result.confirmed > 1 and not result.order_agrees:
        lines.append("  note: the simulation orders the confirmed configurations differently "
                     "from the closed form (ranked by simulated epoch time)")
    return "\n".join(lines)


def cmd_report(args: argparse.Namespace) -> int:
    from .report import write_report

    run_dir = Path(args.run_dir)
    if run_dir.is_dir() and not os.access(run_dir, os.W_OK | os.X_OK):
        raise UsageError(f"{run_dir}: not writable; report.html is written into the run's folder")
    path = write_report(run_dir, overwrite=args.overwrite)
    print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB, self-contained)")
    return 0


def cmd_predict(args: argparse.Namespace) -> int:
    from .analytic import predict
    from .costs import costs_of

    scenario = _load(args)
    costs = costs_of(scenario)
    # a cycle the closed form cannot lay out is refused, not computed; then
    # the stop's checks read the prediction itself (not a second closed form)
    try:
        budget.refuse_odd_cycles(scenario, costs)
        pred = predict(scenario, costs)
    except ScenarioError as exc:            # said of the file, as every other refusal is
        raise ScenarioError(args.scenario, exc.problems) from None
    budget.check(scenario, args.scenario, math.inf, math.inf, simulated=False, prediction=pred,
                 costs=costs)
    print(json.dumps(pred.summary, indent=2) if args.json else _prediction_text(pred))
    return 0


_CATALOG_COLUMNS = {
    "gpus": ("architecture", "peak_flops", "memory_bandwidth", "stream_bandwidth", "memory", "host_link"),
    "networks": ("bandwidth", "latency"),
    "models": ("parameters", "input_shape"),
    "machines": ("gpu", "gpus_per_node", "network", "rails", "host_link", "gpus_per_host_link",
                 "gpu_link", "gpu_nics"),
}


def cmd_catalog(args: argparse.Namespace) -> int:
    catalog.check()
    kinds = [args.kind] if args.kind else list(catalog.KINDS)
    for kind in kinds:
        print(f"{kind}:")
        width = max(map(len, catalog.names(kind))) + 2
        for name in catalog.names(kind):
            entry = catalog.lookup(kind, name)
            figures = ", ".join(f"{c} {entry[c] if not isinstance(entry[c], dict) else entry[c]['name']}"
                                for c in _CATALOG_COLUMNS[kind] if c in entry)
            if kind == "models":
                from .specs import catalog_model
                figures += f", forward {catalog_model(name).forward_flops / 1e9:.2f} GFLOP per sample"
            print(f"  {name:<{width}}{figures}")
            print(f"  {'':<{width}}source: {entry.get('source', '-')}")
            if "stream_source" in entry:
                print(f"  {'':<{width}}stream: {entry['stream_source']}")
    return 0


def cmd_timing(args: argparse.Namespace) -> int:
    if not 0 < args.batch <= 2**31:
        raise UsageError(f"--batch must be a positive integer up to 2**31, got {args.batch}")
    from .costs import kernel_cost
    from .memory import footprint
    from .precision import activation_bytes
    from .specs import GpuSpec, catalog_model

    try:       # (names only: the command takes no spec written out)
        gpu = GpuSpec.model_validate(catalog.lookup("gpus", args.gpu, inline=False))
        model = catalog_model(catalog.lookup("models", args.model, inline=False)["name"])
    except catalog.CatalogError as exc:
        raise UsageError(str(exc)) from None
    layers = kernel_cost(args.compute, cuda_graphs=args.cuda_graphs).breakdown(
        gpu, model, args.batch, args.precision, args.layout)
    how = ("measured kernels where this GPU has them, else the roofline" if args.compute == "table"
           else "the calibrated roofline")
    how += ", CUDA graphs" if args.cuda_graphs else ""
    print(f"{gpu.name}, {model.name}, batch {args.batch}, {args.precision}, {args.layout} ({how}): "
          "forward + backward per layer, ms")
    print(f"  {'layer':<22}{'op':<9}{'forward':>10}{'backward':>10}  source")
    for t in layers:
        print(f"  {t.layer:<22}{t.op:<9}{_cell(1e3 * t.forward_s, '.3f', 10)}"
              f"{_cell(1e3 * t.backward_s, '.3f', 10)}  {t.source}")
    fwd, bwd = sum(t.forward_s for t in layers), sum(t.backward_s for t in layers)
    print(f"  {'total':<31}{_cell(1e3 * fwd, '.2f', 10)}{_cell(1e3 * bwd, '.2f', 10)}  = "
          f"{_cell(1e3 * (fwd + bwd), '.2f', 14).strip()} ms")
    need = footprint(model.parameters, model.input_shape, model.graph, args.batch, gpu.memory,
                     activation_bytes(args.precision))
    if not need.fits:      # priced all the same: the figures say what it would cost
        print(f"  does not fit in the {gpu.name}'s {gpu.memory / 1e9:.3g} GB: "
              f"{need.describe(args.batch)}")
    return 0


#: repeats profile times by default; with --steps, each repeat is a step
#: that fit and timing.compute's empirical law read, which want at least 10
PROFILE_REPEATS, PROFILE_STEPS = 5, 30


def cmd_profile(args: argparse.Namespace) -> int:
    from .measured import MIN_STEPS

    if args.repeats is None:
        args.repeats = PROFILE_STEPS if args.steps else PROFILE_REPEATS
    if args.steps and 0 < args.repeats < MIN_STEPS:
        raise UsageError(f"--repeats {args.repeats} with --steps: each repeat is one step, and "
                         f"fit and timing.compute's empirical law need at least {MIN_STEPS} "
                         f"(--repeats {MIN_STEPS} or more; {PROFILE_STEPS} by default with --steps)")
    if not 0 < args.batch <= 2**16 or not 0 < args.repeats <= 1000:
        raise UsageError("--batch must be an integer from 1 to 65536 and --repeats from 1 to "
                         "1000 (each repeat times every kernel)")
    from .specs import catalog_model

    try:        # names only (no spec written out), before PyTorch's seconds of import
        gpu = catalog.lookup("gpus", args.gpu, inline=False)["name"]
        model = catalog_model(catalog.lookup("models", args.model, inline=False)["name"])
    except catalog.CatalogError as exc:
        raise UsageError(str(exc)) from None
    try:
        import torch  # noqa: F401  (optional dependency)
    except ImportError:
        raise UsageError("profile needs PyTorch: pip install 'asgdsim[profile]'") from None
    from .profile import measure, write_steps, write_table

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise UsageError(f"--device {args.device}: PyTorch sees no CUDA device here")
    out = Path(args.out or f"profiles/{gpu}-{model.name}-b{args.batch}.csv")
    if out.exists() and not args.overwrite:
        raise UsageError(f"{out} exists; pass --overwrite to replace it or choose --out")
    steps_out = Path(args.steps) if args.steps else None
    if steps_out is not None and steps_out.exists() and not args.overwrite:
        raise UsageError(f"{steps_out} exists; pass --overwrite to replace it or choose --steps")
    rows, steps = measure(model, args.batch, gpu, args.device, repeats=args.repeats)
    write_table(rows, out)
    total = sum(float(r["ms"]) for r in rows)
    print(f"{model.name}, batch {args.batch} on {args.device} (labelled {gpu}): {len(rows)} "
          f"kernels, {total:.2f} ms in all; wrote {out}")
    print(f"use it with  timing: {{compute: table, kernel_table: {out}}}")
    if steps_out is not None:
        write_steps(steps, steps_out)
        print(f"wrote {steps_out}: {len(steps)} steps (each repeat's kernels summed); replay them "
              f"with  timing: {{compute: {{empirical: {steps_out}}}}}  or fit a law: asgdsim fit "
              f"{steps_out}")
    return 0


def cmd_fit(args: argparse.Namespace) -> int:
    import numpy as np
    import yaml

    from .atomic import atomic_text, atomic_write
    from .measured import fit_laws, qq_figure, read_steps

    try:
        steps = read_steps(args.steps)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    out = Path(args.out) if args.out else None
    figure = Path(args.figure) if args.figure else (out.with_suffix(".png") if out else None)
    for path in (out, figure):
        if path is not None and path.exists() and not args.overwrite:
            raise UsageError(f"{path} exists; pass --overwrite to replace it or choose another")
        if path is not None:      # a folder it can write the file in
            from .output import check_writable
            check_writable(path.parent, True, files=(path.name,))
    fits = fit_laws(steps)
    cv = 0.0 if np.all(steps == steps[0]) else steps.std() / steps.mean()
    print(f"{args.steps}: {len(steps)} steps, mean {1e3 * steps.mean():.4g} ms, "
          f"cv {cv:.3g}; laws by AIC, best first")
    print(f"  {'law':<21}{'AIC':>12}{'KS distance':>13}{'KS p-value':>12}   (p-values optimistic: "
          "each law's parameters come from these same steps)")
    for fit in fits:
        print(f"  {fit.distribution:<21}{fit.aic:>12.1f}{fit.ks_distance:>13.4f}{fit.ks_pvalue:>12.3g}")
    best = fits[0]
    entry = yaml.safe_dump({"timing": {"compute": best.entry}}, sort_keys=False)
    if best.ks_pvalue < 0.01:
        print(f"  (even the best law is unlikely to have made these steps: KS p-value "
              f"{best.ks_pvalue:.2g}; timing.compute: {{empirical: {args.steps}}} replays them as "
              "they are)")
    if out is not None:
        atomic_text(out, entry)
        print(f"wrote {out}")
    else:
        print(entry, end="")
    if figure is not None:
        fig = qq_figure(steps, fits)
        atomic_write(figure, lambda tmp: fig.savefig(tmp, format="png", dpi=120))
        print(f"wrote {figure}")
    return 0


def _run_kind(run_dir: Path) -> str | None:
    """The algorithm kind a run folder's scenario.yaml names (None if unreadable)."""
    import yaml

    try:
        data = yaml.safe_load((run_dir / "scenario.yaml").read_text(encoding="utf-8"))
        return data["algorithm"]["kind"]
    except (OSError, yaml.YAMLError, KeyError, TypeError):
        return None


def cmd_replay(args: argparse.Namespace) -> int:
    import pandas as pd

    from .atomic import atomic_write
    from .replay import ReplayOptions, figure, replay

    run_dir = Path(args.run_dir)
    events = run_dir / "gradients.parquet"
    if not run_dir.is_dir():
        what = "a file, not a folder" if run_dir.exists() else "no such folder"
        raise UsageError(f"{run_dir}: {what}; give the folder a run wrote "
                         "(asgdsim run SCENARIO --out DIR)")
    if not events.is_file():
        raise UsageError(f"{run_dir}: no gradients.parquet; replay needs a folder written by "
                         "asgdsim run (compare leaves the event tables out)")
    out = Path(args.out) if args.out else run_dir
    table_path, figure_path = out / "replay.csv", out / "figures" / "replay.png"
    for path in (table_path, figure_path):
        if path.exists() and not args.overwrite:
            raise UsageError(f"{path} exists; pass --overwrite to replace it or choose --out")
    from .output import check_writable
    # the run's own folder takes its replay; another folder that holds
    # files (another run's, whose report would show this replay) needs --overwrite
    own = out.resolve() == run_dir.resolve()
    check_writable(out, own or args.overwrite, files=("replay.csv", "figures/replay.png"))
    columns = ["version_read", "version_applied", "staleness", "samples", "t_end"]
    try:
        import pyarrow.parquet as pq

        missing = [c for c in columns if c not in pq.read_schema(events).names]
        if missing:
            raise UsageError(f"{events}: lacks the column{'s' * (len(missing) > 1)} "
                             f"{', '.join(missing)}; expected the gradients table a run writes")
        gradients = pd.read_parquet(events, columns=columns)
    except (OSError, ValueError, KeyError) as exc:
        raise UsageError(f"{events}: cannot read the gradients ({exc})") from None
    from .replay import table_problems
    if problems := table_problems(gradients):
        raise UsageError(f"{events}: {'; '.join(problems)}; expected the gradients table a run "
                         "writes")
    kind = _run_kind(run_dir)
    if kind == "local-sgd":
        # its learners step on their own copies and average weights: no
        # update applies gradients computed on the server's versions
        raise UsageError(f"{run_dir}: a local-sgd run averages weights its learners stepped on "
                         "their own copies; replay follows gradients applied to shared weights "
                         "(every other kind)")
    if not (gradients["version_applied"] >= 1).any():
        raise UsageError(f"{events}: the run applied no gradients; nothing to replay")
    options = ReplayOptions(task=args.task, learning_rate=args.learning_rate,
                            momentum=args.momentum, staleness_aware=args.staleness_aware,
                            seed=args.seed)
    table = replay(gradients, options)
    atomic_write(table_path, lambda tmp: table.to_csv(tmp, index=False))
    fig = figure(table, f"{run_dir.name}: {options.task}, learning rate {options.learning_rate}"
                 + (f", momentum {options.momentum}" if options.momentum else "")
                 + (", staleness-aware" if options.staleness_aware else ""))
    atomic_write(figure_path, lambda tmp: fig.savefig(tmp, format="png", dpi=120))
    last = table.iloc[-1]
    print(f"{run_dir.name}: {options.task} trained on {int(last['samples_seen'])} samples")
    print(f"  the run's schedule ({int(last['update'])} updates): loss {last['loss']:.4f}, "
          f"test accuracy {100 * last['accuracy']:.1f} %")
    print(f"  synchronous SGD ({int(last['sync_update'])} updates): loss {last['sync_loss']:.4f}, "
          f"test accuracy {100 * last['sync_accuracy']:.1f} %")
    print(f"wrote {table_path} and {figure_path}")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    only = args.only or []
    if any(not text.strip() for text in only):
        raise UsageError("--only: expected some text to look for in the rows, got nothing")
    for text in only:
        # matched at the start of a word: a text without a letter or digit starts none
        if not any(ch.isalnum() for ch in text):
            raise UsageError(f"--only: expected a word or the start of one (a letter or "
                             f"digit), got {text!r}")
    from .output import check_writable, interrupts_held

    out = Path(args.out)
    # refuse before a minute of simulating
    check_writable(out, args.overwrite, files=("validation.csv", "validation.png"))
    from .validation import validate

    table = validate(only, tensor_shards=args.tensor_shards)
    if table.empty:
        from .validation import SEARCHED_IN

        asked = " and ".join(map(repr, only))
        raise UsageError(f"--only: no row's {SEARCHED_IN} mentions {asked}")
    if args.tensor_shards:
        print("TensorFlow's parameter servers hold whole tensors (--tensor-shards)\n")
    print(validation_text(table))
    from .atomic import atomic_write
    from .validation import validation_figure

    with interrupts_held():
        atomic_write(out / "validation.csv", lambda tmp: table.to_csv(tmp, index=False))
        fig = validation_figure(table)
        atomic_write(out / "validation.png", lambda tmp: fig.savefig(tmp, dpi=120, format="png"))
    print(f"wrote {out}/: validation.csv, validation.png")
    return 0


def _input(row) -> str:
    """A row's input and, where it is copied, what crosses: real/u8, cach/enc."""
    short = {"float32": "f32", "uint8": "u8", "encoded": "enc"}[row.input_copy]
    return row.data[:4] if row.data == "synthetic" else f"{row.data[:4]}/{short}"


def validation_text(table) -> str:
    """Every row's throughput error (the speed-ups are in validation.csv),
    then the medians of both metrics overall, per held-out status, per
    held-out system, and per system, GPU, algorithm, precision and source."""
    import pandas as pd

    from .validation import SPEEDUP, THROUGHPUT, medians

    rows = table[table["metric"] == THROUGHPUT]
    wide = max([len("system"), *map(len, rows["system"])]) + 1
    lines = [f"{'system':<{wide}}{'model':<11}{'batch':>6}{'GPUs':>5}{'nodes':>6}  {'algorithm':<10}"
             f"{'prec.':<6}{'input':<10}{'measured':>10}{'simulated':>11}{'rel. err':>10}  held out  "
             "framework"]
    for r in rows.itertuples(index=False):
        sim = "-" if pd.isna(r.simulated) else f"{r.simulated:.1f}"
        err = r.method if pd.isna(r.rel_err) else f"{100 * r.rel_err:+.1f} %"
        lines.append(f"{r.system:<{wide}}{r.model:<11}{r.batch_per_gpu:>6}{r.gpus:>5}{r.nodes:>6}  "
                     f"{r.algorithm:<10}{r.precision:<6}{_input(r):<10}{r.measured:>10.1f}{sim:>11}"
                     f"{err:>10}  {r.held_out:<8}  {r.framework}")
    held = table[table["held_out"] == "yes"]
    for metric, what in ((THROUGHPUT, "throughput (samples/s)"),
                         (SPEEDUP, "speed-up over one GPU of the same table")):
        if not (table["metric"] == metric).any():
            continue
        lines.append(f"\nmedian absolute error of the {what}:")
        groups = []
        for by, part, prefix in ((None, table, ""), ("held_out", table, ""),
                                 ("system", held, "held out, system "),
                                 *((by, table, f"{by} ") for by in
                                   ("system", "gpu", "algorithm", "precision", "source"))):
            for name, r in medians(part, by, metric).iterrows():
                label = ("all rows" if by is None else
                         {"yes": "held out", "no": "used in development"}[name] if by == "held_out"
                         else f"{prefix}{name}")
                groups.append((label, r))
        width = max(42, *(len(label) + 1 for label, _ in groups))
        lines += [f"  {label:<{width}}{int(r['rows']):>5} rows {100 * r['median_abs_err']:7.1f} %"
                  for label, r in groups]
    refused = int(rows["rel_err"].isna().sum())
    if refused:
        lines.append(f"\n{refused} rows not estimated (the 'method' column says why)")
    return "\n".join(lines)


def _path(text: str) -> str:
    """An argparse type: a file or folder name, not empty (an empty one
    would quietly mean the current folder)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a file or folder name, got nothing")
    return text


def _bytes(text: str) -> float:
    """An argparse type: a positive amount of memory, "8 GB" or bytes."""
    from .units import UnitError, parse_quantity

    try:
        value = parse_quantity(text, "bytes")
    except UnitError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a positive amount such as '8 GB', got {text!r}")
    return value


def _window(text: str) -> tuple[float, float]:
    """An argparse type: a stretch of simulated time, 'END' (from 0) or
    'START..END', each a time as scenarios write it ('10 s', '2 min')."""
    from .units import UnitError, parse_quantity

    first, sep, second = text.partition("..")
    try:
        bounds = (parse_quantity(first, "time") if sep else 0.0,
                  parse_quantity(second if sep else first, "time"))
    except UnitError as exc:
        raise argparse.ArgumentTypeError(f"{exc} (a window is '10 s' or '1 min..2 min')") from None
    if not all(math.isfinite(b) and b >= 0 for b in bounds) or bounds[1] <= bounds[0]:
        raise argparse.ArgumentTypeError(f"expected END or START..END with 0 <= START < END, "
                                         f"got {text!r}")
    return bounds


def _budget_flags(parser: argparse.ArgumentParser, what: str = "a run") -> None:
    parser.add_argument("--max-events", type=_bounded(float, 0, low_open=True),
                        default=budget.DEFAULT_MAX_EVENTS, metavar="N",
                        help=f"refuse {what} estimated at more events (gradients and update "
                        f"cycles; default {budget.DEFAULT_MAX_EVENTS:.0e}, some minutes), "
                        "before anything is simulated")
    parser.add_argument("--max-memory", type=_bytes, default=budget.DEFAULT_MAX_MEMORY,
                        metavar="BYTES", help=f"refuse {what} estimated to need more memory "
                        f"(default {budget.DEFAULT_MAX_MEMORY / 1e9:g} GB)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="asgdsim", description="Simulate asynchronous-SGD training clusters: the staleness "
        "and mini-batch size of every update, simulated and in closed form.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def scenario_command(name: str, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("scenario", help="scenario YAML file")
        p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="override one key by its dotted path, e.g. workload.sub_batch=64")
        return p

    run = scenario_command("run", "simulate a scenario and write its results")
    run.add_argument("--out", type=_path, help="output folder (default runs/<name>)")
    run.add_argument("--seed", type=_bounded(int, 0, 2**63 - 1), help="seed instead of the scenario's")
    run.add_argument("--overwrite", action="store_true",
                     help="replace this run's files in an output folder that already holds files")
    run.add_argument("--quiet", action="store_true",
                     help="no progress bar (there is one only when stderr is a terminal)")
    _budget_flags(run)
    run.add_argument("--trace", action="store_true",
                     help="also write trace.json: the run as a timeline (Chrome / Perfetto "
                     "trace-event JSON; open it in ui.perfetto.dev)")
    run.add_argument("--trace-window", type=_window, metavar="TIME",
                     help="the stretch of simulated time to trace: '10 s' (the first 10 s) or "
                     "'1 min..2 min' (from one to two minutes); implies --trace; default: "
                     "from the start until the event cap")
    run.add_argument("--trace-max-events", type=POSITIVE_INT, default=None, metavar="N",
                     help="at most N events in trace.json; the trace ends early if the window "
                     "holds more (default 200,000, some 20 MB); implies --trace")
    run.set_defaults(func=cmd_run)

    comp = scenario_command("compare", "simulate, then set the figures beside the closed form's")
    comp.add_argument("--out", type=_path, help="output folder (default runs/<name>-compare)")
    comp.add_argument("--seed", type=_bounded(int, 0, 2**63 - 1), help="seed instead of the scenario's")
    comp.add_argument("--check", type=float, metavar="TOL",
                      help="exit 1 if any of the five agreement figures exceeds TOL (relative "
                      "errors of epoch time, mean staleness and mean mini-batch; total-variation "
                      "distances of the two laws), or if the closed form is outside its "
                      "assumptions")
    comp.add_argument("--overwrite", action="store_true",
                      help="replace this comparison's files in an output folder that holds files")
    comp.add_argument("--quiet", action="store_true",
                      help="no progress bar (there is one only when stderr is a terminal)")
    _budget_flags(comp)
    comp.set_defaults(func=cmd_compare)

    swp = sub.add_parser("sweep", help="simulate a grid of variations on Dask, resumably",
                         description="simulate a grid of variations on Dask, resumably")
    swp.add_argument("scenario", help="scenario YAML file")
    swp.add_argument("--grid", action="append", required=True, metavar="KEY=V1,V2,...",
                     help="a dotted key and its values; several --grid make a product")
    swp.add_argument("--replications", type=POSITIVE_INT, default=1,
                     help="runs per grid point, each with its own seed (default 1)")
    swp.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                     help="override one scenario key for every point, e.g. stop.epochs=0.5")
    swp.add_argument("--workers", type=POSITIVE_INT, help="local Dask worker processes (default 1)")
    swp.add_argument("--scheduler", help="address of an existing Dask scheduler")
    swp.add_argument("--out", type=_path, required=True,
                     help="folder of the sweep; run again to resume, or with more values or "
                     "replications of the same grid keys to run only the new points")
    swp.add_argument("--overwrite", action="store_true",
                     help="write into a folder that holds other files or another sweep, "
                     "replacing that sweep's files (the others are kept)")
    _budget_flags(swp, "a grid point")
    swp.add_argument("--quiet", action="store_true",
                     help="no progress bar (there is one only when stderr is a terminal)")
    swp.set_defaults(func=cmd_sweep)

    pln = sub.add_parser("plan", help="the fastest configuration for a target mini-batch size",
                         description="the fastest configuration for a target mini-batch size")
    pln.add_argument("scenario", help="scenario YAML file (its machine, model and algorithm); "
                     "for softsync, k-sync, k-batch-sync, k-async, k-batch-async and ssp the "
                     "kind's knob (n, k or staleness_bound) is searched too, as one more column; "
                     "of a mixed cluster (cluster.groups) each group's nodes are booked, 0 (the "
                     "group left out), a power of two or all of them, as a column per group")
    pln.add_argument("--target-minibatch", type=float, required=True, metavar="B",
                     help="the mean mini-batch size (samples) wanted")
    pln.add_argument("--tolerance", type=float, default=0.1,
                     help="the band around B, relative (default 0.1: B +- 10 %%)")
    pln.add_argument("--max-gpus", type=int, default=1024,
                     help="largest cluster to consider, in GPUs (default 1024; the machine "
                     "preset's size also bounds it)")
    pln.add_argument("--max-staleness", type=float, metavar="S",
                     help="also require a mean staleness of at most S")
    pln.add_argument("--confirm", type=int, default=3, metavar="K",
                     help="simulate candidates in order until K are feasible by simulation "
                     "(default 3; 0 ranks by the closed form alone)")
    pln.add_argument("--same-speed", type=float, default=0.01, metavar="F",
                     help="epoch times within F (relative) of the fastest of them count as "
                     "equally fast, and of those the fewest GPU-hours rank first (default "
                     "0.01; 0.1: the cheapest configuration within 10 %% of the fastest)")
    pln.add_argument("--workers", type=POSITIVE_INT,
                     help="local Dask worker processes for the closed forms and the confirming "
                     "simulations (default 1: in this process)")
    pln.add_argument("--scheduler", help="address of an existing Dask scheduler")
    pln.add_argument("--out", type=_path, help="output folder (default runs/<name>-plan)")
    pln.add_argument("--overwrite", action="store_true",
                     help="replace plan.csv and plan.png in an output folder that holds files")
    pln.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                     help="override one scenario key first, e.g. stop.epochs=5")
    _budget_flags(pln, "a candidate to confirm")
    pln.add_argument("--quiet", action="store_true",
                     help="no progress bar (there is one only when stderr is a terminal)")
    pln.set_defaults(func=cmd_plan)

    pred = scenario_command("predict", "the closed-form prediction, without simulating")
    pred.add_argument("--json", action="store_true", help="print the contract's analytic object")
    pred.set_defaults(func=cmd_predict)

    timing = sub.add_parser("timing", help="per-layer forward and backward times of a model on a GPU",
                            description="print each layer's forward and backward times (ms) of a "
                            "catalog model on a catalog GPU at a sub-batch, and where each figure "
                            "comes from (a kernel table or the calibrated roofline)")
    timing.add_argument("gpu", help="catalog GPU name, e.g. K80")
    timing.add_argument("model", help="catalog model name, e.g. vgg16")
    timing.add_argument("--batch", type=int, required=True, help="sub-batch size")
    timing.add_argument("--compute", choices=("table", "roofline"), default="table",
                        help="table: measured kernels where they exist (default); roofline: "
                        "the calibrated roofline only")
    timing.add_argument("--precision", choices=PRECISIONS, default="fp32",
                        help="fp32 (default); tf32, fp16 or bf16 on the tensor cores where the GPU "
                        "has them (see asgdsim/precision.py)")
    timing.add_argument("--layout", choices=LAYOUTS, default="nhwc",
                        help="nhwc (default); nchw: each convolution on tensor cores also "
                        "transposes its tensors (see asgdsim/compute.py)")
    timing.add_argument("--cuda-graphs", action="store_true",
                        help="the kernels replay CUDA graphs: no launch interval per kernel, "
                        "no framework cost per step (workload.cuda_graphs)")
    timing.set_defaults(func=cmd_timing)

    prof = sub.add_parser("profile", help="time each layer's kernels with PyTorch, write a cost table",
                          description="time each convolution's and fully connected layer's "
                          "three passes (forward, backward data, backward filter) with PyTorch on "
                          "a device, and write them as a kernel table in the package's format, "
                          "for a scenario's timing.kernel_table (needs PyTorch installed)")
    prof.add_argument("--model", required=True, help="catalog model name")
    prof.add_argument("--batch", type=int, required=True, help="sub-batch size to time")
    prof.add_argument("--gpu", required=True,
                      help="catalog name of the device measured (the table's gpu column)")
    prof.add_argument("--device", default="cpu", type=_device, help="PyTorch device: cpu (default), cuda, cuda:1 ...")
    prof.add_argument("--repeats", type=int,
                      help="timed runs per kernel after a warm-up; the median is kept (default "
                      f"{PROFILE_REPEATS}, or {PROFILE_STEPS} with --steps: one step a repeat)")
    prof.add_argument("--out", type=_path, help="table file (default profiles/GPU-MODEL-bBATCH.csv)")
    prof.add_argument("--steps", metavar="FILE", type=_path,
                      help="also write each repeat's step (its kernels summed) to FILE, a CSV "
                      "for timing.compute: {empirical: FILE} and asgdsim fit")
    prof.add_argument("--overwrite", action="store_true", help="replace existing output files")
    prof.set_defaults(func=cmd_profile)

    fit = sub.add_parser("fit", help="the step-time law that fits measured steps best",
                         description="fit each law of timing.compute to measured step times "
                         "(a CSV with a column step_s), rank them by AIC, print the fit's "
                         "quality and the best one's YAML entry")
    fit.add_argument("steps", help="CSV file with a column step_s, one measured step per row")
    fit.add_argument("--out", type=_path, help="write the YAML entry to this file (default: print it), and "
                     "the QQ figure beside it (.png)")
    fit.add_argument("--figure", type=_path, help="the QQ figure's file (default: beside --out)")
    fit.add_argument("--overwrite", action="store_true", help="replace existing output files")
    fit.set_defaults(func=cmd_fit)

    rep = sub.add_parser("replay", help="train a small model with the run's update schedule",
                         description="train a small real model (scikit-learn's digits, in "
                         "numpy) with SGD whose updates follow a run's recorded gradients, beside "
                         "synchronous SGD at the run's mean mini-batch")
    rep.add_argument("run_dir", metavar="RUN_DIR", help="a folder written by asgdsim run")
    rep.add_argument("--task", choices=("digits", "digits-mlp"), default="digits",
                     help="digits: softmax regression; digits-mlp: one hidden layer of 32 "
                     "(default digits)")
    rep.add_argument("--learning-rate", type=_bounded(float, 0, low_open=True), default=0.1,
                     help="SGD's learning rate (default 0.1)")
    rep.add_argument("--momentum", type=_bounded(float, 0, 0.999), default=0.0,
                     help="momentum of both optimisers, from 0 to 0.999 (default 0)")
    rep.add_argument("--staleness-aware", action="store_true",
                     help="divide each gradient's learning rate by its staleness (Zhang et al. 2016)")
    rep.add_argument("--seed", type=_bounded(int, 0, 2**32 - 1), default=0,
                     help="seed of the data's split, order and the initial weights (default 0)")
    rep.add_argument("--out", type=_path, help="folder for replay.csv and figures/replay.png (default RUN_DIR)")
    rep.add_argument("--overwrite", action="store_true",
                     help="replace an earlier replay's files, or write into a --out folder that "
                     "holds other files")
    rep.set_defaults(func=cmd_replay)

    val = sub.add_parser("validate", help="simulate the published cluster measurements and "
                         "compare", description="simulate every row of the shipped table of "
                         "published multi-GPU training throughputs (asgdsim/catalog/"
                         "cluster_measurements.csv, a source per row) and compare: the error of "
                         "each row's throughput, the medians of the throughput's and the speed-up's "
                         "errors overall and per held-out status, held-out system, system, GPU, "
                         "algorithm, precision and source, validation.csv and validation.png")
    val.add_argument("--out", type=_path, default="runs/validate", help="output folder (default runs/validate)")
    from .validation import SEARCHED_IN

    val.add_argument("--only", metavar="TEXT", action="append",
                     help=f"keep the rows whose {SEARCHED_IN} mention TEXT at the start of a "
                     "word (case-insensitive), e.g. K80, resnet50, cscs, allreduce, ddp, ray; "
                     "given again, a row must mention every TEXT")
    val.add_argument("--overwrite", action="store_true",
                     help="replace validation.csv and validation.png in a folder that holds files")
    val.add_argument("--tensor-shards", action="store_true",
                     help="TensorFlow's parameter servers hold whole tensors as tf_cnn_benchmarks "
                     "places them (split: greedy or round-robin), not even parts")
    val.set_defaults(func=cmd_validate)

    rpt = sub.add_parser("report", help="one self-contained page of a run: RUN_DIR/report.html",
                         description="write RUN_DIR/report.html: the scenario, the headline "
                         "table, every figure and the agreement with the closed form, in one "
                         "file that needs no network")
    rpt.add_argument("run_dir", metavar="RUN_DIR", help="a folder that run or compare wrote")
    rpt.add_argument("--overwrite", action="store_true",
                     help="replace a report.html that asgdsim report did not write (its own "
                     "it replaces without asking)")
    rpt.set_defaults(func=cmd_report)

    cat = sub.add_parser("catalog", help="list GPUs, networks, models and machines")
    cat.add_argument("kind", nargs="?", choices=list(catalog.KINDS))
    cat.set_defaults(func=cmd_catalog)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        # said by the command's own parser, with its usage (the top one
        # would show only "asgdsim COMMAND ...")
        commands = next(a for a in parser._actions
                        if isinstance(a, argparse._SubParsersAction)).choices
        commands[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        return args.func(args)
    except ScenarioError as exc:
        print(exc, file=sys.stderr)
    except (UsageError, OutputExists, catalog.CatalogError) as exc:
        print(f"asgdsim {args.command}: {exc}", file=sys.stderr)
    except KeyboardInterrupt:
        print(f"\nasgdsim {args.command}: interrupted; what finished is kept, and an "
              "output folder holds its previous files or all of the new ones, never a mix "
              "(a sweep resumes when run again)", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader (head, less) left early: not an error of ours
        sys.stdout = open(os.devnull, "w")
        return 0
    except (MemoryError, RecursionError) as exc:
        # input that slipped past every check and still ran away: say so, briefly
        print(f"asgdsim {args.command}: the input is too large to handle "
              f"({type(exc).__name__}); make the scenario smaller", file=sys.stderr)
        return 1
    except Exception as exc:
        if os.environ.get("ASGDSIM_TRACEBACK"):
            raise
        print(f"asgdsim {args.command}: internal error (a bug in asgdsim, not in your input): "
              f"{type(exc).__name__}: {exc}; set ASGDSIM_TRACEBACK=1 to see where",
              file=sys.stderr)
        return 1
    return USAGE_ERROR


if __name__ == "__main__":
    sys.exit(main())
