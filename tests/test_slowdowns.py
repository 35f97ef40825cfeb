"""Links that slow down for a while (faults.link_slowdowns): the end of a
transfer under a rate profile, exact timelines on links, the Allreduce and
a whole learner's loop, the closed form's label, and bad keys refused."""

import math

import numpy as np
import pytest
import simpy

from asgdsim import predict, simulate
from asgdsim.components.link import Link, transfer_over
from asgdsim.components.slowdown import RateProfile, profile_of
from asgdsim.components.sprint import Allreduce
from asgdsim.costs import costs_of
from asgdsim.scenario import ScenarioError, load_scenario, resolved_yaml
from asgdsim.structure import loop_of

from conftest import make


def test_a_transfer_goes_at_each_rate_for_its_part():
    half = RateProfile(((10.0, 20.0, 0.5),))
    assert half.end(0.0, 4.0) == 4.0                       # before the window
    assert half.end(8.0, 4.0) == 14.0                      # 2 s at full rate, 2 s of work at half
    assert half.end(12.0, 2.0) == 16.0                     # inside
    assert half.end(18.0, 3.0) == 22.0                     # 1 s of work in the window, 2 after
    assert half.end(5.0, 20.0) == 30.0                     # across: 5 + 5 (10 s) + 10
    assert half.end(25.0, 1.0) == 26.0                     # after


def test_overlapping_windows_multiply():
    both = profile_of([(0.0, 10.0, 0.5), (5.0, 15.0, 0.5)])
    assert both.windows == ((0.0, 5.0, 0.5), (5.0, 10.0, 0.25), (10.0, 15.0, 0.5))
    # 2.5 s of work by 5 s, 1.25 by 10 s, 2.5 by 15 s
    assert both.end(0.0, 6.25) == pytest.approx(15.0)
    assert profile_of([(0.0, 1.0, 1.0)]) is None


def test_a_link_queues_transfers_under_its_profile():
    env = simpy.Environment()
    link = Link(env, "port_out[0]")
    link.profile = RateProfile(((1.0, 3.0, 0.5),))
    ends = []

    def one(duration):
        yield from link.transfer(duration)
        ends.append(env.now)

    env.process(one(2.0))      # 1 s at full rate, 1 s of work in 2 s: ends at 3
    env.process(one(1.0))      # queued: starts at 3, full rate
    env.run()
    assert ends == [3.0, 4.0]
    assert link.busy_s == pytest.approx(4.0)   # the link is occupied for what it took


def test_a_path_goes_at_its_slowest_links_pace():
    env = simpy.Environment()
    fast, slow = Link(env, "port_out[0]"), Link(env, "server_port_in")
    slow.profile = RateProfile(((0.0, 100.0, 0.25),))
    env.process(transfer_over(env, (fast, slow), 1.0))
    env.run()
    assert env.now == 4.0 and fast.free_at == slow.free_at == 4.0


def test_the_allreduce_is_stretched_by_a_network_slowdown():
    env = simpy.Environment()
    allreduce = Allreduce(env, 2, 1.0)
    allreduce.profile = RateProfile(((0.5, 10.0, 0.5),))
    done = allreduce.join([], 0)
    allreduce.join([], 1)
    env.run(done)
    assert env.now == pytest.approx(1.5)       # 0.5 s at full rate, 0.5 s of work at half
    assert allreduce.busy_s == pytest.approx(1.5)


def test_a_learners_loop_pays_the_slowed_network_exactly():
    """One learner, fixed steps: each gradient's cycle is its step plus its
    stages; halving the network's rate for the whole run adds exactly the
    network stages' durations once more."""
    base = dict(algorithm={"kind": "async"}, timing__communication="modelled",
                cluster__gpus_per_node=1, stop__gradients=30)
    healthy = make(**base)
    slowed = make(**base, faults={"link_slowdowns": [
        {"links": "network", "from": 0, "to": "1 h", "factor": 0.5}]})
    loop = loop_of(healthy, costs_of(healthy))
    network = sum(st.duration_s for st in loop.stages
                  if any(h.startswith(("port_", "server_port")) for h in st.holds))
    assert network > 0
    gap = lambda sc: np.diff(simulate(sc).gradients["t_applied"].to_numpy())  # noqa: E731
    np.testing.assert_allclose(gap(slowed), gap(healthy) + network, rtol=1e-9)


def test_a_window_only_slows_what_it_covers():
    base = dict(algorithm={"kind": "sync"}, timing__communication="modelled",
                cluster__gpus_per_node=2, stop__updates=40)
    healthy = simulate(make(**base)).updates["t"].to_numpy()
    window = (healthy[9], healthy[19])
    slowed = simulate(make(**base, faults={"link_slowdowns": [
        {"links": "host_link", "from": float(window[0]), "to": float(window[1]), "factor": 0.2}]}))
    t = slowed.updates["t"].to_numpy()
    np.testing.assert_allclose(t[:10], healthy[:10], rtol=1e-12)     # before the window
    assert (t[10:] > healthy[10:]).all()
    # after the window every round is as long as a healthy one again
    np.testing.assert_allclose(np.diff(t[25:]), np.diff(healthy[25:]), rtol=1e-9)


@pytest.mark.parametrize("kind", ["sprint", "allreduce", "local-sgd", "downpour", "ssp", "k-sync"])
def test_every_kind_runs_under_a_slowdown_and_is_labelled(kind):
    knob = {"k-sync": {"k": 2}, "ssp": {"staleness_bound": 1}, "local-sgd": {"period": 2}}
    algorithm = {"kind": kind, **knob.get(kind, {})}
    faults = {"link_slowdowns": [{"links": "network", "from": "1 s", "to": "5 s", "factor": 0.1},
                                 {"links": "disk", "from": 0, "to": "2 s", "factor": 0.5}]}
    sc = make(algorithm=algorithm, timing__communication="modelled", cluster__nodes=2,
              cluster__gpus_per_node=2, faults=faults, stop__gradients=200)
    res = simulate(sc)
    assert res.updates["minibatch"].sum() == res.gradients["samples"].sum()
    assert "links slow down" in predict(sc).laws["assumptions"]
    assert math.isfinite(res.summary["epoch_time_s"])


def test_a_slowdown_is_written_back_as_it_was_read(tmp_path):
    sc = make(faults={"link_slowdowns": [{"links": "network", "from": "10 min", "to": "20 min",
                                          "factor": 0.5}]})
    path = tmp_path / "resolved.yaml"
    path.write_text(resolved_yaml(sc))
    assert "from: 600.0" in path.read_text()
    assert load_scenario(path) == sc


def test_bad_slowdowns_are_refused():
    with pytest.raises(ScenarioError, match=r"faults\.link_slowdowns\.0\.links.*'network'"):
        make(faults={"link_slowdowns": [{"links": "wifi", "from": 0, "to": 1, "factor": 0.5}]})
    with pytest.raises(ScenarioError, match=r"faults\.link_slowdowns\.0.*'to' after 'from'"):
        make(faults={"link_slowdowns": [{"links": "disk", "from": 5, "to": 1, "factor": 0.5}]})
    with pytest.raises(ScenarioError, match=r"faults\.link_slowdowns\.0\.factor"):
        make(faults={"link_slowdowns": [{"links": "disk", "from": 0, "to": 1, "factor": 0}]})
