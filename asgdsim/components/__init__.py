"""The cluster's physical things, one small class each, as SimPy processes.

Each component receives ``env``, the durations it spends and its
collaborators explicitly, and starts its own process; none knows the
topology, which :mod:`asgdsim.cluster` alone wires.
"""
