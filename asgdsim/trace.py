"""A run as a timeline: Chrome / Perfetto trace-event JSON (``trace.json``).

The trace-event format ("Trace Event Format", the JSON that chrome://tracing
and ui.perfetto.dev open) is a list of events, each with a phase ``ph``.
This module writes three kinds:

- ``X`` (complete slices, ``ts`` and ``dur`` in microseconds of *simulated*
  time): each compute step on its GPU's track, each transfer on its link's
  or port direction's track, each Allreduce and update on its update
  thread's or server's track;
- ``s`` / ``f`` (flow start and end, paired by ``id``, both bound to the
  slice that encloses them): an arrow from each gradient's compute step to
  the update that applied it;
- ``M`` (metadata): the name of every process (a node, the parameter
  server, the collective) and thread (a GPU, a link, an update thread),
  and their order.

Names and arguments say what a reader asks of a step: ``step v12 -> v15
(staleness 2)``, with the gradient's row in gradients.parquet, its version
read and applied, its staleness and samples; an update says its version,
gradients and mini-batch.

The trace is bounded: a window of simulated time (``--trace-window``), and
at most ``max_events`` events (the window is cut short at the first event
past the cap, so what is there is a whole stretch of the run, never a
sample). Perfetto's Python package builds its own protobuf format, not this
JSON, so the events are written here, as the format's documentation lays
them out.
"""

from __future__ import annotations

import itertools
import json
import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .structure import COLOCATED, loop_of, topology_of

if TYPE_CHECKING:
    from .simulation import Result
    from .timeline import Timeline

__all__ = ["DEFAULT_MAX_EVENTS", "Trace", "trace_events", "write_trace"]
#: how a trace this module writes begins (output.py knows its own by it)
TRACE_HEAD = b'{"displayTimeUnit": "ms", "otherData": '

#: events in a trace unless asked otherwise: some 20 MB of JSON (22 MB for
#: the default scenario's), which ui.perfetto.dev opens as it is
DEFAULT_MAX_EVENTS = 200_000
US = 1e6            # the format counts microseconds
#: an applied gradient's step costs its slice and the two ends of its flow
FLOW_EVENTS = 2
#: process ids: node n is NODE_PID + n; the server or collective after the nodes
NODE_PID = 1
#: the order of threads within a process: update threads, GPUs, links
UPDATE_ORDER, GPU_ORDER, LINK_ORDER = 0, 1_000, 10_000_000
SERVER_NAMES = {"server": "parameter server", "collective": "collective (all GPUs)"}
UPDATE_NAMES = {"server": "updates (server CPU)", "collective": "collective + update",
                "node_update": "update thread"}


@dataclass(frozen=True)
class Trace:
    """The events of a trace, and what it covers."""

    events: list[dict]
    #: [from, to) in simulated seconds: every step, transfer and update
    #: that overlaps it is in the trace
    window_s: tuple[float, float]
    max_events: int
    #: True where the cap, not the window asked for, ended the trace
    capped: bool
    #: gradients (rows of gradients.parquet) and update versions in the trace
    gradients: int
    updates: int
    #: arrows from a gradient's step to its update (both ends in the trace)
    flows: int = 0
    #: when the run ended, in simulated seconds
    run_end_s: float = math.inf

    def describe(self) -> str:
        a, b = self.window_s
        end = "the end" if math.isinf(b) else f"{b:.6g} s"
        text = (f"{len(self.events):,} events, simulated time {a:.6g} s to {end}: "
                f"{self.gradients:,} gradients, {self.updates:,} updates, {self.flows:,} arrows "
                "from a gradient to its update")
        if self.capped and self.gradients == self.updates == 0:
            # the processes' and threads' names are written whatever the cap
            text += (f" (the names of its processes and threads alone pass the cap of "
                     f"{self.max_events:,} events: nothing of the run fits; raise "
                     "--trace-max-events)")
        elif self.capped:
            text += (f" (cut at the cap of {self.max_events:,} events; choose a stretch with "
                     "--trace-window or raise --trace-max-events)")
        elif a >= self.run_end_s:
            text += (f" (the window starts after the run's last update, at "
                     f"{self.run_end_s:.6g} s: nothing of the run is in it)")
        return text


@dataclass
class _Slice:
    """One complete event ("X") on its process and thread, in seconds."""

    pid: int
    tid: int
    name: str
    start: float
    end: float
    args: dict | None = None
    #: the gradient row whose flow starts here, or the update version it ends at
    gradient: int = -1
    version: int = -1


