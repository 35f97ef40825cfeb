"""What the simulator's components are called, for readers.

The simulator names its resource kinds tersely (``port_in``,
``accumulator``); figures and the command line show these words instead,
with the terse name beside them where a user may look it up. No
dependencies, so the command line can use it before importing anything.
"""

__all__ = ["COMPONENTS", "component_name"]

#: the simulator's component kinds, as a reader names them
COMPONENTS = {
    "gpu": "GPU compute",
    "disk": "node disks (sub-batch reads)",
    "host_link": "host links (PCIe, GPU to host)",
    "accumulator": "node accumulators (gradient sums)",
    "allreduce": "Allreduce (update threads)",
    "node_update": "weight updates (update threads)",
    "port_out": "node network ports, out",
    "port_in": "node network ports, in",
    "server_port_in": "server network port, in",
    "server_port_out": "server network port, out",
    "leaf_up": "leaf switches' up-links (fat tree)",
    "leaf_down": "leaf switches' down-links (fat tree)",
    "server_leaf_up": "the servers' leaves' up-links (fat tree)",
    "server_leaf_down": "the servers' leaves' down-links (fat tree)",
    "server": "server CPU (updates)",
    "collective": "collective and GPU update",
}


def component_name(kind: str) -> str:
    """A component kind as a reader names it, with the simulator's word."""
    return f"{COMPONENTS[kind]} [{kind}]" if kind in COMPONENTS else kind
