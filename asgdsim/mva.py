"""Mean-value analysis of a closed queueing network: contention in closed form.

Learners cycle through the things they share (host links, disks, the
accumulator's mutex, a server's ports and CPU) and the things they own (their
GPU). That is a closed network with one customer per learner, and exact
mean-value analysis (Reiser and Lavenberg, 1980) gives its throughput and
each station's queue without simulating: for n = 1..N customers,

    R_k(n) = D_k (1 + Q_k(n - 1))      (a queue)      R_k(n) = D_k   (a delay)
    X(n) = n / sum_k R_k(n)            Q_k(n) = X(n) R_k(n)

where D_k is the time one cycle spends at station k. A station of c
identical servers that each serve their own share of the learners (a node's
disk, a pair of GPUs' host link) is folded in by Seidmann's approximation:
one queue of demand D / c plus a delay of D (c - 1) / c. The formulas are
exact for exponential service and approximate otherwise; at saturation they
converge to the bottleneck bound X = c / D of the busiest station.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Station", "solve"]


@dataclass(frozen=True)
class Station:
    name: str
    demand_s: float          # time one learner's cycle spends here
    servers: int = 1         # identical servers sharing the learners; 0 = a delay
                             # (every learner has its own)


def solve(stations: list[Station], customers: int) -> tuple[float, dict[str, float], str]:
    """(cycle time of one learner, utilisation per station, busiest station)."""
    queues: dict[str, float] = {}
    delay = 0.0
    for s in stations:
        if s.servers == 0:
            delay += s.demand_s
        else:
            # Seidmann: c servers ~ one server of demand D / c, plus a delay
            queues[s.name] = s.demand_s / s.servers
            delay += s.demand_s * (s.servers - 1) / s.servers
    length = {name: 0.0 for name in queues}
    throughput = 0.0
    for n in range(1, customers + 1):
        residence = {name: d * (1.0 + length[name]) for name, d in queues.items()}
        throughput = n / (delay + sum(residence.values()))
        length = {name: throughput * r for name, r in residence.items()}
    utilisation = {name: throughput * d for name, d in queues.items()}
    busiest = max(utilisation, key=utilisation.get) if utilisation else "gpu"
    if not utilisation or utilisation[busiest] < 0.5:
        busiest = "gpu"      # nothing shared is near its limit: the learners bound it
    return customers / throughput, utilisation, busiest
