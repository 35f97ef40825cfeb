"""The cluster's structure, described once: the learner's loop and the topology.

A learner's loop is a sequence of :class:`Stage` s. Each stage holds one or
more shared resources (a host link, the node's disk, a network port) for a
fixed time; the learner's own compute sits between ``before`` and ``after``,
and its gradient reaches its aggregation point (a node's accumulator, a
parameter server) at the end of ``after``. Server kinds then wait for the
reply and run ``reply`` before the next step.

The :class:`Topology` says how many instances of each kind of resource
there are and which learners share one: every ``gpus_per_host_link`` GPUs of
a node share a host link; a node's GPUs share its disk, its accumulator and
its network ports; every learner shares the parameter server's ports. A
server split into ``servers`` shards gets one message part per shard, each
through that shard's ports; colocated shards sit on the learners' nodes and
use their ports (a part for the learner's own node never crosses the
network).

A mixed cluster whose groups' nodes differ (``cluster.groups``) is a
topology of :class:`Block` s, one per group: nodes numbered block by block,
each block with its own learners per node, per host link and rails, and
each its own loop (:func:`loops_of`: its durations, from its links). The
server's ports are shared by every block. The closed form reads each block
as a uniform topology of its own (:meth:`Topology.part`).

A fat tree (``cluster.topology``) numbers the nodes into leaf switches of
``nodes_per_switch``; a dedicated server shard sits on a node of its own
numbered after the learners' nodes (shard s on node ``nodes + s``, so under
leaf ``(nodes + s) // nodes_per_switch``), a colocated one on its host node.
A message between nodes under different leaves also holds the sender's
leaf's up-link (``leaf_up``) and the receiver's leaf's down-link
(``leaf_down``): the :data:`FABRIC` resources. Each carries ``rails x
nodes_per_switch`` ports' worth of transfer divided by the
oversubscription, so it serves a transfer in ``fabric_share`` of the time a
port takes; it is shared by every node under its leaf. The fabric comes
after the ports in a resolved stage's names (``holds``).

The simulator (:mod:`asgdsim.cluster`) builds one FIFO link per instance and
gives each learner its stages; the closed form (:mod:`asgdsim.analytic`)
builds its queueing stations and the in-phase schedule from the very same
stages. Two descriptions of one cluster cannot drift apart when there is
only one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .costs import Costs
    from .scenario import Scenario

__all__ = ["Stage", "Loop", "Block", "Topology", "SCOPES", "FABRIC", "is_fabric", "loop_of",
           "loops_of", "stages", "topology_of"]

#: resource kind -> what one instance of it serves ("rail": one of a node's
#: network ports, which its GPUs take in turn)
SCOPES = {
    "host_link": "link group",        # gpus_per_host_link GPUs of one node
    "disk": "node", "accumulator": "node", "port_out": "rail", "port_in": "rail",
    "server_port_in": "shard", "server_port_out": "shard",
}
#: where a colocated shard's port traffic goes: its node's port of that direction
COLOCATED = {"server_port_in": "port_in", "server_port_out": "port_out"}
#: a fat tree's links between leaf switches and the spine, one per leaf and
#: direction: (the learner's side, the shard's side) of a message each way
FABRIC = ("leaf_up", "leaf_down")
#: the fabric a message crosses, by the shard port it holds: to the server it
#: leaves the learner's leaf up and enters the shard's leaf down; back, the reverse
CROSSES = {"server_port_in": ("leaf_up", "leaf_down"), "server_port_out": ("leaf_down", "leaf_up")}


def is_fabric(name: str) -> bool:
    """Whether a resource instance is a leaf's up- or down-link."""
    return name.startswith("leaf_")


@dataclass(frozen=True)
class Stage:
    """One step of a learner's loop that holds shared resources for a fixed time.

    ``holds`` lists the resource kinds held at once (a network transfer holds
    the node's port and the server's), the most shared first: that one sets
    the queue, since every transfer through the others also passes it.
    """

    name: str
    holds: tuple[str, ...]
    duration_s: float
    #: which part of a message split over the server's shards (counted from
    #: the learner's first shard, so learners start on different ones)
    part: int = 0


