"""GPU collectives' achieved rates, fitted to public NCCL measurements.

    python -m asgdsim.catalog.nccl      # the fitted values and every row's error

``nccl_allreduce.csv`` holds nccl-tests ``all_reduce_perf`` figures on DGX-1
V100, DGX A100 and DGX H100 class nodes, one source per row. NCCL's ring
reaches a fixed share of a link's rate (its bus bandwidth, busbw, for large
messages) and pays a fixed time per ring step (small messages). So each link
kind gets two figures, used by GPU collectives only (``LinkSpec.for_collectives``):

- ``collective_efficiency`` = busbw / the link's rate, from the row marked
  ``fit_bandwidth`` (a multi-node row: busbw / the ports' rate, the network
  being the ring's slowest link);
- ``collective_latency`` = (time - bandwidth term) / 2 (P - 1), from the row
  marked ``fit_latency``, a small message.

Every other row (``check``) is held out: ``errors()`` prices it with the
``allreduce`` kind's collective (``model_of``) on the matching machine preset. A link kind with
no row of its own borrows the nearest generation's figure (``CARRIED``).
"""

from __future__ import annotations

import csv
from functools import cache
from importlib import resources

from . import lookup

#: the machine preset whose GPU link a row's gpu_link names
MACHINES = {"nvlink2": "dgx1-v100", "nvlink3": "dgx-a100", "nvlink4": "dgx-h100"}
#: (link, figure) with no measurement of its own -> the link it is taken from
CARRIED = {("ib-edr", "collective_efficiency"): "ib-hdr",
           ("ib-edr", "collective_latency"): "ib-hdr",
           ("ib-ndr", "collective_latency"): "ib-hdr",
           ("nvlink4", "collective_latency"): "nvlink3"}
#: rows that state only a large message's busbw are priced at this size
ASYMPTOTE_BYTES = 2.0**36
#: below this, NCCL prefers its tree across nodes (its tuner's crossover is
#: some MB; none of the multi-node rows lies between 1 KB and 1 GB)
SMALL_BYTES = 2.0**20


@cache
def rows() -> tuple[dict, ...]:
    text = resources.files(__package__).joinpath("nccl_allreduce.csv").read_text(encoding="utf-8")
    return tuple(csv.DictReader(text.splitlines()))


def _members(r: dict) -> int:
    # a multi-node row that leaves the node count out: a ring's busbw is the same for any
    return int(r["nodes"] or 2) * int(r["gpus_per_node"])


def _bytes(r: dict) -> float:
    return float(r["bytes"]) if r["bytes"] else ASYMPTOTE_BYTES


def measured_time(r: dict) -> float:
    """Seconds of the row's Allreduce: as timed, else from its busbw
    (nccl-tests: busbw = bytes / time x 2 (P - 1) / P)."""
    if r["time_us"]:
        return float(r["time_us"]) * 1e-6
    p = _members(r)
    return _bytes(r) * 2 * (p - 1) / p / (float(r["busbw_GBps"]) * 1e9)


def _rate(name: str) -> float:
    from ..specs import LinkSpec
    return LinkSpec.model_validate(lookup("networks", name)).bandwidth


def _link_of(r: dict) -> tuple[str, int]:
    """The link a fitting row measures, and how many ports of it the ring uses."""
    if not r["network"]:
        return r["gpu_link"], 1
    return r["network"], min(int(r["nics"]), int(r["gpus_per_node"]))


def fit() -> dict[str, dict[str, float]]:
    """link -> {collective_efficiency, collective_latency (s)}, from the fit rows.

    A ring of P takes 2 (P - 1) steps of latency + bytes / P / rate; each fit
    row solves this for one figure given the other, a few rounds over until
    both settle (each row is dominated by its own figure, so they do at once)."""
    fitted: dict[str, dict[str, float]] = {}
    for _ in range(4):
        for r in sorted((r for r in rows() if r["role"].startswith("fit_")),
                        key=lambda r: r["role"]):   # bandwidth rows first
            link, ports = _link_of(r)
            p, figures = _members(r), fitted.setdefault(link, {})
            steps, chunk = 2 * (p - 1), _bytes(r) / p
            if r["role"] == "fit_bandwidth":
                serial = measured_time(r) - steps * figures.get("collective_latency", 0.0)
                figures["collective_efficiency"] = steps * chunk / serial / (ports * _rate(link))
            else:
                rate = ports * figures["collective_efficiency"] * _rate(link)
                figures["collective_latency"] = (measured_time(r) - steps * chunk / rate) / steps
    for (link, figure), source in CARRIED.items():
        fitted.setdefault(link, {})[figure] = fitted[source][figure]
    return fitted


def cluster_of(r: dict):
    """The row's cluster: its machine preset, nodes, GPUs and ports."""
    from ..scenario import Cluster
    spec = {"machine": MACHINES[r["gpu_link"]], "nodes": int(r["nodes"] or 2),
            "gpus_per_node": int(r["gpus_per_node"])}
    if r["network"]:
        spec |= {"network": r["network"], "gpu_nics": int(r["nics"])}
    return Cluster.model_validate(spec)


def model_of(r: dict) -> str:
    """The allreduce kind's collective that stands for what NCCL ran: its
    ring, except for small messages on several nodes, where NCCL takes its
    tree (a chain inside each node, a tree across nodes), which the
    hierarchical collective resembles."""
    return "hierarchical" if r["network"] and _bytes(r) < SMALL_BYTES else "ring"


def predicted_time(r: dict) -> float:
    """The allreduce kind's collective over the row's message on the row's cluster."""
    from ..algorithms.allreduce import collective_time
    return collective_time(cluster_of(r), _bytes(r), model_of(r))


def errors(role: str = "check") -> list[tuple[dict, float]]:
    """(row, predicted / measured time - 1) for the rows of one role."""
    return [(r, predicted_time(r) / measured_time(r) - 1) for r in rows() if r["role"] == role]


def main() -> None:
    for link, figures in fit().items():
        print(f"{link}: collective_efficiency {figures['collective_efficiency']:.3f}, "
              f"collective_latency {1e6 * figures.get('collective_latency', float('nan')):.2f} us")
    for role in ("fit_bandwidth", "fit_latency", "check"):
        for r, err in errors(role):
            print(f"{role:13} {r['system'][:26]:26} {r['nodes'] or '-':>2}x{r['gpus_per_node']} "
                  f"{r['bytes'] or 'asymptote':>11} {100 * err:+6.1f} %")


if __name__ == "__main__":
    main()
