"""The algorithms: one module per kind, registered in ``KINDS``.

A kind owns its scenario keys (``Spec``: what ``algorithm:`` may say, a key
of another kind refused), its learner's loop (the stages around the compute,
as data that the simulator wires and the closed form's queueing model reads),
the wiring of its components, its closed form, and, for rounds, what a
round spends after its slowest learner. Adding a kind is one module here and
one line in ``KINDS``; the components and the closed form's machinery it
builds on are shared (``components/``, ``analytic.py``).
"""

from __future__ import annotations

from typing import Annotated, Union

from pydantic import Field

from . import allreduce, downpour, kasync, ksync, local_sgd, server, softsync, sprint, ssp
from .kind import Kind

__all__ = ["Algorithm", "KINDS", "Kind"]

#: algorithm.kind -> its parts
KINDS: dict[str, Kind] = {
    "sprint": sprint.KIND,
    "async": server.ASYNC,
    "sync": server.SYNC,
    "allreduce": allreduce.KIND,
    "local-sgd": local_sgd.KIND,
    "downpour": downpour.KIND,
    "softsync": softsync.SOFTSYNC,
    "k-sync": ksync.K_SYNC,
    "k-batch-sync": ksync.K_BATCH_SYNC,
    "k-async": kasync.KIND,
    "k-batch-async": softsync.K_BATCH_ASYNC,
    "ssp": ssp.KIND,
}

#: the ``algorithm:`` section: each kind with its own keys
Algorithm = Annotated[Union[tuple(kind.spec for kind in KINDS.values())],  # noqa: UP007
                      Field(discriminator="kind")]
