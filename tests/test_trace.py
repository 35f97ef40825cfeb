"""``run --trace``: trace.json follows the trace-event format's rules, and
every gradient and update of its window is in it, with its flow."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path

import pytest

from asgdsim import simulate
from asgdsim.cli import main
from asgdsim.timeline import Timeline
from asgdsim.trace import trace_events, write_trace

US = 1e6


def check_format(doc: dict) -> list[dict]:
    """The rules of the trace-event format this file relies on; the events."""
    assert isinstance(doc["traceEvents"], list)
    events = doc["traceEvents"]
    named_processes, named_threads = set(), set()
    used_threads = set()
    tracks = defaultdict(list)
    flows = defaultdict(dict)
    for e in events:
        assert e["ph"] in {"X", "M", "s", "f"}, e
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int), e
        if e["ph"] == "M":
            if e["name"] == "process_name":
                named_processes.add(e["pid"])
            elif e["name"] == "thread_name":
                named_threads.add((e["pid"], e["tid"]))
            assert e["name"] in {"process_name", "thread_name", "process_sort_index",
                                 "thread_sort_index"}
            continue
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0, e
        used_threads.add((e["pid"], e["tid"]))
        if e["ph"] == "X":
            assert isinstance(e["name"], str) and e["name"]
            assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0, e
            tracks[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
        else:
            assert e["id"] not in flows[e["ph"]], f"flow id {e['id']} used twice"
            flows[e["ph"]][e["id"]] = e
    assert {p for p, _ in used_threads} <= named_processes
    assert used_threads <= named_threads
    # a thread id names one thread in the whole file
    assert len({t for _, t in named_threads}) == len(named_threads)
    # slices of one thread nest: here, none overlaps the next
    for slices in tracks.values():
        slices.sort()
        for (a0, a1), (b0, b1) in zip(slices, slices[1:]):
            assert b0 >= a1 - 1e-6, (a0, a1, b0, b1)
    # every flow starts and ends once, each end inside a slice of its thread
    assert flows["s"].keys() == flows["f"].keys()
    for phase in ("s", "f"):
        for e in flows[phase].values():
            assert e["cat"] == "gradient" and (phase == "s" or e["bp"] == "e")
            assert any(a - 1e-3 <= e["ts"] <= b + 1e-3 for a, b in tracks[(e["pid"], e["tid"])]), e
    return events


def traced(sc, window=(0.0, math.inf), max_events=200_000):
    res = simulate(sc, timeline=Timeline(until=window[1], limit=max_events, since=window[0]))
    return res, trace_events(res, window, max_events)


def load(trace, res, tmp_path) -> dict:
    path = tmp_path / "trace.json"
    write_trace(trace, res, path)
    return json.loads(path.read_text())


def check_complete(doc: dict, res) -> None:
    """Every gradient whose step lies in the window, and every update
    published in it, is a slice; every applied gradient whose update is
    there too has its flow, from its step to its update."""
    lo, hi = doc["otherData"]["window_s"]
    hi = math.inf if hi is None else hi
    events = doc["traceEvents"]
    steps = {e["args"]["gradient"]: e for e in events
             if e["ph"] == "X" and "gradient" in e.get("args", {})}
    updates = defaultdict(list)
    for e in events:
        if e["ph"] == "X" and "version" in e.get("args", {}):
            updates[e["args"]["version"]].append(e)
    g = res.gradients
    inside = g[(g["t_start"] >= lo) & (g["t_end"] < hi)]
    assert len(inside) > 0
    assert set(inside.index) <= set(steps)
    for row in inside.itertuples():
        args = steps[row.Index]["args"]
        assert (args["version_read"], args["version_applied"], args["staleness"],
                args["samples"]) == (row.version_read, row.version_applied, row.staleness,
                                     row.samples)
        step = steps[row.Index]
        # the step lies between taking the weights and reaching the server
        assert row.t_start * US - 1e-3 <= step["ts"]
        assert step["ts"] + step["dur"] <= row.t_end * US + 1e-3
    u = res.updates
    published = u[(u["t"] >= lo) & (u["t"] < hi)]
    assert set(published["version"]) <= set(updates)
    for row in published.itertuples():
        for e in updates[row.version]:
            assert e["args"]["minibatch"] == row.minibatch
            assert abs(e["ts"] + e["dur"] - row.t * US) <= 1e-3 * max(1, row.t)
    flows = {e["id"] for e in events if e["ph"] == "s"}
    for row, step in steps.items():
        if step["args"]["version_applied"] in updates:
            assert row in flows


KINDS = [
    ("async", {}), ("sync", {}), ("sprint", {"timing__update_interval": 0.5}),
    ("k-sync", {"algorithm__k": 1}), ("k-batch-sync", {"algorithm__k": 2}),
    ("allreduce", {}), ("downpour", {"algorithm__n_push": 2}),
    ("softsync", {"algorithm__n": 1}), ("local-sgd", {"algorithm__period": 2}),
]


@pytest.mark.parametrize("communication", ["ideal", "modelled"])
@pytest.mark.parametrize("kind,keys", KINDS, ids=[k for k, _ in KINDS])
def test_every_kind_traces_every_gradient_and_update(tmp_path, scenario, kind, keys,
                                                     communication):
    if kind == "sprint" and communication == "modelled":
        keys = {}
    sc = scenario(algorithm__kind=kind, cluster__nodes=2, workload__sub_batch=4,
                  timing__compute={"distribution": "exponential", "mean": 0.2},
                  timing__communication=communication, stop__gradients=60, **keys)
    res, trace = traced(sc)
    doc = load(trace, res, tmp_path)
    check_format(doc)
    check_complete(doc, res)
    names = {e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "thread_name"}
    assert any(n.startswith("GPU ") for n in names)
    if communication == "modelled":
        assert any("port" in n or "host_link" in n for n in names), names


def test_tracing_changes_no_number(scenario):
    sc = scenario(algorithm__kind="sprint", cluster__nodes=2, timing__communication="modelled",
                  timing__compute={"distribution": "exponential", "mean": 0.2},
                  stop__gradients=200)
    plain, (res, _) = simulate(sc), traced(sc)
    assert plain.gradients.equals(res.gradients) and plain.updates.equals(res.updates)
    assert plain.summary["simulated_time_s"] == res.summary["simulated_time_s"]


@pytest.mark.parametrize("placement", ["dedicated", "colocated"])
def test_each_transfer_is_named_after_its_stage(tmp_path, scenario, placement):
    """A new user's trial: with a weights' pull and a gradient's push of
    one size, every slice on a node's ports read 'pull / push' and every
    host-link slice 'gradient to host / weights to gpu' (the trace matched
    stages by link and duration): each transfer now carries its stage."""
    sc = scenario(algorithm={"kind": "sync", "servers": 2, "placement": placement},
                  cluster__nodes=2, timing__communication="modelled", stop__gradients=40)
    res, trace = traced(sc)
    events = check_format(load(trace, res, tmp_path))
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
               if e["name"] == "thread_name"}
    names = defaultdict(set)
    for e in events:
        if e["ph"] == "X" and (e["pid"], e["tid"]) in threads:
            names[threads[e["pid"], e["tid"]].partition("[")[0]].add(e["name"])
    assert not any(" / " in n for kinds in names.values() for n in kinds), dict(names)
    assert {"gradient to host", "weights to gpu"} <= names["host_link"]
    assert names["port_out"] >= {"push"} and names["port_in"] >= {"pull"}
    if placement == "dedicated":
        assert names["port_out"] == {"push"} and names["port_in"] == {"pull"}


def test_a_sprint_trace_has_a_process_per_node_and_their_update_threads(tmp_path, scenario):
    sc = scenario(algorithm__kind="sprint", cluster__nodes=3, cluster__gpus_per_node=2,
                  timing__communication="modelled", stop__gradients=40)
    res, trace = traced(sc)
    events = check_format(load(trace, res, tmp_path))
    processes = {e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert processes == {"node 0", "node 1", "node 2"}
    threads = defaultdict(set)
    for e in events:
        if e["name"] == "thread_name":
            threads[e["pid"]].add(e["args"]["name"])
    for names in threads.values():
        assert "update thread" in names and {"GPU 0 (learner 0)", "GPU 0 (learner 2)",
                                             "GPU 0 (learner 4)"} & names
    slices = {e["name"] for e in events if e["ph"] == "X"}
    assert "Allreduce" in slices and any(s.startswith("update v") for s in slices)
    assert any(s.startswith("batch read") for s in slices)


def test_the_cap_holds_and_the_window_is_a_whole_stretch(tmp_path, scenario):
    sc = scenario(algorithm__kind="async", cluster__nodes=2, timing__communication="modelled",
                  timing__compute={"distribution": "exponential", "mean": 0.2},
                  stop__gradients=400)
    res, trace = traced(sc, max_events=300)
    assert trace.capped and len(trace.events) <= 300
    doc = load(trace, res, tmp_path)
    check_format(doc)
    assert doc["otherData"]["capped"] and doc["otherData"]["window_s"][1] < res.summary[
        "simulated_time_s"]
    check_complete(doc, res)


def test_a_window_of_simulated_time(tmp_path, scenario):
    sc = scenario(algorithm__kind="async", cluster__nodes=2, timing__communication="modelled",
                  timing__compute={"distribution": "exponential", "mean": 0.2},
                  stop__gradients=400)
    end = simulate(sc).summary["simulated_time_s"]
    window = (end / 3, end / 2)
    res, trace = traced(sc, window=window)
    assert not trace.capped and trace.window_s == window
    doc = load(trace, res, tmp_path)
    check_format(doc)
    check_complete(doc, res)
    x = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert all(e["ts"] <= window[1] * US and e["ts"] + e["dur"] >= window[0] * US for e in x)


def test_a_late_window_is_not_lost_to_the_cap(tmp_path, scenario):
    """The timeline keeps nothing before the window, so a cap that the run's
    beginning alone would fill still leaves the window traced."""
    sc = scenario(algorithm__kind="async", cluster__nodes=2, timing__communication="modelled",
                  timing__compute={"distribution": "exponential", "mean": 0.2},
                  stop__gradients=600)
    end = simulate(sc).summary["simulated_time_s"]
    window = (0.8 * end, 0.9 * end)
    res, trace = traced(sc, window=window, max_events=400)
    assert trace.gradients > 0 and trace.window_s[0] == window[0]
    doc = load(trace, res, tmp_path)
    check_format(doc)
    check_complete(doc, res)


def small(tmp_path):
    path = tmp_path / "small.yaml"
    path.write_text("name: small\nworkload: {model: alexnet, dataset_samples: 2000, sub_batch: 8}\n"
                    "cluster: {nodes: 2, gpus_per_node: 2, gpu: K80, network: ib-fdr}\n"
                    "algorithm: {kind: sprint}\nstop: {epochs: 1}\n")
    return path


def test_cli_writes_trace_json_into_the_run_folder(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", str(small(tmp_path)), "--out", str(out), "--trace",
                 "--trace-window", "0.5 s..2 s"]) == 0
    captured = capsys.readouterr()
    assert "trace.json" in captured.out and "events" in captured.err
    doc = json.loads((out / "trace.json").read_text())
    check_format(doc)
    assert doc["otherData"]["window_s"] == [0.5, 2.0]
    assert not list(out.glob(".*"))         # no temporary file left behind
    # run again without --trace: the old trace would describe another run
    assert main(["run", str(small(tmp_path)), "--out", str(out), "--overwrite"]) == 0
    assert not (out / "trace.json").exists()


def test_cli_cap_implies_trace(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", str(small(tmp_path)), "--out", str(out), "--trace-max-events", "100"]) == 0
    assert len(json.loads((out / "trace.json").read_text())["traceEvents"]) <= 100
    assert "cap of 100 events" in capsys.readouterr().err


@pytest.mark.parametrize("window", ["10 GB", "2 s..1 s", "-1 s", "..", "abc", "nan s"])
def test_bad_trace_window_is_refused_naming_it(tmp_path, capsys, window):
    with pytest.raises(SystemExit) as exit_:
        main(["run", str(small(tmp_path)), "--out", str(tmp_path / "o"), "--trace-window", window])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "--trace-window" in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("scope", ["learner", "node"])
def test_failures_and_learners_of_two_gpus(tmp_path, scenario, scope):
    """Failed learners lose steps (never applied, drawn as plain steps); a
    learner of two GPUs is one track that says so."""
    sc = scenario(algorithm__kind="sprint" if scope == "node" else "async", cluster__nodes=2,
                  cluster__gpus_per_node=4, cluster__gpus_per_learner=2,
                  timing__communication="modelled",
                  timing__compute={"distribution": "exponential", "mean": 0.2},
                  faults={"failures": {"mtbf": 3.0, "repair": 1.0, "scope": scope}},
                  stop__gradients=300)
    res, trace = traced(sc)
    assert res.summary["faults"]["failures"] > 0
    doc = load(trace, res, tmp_path)
    events = check_format(doc)
    check_complete(doc, res)
    threads = {e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert "learner 0 (GPUs 0-1)" in threads and "learner 1 (GPUs 2-3)" in threads
    # a failure cuts the step it interrupts, at the failure
    lost = [e for e in events if e["ph"] == "X" and e["name"].startswith("step (lost")]
    downs = set((res.outages["down_s"] * US).round(3))
    assert lost and all(round(e["ts"] + e["dur"], 3) in downs for e in lost)


@pytest.mark.parametrize("flag, value, words", [
    ("--trace-max-events", "1", "alone pass the cap of 1 events"),
    ("--trace-window", "1000 h..2000 h", "the window starts after the run's last update")])
def test_a_trace_with_nothing_of_the_run_says_why(flag, value, words, tmp_path, capsys):
    # a cap below the names of its processes and threads, or a window after the run
    scenario = Path(__file__).resolve().parents[1] / "scenarios" / "ideal-async-exponential.yaml"
    assert main(["run", str(scenario), "--trace", flag, value, "--set", "stop.gradients=500",
                 "--out", str(tmp_path / "t")]) == 0
    said = capsys.readouterr().err
    assert "0 gradients" in said and words in said
