"""GPU collectives calibrated on public NCCL measurements
(asgdsim/catalog/nccl_allreduce.csv, fitted by asgdsim.catalog.nccl).

Tolerance for the held-out rows, fixed before looking at their errors:
- the median absolute error at most 15 %: the bar the DeepBench rings are
  held to (test_accuracy.test_held_out_four_node_rings), the same statistic
  on the same kind of figure;
- every row within 50 %: an alpha-beta ring knows one protocol, while NCCL
  switches between LL (8-byte stores carrying 4 bytes of data: half the
  rate), LL128 and Simple with the message size, so between the small and
  the large messages it can be at most a factor of 2 slow or fast.
"""

import statistics

import pytest

from asgdsim import catalog
from asgdsim.catalog import nccl
from asgdsim.costs import transfer_time
from asgdsim.specs import LinkSpec


def _link(name):
    return LinkSpec.model_validate(catalog.lookup("networks", name))


def test_every_row_names_its_source_and_role():
    rows = nccl.rows()
    assert len(rows) >= 20
    for r in rows:
        assert r["source"].strip(), r
        assert r["role"] in ("fit_bandwidth", "fit_latency", "check"), r
        assert r["time_us"] or r["busbw_GBps"], r


def test_the_catalog_holds_the_fitted_figures():
    for name, figures in nccl.fit().items():
        link = _link(name)
        assert link.collective_efficiency == pytest.approx(figures["collective_efficiency"], rel=2e-3)
        assert link.collective_latency == pytest.approx(figures["collective_latency"], rel=2e-3)


def test_held_out_measurements_are_reproduced():
    errors = [abs(err) for _, err in nccl.errors("check")]
    assert len(errors) == 18
    assert statistics.median(errors) <= 0.15, errors
    assert max(errors) <= 0.5, errors


def test_point_to_point_transfers_keep_the_raw_link():
    nvlink = _link("nvlink3")
    assert nvlink.bandwidth == pytest.approx(300e9)
    assert transfer_time(nvlink, 3e9) == pytest.approx(nvlink.latency + 0.01)
    seen = nvlink.for_collectives(2)
    assert seen.bandwidth == pytest.approx(2 * nvlink.collective_efficiency * 300e9)
    assert seen.latency == nvlink.collective_latency


def test_a_link_without_figures_is_seen_whole_by_collectives():
    ethernet = _link("10gbe")
    assert ethernet.for_collectives() == ethernet
