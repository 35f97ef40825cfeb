"""The agreement suite: the closed form against the simulator on random
scenarios drawn from the whole space a user can write.

The shipped scenarios are a handful of points; a model that agrees on them
and not on their neighbours is not correct. ``random_scenario`` draws a
scenario over every axis a scenario file sets: algorithm, machine preset or
explicit hardware, model, nodes, GPUs per node and per host link, sub-batch,
compute (kernel table, roofline or any time law), jitter (none included),
communication (modelled or ideal), SPRINT's fixed cycle, run length from
a few steps per learner to many epochs, (on a fifth of the draws of
several nodes, from a stream of their own) a fat tree, (on a fifth of
the modelled draws) input from the page cache or already on the GPU, (on
two fifths of the modelled draws) uint8 pixels or stored samples copied
to the GPU, (on a fifth of the kernel model's draws) kernels replayed in
CUDA graphs, and (on sync draws, from a stream of their own) TensorFlow's
gradients sent during the backward pass and shards of whole tensors.
``check`` simulates one and sets its figures beside the closed form's.
``--misbehaving`` draws the same scenarios with failures (of learners or
nodes) or mixed nodes (``cluster.groups``) on every one: the closed form is
exact for few of them and labels the rest, so that family is reported and
tested apart.

A scenario agrees when its epoch time and mean mini-batch are within 5 % of
the closed form and its mean staleness within 10 % (0.1 absolute where the
mean staleness is below 1), each widened by three standard errors of the
simulated figure (a run of 30 exponential steps per learner cannot pin its
epoch time to 5 %: that is sampling, not the model; under ``ssp``'s bound
the run goes at the pace of the slowest of L random walks, whose spread does
not shrink with L; a run ends on an update, so its end is rounded to the
update grid, which a run of a few updates feels). A scenario whose
``laws`` say it is outside the closed form's assumptions is reported apart.

    python -m asgdsim.agreement --scenarios 300 --seed 0      # the report
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from . import catalog
from .algorithms import KINDS
from .distributions import law_from_spec, order_moments
from .memory import footprint
from .scenario import GpuSpec, ScenarioError, catalog_model, scenario_from_dict
from .simulation import simulate

__all__ = ["BOUNDS", "random_scenario", "check", "run_suite", "report"]

#: relative bounds of the issue that defines "agrees"
BOUNDS = {"epoch_time": 0.05, "minibatch_mean": 0.05, "staleness_mean": 0.10}
#: below this mean staleness its bound is absolute (versions), not relative
STALENESS_ABSOLUTE_BELOW = 1.0
STALENESS_ABSOLUTE = 0.1
#: standard errors of the simulated figure added to a bound
Z = 3.0
#: most gradients one random scenario may simulate (keeps the suite fast)
MAX_GRADIENTS = 12_000
#: most learners one random scenario may have: past the 256 the closed form
#: walks one by one (analytic.MAX_SKELETON_LEARNERS), so its large-cluster
#: forms are checked too (a 64-node draw of 16-GPU nodes is 1,024)
MAX_LEARNERS = 1024

LAWS = ("deterministic", "exponential", "shifted-exponential", "uniform", "gamma", "lognormal")
SUB_BATCHES = (4, 8, 16, 32, 64, 128, 256)
NETWORKS = ("ib-qdr", "ib-fdr", "ib-edr", "ib-hdr", "10gbe", "25gbe", "100gbe")
HOST_LINKS = ("pcie2-x16", "pcie3-x16", "pcie4-x16")


def _law(rng: np.random.Generator, mean: str) -> dict:
    kind = str(rng.choice(LAWS))
    law: dict = {"distribution": kind, "mean": mean}
    cv = float(np.exp(rng.uniform(np.log(0.03), np.log(1.5))))
    if kind == "shifted-exponential":
        law["shift"] = f"{float(mean.split()[0]) * rng.uniform(0.1, 0.9):.4g} ms"
    elif kind == "uniform":
        law["cv"] = round(min(cv, 0.55), 3)
    elif kind in ("gamma", "lognormal"):
        law["cv"] = round(cv, 3)
    return law


def random_scenario(rng: np.random.Generator, index: int = 0, misbehaving: bool = False) -> dict:
    """One scenario mapping, as a user could write it, drawn from ``rng``;
    ``misbehaving``: of a cluster that fails or mixes its nodes (see
    :func:`_with_groups` and :func:`_with_failures`)."""
    # every kind, the seed paper's (sprint) twice as often as each other one
    weights = np.array([2.0 if name == "sprint" else 1.0 for name in KINDS])
    kind = str(rng.choice(list(KINDS), p=weights / weights.sum()))
    cluster: dict
    if rng.random() < 0.6:
        machine = str(rng.choice(catalog.names("machines")))
        per_node = catalog.lookup("machines", machine)["gpus_per_node"]
        cluster = {"machine": machine}
        if rng.random() < 0.3:
            cluster["gpus_per_node"] = int(rng.integers(1, per_node + 1))
    else:
        cluster = {"gpu": str(rng.choice(catalog.names("gpus"))),
                   "network": str(rng.choice(NETWORKS)),
                   "gpus_per_node": int(rng.choice([1, 2, 3, 4, 8])),
                   "host_link": str(rng.choice(HOST_LINKS))}
        if cluster["gpus_per_node"] % 2 == 0 and rng.random() < 0.5:
            cluster["gpus_per_host_link"] = 2
        if rng.random() < 0.2:
            cluster["rails"] = 2
        if cluster["gpus_per_node"] % 2 == 0 and rng.random() < 0.2:
            cluster["gpus_per_learner"] = 2
            cluster["learner_split"] = str(rng.choice(["data", "layers"]))
    per_node = cluster.get("gpus_per_node") or catalog.lookup(
        "machines", cluster["machine"])["gpus_per_node"]
    nodes = int(np.clip(round(np.exp(rng.uniform(0, np.log(64)))), 1, MAX_LEARNERS // per_node))
    cluster["nodes"] = nodes
    learners = nodes * per_node

    model = str(rng.choice(catalog.names("models")))
    sub_batch = _fitting(model, cluster, int(rng.choice(SUB_BATCHES)))
    timing: dict = {}
    draw = rng.random()
    if draw < 0.4:
        timing["compute"] = "table"
    elif draw < 0.55:
        timing["compute"] = "roofline"
    else:
        timing["compute"] = _law(rng, f"{float(np.exp(rng.uniform(np.log(5), np.log(2000)))):.4g} ms")
    if isinstance(timing["compute"], str):
        jitter = rng.random()
        if jitter < 0.25:
            timing["jitter"] = "none"
        elif jitter < 0.45:
            pass                                   # the default
        else:
            timing["jitter"] = {"distribution": str(rng.choice(["lognormal", "gamma", "uniform"])),
                                "cv": round(float(np.exp(rng.uniform(np.log(0.01), np.log(0.3)))), 3)}
    ideal = rng.random() < 0.25
    timing["communication"] = "ideal" if ideal else "modelled"
    keys, timing_keys, per_update = KINDS[kind].draw(rng, ideal, learners)
    timing.update(timing_keys)

    # run length: steps per learner from a few to thousands, within the budget
    steps = float(np.exp(rng.uniform(np.log(5), np.log(3000))))
    steps = min(steps, MAX_GRADIENTS / learners)
    gradients = max(int(steps * learners), learners * 3)
    stop_kind = rng.choice(["epochs", "epochs", "epochs", "gradients", "updates"])
    epochs = float(rng.choice([1, 1, 2, 5, 0.5]))
    dataset = max(sub_batch, int(gradients * sub_batch / epochs))
    if stop_kind == "epochs":
        stop = {"epochs": epochs}
    elif stop_kind == "gradients":
        stop = {"gradients": gradients}
    else:
        stop = {"updates": max(3, gradients // per_update(learners))}
    data = {"name": f"random-{index}", "seed": int(rng.integers(0, 2**31)),
            "workload": {"model": model, "dataset_samples": dataset, "sub_batch": sub_batch},
            "cluster": cluster, "algorithm": {"kind": kind, **keys}, "timing": timing,
            "stop": stop}
    # faults on a fifth of the draws, from a stream of their own, so the
    # draws without them stay the same
    faulty = np.random.default_rng(data["seed"])
    faults = faulty.random()
    if faults < 0.15:
        data["faults"] = {"stragglers": {"probability": float(faulty.choice([0.01, 0.02, 0.05])),
                                         "slowdown": float(faulty.choice([2, 4]))}}
    elif faults < 0.2:
        data["faults"] = {"slow_learners": {"learners": [0], "slowdown": 2.0}}
    # a fat tree on a fifth of the modelled draws of several nodes, from a stream of
    # its own too: leaves of a few nodes up to all of them, 1:1 to 4:1
    fabric = np.random.default_rng([data["seed"], 1])
    if nodes > 1 and not ideal and fabric.random() < 0.2:
        cluster["topology"] = {
            "kind": "fat-tree",
            "nodes_per_switch": int(fabric.choice([n for n in (1, 2, 4, 8, 16) if n <= nodes])),
            "oversubscription": float(fabric.choice([1, 2, 4]))}
    # input from the page cache or already on the GPU on a tenth of the
    # modelled draws each, from a stream of its own as well
    source = np.random.default_rng([data["seed"], 4]).random()
    if not ideal and source < 0.2:
        data["workload"]["input"] = "cached" if source < 0.1 else "synthetic"
    # what the input pipeline copies to the GPU: uint8 pixels or the stored
    # samples on a fifth of the modelled draws each, from a stream of its own
    copied = np.random.default_rng([data["seed"], 6]).random()
    if not ideal and copied < 0.4:
        data["workload"]["input_copy"] = "uint8" if copied < 0.2 else "encoded"
    # kernels replayed in CUDA graphs on a fifth of the kernel model's
    # draws, from a stream of its own
    if isinstance(data["timing"]["compute"], str) and \
            np.random.default_rng([data["seed"], 7]).random() < 0.2:
        data["workload"]["cuda_graphs"] = True
    # TensorFlow's ways on a sync draw, from a stream of their own too: the
    # gradient sent during the backward pass on a quarter, whole tensors on
    # half of the sharded ones
    if kind == "sync":
        tensorflow = np.random.default_rng([data["seed"], 5])
        if tensorflow.random() < 0.25:
            keys["overlap"] = "backward"
        if keys.get("servers", 1) > 1 and tensorflow.random() < 0.5:
            keys["split"] = str(tensorflow.choice(["round-robin", "greedy"]))
        data["algorithm"].update(keys)
    if misbehaving:
        grouped = _with_groups(data, np.random.default_rng([data["seed"], 2]))
        _with_failures(data, np.random.default_rng([data["seed"], 3]), always=not grouped)
    return data


def _with_groups(data: dict, rng: np.random.Generator) -> bool:
    """Half the draws on a machine preset with several nodes become a mixed
    cluster: their nodes split between that machine and another (another
    GPU, and maybe another node shape). A split whose sub-batch the other
    GPU cannot hold is left out, so no draw is drawn again. Whether it split."""
    cluster = data["cluster"]
    if "machine" not in cluster or cluster["nodes"] < 2 or rng.random() >= 0.5:
        return False
    other = str(rng.choice([m for m in catalog.names("machines") if m != cluster["machine"]]))
    first = int(rng.integers(1, cluster["nodes"]))
    mine = {k: cluster.pop(k) for k in ("machine", "nodes", "gpus_per_node") if k in cluster}
    group = {"nodes": first, "machine": mine["machine"]}
    if "gpus_per_node" in mine:
        group["gpus_per_node"] = mine["gpus_per_node"]
    cluster["groups"] = [group, {"nodes": mine["nodes"] - first, "machine": other}]
    try:
        scenario_from_dict(data, source=data["name"])
    except ScenarioError:
        del cluster["groups"]
        cluster.update(mine)
        return False
    return True


def _with_failures(data: dict, rng: np.random.Generator, always: bool) -> None:
    """Failures on every draw not split into groups (``always``) and half of
    the others: a mean time between failures that
    makes from a few to a few hundred failures over the run (the closed
    form's own estimate of its length) but spans 20 steps at least, repairs
    from 1 % to 20 % of it, of learners or of whole nodes."""
    if rng.random() >= (1.0 if always else 0.5):
        return
    try:
        sc = scenario_from_dict(data, source=data["name"])
    except ScenarioError:
        return
    from .analytic import predict

    pred = predict(sc)
    seconds = pred.gradients * sc.workload.sub_batch / max(pred.steady_throughput_samples_per_s,
                                                           1e-12)
    scope = str(rng.choice(["learner", "node"]))
    units = sc.cluster.learners if scope == "learner" else sc.cluster.nodes
    failures = float(np.exp(rng.uniform(np.log(3), np.log(300))))
    # but at least 20 of a learner's cycles up: failing within every step,
    # a cluster applies nothing (the simulator's watch stops it as stuck)
    cycle = seconds * sc.cluster.learners / max(pred.gradients, 1)
    mtbf = max(units * seconds / failures, 20 * cycle)
    if not (math.isfinite(mtbf) and mtbf > 0):
        return
    data["faults"] = {**data.get("faults", {}), "failures": {
        "mtbf": f"{mtbf:.4g} s", "repair": f"{mtbf * float(rng.choice([0.01, 0.05, 0.2])):.4g} s",
        "scope": scope}}


def _fitting(model: str, cluster: dict, sub_batch: int) -> int:
    """The drawn sub-batch, halved until it fits in the GPU's memory: a user's
    scenario must fit (the scenario check refuses one that does not)."""
    gpu = cluster.get("gpu") or catalog.lookup("machines", cluster["machine"])["gpu"]
    spec = GpuSpec.model_validate(catalog.lookup("gpus", gpu))
    net = catalog_model(model)
    while sub_batch > 1 and not footprint(net.parameters, net.input_shape, net.graph,
                                          sub_batch, spec.memory).fits:
        sub_batch //= 2
    return sub_batch


@dataclass(frozen=True)
class Check:
    """One scenario's simulated and closed-form figures, and whether they agree."""

    row: dict

    @property
    def agrees(self) -> bool:
        return self.row["agrees"]


def _se_of_mean(x: np.ndarray, batches: int = 20) -> float:
    """Standard error of a correlated series' mean, by batch means."""
    x = np.asarray(x, dtype=float)
    if len(x) < 2 * batches:
        return float(x.std(ddof=1) / math.sqrt(len(x))) if len(x) > 1 else 0.0
    usable = len(x) - len(x) % batches
    means = x[:usable].reshape(batches, -1).mean(axis=1)
    return float(means.std(ddof=1) / math.sqrt(batches))


def _epoch_se(sc, cv: float, gradients: int, steps: float) -> float:
    """Relative standard error of the simulated epoch time: cv / sqrt(n) for
    the n-th of many renewal events; under ``ssp``'s bound the run goes at
    its slowest learner's pace, so the spread is that of the largest of L
    random walks of ``steps`` steps (sd of the largest of L standard
    normals, times cv / sqrt(steps))."""
    se = cv / math.sqrt(max(gradients, 1))
    learners = sc.cluster.learners
    if sc.algorithm.kind == "ssp" and learners > 1 and steps > 0:
        se = max(se, cv * _sd_of_max_normal(learners) / math.sqrt(steps))
    return se


#: kinds whose every update is a round of every learner's step (or steps)
ROUNDS = ("sync", "allreduce", "local-sgd")


def _rounds_se(sc, costs, u) -> float:
    """Relative standard error of a run of rounds of every learner: the sd of
    a round (the largest of L steps, or of L sums of ``period`` steps, each
    learner's by its own law: a slow learner's spread is its round's, by
    quadrature; k-sync's K-th of L where they share one law) over the run's
    mean round, over sqrt(rounds). A
    straggler in one round of twenty moves the run by as much as the
    renewal spread of all its gradients; taken from the laws, not the run's
    rounds, which may hold none."""
    from .costs import learner_classes

    classes = [(law, n) for group in learner_classes(sc, costs) for law, n in group.items()]
    rounds = len(u)
    if rounds < 1 or not classes or all(law.std == 0 for law, _ in classes):
        return 0.0
    k = getattr(sc.algorithm, "k", None) if sc.algorithm.kind == "k-sync" else None
    if k is not None and k < sum(n for _, n in classes):
        if len(classes) > 1:
            return 0.0      # (the K-th of several laws' steps: not written; renewal's spread)
        (law, n), = classes
        mean, sd = order_moments(law, k, n)
        return sd / (float(u["t"].iloc[-1]) / rounds) / math.sqrt(rounds)
    period = getattr(sc.algorithm, "period", 1)
    if period > 1:
        classes = [(law.sum_of(period), n) for law, n in classes]
    grid = np.linspace(min(law.ppf(1e-9) for law, _ in classes),
                       max(law.ppf(1.0 - 1e-12) for law, _ in classes), 8001)
    largest = np.ones_like(grid)
    for law, n in classes:
        largest *= np.clip(law.cdf(grid), 0.0, 1.0) ** n
    mean = grid[-1] - np.trapezoid(largest, grid)
    second = grid[-1] ** 2 - np.trapezoid(2 * grid * largest, grid)
    sd = math.sqrt(max(second - mean ** 2, 0.0))
    return sd / (float(u["t"].iloc[-1]) / rounds) / math.sqrt(rounds)


def _sd_of_max_normal(n: int) -> float:
    """Standard deviation of the largest of n standard normals (quadrature)."""
    from scipy import special

    z = np.linspace(-8.0, 8.0, 4001)
    density = np.gradient(special.ndtr(z) ** n, z)
    mean = np.trapezoid(z * density, z)
    return float(math.sqrt(max(np.trapezoid(z * z * density, z) - mean**2, 0.0)))


def _regime(sc) -> dict:
    timing = sc.timing
    if isinstance(timing.compute, str):
        cv = 0.0 if timing.jitter == "none" else law_from_spec(timing.jitter).cv
        law = ("constant" if cv == 0 else "jitter cv <= 0.05" if cv <= 0.05
               else "jitter cv > 0.05")
    else:       # a law, or measured steps replayed (which have no distribution's name)
        law = getattr(timing.compute, "distribution", "empirical")
    f = sc.faults
    faults = " + ".join(name for name, on in (("stragglers", f.stragglers),
                                              ("slow learners", f.slow_learners),
                                              ("failures", f.failures)) if on) or "none"
    return {"law": law, "communication": timing.communication, "faults": faults,
            "topology": sc.cluster.topology.kind,
            "nodes": "groups" if sc.cluster.groups else "all alike"}


def check(data: dict) -> dict:
    """Simulate one scenario mapping; its figures, errors and verdict as a row."""
    sc = scenario_from_dict(data, source=data["name"])
    # as the suite has always run its draws: no estimate first
    res = simulate(sc, max_events=math.inf, max_memory=math.inf)
    s, a = res.summary, res.summary["analytic"]
    g, u = res.gradients, res.updates
    learners = sc.cluster.learners
    steps = len(g) / learners
    cv = res.costs.compute.cv
    row = {"name": sc.name, "algorithm": sc.algorithm.kind, "learners": learners,
           "steps_per_learner": steps, **_regime(sc),
           "outside": "outside the closed form's assumptions" in " ".join(a["laws"].values())}
    # sampling error of each simulated figure: the epoch is the time of the
    # n-th gradient, whose relative spread is cv / sqrt(n) (renewal CLT); the
    # means are series of correlated values (batch means)
    epoch_se = _epoch_se(sc, cv, len(g), steps)
    if sc.algorithm.kind in ROUNDS + ("k-sync",) or (sc.algorithm.kind == "k-async"
                                                   and sc.algorithm.k == learners):
        epoch_se = max(epoch_se, _rounds_se(sc, res.costs, u))
    # the run ends on an update, so which update grid point (SPRINT's
    # cycle, another kind's mean spacing of updates) holds the last
    # gradient it needs rounds its end: sd 1 / sqrt(12) of a spacing, which
    # a run of a few felt (SPRINT, 5 K40s, 7 updates on a 0.64 s cycle:
    # 1.79 or 1.92 s an epoch by seed, agreement seed 2 #76)
    end_s = float(u["t"].iloc[-1]) if len(u) else 0.0
    if end_s > 0:
        epoch_se = max(epoch_se, a["t_update_s"] / math.sqrt(12) / end_s)
    # (a few updates may all come out alike, a sample spread of 0: a mean's
    # error is then at least the closed form's own spread over sqrt(n))
    se = {"epoch_time": epoch_se,
          "minibatch_mean": max(_se_of_mean(u["minibatch"].to_numpy()),
                                a["minibatch"]["std"] / math.sqrt(max(len(u), 1)))
          / max(a["minibatch"]["mean"], 1e-12),
          "staleness_mean": max(_se_of_mean(g["staleness"].to_numpy()),
                                a["staleness"]["std"] / math.sqrt(max(len(g), 1)))}
    figures = {"epoch_time": (s["epoch_time_s"], a["epoch_time_s"]),
               "minibatch_mean": (s["minibatch"]["mean"], a["minibatch"]["mean"]),
               "staleness_mean": (s["staleness"]["mean"], a["staleness"]["mean"])}
    agrees = True
    for name, (sim, closed) in figures.items():
        if name == "staleness_mean":
            absolute = max(closed, sim) < STALENESS_ABSOLUTE_BELOW
            err = abs(sim - closed) if absolute else abs(sim - closed) / max(abs(closed), 1e-12)
            bound = (STALENESS_ABSOLUTE if absolute else BOUNDS[name]) + Z * (
                se[name] if absolute else se[name] / max(abs(closed), 1e-12))
        else:
            err = abs(sim - closed) / abs(closed) if closed else math.inf
            bound = BOUNDS[name] + Z * se[name]
        row[f"{name}_sim"], row[f"{name}_closed"] = sim, closed
        row[f"{name}_err"], row[f"{name}_bound"] = err, bound
        agrees &= err <= bound
    row["agrees"] = bool(agrees)
    row["wall_s"] = s["wall_time_s"]
    return row


def draw(count: int, seed: int = 0, misbehaving: bool = False) -> list[dict]:
    """``count`` valid scenarios (draws that a scenario check refuses, such as
    a sub-batch too large for the GPU's memory, are drawn again)."""
    rng = np.random.default_rng(seed)
    out: list[dict] = []
    while len(out) < count:
        data = random_scenario(rng, len(out), misbehaving)
        try:
            scenario_from_dict(data, source=data["name"])
        except ScenarioError:
            continue
        out.append(data)
    return out


def run_suite(count: int, seed: int = 0, progress: bool = False,
              misbehaving: bool = False) -> pd.DataFrame:
    rows = []
    for i, data in enumerate(draw(count, seed, misbehaving)):
        rows.append({**check(data), "scenario": data})
        if progress and (sys.stderr.isatty() or (i + 1) % max(1, count // 10) == 0):
            print(f"{i + 1}/{count}", file=sys.stderr, end="\r" if sys.stderr.isatty() else "\n")
    return pd.DataFrame(rows)


def report(table: pd.DataFrame, worst: int = 10) -> str:
    """Share within bounds per algorithm and regime, and the worst cases."""
    lines = [f"{len(table)} random scenarios: {table['agrees'].mean():.1%} agree "
             f"({int(table['agrees'].sum())}); outside the closed form's assumptions: "
             f"{int(table['outside'].sum())}, of which {int((table['outside'] & ~table['agrees']).sum())} disagree; "
             f"disagree and not labelled: {int((~table['agrees'] & ~table['outside']).sum())}"]
    for by in ("algorithm", "communication", "law", "faults", "topology", "nodes"):
        shares = table.groupby(by)["agrees"].agg(["mean", "size"])
        lines.append(f"  by {by}: " + ", ".join(f"{k} {v['mean']:.0%} of {int(v['size'])}"
                                                 for k, v in shares.iterrows()))
    bad = table[~table["agrees"]].copy()
    if not bad.empty:
        bad["excess"] = bad[[f"{n}_err" for n in BOUNDS]].to_numpy().max(axis=1)
        lines.append("  worst (those not labelled first):")
        for r in bad.sort_values(["outside", "excess"], ascending=[True, False]).head(worst).itertuples():
            lines.append(
                f"    {r.name}: {r.algorithm}, {r.learners} learners, {r.steps_per_learner:.0f} steps, "
                f"{r.law}, {r.communication}{' (labelled outside)' if r.outside else ''}: "
                f"epoch {r.epoch_time_sim:.4g}/{r.epoch_time_closed:.4g} ({r.epoch_time_err:.1%}), "
                f"mini-batch {r.minibatch_mean_sim:.4g}/{r.minibatch_mean_closed:.4g} "
                f"({r.minibatch_mean_err:.1%}), staleness {r.staleness_mean_sim:.3g}/"
                f"{r.staleness_mean_closed:.3g} ({r.staleness_mean_err:.1%})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m asgdsim.agreement",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenarios", type=int, default=300, help="how many (default 300)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the draw (default 0)")
    parser.add_argument("--worst", type=int, default=10, help="worst cases listed (default 10)")
    parser.add_argument("--csv", help="also write every row to this CSV file")
    parser.add_argument("--misbehaving", action="store_true",
                        help="the same draws with failures or mixed nodes (groups) on every one")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    table = run_suite(args.scenarios, args.seed, progress=True, misbehaving=args.misbehaving)
    print(report(table, args.worst))
    print(f"({time.perf_counter() - started:.0f} s)")
    if args.csv:
        table.drop(columns="scenario").to_csv(args.csv, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
