"""What an algorithm kind is made of (see :mod:`asgdsim.algorithms`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Kind", "draw_k", "powers_of_two"]


@dataclass(frozen=True)
class Kind:
    """One algorithm: its scenario keys, the learner's loop (stages around
    the compute, read by the simulator and the closed form alike), the
    wiring of its components, and its closed form."""

    #: the pydantic spec of ``algorithm:``, with ``kind: Literal[<name>]``
    spec: type
    #: (scenario, costs) -> structure.Loop
    loop: Callable[..., Any]
    #: (env, scenario, costs, weights, recorder, seed) -> cluster.Cluster
    build: Callable[..., Any]
    #: (scenario, costs) -> analytic.Prediction
    predict: Callable[..., Any]
    #: (scenario, weights bytes) -> seconds a round spends after its slowest learner
    aggregate_s: Callable[..., float] | None = None
    #: (rng, ideal communication, learners) -> (its ``algorithm`` keys, the
    #: ``timing`` keys it needs, gradients per update as a function of the
    #: learners): how the agreement suite draws a random scenario of this kind
    draw: Callable[..., tuple[dict, dict, Callable[[int], int]]] | None = None
    #: learners -> (the ``algorithm`` key that trades speed against mini-batch
    #: or staleness, the values worth trying): ``plan`` searches it too
    knob: Callable[[int], tuple[str, list[int]]] | None = None


def draw_k(shares: list[float]):
    """A ``Kind.draw`` of ``k`` as users choose it: a share of the learners."""
    def draw(rng, ideal: bool, learners: int):
        k = max(1, round(learners * float(rng.choice(shares))))
        return {"k": k}, {}, lambda learners: k
    return draw


def powers_of_two(most: int) -> list[int]:
    """1, 2, 4, ... up to ``most``, and ``most`` itself."""
    out = [1 << i for i in range(most.bit_length()) if 1 << i <= most]
    return out if out[-1] == most else out + [most]