def _stage_names(result: Result) -> dict[tuple[str, float], str]:
    """(link kind, duration asked for) -> the loop stage(s) it can be: for a
    transfer whose duration did not name its stage."""
    loop = loop_of(result.scenario, result.costs)
    # a colocated shard's server ports are its node's
    colocated = topology_of(result.scenario).colocated
    names: dict[tuple[str, float], set[str]] = defaultdict(set)
    for stage in loop.stages:
        for kind in stage.holds:
            for k in {kind, COLOCATED.get(kind, kind) if colocated else kind}:
                names[(k, round(stage.duration_s, 15))].add(stage.name.replace("_", " "))
    return {key: " / ".join(sorted(v)) for key, v in names.items()}


def _link_place(name: str, nodes: int) -> int:
    """The process a link's track sits in: its node's, or the server's."""
    kind, _, rest = name.partition("[")
    if kind.startswith("server_") or not rest:
        return NODE_PID + nodes
    return NODE_PID + int(rest.rstrip("]").split(".")[0])


def _clip(slices: list[_Slice]) -> None:
    """Slices of one track end where the next begins: a step cut short (a
    cancelled k-sync step, a learner that failed) is drawn as far as it ran,
    and the format's slices on one thread then nest as it requires."""
    slices.sort(key=lambda s: (s.start, s.end))
    for a, b in zip(slices, slices[1:]):
        if a.end > b.start:
            a.end = b.start
            if a.gradient < 0:
                a.name = "step (cut short)"


