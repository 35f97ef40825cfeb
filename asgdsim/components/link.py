"""Links: anything that moves bytes one transfer at a time.

A :class:`Link` is a host link (PCIe between a node's CPU and its GPUs), a
disk, or one direction of a network port. A transfer holds the link for its
duration (latency + bytes / bandwidth, from the cost model); a transfer that
finds the link busy waits its turn in FIFO order: that is the contention.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence

import simpy

__all__ = ["Link", "transfer_over"]


class Link:
    def __init__(self, env: simpy.Environment, name: str):
        self.env = env
        self.name = name
        self.busy_s = 0.0
        self.resource = simpy.Resource(env, capacity=1)

    def transfer(self, duration: float) -> Generator:
        with self.resource.request() as request:
            yield request
            yield self.env.timeout(duration)
        self.busy_s += duration


def transfer_over(env: simpy.Environment, links: Sequence[Link], duration: float) -> Generator:
    """Hold every link of a path at once for ``duration`` (cut-through routing).

    Callers acquire a path's links in one fixed order (sender's side first),
    which keeps two paths from waiting on each other forever.
    """
    requests = [link.resource.request() for link in links]
    try:
        for request in requests:
            yield request
        yield env.timeout(duration)
    finally:
        for link, request in zip(links, requests):
            link.resource.release(request)
    for link in links:
        link.busy_s += duration
