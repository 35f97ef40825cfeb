"""``k-sync`` and ``k-batch-sync`` (Dutta et al., AISTATS 2018): synchronous
rounds that close at their K-th gradient and cancel the rest.

- ``k-sync``: each round the server waits for the first K of the L
  learners, cancels the others' steps, and all restart from the new weights.
- ``k-batch-sync``: each round waits for the first K gradients from any
  learners; a learner that finishes pushes and starts another step on the
  same weights; at the K-th all steps in progress are cancelled.

Every gradient is computed on the round's weights (staleness 0) and every
update applies K (mini-batch K x sub-batch). A round is its K-th gradient's
time, then the update. With ideal communication:

- K-sync: E[X_(K:L)], the K-th order statistic of L steps, exact for any
  step law (m (H_L - H_{L-K}) for exponential steps, Dutta et al. Thm 3);
- K-batch-sync: the K-th event of L renewal processes started together:
  K m / L for exponential steps (their superposition is Poisson, Dutta et
  al. Thm 4), ceil(K / L) m for fixed steps, and for any other law the
  integral of P(N(t) < K), N(t) the sum of L independent renewal counts
  (P(N_1(t) >= j) = F_j(t), the law of j steps summed).

With modelled communication a round is walked as ``sync``'s is (pulls,
reads, then the first K arrivals queued at the server's port); the
cancelled learners of both kinds pull and read each round too, so what a
node's learners hold of its busiest resource (its disk) is a bound on the
round. A pull serves the weights the server holds when its transfer
starts; one under way when a round closes is done again. Where the
server's port cannot send every learner the weights within a round it is
never idle: its pulls end a pull apart, and a round, which starts with the
first pull after the one under way when the last was published, is a whole
number of pulls. K-batch-sync's rounds are
the K-th event of renewal processes started one pull apart, or the K pushes
through the server's port if slower. A push still queued for the port when
its round closes is not sent.
"""

from __future__ import annotations

import math
from functools import partial
from typing import ClassVar, Literal

import numpy as np

from ..specs import Count, _Spec
from ..distributions import NUMERIC_SUMS, Law
from ..renewal import EXACT_LEARNERS, events_staggered, kth_event_mean, sums_needed
from .kind import Kind, draw_k, powers_of_two
from .server import loop, wire


class KSyncSpec(_Spec):
    kind: Literal["k-sync"]
    #: the round closes when the first k learners have pushed
    k: Count
    at_most_learners: ClassVar[tuple[str, ...]] = ("k",)


class KBatchSyncSpec(_Spec):
    kind: Literal["k-batch-sync"]
    #: the round closes at its k-th gradient, from any learners
    k: Count


def build(env, scenario, costs, weights, recorder, seed):
    from ..components.family import CancellingRound, RoundLearner

    rounds = CancellingRound(env, weights, recorder, costs.server_update_s, scenario.algorithm.k,
                             once=scenario.algorithm.kind == "k-sync")
    learner = partial(RoundLearner, again=scenario.algorithm.kind == "k-batch-sync")
    return wire(env, scenario, costs, seed, "server", rounds, learner)


