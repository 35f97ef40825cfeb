"""Random mutations of valid scenarios are answered with exit 0 or 2, never
anything else, and quickly: the property behind the hostile corpus.

Hypothesis changes one to three keys of a shipped scenario (a value of
another type, a number out of range, a unit that does not fit, a key that
does not exist, a section removed) and the result goes through ``predict``,
which runs every check a run does and the closed form, but no simulation.
"""

from __future__ import annotations

import contextlib
import io
import time
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asgdsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
SEEDS = ["ideal-async-exponential.yaml", "tsubame-kfc-dl-vgg16.yaml", "kfc-vgg16-softsync.yaml",
         "dgx1-ssp-resnet50.yaml", "dutta-k-sync-exponential.yaml"]
KEYS = ["seed", "name", "workload", "workload.model", "workload.sub_batch",
        "workload.dataset_samples", "cluster", "cluster.nodes", "cluster.gpus_per_node",
        "cluster.gpu", "cluster.network", "cluster.machine", "cluster.gpus_per_learner",
        "algorithm", "algorithm.kind", "algorithm.n", "algorithm.k", "algorithm.staleness_bound",
        "timing", "timing.compute", "timing.compute.mean", "timing.jitter", "timing.communication",
        "timing.update_interval", "stop", "stop.epochs", "stop.gradients", "stop.time",
        "stop.updates", "no_such_key", "cluster.no_such_key"]
VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-10, 10), st.integers(-2**70, 2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
    st.sampled_from(["1 s", "1 ns", "1e9 s", "-3 ms", "56 Gb/s", "6 GB", "1 kg", "fast", "K80",
                     "vgg16", "sprint", "async", "ideal", "table", "1e12", "nan", ""]),
    st.lists(st.integers(0, 5), max_size=3),
    st.dictionaries(st.sampled_from(["a", "kind", "mean", "distribution", "time"]),
                    st.integers(0, 3), max_size=2),
)


def _set(data: dict, dotted: str, value) -> None:
    *parents, last = dotted.split(".")
    node = data
    for key in parents:
        if not isinstance(node.get(key), dict):
            node[key] = {}
        node = node[key]
    node[last] = value


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow],
          database=None)
@given(seed=st.sampled_from(SEEDS),
       changes=st.lists(st.tuples(st.sampled_from(KEYS), VALUES), min_size=1, max_size=3),
       drop=st.one_of(st.none(), st.sampled_from(KEYS)))
def test_mutated_scenarios_get_0_or_2(tmp_path_factory, seed, changes, drop):
    data = yaml.safe_load((ROOT / "scenarios" / seed).read_text())
    data["stop"] = {"gradients": 500}
    for dotted, value in changes:
        _set(data, dotted, value)
    if drop and "." not in drop:
        data.pop(drop, None)
    path = tmp_path_factory.mktemp("fuzz") / "mutated.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True))
    err = io.StringIO()
    started = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            status = main(["predict", str(path)])
        except SystemExit as exc:
            status = exc.code
    took = time.perf_counter() - started
    assert status in (0, 2), f"exit {status}: {err.getvalue()}\n{path.read_text()}"
    assert "Traceback" not in err.getvalue()
    assert took < 5, f"{took:.1f} s for\n{path.read_text()}"
