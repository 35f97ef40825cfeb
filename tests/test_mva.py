"""Mean-value analysis against exact queueing results."""

import math

import pytest

from asgdsim.mva import Station, solve


@pytest.mark.parametrize("customers", [1, 2, 5, 12])
def test_exponential_service_is_the_exact_machine_repairman(customers):
    """N learners thinking Z, one exponential server of mean D (M/M/1//N):
    X = (1 - p0) / D with p0 = 1 / sum_k N! / (N - k)! (D / Z)^k."""
    think, service = 1.0, 0.3
    p0 = 1 / sum(math.factorial(customers) / math.factorial(customers - k) * (service / think) ** k
                  for k in range(customers + 1))
    cycle, utilisation, _ = solve([Station("gpu", think, servers=0),
                                   Station("link", service, service_cv2=1.0)], customers)
    assert customers / cycle == pytest.approx((1 - p0) / service, rel=1e-12)
    assert utilisation["link"] == pytest.approx(1 - p0, rel=1e-12)


def test_saturation_converges_to_the_bottleneck_bound():
    cycle, utilisation, busiest = solve([Station("gpu", 1.0, servers=0),
                                         Station("port", 0.1), Station("cpu", 0.05)], 200)
    assert 200 / cycle == pytest.approx(1 / 0.1, rel=1e-3)
    assert busiest == "port" and utilisation["port"] == pytest.approx(1.0, rel=1e-3)


def test_one_learner_never_waits():
    cycle, _, busiest = solve([Station("gpu", 1.0, servers=0), Station("link", 0.2),
                               Station("disks", 0.4, servers=4)], 1)
    assert cycle == pytest.approx(1.6) and busiest == "gpu"


def test_turns_walked_against_one_long_run_of_the_same_queue():
    """The walk of turns at a fixed-time server (6 learners, 21.8 ms a
    turn, the rest of the cycle 88 ms and a lognormal step of 23.5 ms, cv
    0.86: the knee of agreement draw seed 19 random-30) against one long
    run of the same queue, served in order of arrival by a heap: within 4
    standard errors of the walk's 64 replicas, each 8 cycles measured."""
    import heapq

    import numpy as np

    from asgdsim.analytic import TURN_REPLICAS, TURNS_EACH, _turns_walked
    from asgdsim.distributions import Law

    n, turn, rest, cv = 6, 0.0218, 0.0881, 0.856
    law = Law("lognormal", "lognorm", scale=0.0235 / math.sqrt(1 + cv**2),
              shape=math.sqrt(math.log(1 + cv**2)))
    stations = [Station("gpu", law.mean, servers=0), Station("rest", rest, servers=0),
                Station("port", turn)]
    cycle = solve(stations, n, arrival_cv2=law.var / (law.mean + rest + turn) ** 2)[0]
    walked = _turns_walked(stations, n, law, cycle)
    steps = iter(law.sample(np.random.default_rng(3), 400_000 + n).tolist())
    coming = [rest + next(steps) for _ in range(n)]
    heapq.heapify(coming)
    done, last = [], 0.0
    for _ in range(400_000):
        last = max(last, heapq.heappop(coming)) + turn
        heapq.heappush(coming, last + rest + next(steps))
        done.append(last)
    spacing = np.diff(np.array(done[1000:]))
    measured = (TURNS_EACH - 2) * n
    batches = spacing[:len(spacing) // measured * measured].reshape(-1, measured).mean(axis=1)
    se = n * batches.std() / math.sqrt(TURN_REPLICAS)
    assert abs(walked - n * spacing.mean()) <= 4 * se
    assert walked > 1.05 * cycle        # the knee: the learners lose turns
    assert _turns_walked(stations, n, Law.constant(law.mean), cycle) == cycle
