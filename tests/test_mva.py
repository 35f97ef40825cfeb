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