def trace_events(result: Result, window_s: tuple[float, float] = (0.0, math.inf),
                 max_events: int = DEFAULT_MAX_EVENTS) -> Trace:
    """The trace of a run simulated with a :class:`~asgdsim.timeline.Timeline`."""
    timeline: Timeline | None = result.timeline
    if timeline is None:
        raise ValueError("the run was simulated without a timeline: nothing to trace")
    if max_events < 1:
        raise ValueError("a trace holds at least one event")
    lo, hi = window_s
    hi = min(hi, timeline.until)
    nodes = int(timeline.node_of_learner.max()) + 1 if len(timeline.node_of_learner) else 1
    server_pid = NODE_PID + nodes
    tracks: dict[tuple[int, int], list[_Slice]] = defaultdict(list)
    thread_names: dict[tuple[int, int], str] = {}
    # thread ids unique across processes (viewers that key threads on the
    # id alone then still tell them apart), and each thread's place
    tids, order = itertools.count(1), {}
    gpus = result.scenario.cluster.gpus_per_learner
    per_node = np.bincount(timeline.node_of_learner, minlength=nodes)
    first_of_node = np.concatenate([[0], np.cumsum(per_node)[:-1]])

    # compute steps, matched to the gradients they produced: a gradient's
    # step is its learner's first that starts at or after the gradient's
    # t_start (when it took its weights)
    grads = result.gradients
    g_learner = grads["learner"].to_numpy()
    g_start, g_end = grads["t_start"].to_numpy(), grads["t_end"].to_numpy()
    g_read, g_applied = grads["version_read"].to_numpy(), grads["version_applied"].to_numpy()
    g_stale, g_samples = grads["staleness"].to_numpy(), grads["samples"].to_numpy()
    outages = result.outages
    down_at = ({} if outages is None or outages.empty else
               {int(k): np.sort(v["down_s"].to_numpy()) for k, v in outages.groupby("learner")})
    cut: dict[int, set[int]] = {}
    by_learner = defaultdict(list)
    for row, learner in enumerate(g_learner.tolist()):
        by_learner[learner].append(row)
    for learner, track in timeline.steps.items():
        node = int(timeline.node_of_learner[learner])
        pid, tid = NODE_PID + node, next(tids)
        order[(pid, tid)] = GPU_ORDER + learner
        slot = learner - int(first_of_node[node])
        thread_names[(pid, tid)] = (f"GPU {slot} (learner {learner})" if gpus == 1 else
                                    f"learner {learner} (GPUs {slot * gpus}-{slot * gpus + gpus - 1})")
        start, end, _ = track.columns()
        keep = (start <= hi) & (end >= lo)
        matched = np.full(len(start), -1)
        rows = np.asarray(by_learner.get(learner, []), dtype=np.int64)
        if len(rows) and len(start):
            at = np.searchsorted(start, g_start[rows], side="left")
            ok = at < len(start)
            ok[ok] &= start[at[ok]] <= g_end[rows[ok]] + 1e-12
            matched[at[ok]] = rows[ok]
        steps = tracks[(pid, tid)]
        # a learner that fails loses its step there: draw it as far as it ran
        lost = down_at.get(learner)
        if lost is not None and len(start):
            at = np.searchsorted(start, lost, side="right") - 1
            hit = (at >= 0) & (end[np.maximum(at, 0)] > lost)
            end = end.copy()
            end[at[hit]] = lost[hit]
            cut[learner] = set(at[hit].tolist())
        for i in np.flatnonzero(keep).tolist():
            row = int(matched[i])
            if row < 0:
                # cancelled, lost to a failure, or still on its way at the end
                name = ("step (lost: the learner failed)" if i in cut.get(learner, ())
                        else "step (not applied)")
                steps.append(_Slice(pid, tid, name, float(start[i]), float(end[i])))
                continue
            steps.append(_Slice(
                pid, tid, f"step v{g_read[row]} -> v{g_applied[row]} (staleness {g_stale[row]})",
                float(start[i]), float(end[i]),
                {"gradient": row, "version_read": int(g_read[row]),
                 "version_applied": int(g_applied[row]), "staleness": int(g_stale[row]),
                 "samples": int(g_samples[row])}, gradient=row))

    # transfers, named after the stage of the learner's loop they serve
    stages = _stage_names(result)
    for name, track in sorted(timeline.links.items()):
        pid = _link_place(name, nodes)
        tid = next(tids)
        order[(pid, tid)] = LINK_ORDER + tid
        thread_names[(pid, tid)] = name
        kind = name.partition("[")[0]
        start, end, asked = track.columns()
        for i in np.flatnonzero((start <= hi) & (end >= lo)).tolist():
            label = (track.stage[i].replace("_", " ")
                     or stages.get((kind, round(float(asked[i]), 15)), kind.replace("_", " ")))
            tracks[(pid, tid)].append(_Slice(pid, tid, label, float(start[i]), float(end[i])))

    # updates: each update component's intervals, matched to the versions
    # they published by their end; an update of no duration (ideal
    # communication, an instant server) is a slice of no duration
    ups = result.updates
    u_version, u_t = ups["version"].to_numpy(), ups["t"].to_numpy()
    u_gradients, u_minibatch = ups["gradients"].to_numpy(), ups["minibatch"].to_numpy()
    update_slices: dict[int, list[_Slice]] = defaultdict(list)
    main_track = None

    def update_slice(pid: int, tid: int, start: float, end: float) -> _Slice:
        at = int(np.searchsorted(u_t, end, side="left"))
        if at < len(u_t) and abs(u_t[at] - end) <= 1e-9 * max(1.0, abs(end)):
            v = int(u_version[at])
            s = _Slice(pid, tid, f"update v{v} (mini-batch {u_minibatch[at]})", start, end,
                       {"version": v, "gradients": int(u_gradients[at]),
                        "minibatch": int(u_minibatch[at])}, version=v)
            update_slices[v].append(s)
            return s
        return _Slice(pid, tid, "update (applied nothing)", start, end)

    for (kind, index), track in sorted(timeline.updaters.items()):
        if kind == "node_update":
            pid, tid = NODE_PID + index, next(tids)
        else:
            pid, tid = server_pid, next(tids)
        order[(pid, tid)] = UPDATE_ORDER + index
        thread_names[(pid, tid)] = UPDATE_NAMES.get(kind, kind)
        main_track = main_track or (pid, tid)
        start, end, value = track.columns()
        for i in np.flatnonzero((start <= hi) & (end >= lo)).tolist():
            if kind == "node_update" and value[i] == 0:
                tracks[(pid, tid)].append(_Slice(pid, tid, "Allreduce", float(start[i]), float(end[i])))
            else:
                tracks[(pid, tid)].append(update_slice(pid, tid, float(start[i]), float(end[i])))
    if main_track is None:
        kind = timeline.kinds[0] if timeline.kinds else "server"
        main_track = (server_pid, next(tids))
        order[main_track] = UPDATE_ORDER
        thread_names[main_track] = UPDATE_NAMES.get(kind, kind)
    for i in np.flatnonzero((u_t >= lo) & (u_t <= hi)).tolist():
        v = int(u_version[i])
        if v not in update_slices:
            tracks[main_track].append(update_slice(*main_track, float(u_t[i]), float(u_t[i])))

    for slices in tracks.values():
        _clip(slices)
    everything = sorted((s for slices in tracks.values() for s in slices),
                        key=lambda s: s.start)

    # the cap: cut the window at the first slice that would pass it
    room = max_events - 2 * (len({p for p, _ in thread_names}) + len(thread_names)) - 2
    cost = np.fromiter((1 + FLOW_EVENTS * (s.gradient >= 0) for s in everything), dtype=np.int64,
                       count=len(everything))
    capped = bool(cost.sum() > room)
    if capped:
        cut = int(np.searchsorted(np.cumsum(cost), max(room, 0), side="right"))
        hi = everything[cut].start if cut < len(everything) else hi
        everything = [s for s in everything if s.start < hi]

    events = _metadata(result, nodes, thread_names, order)
    for s in everything:
        # rounded to the nanosecond at both ends, so that a slice that ends
        # where the next begins still does in the file
        ts = round(s.start * US, 3)
        event = {"name": s.name, "ph": "X", "ts": ts,
                 "dur": max(0.0, round(round(s.end * US, 3) - ts, 3)), "pid": s.pid, "tid": s.tid}
        if s.args:
            event["args"] = s.args
        events.append(event)
    # flows: from a step's middle to its update's (both ends inside the
    # slices they bind to); only where both are in the trace
    node_of = grads["node"].to_numpy()
    in_trace = defaultdict(list)
    for s in everything:
        if s.version >= 0:
            in_trace[s.version].append(s)
    flows = 0
    for s in everything:
        if s.gradient < 0:
            continue
        targets = in_trace.get(int(g_applied[s.gradient]))
        if not targets:
            continue
        node_pid = NODE_PID + int(node_of[s.gradient])
        target = next((t for t in targets if t.pid == node_pid), targets[0])
        common = {"name": "gradient", "cat": "gradient", "id": s.gradient}
        events.append({**common, "ph": "s", "ts": round((s.start + s.end) / 2 * US, 3),
                       "pid": s.pid, "tid": s.tid})
        events.append({**common, "ph": "f", "bp": "e",
                       "ts": round((target.start + target.end) / 2 * US, 3),
                       "pid": target.pid, "tid": target.tid})
        flows += 1
    versions = {s.version for s in everything if s.version >= 0}
    gradients = sum(1 for s in everything if s.gradient >= 0)
    end = float(result.updates["t"].iloc[-1]) if len(result.updates) else 0.0
    return Trace(events, (lo, hi), max_events, capped, gradients, len(versions), flows,
                 run_end_s=end)


