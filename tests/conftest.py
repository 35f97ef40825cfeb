"""Shared scenario builders and the statistics the tests derive tolerances from."""

from __future__ import annotations

import copy
import os

import numpy as np
import pytest
from hypothesis import settings

from asgdsim.scenario import scenario_from_dict

# property tests draw the same examples on every run and machine: a failure
# found once is found again (the tests' own settings keep this)
settings.register_profile("reproducible", derandomize=True)
settings.load_profile("reproducible")

# the usual umask, so tests can check that what asgdsim writes is readable by
# others (0644); Dask's worker processes inherit it
os.umask(0o022)

BASE = {
    "name": "test",
    "workload": {"model": "alexnet", "dataset_samples": 1000, "sub_batch": 1},
    "cluster": {"nodes": 1, "gpus_per_node": 2, "gpu": "K80", "network": "ib-fdr"},
    "algorithm": {"kind": "async"},
    "timing": {"compute": {"distribution": "deterministic", "mean": 1.0},
               "communication": "ideal"},
    "stop": {"gradients": 10},
}


def make(**overrides):
    """A scenario from BASE with dotted-key overrides (``timing__compute=...``)."""
    data = copy.deepcopy(BASE)
    flat = {key.replace("__", "."): value for key, value in overrides.items()}
    if any(key.startswith("stop.") for key in flat):
        data["stop"] = {}   # the test's stop condition replaces the default one
    return scenario_from_dict(data, flat)


def outside_assumptions(data: dict) -> str | None:
    """What the closed form says it leaves out of a scenario written out
    in full (an agreement draw kept as a test), or None."""
    from asgdsim import predict

    return predict(scenario_from_dict(data, source=data["name"])).outside_assumptions


@pytest.fixture
def scenario():
    return make


def batch_means_se(x: np.ndarray, batches: int = 40) -> float:
    """Standard error of the mean of a correlated series, by batch means.

    Consecutive gradients' staleness values are correlated; averaging over
    ``batches`` long contiguous batches makes the batch means nearly
    independent, so their spread estimates the mean's sampling error.
    """
    x = np.asarray(x, dtype=float)
    usable = len(x) - len(x) % batches
    means = x[:usable].reshape(batches, -1).mean(axis=1)
    return float(means.std(ddof=1) / np.sqrt(batches))


def check_pmf(samples: np.ndarray, pmf, z: float = 4.0) -> None:
    """Every probability within z batch-means standard errors, and the
    total-variation distance within the sum of those bounds over the support."""
    samples = np.asarray(samples)
    support = np.union1d(pmf.values, np.unique(samples))
    budget = 0.0
    for value in support:
        indicator = (samples == value).astype(float)
        p_hat, p = indicator.mean(), pmf.prob(int(value))
        # an indicator with no variance in the sample still has binomial error
        se = max(batch_means_se(indicator), np.sqrt(max(p * (1 - p), 1e-12) / len(samples)))
        assert abs(p_hat - p) <= z * se + 1e-12, (value, p_hat, p, se)
        budget += z * se
    from asgdsim.pmf import Pmf, total_variation
    assert total_variation(Pmf.of_samples(samples), pmf) <= 0.5 * budget


@pytest.fixture(scope="session")
def shipped_run():
    """A shipped scenario's run by file stem, simulated once per session
    (the regression suite and the claims test read the same runs)."""
    from pathlib import Path

    from asgdsim import load_scenario, simulate

    scenarios = Path(__file__).resolve().parents[1] / "scenarios"
    runs = {}

    def run(stem: str):
        if stem not in runs:
            runs[stem] = simulate(load_scenario(scenarios / f"{stem}.yaml"))
        return runs[stem]
    return run
