"""Mean-value analysis of a closed queueing network: contention in closed form.

Learners cycle through the things they share (host links, disks, the
accumulator's mutex, a server's ports and CPU) and the things they own (their
GPU). That is a closed network with one customer per learner, and exact
mean-value analysis (Reiser and Lavenberg, 1980) gives its throughput and
each station's queue without simulating: for n = 1..N customers,

    R_k(n) = D_k (1 + Q_k(n - 1))      (a queue)      R_k(n) = D_k   (a delay)
    X(n) = n / sum_k R_k(n)            Q_k(n) = X(n) R_k(n)

where D_k is the time one cycle spends at station k. That recursion is
exact for exponential service; the transfers here take a fixed time, and an
arrival then waits only half a service for the one in progress, so the
residence uses the residual-time correction (Reiser; Bard and Schweitzer)

    R_k(n) = D_k (1 + Q_k(n - 1) - U_k(n - 1)) + U_k(n - 1) D_k (1 + cv_k^2) / 2

with U = X D the utilisation, which is the line above when cv = 1. The
learners' arrivals are only as random as their steps: identical fixed-time
learners settle into a staggered schedule and never queue below the
bottleneck. So the waiting is scaled by ``arrival_cv2`` (the squared cv of a
learner's cycle, Kingman's factor for the arrival side): 1 gives the
recursion above, 0 the deterministic network, whose throughput is exactly
min(N / sum D, c / D_max). A station
of c identical servers that each serve their own share of the learners (a
node's disk, a pair of GPUs' host link) is folded in by Seidmann's
approximation: one queue of demand D / c plus a delay of D (c - 1) / c.
Exact for exponential single servers, approximate otherwise; at saturation
the throughput converges to the bottleneck bound X = c / D of the busiest
station. Where fixed-time learners share several stations in turn (SPRINT's
host link, disk and accumulator under heavy load) they fall into a
turn-taking rhythm that queues less than mean-value analysis assumes.

The recursion steps through the customers one by one, and a cluster of a
million learners must not cost a million steps. Three ways out, the first
two exact (the same floats as the recursion):

- no waiting at all (``arrival_cv2`` 0, or nothing shared takes time): the
  residence is the demand at every population, X(N) = min(N / sum D, bound);
- once the throughput reaches the bound, it stays there when the waiting
  can grow by at most a cycle per customer added: residences never fall
  below the demand, so sum_k R_k grows by at most
  a sum_k U_k d_k (1 + cv_k^2) / 2 from one population to the next, and
  while that is at most 1 / X the bound keeps holding (checked, with a
  margin for rounding); the recursion stops there;
- beyond ``EXACT_CUSTOMERS`` (the simulator's own learner cap, so every
  scenario it can be compared with is solved exactly), Bard and
  Schweitzer's approximation at N itself: Q_k(N - 1) = (N - 1) / N Q_k(N),
  which makes each residence a closed form in X and X one root of a
  scalar equation (Bard 1979; Schweitzer 1979). Both meet the asymptotes
  (N / sum D, and the bound) away from the knee of the throughput curve; at
  the knee, which the exact curve rounds over about sqrt(N) customers, they
  part by up to 1 / sqrt(N): 0.8 % just past 16,384 customers, where 40
  random networks of tests/test_scale.py part by 0.012 % at most.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["EXACT_CUSTOMERS", "Station", "solve"]

#: customers up to which the recursion is walked (the simulator's learner
#: cap: beyond it, nothing simulated is compared with the result)
EXACT_CUSTOMERS = 16_384
#: slack kept against rounding when the bound is proved to hold for good
_MARGIN = 0.999


@dataclass(frozen=True)
class Station:
    name: str
    demand_s: float          # time one learner's cycle spends here
    servers: int = 1         # identical servers, each serving 1 / servers of the
                             # learners; 0 = a delay (every learner has its own)
    service_cv2: float = 0.0  # squared cv of one service: 0 for a fixed-time transfer


def solve(stations: list[Station], customers: int,
          arrival_cv2: float = 1.0) -> tuple[float, dict[str, float], str]:
    """(cycle time of one learner, utilisation per station, busiest station)."""
    queues = [s for s in stations if s.servers > 0]
    # Seidmann: c servers ~ one of demand D / c, plus a delay of D (c - 1) / c
    delay = sum(s.demand_s if s.servers == 0 else s.demand_s * (s.servers - 1) / s.servers
                for s in stations)
    # the residual-time correction is approximate: keep it within the bound
    # the busiest station sets, which no network can beat
    bound = min((s.servers / s.demand_s for s in queues if s.demand_s > 0), default=math.inf)
    demands = [s.demand_s / s.servers for s in queues]
    if arrival_cv2 == 0 or not any(demands):
        # nobody waits: every residence is its demand, at every population
        throughput = min(customers / (delay + sum(demands)), bound)
    elif customers > EXACT_CUSTOMERS:
        throughput = _schweitzer(queues, demands, delay, bound, customers, arrival_cv2)
    else:
        throughput = _recursion(queues, demands, delay, bound, customers, arrival_cv2)
    utilisation = {s.name: throughput * s.demand_s / s.servers for s in queues}
    busiest = max(utilisation, key=utilisation.get) if utilisation else "gpu"
    if not utilisation or utilisation[busiest] < 0.5:
        busiest = "gpu"      # nothing shared is near its limit: the learners bound it
    return customers / throughput, utilisation, busiest


def _recursion(queues: list[Station], demands: list[float], delay: float, bound: float,
               customers: int, arrival_cv2: float) -> float:
    """X(N) by exact mean-value analysis, population by population, stopped
    where the bound is reached for good (see the module's docstring)."""
    cv2 = [s.service_cv2 for s in queues]
    # the most the residences can grow by from one population to the next
    # once the throughput is at the bound
    growth = arrival_cv2 * sum(min(bound * d, 1.0) * d * (1.0 + c) / 2
                               for d, c in zip(demands, cv2))
    settles = bound < math.inf and growth <= _MARGIN / bound
    length = [0.0] * len(queues)
    throughput = 0.0
    for n in range(1, customers + 1):
        residence = []
        for d, c, q in zip(demands, cv2, length):
            busy = min(throughput * d, 1.0)
            waiting = d * (q - busy) + busy * d * (1.0 + c) / 2
            residence.append(d + arrival_cv2 * waiting)
        throughput = min(n / (delay + sum(residence)), bound)
        if settles and throughput == bound:
            return throughput
        length = [throughput * r for r in residence]
    return throughput


def _schweitzer(queues: list[Station], demands: list[float], delay: float, bound: float,
                customers: int, arrival_cv2: float) -> float:
    """X(N) by Bard and Schweitzer's approximation: with Q_k(N - 1) taken as
    (N - 1) / N Q_k(N) and U = X d, each residence solves a linear equation,
    R_k = d (1 - a U (1 - e)) / (1 - a d X (N - 1) / N), e = (1 + cv^2) / 2,
    and X = N / (delay + sum R(X)) is found by bisection on (0, bound]."""
    a, share = arrival_cv2, (customers - 1) / customers
    extra = [(1.0 + s.service_cv2) / 2 for s in queues]

    def excess(x: float) -> float:
        total = delay
        for d, e in zip(demands, extra):
            busy = min(x * d, 1.0)
            total += d * (1.0 - a * busy * (1.0 - e)) / (1.0 - a * d * x * share)
        return customers / total - x

    top = bound if bound < math.inf else customers / delay
    if excess(top) >= 0:
        return top
    # excess falls from N / sum D > 0 at 0 to below 0 at the top: bisect to
    # rounding (scipy.optimize would cost its import, most of a second)
    lo, hi = 0.0, top
    while hi - lo > 4 * 2.0**-52 * hi:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if excess(mid) >= 0 else (lo, mid)
    return (lo + hi) / 2
