"""Links that slow down for a while (``faults.link_slowdowns``).

A link reserves each transfer when it is asked for (link.py): it knows
when the transfer starts and how much work it is. A slow-down is known in
advance (a window of simulated time and a rate factor), so the end of a
transfer under it is exact: the time at which the integral of the link's
rate from the start reaches the work. A transfer that straddles a window's
edge goes at each rate for its part. Windows that overlap multiply.

The same profile stretches the collectives that cross the network (SPRINT's
Allreduce, the ``allreduce`` kind's and local SGD's averaging), which are
timed as one duration rather than as transfers on links.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["RateProfile", "profile_of", "apply_slowdowns", "NETWORK_LINKS"]

#: link names (before their "[index]") that make up the network
NETWORK_LINKS = ("port_out", "port_in", "server_port_in", "server_port_out", "leaf_up", "leaf_down")
#: components whose durations are collectives across the network (cluster.servers keys)
NETWORK_COLLECTIVES = ("allreduce", "collective")


@dataclass(frozen=True)
class RateProfile:
    """The rate factor of a link over time: ``windows`` of (from, to,
    factor), sorted and disjoint; full rate outside them."""

    windows: tuple[tuple[float, float, float], ...]

    def end(self, start: float, work: float) -> float:
        """When ``work`` seconds of full-rate transfer begun at ``start`` ends."""
        t = start
        for begin, finish, factor in self.windows:
            if finish <= t:
                continue
            if begin > t:
                if t + work <= begin:
                    return t + work
                work -= begin - t
                t = begin
            room = (finish - t) * factor
            if work <= room:
                return t + work / factor
            work -= room
            t = finish
        return t + work


def profile_of(windows: Iterable[tuple[float, float, float]]) -> RateProfile | None:
    """The profile of possibly overlapping windows (their factors multiply)."""
    windows = list(windows)
    if not windows:
        return None
    edges = sorted({t for begin, finish, _ in windows for t in (begin, finish)})
    pieces = []
    for begin, finish in zip(edges, edges[1:]):
        factor = 1.0
        for a, b, f in windows:
            if a <= begin and finish <= b:
                factor *= f
        if factor != 1.0:
            pieces.append((begin, finish, factor))
    return RateProfile(tuple(pieces)) if pieces else None


def apply_slowdowns(cluster, slowdowns) -> None:
    """Give the cluster's links, and its network collectives, the profiles
    of the slow-downs that name them."""
    if not slowdowns:
        return

    def windows_for(kind: str) -> list[tuple[float, float, float]]:
        return [(s.from_, s.to, s.factor) for s in slowdowns if s.links == kind]

    profiles = {kind: profile_of(windows_for(kind)) for kind in ("network", "host_link", "disk")}
    for name, link in cluster.links.items():
        base = name.split("[")[0]
        kind = "network" if base in NETWORK_LINKS else base
        if profiles.get(kind) is not None:
            link.profile = profiles[kind]
    if profiles["network"] is not None:
        for key in NETWORK_COLLECTIVES:
            for part in cluster.servers.get(key, []):
                # SPRINT's Allreduce times itself; the collective kinds' round
                # is a server whose CPU link carries the collective
                target = getattr(part, "cpu", part)
                target.profile = profiles["network"]