def _metadata(result: Result, nodes: int, thread_names: dict[tuple[int, int], str],
              order: dict[tuple[int, int], int]) -> list[dict]:
    """Names and order of every process and thread in the trace."""
    events: list[dict] = []
    kinds = result.timeline.kinds if result.timeline is not None else ()
    server = next((SERVER_NAMES[k] for k in kinds if k in SERVER_NAMES), "parameter server")
    for pid in sorted({p for p, _ in thread_names}):
        node = pid - NODE_PID
        name = f"node {node}" if node < nodes else server
        events.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
                       "args": {"name": name}})
        events.append({"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0,
                       "args": {"sort_index": pid}})
    for (pid, tid), name in sorted(thread_names.items()):
        events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                       "args": {"name": name}})
        events.append({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid,
                       "args": {"sort_index": order[(pid, tid)]}})
    return events


def write_trace(trace: Trace, result: Result, path: Path) -> None:
    """The trace as one JSON object, written as it goes (a large trace is
    never one string in memory)."""
    other = {"scenario": result.scenario.name, "seed": result.seed,
             "time_unit": "simulated microseconds",
             "window_s": [trace.window_s[0], None if math.isinf(trace.window_s[1])
                          else trace.window_s[1]],
             "max_events": trace.max_events, "capped": trace.capped,
             "gradients": trace.gradients, "updates": trace.updates, "flows": trace.flows}
    with open(path, "w", encoding="utf-8") as f:
        f.write(TRACE_HEAD.decode())
        f.write(json.dumps(other))
        f.write(', "traceEvents": [\n')
        for i, event in enumerate(trace.events):
            if i:
                f.write(",\n")
            f.write(json.dumps(event, separators=(",", ":")))
        f.write("\n]}\n")