@dataclass(frozen=True)
class Loop:
    """A learner's loop: stages before its compute, after it up to the
    aggregation point, and after the aggregation's reply (server kinds)."""

    before: tuple[Stage, ...]
    after: tuple[Stage, ...]
    reply: tuple[Stage, ...] = ()

    @property
    def stages(self) -> tuple[Stage, ...]:
        return self.before + self.after + self.reply

    @property
    def push(self) -> Stage | None:
        """The push to the server that ends ``after`` (its last part), if any."""
        return self.after[-1] if self.after and self.after[-1].name == "push" else None

    @property
    def to_push(self) -> tuple[Stage, ...]:
        """The stages after the compute up to the push."""
        return self.after[:-1] if self.push is not None else self.after

    @property
    def overhead_s(self) -> float:
        """Seconds of one step outside compute, with no contention."""
        return sum(s.duration_s for s in self.stages)

    def with_before_repeated(self, times: int) -> Loop:
        """The loop of ``times`` steps per aggregation (local SGD), each with
        the stages before its compute: those stages once, ``times`` as long."""
        before = tuple(Stage(s.name, s.holds, times * s.duration_s, s.part) for s in self.before)
        return Loop(before, self.after, self.reply)

    def per_step(self, push_every: int, reply_every: int) -> Loop:
        """The loop seen per step when ``after`` runs every ``push_every``
        steps and ``reply`` every ``reply_every`` (downpour): each stage's
        time spread over the steps between its runs."""
        def spread(stages: tuple[Stage, ...], every: int) -> tuple[Stage, ...]:
            return tuple(Stage(s.name, s.holds, s.duration_s / every, s.part) for s in stages)
        return Loop(self.before, spread(self.after, push_every), spread(self.reply, reply_every))

    def demand_s(self, kind: str) -> float:
        """Seconds of one step spent holding ``kind`` as a path's queue."""
        return sum(s.duration_s for s in self.stages if s.holds[0] == kind)


@dataclass(frozen=True)
class Block:
    """Nodes of one shape: a group of a mixed cluster."""

    nodes: int
    learners_per_node: int
    learners_per_host_link: int
    rails: int = 1


