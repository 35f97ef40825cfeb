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
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Station", "solve"]


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
    queues = {s.name: s for s in stations if s.servers > 0}
    # Seidmann: c servers ~ one of demand D / c, plus a delay of D (c - 1) / c
    delay = sum(s.demand_s if s.servers == 0 else s.demand_s * (s.servers - 1) / s.servers
                for s in stations)
    length = {name: 0.0 for name in queues}
    throughput = 0.0
    # the residual-time correction is approximate: keep it within the bound
    # the busiest station sets, which no network can beat
    bound = min((s.servers / s.demand_s for s in queues.values() if s.demand_s > 0),
                default=math.inf)
    for n in range(1, customers + 1):
        residence = {}
        for name, s in queues.items():
            d = s.demand_s / s.servers
            busy = min(throughput * d, 1.0)
            waiting = d * (length[name] - busy) + busy * d * (1.0 + s.service_cv2) / 2
            residence[name] = d + arrival_cv2 * waiting
        throughput = min(n / (delay + sum(residence.values())), bound)
        length = {name: throughput * r for name, r in residence.items()}
    utilisation = {name: throughput * s.demand_s / s.servers for name, s in queues.items()}
    busiest = max(utilisation, key=utilisation.get) if utilisation else "gpu"
    if not utilisation or utilisation[busiest] < 0.5:
        busiest = "gpu"      # nothing shared is near its limit: the learners bound it
    return customers / throughput, utilisation, busiest