def predict(scenario, costs):
    from ..analytic import OUTSIDE, Prediction, Run, _ideal, _outside, _sync_rounds
    from ..pmf import Pmf
    from ..structure import loop_of, topology_of

    algorithm, law, run = scenario.algorithm, costs.compute, Run.of(scenario)
    topo, loop_ = topology_of(scenario), loop_of(scenario, costs)
    L, k, update_s = topo.learners, algorithm.k, costs.server_update_s
    batch = algorithm.kind == "k-batch-sync"
    outside, node_paced = None, False
    if _ideal(scenario):
        if batch:
            step, exact = kth_event_mean(law, L, k)
            how = "the K-th event of L renewal processes started together"
            numeric = isinstance(law, Law) and sums_needed(L, k) <= NUMERIC_SUMS
            if not exact and law.cv > 0.5 and k > 1 and not numeric:
                # sums of such steps taken as gammas of their moments: 10 to
                # 50 % off against Monte Carlo for lognormal cv >= 1 and
                # straggling exponentials (a Law's first sums are convolved)
                outside = (f"{OUTSIDE}: a learner's sums of {law.name} steps (cv {law.cv:.2g}) "
                           f"are taken {law.sums_taken}, too rough a law here")
        else:
            step, exact = law.expected_order(k, L), True
            how = "E[K-th of L steps]"
        first = steady = step + update_s
        epoch_law = f"{'exact' if exact else 'approximation'}: rounds of {how}" + (
            "" if exact else f" (the sums of {law.name} steps {law.sums_taken})")
    elif batch:
        # each learner's steps repeat its reads and push; the weights leave
        # the server's port one learner after another, so learner i starts
        # i pulls late; unless the server's port sets the pace: the K
        # pushes one after another, after the first learner's pull and step
        # (a message across a fat tree's leaves at their links' pace where slower)
        repeated = loop_.before + loop_.after
        own = topo.unhindered_s(repeated)
        # a resource of a node that the learners' repeated stages share (its
        # disk or host link) serves each of them once a step: no learner
        # steps again faster than its busiest one turns round
        stretch = max(0.0, _busiest_turn(topo, repeated) - law.mean - own)
        cycle = law.plus(own + stretch)
        out = topo.message_s(loop_, "server_port_out")
        to_port = topo.message_s(loop_, "server_port_in")
        reply = topo.unhindered_s(loop_.reply)
        # the port's bound: the K pushes one after another from the first
        first = max(kth_event_mean(cycle, L, k)[0],
                    kth_event_mean(cycle, L, 1)[0] + (k - 1) * to_port) + update_s
        # each learner's first step starts once it has had the weights and
        # its reads, queued at the server's port and its node's links (the
        # renewal's first cycle is then the step and its pushing stages);
        # beyond the simulator's learners, one pull after another at the port
        # (a progression, not an array)
        if L <= EXACT_LEARNERS:
            # the walk queues them at the node's links and disk, through the
            # first step (at its mean) and its pushes: a node's learners that
            # start together push together, and queue at what they share (two
            # GPUs' host link, 4 P100s, K = 4: 7.1 -> 0.5 %, fixed steps 7.9
            # -> 1.4 %); the server's
            # way out (its port, or a fat tree's slower leaf link) sends the
            # weights one learner after another at its own pace: each
            # learner in turn is ready at the later of the two
            # (the push itself queues at the server's port, below)
            walked = np.sort(_walked_ready(topo, loop_, law.mean)) - law.mean \
                - topo.unhindered_s(loop_.before + loop_.to_push)
            ready = np.maximum(walked, reply - out + out * np.arange(1, L + 1)) - stretch
        else:
            ready = (reply - stretch, out, L)
        # the gradients queue at the server's port in the order they come:
        # done at max over j of (j-th arrival, its own message in it, + the K - j after it)
        events = events_staggered(cycle, ready, k)
        steady = float(np.max(events + (k - 1 - np.arange(k)) * to_port)) + update_s
        if not isinstance(ready, tuple) and to_port > 0 and not law.is_constant:
            # at random, the pushes queue at the port more than at their
            # means, and a learner's next step waits for its push
            steady = max(steady, _pushes_walked(law, ready, k, own + stretch - to_port,
                                                to_port) + update_s)
        epoch_law = ("approximation: the K-th event of L renewal processes of a step and its "
                     "stages, each started after its turn at the server's port for the weights "
                     "(the mean count reaching K - 1/2), or the K pushes through the server's "
                     "port if slower")
        if stretch > 0 and L * out > steady:
            outside = (f"{OUTSIDE}: a node's busiest resource paces each learner's steps "
                       f"({stretch + law.mean + own:.3g} s a step) only where all its learners "
                       f"step every round, and the server's port sends the weights to about "
                       f"{steady / out:.3g} of the {L} learners a round: which of them read "
                       "and step is not modelled")
    else:
        first, steady, _ = _sync_rounds(topo, loop_, law, update_s, 1, k)
        epoch_law = ("approximation: the round's schedule with each learner's arrival at its "
                     "expected order statistic, the first K queued at the server's port")
    if not _ideal(scenario):
        # every learner pulls and reads each round, the cancelled too, and
        # k-batch-sync's stepping again cancelled at the round's close too (a
        # read under way when the round closes runs to its end, into the
        # next): a node's resource that all its learners' pulls and reads
        # hold (its disk, a shared host link) is a bound on the round
        turn = _busiest_turn(topo, loop_.reply + loop_.before)
        # (k-batch-sync's learners step again and again within a round: where
        # the server's port cannot send every learner the weights in the
        # node's round, only those it reaches read again, and its own
        # estimate stands)
        node_paced = turn > steady and not (batch and L * topo.message_s(
            loop_, "server_port_out") >= turn)
        if node_paced:
            steady = turn
            epoch_law += ("; every learner's pull and read through its node's busiest resource "
                          "each round, slower")
        # the server's port cannot send every learner the weights within a
        # round: it is never idle, and a round's first pull waits out the
        # one under way when it publishes (_on_pull_lattice)
        out = topo.message_s(loop_, "server_port_out")
        free = steady
        if L * out >= free:
            steady = _on_pull_lattice(steady, out, law, k, L)
            if node_paced:
                # only the learners it reaches pull and read again, so the
                # node's bound (every learner, every round) does not hold
                outside = (f"{OUTSIDE}: a node's busiest resource bounds the round only where "
                           f"all its learners pull and read every round, and the server's port "
                           f"sends the weights to about {free / out:.3g} of the {L} learners "
                           "a round: which of them pull and read is not modelled")
            epoch_law += ("; the server's port always busy with pulls, a round a whole number "
                          "of them")
    n = run.target_gradients
    rounds = math.ceil(n / k) if n != math.inf else (run.updates or None)
    if rounds is None or run.time_s is not None:
        by_time = 0 if run.time_s < first else 1 + math.floor((run.time_s - first) / steady)
        rounds = by_time if rounds is None else min(rounds, by_time)
    rounds = max(rounds, 1)
    t_last = first + (rounds - 1) * steady
    return Prediction(
        scenario=scenario, t_gpu_s=law.mean + loop_.overhead_s, t_update_s=steady,
        bound="first K gradients", epoch_time_s=run.epoch_time(t_last, rounds * k),
        steady_throughput_samples_per_s=k * scenario.workload.sub_batch / steady,
        staleness=Pmf.point(0), gradients_per_update=Pmf.point(k),
        laws={"epoch_time": epoch_law, "staleness": "exact: 0, every gradient on its round's weights",
              "minibatch": "exact: K gradients per round", **_outside(outside)},
        gradients=rounds * k, updates=rounds)