@dataclass(frozen=True)
class Topology:
    """Where each learner sits and which resource instances it shares.

    Without ``blocks`` every node is alike (the fields say how); with them
    (a mixed cluster) ``nodes`` is their total and the per-node fields are
    the first block's, and each learner's node follows its block's shape."""

    nodes: int
    #: learners of a node (its GPUs, where each learner is one GPU)
    learners_per_node: int
    #: learners whose GPUs sit behind one host link
    learners_per_host_link: int
    #: network ports per node and direction; a node's learners take turns over them
    rails: int = 1
    #: the parameter server's shards, on nodes of their own or on the learners' nodes
    servers: int = 1
    colocated: bool = False
    #: a mixed cluster's nodes, block by block (none: every node alike)
    blocks: tuple[Block, ...] = ()
    #: nodes under one leaf switch of a fat tree; None: one non-blocking switch
    nodes_per_switch: int | None = None
    #: seconds a leaf's up- or down-link spends on a transfer per second a
    #: port spends on it: oversubscription / (rails x nodes_per_switch)
    fabric_share: float = 0.0
    #: each shard's share of the weights where they are not split evenly
    #: (sync's ``split``): a part's stage lasts as its shard's share of them
    shard_shares: tuple[float, ...] | None = None
    #: the network's latency, which a part of any size pays once
    shard_latency_s: float = 0.0

    @property
    def learners(self) -> int:
        if self.blocks:
            return sum(b.nodes * b.learners_per_node for b in self.blocks)
        return self.nodes * self.learners_per_node

    def _place(self, learner: int) -> tuple[int, int, Block | Topology]:
        """(node, slot in it, the block whose shape it has) of a learner."""
        if not self.blocks:
            return (*divmod(learner, self.learners_per_node), self)
        first_node = 0
        for block in self.blocks:
            size = block.nodes * block.learners_per_node
            if learner < size:
                node, slot = divmod(learner, block.learners_per_node)
                return first_node + node, slot, block
            learner -= size
            first_node += block.nodes
        raise IndexError(learner)

    def block_of(self, learner: int) -> int:
        """The block (a mixed cluster's group) of a learner; 0 without blocks."""
        if not self.blocks:
            return 0
        for index, block in enumerate(self.blocks):
            learner -= block.nodes * block.learners_per_node
            if learner < 0:
                return index
        raise IndexError(learner)

    def block_of_node(self, node: int) -> int:
        """The block of a node; 0 without blocks."""
        for index, block in enumerate(self.blocks):
            node -= block.nodes
            if node < 0:
                return index
        return 0

    def node_of_learners(self) -> list[int]:
        """Every learner's node, in learner order."""
        if not self.blocks:
            return [n for n in range(self.nodes) for _ in range(self.learners_per_node)]
        return [self._place(i)[0] for i in range(self.learners)]

    def part(self, block: int) -> Topology:
        """One block as a uniform topology of its own (the server's shards
        as they are): what the closed form reads a group's stations from."""
        if not self.blocks:
            return self
        b = self.blocks[block]
        return Topology(b.nodes, b.learners_per_node, b.learners_per_host_link, b.rails,
                        self.servers, self.colocated, shard_shares=self.shard_shares,
                        shard_latency_s=self.shard_latency_s)

    @property
    def links_per_node(self) -> int:
        return -(-self.learners_per_node // self.learners_per_host_link)

    def node_of(self, learner: int) -> int:
        if self.blocks:
            return self._place(learner)[0]
        return learner // self.learners_per_node

    def shard_of(self, learner: int, part: int) -> int:
        return (learner + part) % self.servers

    def instances(self, kind: str) -> int:
        """How many instances of a resource kind the cluster has."""
        scope = SCOPES[kind]
        if scope == "shard":
            return min(self.servers, self.nodes) if self.colocated else self.servers
        if scope == "cluster":
            return 1
        if self.blocks:
            return sum(self.part(i).instances(kind) for i in range(len(self.blocks)))
        per_node = {"node": 1, "link group": self.links_per_node,
                    "rail": min(self.rails, self.learners_per_node)}[scope]
        return self.nodes * per_node

    def duration_s(self, stage: Stage, learner: int) -> float:
        """How long ``learner`` holds ``stage``: its own part of a message
        split unevenly over the shards carries its shard's share of the
        bytes (stages are priced at an even part, latency included)."""
        if self.shard_shares is None or not self._sharded(stage):
            return stage.duration_s
        share = self.shard_shares[self.shard_of(learner, stage.part)]
        latency = min(self.shard_latency_s, stage.duration_s)
        return latency + (stage.duration_s - latency) * self.servers * share

    @staticmethod
    def _sharded(stage: Stage) -> bool:
        return any(SCOPES[k] == "shard" for k in stage.holds)

    def busiest_share(self, port: str) -> float:
        """The part of a message that the busiest instance of the server's
        ``port`` takes: one instance's even part, or the largest shards'
        host's share where the split is uneven."""
        instances = max(1, self.instances(port))
        if self.shard_shares is None:
            return 1 / instances
        hosts = [0.0] * instances
        for shard, share in enumerate(self.shard_shares):
            hosts[shard % instances] += share
        return max(hosts)

    def holds(self, stage: Stage, learner: int) -> tuple[str, ...] | None:
        """The resource instances ``learner`` holds in ``stage``; None where
        the stage stays inside its node (a part for a colocated shard of its
        own). A message between leaves of a fat tree holds the leaves' up-
        and down-link too, after the ports."""
        if self.shard_shares is not None and self._sharded(stage) \
                and not self.shard_shares[self.shard_of(learner, stage.part)]:
            return None      # a shard that holds no tensor gets no part
        names = tuple(self.instance(kind, learner, stage.part) for kind in stage.holds)
        if None in names:
            return None
        return names + self.fabric(stage, learner) if self.nodes_per_switch else names

    def leaf_of(self, node: int) -> int:
        """The leaf switch a node (learners' or a dedicated shard's) is under."""
        return node // self.nodes_per_switch if self.nodes_per_switch else 0

    def server_node(self, shard: int) -> int:
        """The node a shard sits on: its host (colocated), else a node of its
        own numbered after the learners' nodes."""
        return shard % self.nodes if self.colocated else self.nodes + shard

    def fabric(self, stage: Stage, learner: int) -> tuple[str, ...]:
        """The up- and down-link a learner's message in ``stage`` crosses
        (none inside a leaf, or where the stage is no message to a shard)."""
        for kind in stage.holds:
            if kind in CROSSES:
                mine = self.leaf_of(self.node_of(learner))
                theirs = self.leaf_of(self.server_node(self.shard_of(learner, stage.part)))
                if mine == theirs:
                    return ()
                own, other = CROSSES[kind]
                return f"{own}[{mine}]", f"{other}[{theirs}]"
        return ()

    def _crossings(self, stages):
        """(stage, shard port kind, learners' leaf, shard's leaf, learners)
        for every group of learners whose message in a stage crosses leaves.

        Counted by leaf and shard offset, not learner by learner: a leaf's
        learners are a contiguous range, and which shard a part goes to
        depends on the learner's index modulo the shards only."""
        crossing = [(stage, next(k for k in stage.holds if k in CROSSES)) for stage in stages
                    if any(k in CROSSES for k in stage.holds)]
        per_leaf, shards = self.nodes_per_switch * self.learners_per_node, self.servers
        for leaf in range(self.leaf_of(self.nodes - 1) + 1):
            first, end = leaf * per_leaf, min(self.learners, (leaf + 1) * per_leaf)
            for offset in range(shards):
                count = len(range(first + (offset - first) % shards, end, shards))
                for stage, kind in crossing if count else ():
                    theirs = self.leaf_of(self.server_node((offset + stage.part) % shards))
                    if theirs != leaf:
                        yield stage, kind, leaf, theirs, count

    def fabric_demands(self, stages) -> list[tuple[str, float, int]]:
        """The fabric's queueing stations of a loop: (name, seconds per learner
        cycle averaged over the learners, leaves serving them) for the links
        of the learners' leaves and of the shards' leaves, each direction."""
        if not self.nodes_per_switch:
            return []
        used: dict[str, tuple[float, set]] = {}
        for stage, kind, leaf, theirs, count in self._crossings(stages):
            own, other = CROSSES[kind]
            seconds = count * stage.duration_s * self.fabric_share
            for role, name in ((own, f"{own}[{leaf}]"), (f"server_{other}", f"{other}[{theirs}]")):
                total, leaves = used.get(role, (0.0, set()))
                leaves.add(name)
                used[role] = (total + seconds, leaves)
        return [(role, seconds / self.learners, len(leaves))
                for role, (seconds, leaves) in used.items()]

    def unhindered_s(self, stages) -> float:
        """Seconds a learner spends in ``stages`` with nobody else in the way,
        averaged over the learners: a message across leaves whose links are
        slower than a port (fabric_share > 1) takes their time, not the port's."""
        seconds = sum(st.duration_s for st in stages)
        if not self.nodes_per_switch or self.fabric_share <= 1:
            return seconds
        slower = sum(count * stage.duration_s for stage, _, _, _, count in self._crossings(stages))
        return seconds + (self.fabric_share - 1) * slower / self.learners

    def message_s(self, loop: Loop, port: str) -> float:
        """Seconds the server's way in (``server_port_in``) or out
        (``server_port_out``) spends on one learner's message, each shard its
        part: at its port, or at its leaf's fabric link where that is slower."""
        seconds = loop.demand_s(port) * self.busiest_share(port)
        role = {"server_port_in": "server_leaf_down", "server_port_out": "server_leaf_up"}[port]
        for name, demand, leaves in self.fabric_demands(loop.stages):
            if name == role:
                seconds = max(seconds, demand / leaves)
        return seconds

    def crossing(self, stage: Stage) -> float:
        """The share of learners for which ``stage`` leaves their node (1
        but for a colocated shard's part, which stays on its own node)."""
        if not self.colocated or not any(SCOPES[k] == "shard" for k in stage.holds):
            return 1.0
        return sum(self.holds(stage, i) is not None for i in range(self.learners)) / self.learners

    def held_s(self, stages) -> float:
        """Seconds a learner spends in ``stages`` on average over the learners."""
        return sum(st.duration_s * self.crossing(st) for st in stages)

    def instance(self, kind: str, learner: int, part: int = 0) -> str | None:
        """The name of the instance of ``kind`` that ``learner`` uses (for
        the ``part``-th shard of a message); None for a colocated shard's
        port on the learner's own node."""
        scope = SCOPES[kind]
        node, slot, shape = self._place(learner)
        if scope == "shard":
            shard = self.shard_of(learner, part)
            if not self.colocated:
                return kind if self.servers == 1 else f"{kind}[{shard}]"
            host = shard % self.nodes
            return None if host == node else self.instance(COLOCATED[kind], self._first(host))
        if scope == "cluster":
            return kind
        if scope == "node" or (scope == "rail" and shape.rails == 1):
            return f"{kind}[{node}]"
        if scope == "rail":
            return f"{kind}[{node}.r{slot % shape.rails}]"
        return f"{kind}[{node}.{slot // shape.learners_per_host_link}]"

    def _first(self, node: int) -> int:
        """The first learner of a node."""
        first = 0
        for block in self.blocks:
            if node < block.nodes:
                return first + node * block.learners_per_node
            node -= block.nodes
            first += block.nodes * block.learners_per_node
        return node * self.learners_per_node

    def sharers(self, kind: str) -> int:
        """How many learners share one instance of ``kind`` (the most)."""
        scope = SCOPES[kind]
        if self.blocks and scope not in ("cluster", "shard"):
            return max(self.part(i).sharers(kind) for i in range(len(self.blocks)))
        return {"cluster": self.learners, "shard": self.learners, "node": self.learners_per_node,
                "link group": min(self.learners_per_host_link, self.learners_per_node),
                "rail": -(-self.learners_per_node // self.rails)}[scope]


def topology_of(scenario: Scenario) -> Topology:
    c, algorithm = scenario.cluster, scenario.algorithm
    blocks = tuple(Block(g.nodes, g.gpus_per_node // c.gpus_per_learner,
                         max(1, g.gpus_per_host_link // c.gpus_per_learner), g.rails)
                   for g in c.groups) if c.mixed_shapes else ()
    tree = c.topology if c.topology.kind == "fat-tree" else None
    return Topology(c.nodes, c.learners_per_node,
                    max(1, c.gpus_per_host_link // c.gpus_per_learner), c.rails,
                    servers=getattr(algorithm, "servers", 1),
                    colocated=getattr(algorithm, "placement", "dedicated") == "colocated",
                    blocks=blocks,
                    nodes_per_switch=tree.nodes_per_switch if tree else None,
                    fabric_share=tree.oversubscription / (c.rails * tree.nodes_per_switch)
                    if tree else 0.0,
                    shard_shares=shard_shares(scenario),
                    shard_latency_s=c.network.latency)


def shard_shares(scenario: Scenario) -> tuple[float, ...] | None:
    """Each shard's share of the weights (None: split evenly). ``round-robin``
    deals the model's tensors (layer by layer: weights, then bias; a
    normalisation's parameters as one) to the shards in turn, as
    TensorFlow's ``replica_device_setter`` places variables; ``greedy``
    gives each to the least loaded shard so far (its
    ``GreedyLoadBalancingStrategy`` by bytes): a shard holds whole tensors,
    so the largest sets a floor under the busiest shard, and a shard may
    hold none."""
    algorithm = scenario.algorithm
    split, servers = getattr(algorithm, "split", "even"), getattr(algorithm, "servers", 1)
    if split == "even" or servers == 1:
        return None
    loads = [0] * servers
    tensors = [size for layer in scenario.workload.model.graph for size in layer.tensors]
    for index, size in enumerate(tensors):
        shard = index % servers if split == "round-robin" else loads.index(min(loads))
        loads[shard] += size
    return tuple(load / sum(loads) for load in loads)


def stages(*stages: tuple) -> tuple[Stage, ...]:
    """Stages from (name, resource kinds held, seconds[, part]); one that
    takes no time (ideal communication) is no stage at all."""
    return tuple(Stage(*stage) for stage in stages if stage[2] > 0)


def loop_of(scenario: Scenario, costs: Costs) -> Loop:
    """The learner's loop of the scenario's algorithm, with its durations."""
    from .algorithms import KINDS

    return KINDS[scenario.algorithm.kind].loop(scenario, costs)


def loops_of(scenario: Scenario, costs: Costs) -> tuple[Loop, ...]:
    """The learner's loop of each block of the topology (one without
    blocks): a mixed cluster's groups' loops, each with its own durations."""
    from .algorithms import KINDS
    from .groups import group_scenario

    if not costs.group_costs:
        # groups whose links take no time (ideal communication): one loop for all
        blocks = len(scenario.cluster.groups) if scenario.cluster.mixed_shapes else 1
        return (loop_of(scenario, costs),) * blocks
    loop = KINDS[scenario.algorithm.kind].loop
    return tuple(loop(group_scenario(scenario, i), c) for i, c in enumerate(costs.group_costs))
