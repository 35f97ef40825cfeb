"""Bookings (asgdsim/booking.py): FIFO resources whose idle gaps, left by
transfers over several at once, are taken by later transfers that fit, in
the simulator's links and the closed form's skeleton alike."""

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
