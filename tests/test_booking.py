"""Bookings (asgdsim/booking.py): FIFO resources whose idle gaps, left by
transfers over several at once, are taken by later transfers that fit, in
the simulator's links and the closed form's skeleton alike."""

import pytest
import simpy

from asgdsim.booking import Booking, book, earliest
from asgdsim.components.link import Link, transfer_over
from asgdsim.skeleton import Skeleton


def test_one_resource_is_first_come_first_served():
    b = Booking()
    for now, duration, start in ((0.0, 2.0, 0.0), (1.0, 1.0, 2.0), (5.0, 1.0, 5.0)):
        assert earliest([b], now, duration) == start
        book(b, now, start, start + duration)
    assert b.free_at == 6.0 and b.gaps == []


def test_a_transfer_over_two_leaves_a_gap_that_a_fitting_one_takes():
    port, shard = Booking(), Booking()
    book(shard, 0.0, 0.0, 3.0)                    # the shard's port busy until 3
    start = earliest([port, shard], 0.0, 1.0)     # a part to it: waits, port idle 0..3
    assert start == 3.0
    for b in (port, shard):
        book(b, 0.0, start, start + 1.0)
    assert port.gaps == [(0.0, 3.0)]
    # a part to another (free) shard fits in the node's port's gap ...
    other = Booking()
    assert earliest([port, other], 0.5, 2.0) == 0.5
    for b in (port, other):
        book(b, 0.5, 0.5, 2.5)
    assert port.gaps == [(2.5, 3.0)]
    # ... and one that does not fit goes after the port's last booking
    assert earliest([port, Booking()], 1.0, 1.0) == 4.0
    # gaps that have passed are dropped
    assert earliest([port], 3.5, 0.1) == 4.0 and port.gaps == []


def test_the_simulator_and_the_skeleton_book_alike():
    # learner 0 sends to a busy shard A then to B; learner 1 on the same
    # node port sends to B: it takes the port while learner 0 waits for A
    stages = [[(("port", "A"), 1.0), (("port", "B"), 1.0)], [(("port", "B"), 1.0)]]
    skeleton = Skeleton()
    skeleton.booked["A"].free_at = 2.0
    walked = skeleton.walk([0.0, 0.5], stages)

    env = simpy.Environment()
    links = {name: Link(env, name) for name in ("port", "A", "B")}
    links["A"].free_at = 2.0
    ends = {}

    def learner(i, start):
        yield env.timeout(start)
        for k, (holds, duration) in enumerate(stages[i]):
            yield from transfer_over(env, [links[h] for h in holds], duration)
            ends[i, k] = env.now

    env.process(learner(0, 0.0))
    env.process(learner(1, 0.5))
    env.run()
    assert [ends[0, 0], ends[0, 1], ends[1, 0]] == [walked[0, 0], walked[0, 1], walked[1, 0]]
    assert (walked[1, 0], walked[0, 0], walked[0, 1]) == (1.5, 3.0, 4.0)


def test_bookings_never_overlap_and_take_the_earliest_start():
    # random requests over 1 to 3 of 3 resources against a brute force: the
    # booked intervals of a resource never overlap, and no start between now
    # and the one chosen would have had every resource free for the whole
    # transfer (the candidates: now and every booked interval's end)
    import random

    for trial in range(300):
        rng = random.Random(trial)
        bookings = [Booking() for _ in range(3)]
        held: list[list[tuple[float, float]]] = [[] for _ in range(3)]
        now = 0.0

        def free(i, start, end):
            return all(end <= lo or start >= hi for lo, hi in held[i])

        for _ in range(15):
            now += rng.choice([0.0, 0.0, 0.5, 1.0, 2.0])
            which = rng.sample(range(3), rng.choice([1, 2, 2, 3]))
            duration = rng.choice([0.5, 1.0, 1.0, 2.0, 3.0])
            start = earliest([bookings[i] for i in which], now, duration)
            assert start >= now
            assert all(free(i, start, start + duration) for i in which), (trial, start)
            sooner = {now} | {hi for i in which for _, hi in held[i] if now < hi < start}
            assert not any(all(free(i, t, t + duration) for i in which) for t in sooner if t < start)
            for i in which:
                book(bookings[i], now, start, start + duration)
                held[i].append((start, start + duration))


def test_a_transfer_across_busy_leaves_takes_no_gap_it_would_overrun():
    # p2 busy until 2 leaves p1 a gap [0, 2]; a transfer over p1 whose leaf
    # link is busy until 10 would end at 10.05, past the gap: it waits for
    # p1 to fall free (3), and p1 is booked until 10.05, not double-booked
    from asgdsim.components.link import Path

    env = simpy.Environment()
    p1, p2, p3, leaf = (Link(env, name) for name in ("p1", "p2", "p3", "leaf_up"))

    def busy():
        yield from p2.transfer(2.0)

    def waits():
        yield from Path(env, [p1, p2], [leaf], 0.1).transfer(1.0)

    def stretched():
        leaf.free_at = 10.0
        yield from Path(env, [p1, p3], [leaf], 0.1).transfer(0.5)

    def later():
        yield env.timeout(4.0)
        yield from p1.transfer(1.0)

    for process in (busy, waits, stretched, later):
        env.process(process())
    env.run()
    assert p1.free_at == 11.05 and p1.gaps == [] and env.now == 11.05


def test_sharded_rounds_are_not_chaotic():
    # sync of OverFeat over 4 shards and 256 K80 dies: holding a node's port
    # idle while a part waited for a busy shard took 3,461 s an epoch with
    # fixed steps and 7,242 s with a step noise of cv 0.002; with the gaps
    # booked, a noise that small moves the epoch by no more than itself,
    # and the closed form's walk books the same way (README, "Timing")
    from asgdsim.agreement import check

    data = {"name": "sharded-sync", "seed": 1636519809,
            "workload": {"model": "overfeat", "dataset_samples": 384000, "sub_batch": 32},
            "cluster": {"machine": "aws-p2.8xlarge", "nodes": 32},
            "algorithm": {"kind": "sync", "servers": 4, "placement": "dedicated"},
            "timing": {"compute": "roofline", "jitter": "none", "communication": "modelled"},
            "stop": {"updates": 46}}
    fixed = check(data)
    data["timing"]["jitter"] = {"distribution": "lognormal", "cv": 0.002}
    noisy = check(data)
    assert fixed["epoch_time_sim"] == pytest.approx(fixed["epoch_time_closed"], rel=1e-9)
    # (held idle, the noise doubled the epoch; booked, it moves it 0.1 %)
    assert noisy["epoch_time_sim"] == pytest.approx(fixed["epoch_time_sim"], rel=0.005)
    assert noisy["epoch_time_closed"] == pytest.approx(noisy["epoch_time_sim"], rel=0.01)


def test_ties_go_in_the_order_asked_or_the_other_way():
    # two learners ask for one link at the same instant: the first asked is
    # served first, as the simulator's events are; last_first turns that round
    stages = [[(("link",), 1.0)], [(("link",), 1.0)]]
    assert Skeleton().walk([0.0, 0.0], stages)[:, 0].tolist() == [1.0, 2.0]
    assert Skeleton(last_first=True).walk([0.0, 0.0], stages)[:, 0].tolist() == [2.0, 1.0]
