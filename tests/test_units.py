"""Quantities with units: each kind of unit name (every prefix, bits and
bytes, the spellings of a rate and a time) to its exact factor, and a
wrong unit refused with what was expected."""

import pytest

from asgdsim.units import UnitError, parse_quantity


@pytest.mark.parametrize("text, dimension, value", [
    ("5 us", "time", 5e-6),
    ("5 \u00b5s", "time", 5e-6),          # the micro sign
    ("5 \u03bcs", "time", 5e-6),          # the Greek mu a keyboard gives
    ("120 ms", "time", 0.12),
    ("2 min", "time", 120.0),
    ("56 Gb/s", "bandwidth", 7e9),
    ("10 Gbps", "bandwidth", 1.25e9),
    ("10 Gbit/s", "bandwidth", 1.25e9),
    ("10 minutes", "time", 600.0),
    ("6 GB", "bytes", 6e9),
    ("1 GiB", "bytes", 2.0**30),
    ("4.37 TFLOP/s", "flop_rate", 4.37e12),
    ("3 ns", "time", 3e-9),
    ("2 h", "time", 7200.0),
    ("1.5 sec", "time", 1.5),
    ("10 GBps", "bandwidth", 1e10),
    ("1 Mibit/s", "bandwidth", 2.0**20 / 8),
    ("16 Gbit", "bytes", 2e9),           # a size in bits
    ("15.5 GFLOP", "flops", 15.5e9),
    ("2 TFLOPS", "flop_rate", 2e12),
    (3.5, "time", 3.5),                  # a plain number is in the base unit
])
def test_each_unit_to_its_exact_factor(text, dimension, value):
    assert parse_quantity(text, dimension) == pytest.approx(value, rel=1e-15)


@pytest.mark.parametrize("text, dimension, said", [
    ("5 parsecs", "time", "unknown time unit 'parsecs'.*ns, us"),
    ("10 gbps", "bandwidth", "did you mean 'GBps' or 'Gbps'"),   # a case is a bit or a byte
    ("10 Gbitps", "bandwidth", "unknown bandwidth unit 'Gbitps'"),
    ("10 GB", "bandwidth", "unknown bandwidth unit 'GB'"),
    (True, "bytes", "expected a size such as '6 GB'"),
    ("fast", "time", "expected a time such as '120 ms'"),
])
def test_a_wrong_unit_is_refused_with_what_was_expected(text, dimension, said):
    with pytest.raises(UnitError, match=said):
        parse_quantity(text, dimension)


@pytest.mark.parametrize("value, dimension", [
    (10, "bandwidth"), ("10", "bandwidth"), (999_999.0, "bandwidth"),
    (15.7, "flop_rate"), ("4.37", "flop_rate"),
])
def test_a_rate_without_its_unit_below_any_real_device_is_refused(value, dimension):
    """'bandwidth: 10' meant 10 GB/s or Gb/s, not 10 bytes a second: the
    message says what it would be and how to write either."""
    base = "B/s" if dimension == "bandwidth" else "FLOP/s"
    with pytest.raises(UnitError, match=rf"has no unit, so it would be {float(value):g} {base}"
                                        rf".*or '{float(value):g} {base}' if that is meant"):
        parse_quantity(value, dimension)


@pytest.mark.parametrize("value, dimension, expected", [
    (1e6, "bandwidth", 1e6), ("1e9", "bandwidth", 1e9), (1e13, "flop_rate", 1e13),
    ("10 B/s", "bandwidth", 10.0), ("15 FLOP/s", "flop_rate", 15.0),   # the unit says it is meant
    (0, "bandwidth", 0.0),               # left to the field's own bound (> 0)
    (350, "time", 350.0),                # a time or a size has no floor
    (16, "bytes", 16.0),
])
def test_a_plain_number_at_a_real_rate_or_with_its_unit_is_taken(value, dimension, expected):
    assert parse_quantity(value, dimension) == expected


def test_a_scenario_asgdsim_resolved_reads_back_however_slow_its_rates(tmp_path):
    """A resolved scenario writes every quantity as a plain base-unit number:
    a test's link of 500 B/s comes back 500.0, which is no unit left out.
    A user's file with the same plain number is refused."""
    from asgdsim import load_scenario, simulate
    from asgdsim.errors import ScenarioError
    from asgdsim.scenario import resolved_yaml, scenario_from_dict

    data = {"name": "slow", "workload": {"model": "resnet50", "dataset_samples": 1000,
                                         "sub_batch": 8},
            "cluster": {"gpu": "V100", "nodes": 2, "gpus_per_node": 1,
                        "network": {"name": "slow", "bandwidth": "500 B/s", "latency": 0}},
            "algorithm": {"kind": "async"}, "stop": {"gradients": 4}}
    sc = scenario_from_dict(data)
    path = tmp_path / "scenario.yaml"
    path.write_text(resolved_yaml(sc))
    again = load_scenario(path)
    assert again.cluster.network.bandwidth == 500.0 and again == sc
    assert simulate(sc).summary["gradients"] == 4        # its re-check of the dump
    path.write_text(path.read_text().split("\n", 1)[1])  # no longer asgdsim's header
    with pytest.raises(ScenarioError, match="cluster.network.bandwidth: 500.0 has no unit"):
        load_scenario(path)