#: learners whose race for a round is walked in :func:`_race` (the K-th of
#: learners a pull apart: past a few dozen, the later ones never win)
RACING = 64


def _race(law: Law, k: int, learners: int, out: float) -> tuple[np.ndarray, np.ndarray]:
    """(x, P(T <= x)) on a grid: T the k-th of the learners' steps, each
    started a pull after the one before (as the port sends them the
    weights), (j - 1) out + X_j; the count done by x is a sum of
    independent Bernoullis, walked learner by learner."""
    spread = float(law.ppf(1 - 1e-9))
    racing = int(min(learners, RACING, k + math.ceil(spread / out)))
    x = np.linspace(0.0, (racing - 1) * out + spread, 1025)
    done = np.clip(law.cdf(x[:, None] - out * np.arange(racing)[None, :]), 0.0, 1.0)
    fewer = np.zeros((len(x), k))           # P(c of the first j done), c < k
    fewer[:, 0] = 1.0
    for j in range(racing):
        p = done[:, j:j + 1]
        fewer = np.concatenate([fewer[:, :1] * (1 - p), fewer[:, 1:] * (1 - p) + fewer[:, :-1] * p],
                               axis=1)
    return x, 1.0 - fewer.sum(axis=1)


def _on_pull_lattice(round_s: float, out: float, law: Law, k: int, learners: int) -> float:
    """A round through a server's port that sends each of the ``learners``
    the weights, ``out`` each, every round. A round that would take S with
    the port free at its start begins with the first pull after the one
    under way when the last was published. Where the port is still busy
    with the last round's pulls when it publishes (S under the L pulls'
    time), those pulls end a pull apart from its start, and the round ends
    on that lattice, out ceil(S / out); else it idled, and the round is S.
    The mean over S, ``round_s`` on average and spread as the race of
    :func:`_race` (4 p2.xlarge nodes, VGG-11's 3.4 s pulls, K = 1: 7.09 s
    free, 10.20 simulated, three pulls, where half a pull's wait said 8.79;
    a race spread over a pull or more leaves half a pull on average: 17
    learners, 3.9 ms pulls, steps of 142 ms and cv 1: 42.8 ms simulated,
    42.7)."""
    busy = learners * out
    if law.std == 0:
        return out * math.ceil(round_s / out - 1e-12) if round_s < busy else round_s
    if k > RACING:
        return round_s + out / 2 if round_s < busy else round_s
    x, below = _race(law, k, learners, out)
    # S = shift + T, with the closed form's mean
    s = round_s - np.trapezoid(1.0 - below, x) + x
    cell = np.ceil(s / out - 1e-12)
    return float(np.trapezoid(np.where(s < busy, out * cell, s), below))


#: seeded rounds of :func:`_pushes_walked` (at most; fewer for large rounds)
PUSH_ROUNDS, PUSH_DRAWS, PUSH_SEED = 256, 200_000, 20180409


def _pushes_walked(law: Law, ready: np.ndarray, k: int, rest: float, to_port: float) -> float:
    """k-batch-sync's round, its pushes walked through the server's port on
    seeded draws of the steps: learner i asks for the port a step and its
    other stages (``rest``) after ``ready[i]``, and again as long after its
    push is through; the port takes them first come, first served, each
    ``to_port``; the round closes with the k-th through. The expected times
    of the events leave out the queue that random arrivals about a push
    apart make, and the steps a learner's wait for the port delays (5
    GoogLeNet learners on p2.xlarge, K = 10, gamma steps of cv 0.5: 2.58 s
    simulated, 2.35 at the means; a hunt). A numerical evaluation of the
    round's law, not a simulation of the cluster: the same draws each call."""
    L = len(ready)
    rounds = max(16, min(PUSH_ROUNDS, PUSH_DRAWS // (k + L)))
    steps = law.sample(np.random.default_rng(PUSH_SEED), rounds * (k + L)).reshape(rounds, k + L)
    # every round at once: the t-th push of each is its earliest ask
    # (argmin takes the lowest learner of a tie, as a heap of (time, learner) does)
    asks = np.asarray(ready, dtype=float) + rest + steps[:, :L]
    free = np.zeros(rounds)
    rows = np.arange(rounds)
    for t in range(k):
        first = np.argmin(asks, axis=1)
        free = np.maximum(asks[rows, first], free) + to_port
        asks[rows, first] = free + rest + steps[:, L + t]
    return float(np.mean(free))


def _busiest_turn(topo, stages) -> float:
    """The most any one of a node's resources is held by all its learners' ``stages``."""
    from collections import Counter

    from ..analytic import _resolved
    from ..structure import is_fabric

    # a node's resources serve its own learners, and the nodes of a block
    # are alike: the first node of each block says it all
    firsts, start = [], 0
    for nodes, per_node in ([(b.nodes, b.learners_per_node) for b in topo.blocks]
                            or [(topo.nodes, topo.learners_per_node)]):
        firsts += range(start, start + per_node)
        start += nodes * per_node
    held: Counter = Counter()
    for learner in firsts:
        for names, duration in _resolved(topo, stages, learner):
            for name in names:
                # the server's port and a fat tree's leaf links: their own bounds
                if not name.startswith("server") and not is_fabric(name):
                    held[name] += duration
    return max(held.values(), default=0.0)


def _walked_ready(topo, loop_, step: float) -> np.ndarray:
    """When the learners' first gradients after a publication are ready to
    push, in the order the weights go out (not by learner): their pulls and
    reads, a step of ``step`` and the stages after it up to the push,
    walked together (skeleton.py), first come first served (a node's
    learners that start together copy their gradients out together, and
    queue at what they share)."""
    from collections import Counter

    from ..analytic import _resolved
    from ..skeleton import Skeleton

    # the weights go out in the order the learners asked, and they ask in
    # the order their last steps ended: one from each node in turn, since the
    # first steps' reads run on every node's disk at once (and random steps
    # spread a node's learners over the order as evenly, on average)
    nodes = topo.node_of_learners()
    turn, asked = [], Counter()
    for node in nodes:
        turn.append(asked[node])
        asked[node] += 1
    order = sorted(range(topo.learners), key=lambda i: (turn[i], nodes[i]))
    stages = [_resolved(topo, loop_.reply + loop_.before, i) + [((), step)]
              + _resolved(topo, loop_.to_push, i) for i in order]
    ends = Skeleton().walk(np.zeros(topo.learners), stages)
    # each row's last stage ended last (NaN past a learner's own stages)
    return np.nan_to_num(np.fmax.reduce(ends, axis=1), nan=0.0) if ends.size else np.zeros(len(stages))


SHARES = [0.0625, 0.125, 0.25, 0.5, 0.75, 1.0]

K_SYNC = Kind(KSyncSpec, loop, build, predict, draw=draw_k(SHARES),
              knob=lambda learners: ("k", powers_of_two(learners)))
K_BATCH_SYNC = Kind(KBatchSyncSpec, loop, build, predict, draw=draw_k(SHARES + [2.0]),
                    knob=lambda learners: ("k", powers_of_two(4 * learners)))
