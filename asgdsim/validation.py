"""Whole simulated clusters against published measurements of real ones.

``catalog/cluster_measurements.csv`` holds published multi-GPU and
multi-node training throughputs, each with its source (repository or
report, the table, the commit) and the hardware and setting it was measured
on: GPU, nodes, GPUs per node, batch per GPU, precision, synthetic or real
input, and the framework's way of summing gradients. Each row becomes a
scenario (:func:`scenario_of`): the machine preset of its cluster, the
``sync`` kind for a parameter server (its shards on the learners' nodes, as
TensorFlow runs them), ``allreduce`` for NCCL, Horovod and DDP; a node whose
GPUs sum their gradients before pushing them (TensorFlow's
``distributed_replicated``) is one learner of all its GPUs. Synthetic input
reads nothing from disk; cached input (NVIDIA's MXNet runs, which re-read
32,000 samples after a warm-up epoch) reads from the page cache.

``layout`` is the activations' layout each source ran, from its code:
tf_cnn_benchmarks' ``data_format`` defaults to NCHW (tf_cnn_benchmarks.py),
as NVIDIA's TensorFlow ResNet-50 does (utils/cmdline_helper.py @0663b67);
NVIDIA's MXNet runner sets NHWC layouts for float16 only
(MxNet/Classification/RN50v1.5/runner), and its PyTorch ``configs.yml``
``memory_format: nhwc`` for AMP only (PyTorch/Classification/ConvNets @097c7ff).
``input_copy`` is what crosses each GPU's host link, from the same code:
TensorFlow's input pipelines decode and resize on the host and hand over
float32 images (tf_cnn_benchmarks' preprocessing; NVIDIA's TensorFlow
ResNet-50 without ``--use_dali``, utils/image_processing.py: bilinear
``resize_images`` returns float32); NVIDIA's PyTorch runs take DALI's CPU
backend by default (main.py ``--data-backend dali-cpu``; the benchmark
configurations set none), which decodes and crops on the host and copies
the uint8 crop that the GPU normalises (image_classification/dataloaders.py
``self.cmnp(images.gpu())``); NVIDIA's MXNet runner takes DALI's GPU
backend (runner ``--data-backend dali-gpu``; dali.py decodes on the
``mixed`` device), so the stored record crosses and the GPU decodes it.
``cuda_graphs`` marks the runs whose steps replay a CUDA graph: NVIDIA's
MXNet runner sets ``MXNET_ENABLE_CUDA_GRAPHS=1`` from its 22.10 release
(commit 1bd98ac3, the container of the DGX A100 table), not in the 20.12
runner of its DGX-1 and DGX-2 tables; the PyTorch ConvNets capture graphs
for Triton inference only, and TensorFlow 1.x has none.

Nothing in the cluster model is fitted to these rows. The framework's two
overheads (:mod:`asgdsim.overheads`) are fitted on single-GPU FP32 steps of
``catalog/whole_network.csv``, which share a few figures with this table
(the single-GPU rows of the TensorFlow page and of NVIDIA's READMEs):
``in_fit`` marks those. ``held_out`` marks the rows set aside before the
first comparison, none of them in any fit (the CSCS report, NVIDIA's MXNet
tables beyond one GPU, and every row of the two publishers added last,
OneFlow's DLPerf and Ray's RaySGD benchmarks, entered before any of them
was simulated); their errors are reported apart.

Two metrics per row: the throughput itself (``throughput_samples_per_s``),
whose error is the single GPU's step cost and the cluster's together, and,
where the same table has the one-GPU figure, the speed-up over it
(``speedup_over_1_gpu``), whose error is the cluster model's alone.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, fields
from importlib import resources

__all__ = ["COLUMNS", "SPEEDUP", "THROUGHPUT", "Measurement", "measurements", "scenario_of",
           "validate", "medians", "validation_figure"]

TABLE = "cluster_measurements.csv"
#: the columns of validation.csv (CONTRACT.md), then what helps read them
COLUMNS = ["source", "system", "model", "gpu", "gpus", "nodes", "metric", "measured",
           "simulated", "rel_err"]
EXTRA = ["algorithm", "framework", "setting", "servers", "precision", "layout", "batch_per_gpu",
         "data", "input_copy", "cuda_graphs", "held_out", "in_fit", "method", "reference", "table",
         "note"]
THROUGHPUT, SPEEDUP = "throughput_samples_per_s", "speedup_over_1_gpu"
#: what makes two rows one series of a table, whose one-GPU row is the speed-ups' base
SERIES = ["source", "reference", "table", "system", "model", "batch_per_gpu", "precision", "data"]
#: frameworks whose collective runs during the backward pass, read from a
#: row's framework and setting: Horovod's tensor fusion, PyTorch DDP's
#: gradient buckets, OneFlow's actors (an op runs once its inputs are
#: ready: docs.oneflow.org "OneFlow System Design", runtime based on actor
#: system; Yuan et al. 2021, arXiv:2110.15032) and Paddle's collective mode
#: (its ParallelExecutor "executes the Op depending on whether the input of
#: Op is ready" and aggregates the gradients during execution:
#: paddlepaddle.org.cn api_guides/low_level/parallel_executor); TensorFlow
#: 1.1's replicated variables and tf.distribute's strategies sum them after it
OVERLAPPING = re.compile(r"Horovod|DistributedDataParallel|OneFlow|paddle\.distributed",
                         re.IGNORECASE)
#: rounds each learner runs: enough for a round's mean, a few seconds for the whole table
ROUNDS = 20
#: above this many learners the closed form stands in for the simulation
MAX_SIMULATED_LEARNERS = 1024
#: the fields ``--only`` looks in, and their names as the help says them
SEARCHED = ("source", "system", "machine", "gpu", "model", "precision", "data", "framework",
            "published_setting", "algorithm")
SEARCHED_IN = ("source, system, machine, GPU, model, precision, input, framework, setting or "
               "algorithm")


@dataclass(frozen=True)
class Measurement:
    """One published throughput and the cluster it was measured on."""

    source: str
    reference: str
    table: str
    system: str
    machine: str
    gpu: str
    gpus: int
    nodes: int
    gpus_per_node: int
    model: str
    batch_per_gpu: int
    precision: str
    layout: str
    data: str
    input_copy: str
    cuda_graphs: bool
    framework: str
    published_setting: str
    algorithm: str
    servers: int | None
    gpus_per_learner: int
    metric: str
    measured: float
    held_out: bool
    note: str

    @property
    def text(self) -> str:
        """What ``--only`` searches, lower case: the fields that say which
        cluster and setting the row is (:data:`SEARCHED`), not its free-text
        note, whose mentions of other systems would keep rows of theirs."""
        return " ".join(str(getattr(self, name)) for name in SEARCHED).lower()


def measurements() -> list[Measurement]:
    """Every row of the shipped table, typed."""
    path = resources.files("asgdsim.catalog").joinpath(TABLE)
    with path.open(newline="") as f:
        return [_typed(row) for row in csv.DictReader(f)]


def _typed(row: dict) -> Measurement:
    ints = {"gpus", "nodes", "gpus_per_node", "batch_per_gpu", "gpus_per_learner"}
    values = {}
    for f in fields(Measurement):
        raw = row[f.name]
        if f.name in ints:
            values[f.name] = int(raw)
        elif f.name == "servers":
            values[f.name] = int(raw) if raw else None
        elif f.name == "measured":
            values[f.name] = float(raw)
        elif f.name in ("held_out", "cuda_graphs"):
            values[f.name] = {"yes": True, "no": False}[raw]
        else:
            values[f.name] = raw
    return Measurement(**values)


def fitted_rows() -> set[tuple[str, str, int, str]]:
    """(GPU, model, batch, repository) of every whole-network row the
    framework overheads are fitted on."""
    from . import overheads
    from .catalog import names

    rows = overheads.measurements(set(names("gpus")), set(names("models")))
    return {(r.gpu, r.model, r.batch, r.source.split("@")[0]) for r in rows}


def in_fit(m: Measurement, fitted: set[tuple[str, str, int, str]]) -> bool:
    """Whether the row's figure may be among those some part of the model is
    fitted on: a one-GPU FP32 row whose GPU, model, batch and repository a
    fitted step shares (whole_network.csv names a V100 32 GB by the V100
    that prices it)."""
    from . import catalog

    gpu = catalog.lookup("gpus", m.gpu)
    name = gpu.get("priced_as") or gpu["name"]
    return (m.gpus == 1 and m.precision == "fp32"
            and (name, m.model, m.batch_per_gpu, m.reference.split("@")[0]) in fitted)


def scenario_of(m: Measurement, tensor_shards: bool = False):
    """The scenario of a row: its cluster, its way of summing gradients and
    ``ROUNDS`` rounds of every learner. TensorFlow's shards hold even parts
    of the weights, or, with ``tensor_shards``, whole tensors as
    tf_cnn_benchmarks places them (:func:`tensor_split`). Even by default:
    TensorFlow also pipelines each variable's reply behind its own push (a
    barrier per variable), which ``sync``'s rounds do not, and whole-tensor
    shards without that pipelining overstate the busiest shard (README,
    "Validation")."""
    from .scenario import scenario_from_dict

    k = m.gpus_per_learner
    cluster = {"machine": m.machine, "nodes": m.nodes, "gpus_per_node": m.gpus_per_node,
               "gpu": m.gpu}
    if k > 1:
        cluster.update(gpus_per_learner=k, learner_split="data")
    algorithm: dict = {"kind": m.algorithm}
    if m.algorithm == "sync":
        # TensorFlow's parameter servers run on the workers' own hosts, and
        # its dataflow sends each variable's gradient once the backward pass has it
        algorithm.update(servers=m.servers or 1, placement="colocated", overlap="backward")
        if tensor_shards and (m.servers or 1) > 1:
            algorithm["split"] = tensor_split(m)
    if m.algorithm == "allreduce" and OVERLAPPING.search(f"{m.framework} {m.published_setting}"):
        # Horovod and DDP sum each gradient as soon as the backward pass has it
        algorithm["overlap"] = "backward"
    workload = {"model": m.model, "dataset_samples": 1281167, "sub_batch": m.batch_per_gpu * k,
                "precision": m.precision, "layout": m.layout, "input_copy": m.input_copy,
                "cuda_graphs": m.cuda_graphs}
    if m.data != "real":
        workload["input"] = m.data
    learners = m.gpus // k
    data = {"name": f"{m.source}-{m.system}-{m.model}-{m.gpus}", "seed": 0, "workload": workload,
            "cluster": cluster, "algorithm": algorithm,
            "stop": {"gradients": ROUNDS * learners}}
    return scenario_from_dict(data, source=TABLE)


def tensor_split(m: Measurement) -> str:
    """How tf_cnn_benchmarks (TensorFlow 1.1, variable_mgr.py) places a row's
    variables on its parameter servers: ``parameter_server`` with a
    GreedyLoadBalancingStrategy by bytes, ``distributed_replicated``'s
    shadow variables round-robin (replica_device_setter's default)."""
    return "round-robin" if "distributed_replicated" in m.published_setting else "greedy"


def estimate(m: Measurement, tensor_shards: bool = False) -> tuple[float, str]:
    """The row's simulated throughput (samples/s) and how it was had."""
    from .analytic import predict
    from .simulation import simulate

    sc = scenario_of(m, tensor_shards)
    if sc.cluster.learners > MAX_SIMULATED_LEARNERS:
        return float(predict(sc).summary["throughput_samples_per_s"]), "closed form"
    # ROUNDS rounds of at most MAX_SIMULATED_LEARNERS: no estimate needed
    return (float(simulate(sc, max_events=math.inf, max_memory=math.inf)
                  .summary["throughput_samples_per_s"]), "simulated")


def mentions(text: str, what: str) -> bool:
    """Whether ``text`` (lower case) has ``what`` at the start of a word:
    ``ray`` finds Ray's rows, not the Cray XC50's."""
    return re.search(r"(?<![0-9a-z])" + re.escape(what.lower()), text) is not None


def validate(only: str | Sequence[str] | None = None, tensor_shards: bool = False):
    """One row per measurement kept by ``only`` (case-insensitive texts,
    each of which every kept row has at the start of a word): the
    contract's columns and the extras; ``tensor_shards``: see :func:`scenario_of`."""
    import pandas as pd

    from .errors import ScenarioError

    wanted = [only] if isinstance(only, str) else list(only or ())
    fitted, rows = fitted_rows(), []
    for m in measurements():
        if not all(mentions(m.text, what) for what in wanted):
            continue
        try:
            simulated, method = estimate(m, tensor_shards)
        except ScenarioError as exc:       # a row the model refuses (memory): say why
            simulated, method = math.nan, f"refused: {str(exc).splitlines()[-1].strip()}"
        rows.append({"source": m.source, "system": m.system, "model": m.model, "gpu": m.gpu,
                     "gpus": m.gpus, "nodes": m.nodes, "metric": m.metric,
                     "measured": m.measured, "simulated": simulated,
                     "rel_err": (simulated - m.measured) / m.measured,
                     "algorithm": m.algorithm, "framework": m.framework,
                     "setting": m.published_setting, "servers": m.servers,
                     "precision": m.precision, "layout": m.layout,
                     "batch_per_gpu": m.batch_per_gpu, "data": m.data, "input_copy": m.input_copy,
                     "cuda_graphs": "yes" if m.cuda_graphs else "no",
                     "held_out": "yes" if m.held_out else "no",
                     "in_fit": "yes" if in_fit(m, fitted) else "no", "method": method,
                     "reference": m.reference, "table": m.table, "note": m.note})
    table = pd.DataFrame(rows, columns=COLUMNS + EXTRA).astype({"servers": "Int64"})
    return pd.concat([table, speedups(table)], ignore_index=True)


def speedups(table):
    """A row per multi-GPU throughput whose series has its one-GPU figure:
    both speed-ups over it, measured and simulated (the cluster model's
    error without the single GPU's)."""
    import pandas as pd

    rows = table[table["metric"] == THROUGHPUT]
    base = rows[rows["gpus"] == 1].drop_duplicates(SERIES).set_index(SERIES)
    ones = base[["measured", "simulated"]].rename(columns=lambda c: f"{c}_1")
    more = rows[rows["gpus"] > 1].join(ones, on=SERIES)
    more = more.dropna(subset=["measured_1"]).copy()
    more["metric"] = SPEEDUP
    more["measured"] = more["measured"] / more["measured_1"]
    more["simulated"] = more["simulated"] / more["simulated_1"]
    more["rel_err"] = (more["simulated"] - more["measured"]) / more["measured"]
    more["in_fit"] = "no"
    return more[COLUMNS + EXTRA] if len(more) else pd.DataFrame(columns=COLUMNS + EXTRA)


def medians(table, by: str | None, metric: str = THROUGHPUT):
    """Median absolute relative error and row count of one metric per value
    of ``by`` (``None``: overall), over the rows that were estimated."""
    import pandas as pd

    done = table[table["metric"] == metric].dropna(subset=["rel_err"])
    err = done["rel_err"].abs()
    if by is None:
        return pd.DataFrame({"rows": [len(done)], "median_abs_err": [err.median()]},
                            index=["all"])
    return (pd.DataFrame({by: done[by], "err": err}).groupby(by)["err"]
            .agg(rows="size", median_abs_err="median"))


def validation_figure(table):
    """Simulated against measured throughput, log-log: one marker per
    system (hollow where held out), the diagonal and the +-20 % band. A
    system keeps its colour and marker whatever ``--only`` kept."""
    from matplotlib import colormaps
    from matplotlib.figure import Figure

    done = table[table["metric"] == THROUGHPUT].dropna(subset=["simulated"])
    fig = Figure(figsize=(7.5, 6.5), layout="constrained")
    ax = fig.add_subplot()
    # tab20's ten dark hues, then their light pairs: neighbours in the list
    # of systems never share a hue, and the twelve markers cycle apart from them
    markers, pairs = "os^vD<>pPX*h", colormaps["tab20"].colors
    colours = pairs[0::2] + pairs[1::2]
    systems = sorted({m.system for m in measurements()})
    for system, rows in done.groupby("system"):
        i = systems.index(system) if system in systems else len(systems)
        colour, label = colours[i % len(colours)], f"{system} ({len(rows)})"
        held = rows["held_out"] == "yes"
        for part, face in ((rows[~held], colour), (rows[held], "none")):
            if len(part):
                ax.scatter(part["measured"], part["simulated"], s=22, marker=markers[i % len(markers)],
                           facecolors=face, edgecolors=colour, alpha=0.85, label=label)
                label = None
    if len(done):
        lo = 0.7 * min(done["measured"].min(), done["simulated"].min())
        hi = 1.4 * max(done["measured"].max(), done["simulated"].max())
        xs = [lo, hi]
        ax.fill_between(xs, [x * 0.8 for x in xs], [x * 1.2 for x in xs], color="0.85",
                        label="+-20 %", zorder=0)
        ax.plot(xs, xs, "k-", linewidth=0.8, label="simulated = measured")
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measured throughput (samples/s)")
    ax.set_ylabel("simulated throughput (samples/s)")
    ax.set_title(f"asgdsim against {len(done)} published measurements (hollow: held out)")
    ax.legend(fontsize=7, loc="upper left")
    return fig


# --- the golden medians and the README's table --------------------------------
#: where the medians the regression test holds are kept (regenerated on purpose)
GOLDEN = "scenarios/expected/validation.json"
README_START = "<!-- validation table: python -m asgdsim.validation --readme -->"
README_END = "<!-- end of validation table -->"
#: the groupings the golden file and the README keep, per metric
GROUPINGS = (None, "held_out", "system", "gpu", "algorithm", "precision", "source")


def summary(table) -> dict:
    """Per metric and grouping, each group's rows and median absolute error
    (rounded to 0.1 %: finer is noise from one platform's arithmetic to another's)."""
    def groups(m) -> dict:
        return {str(k): {"rows": int(r["rows"]),
                         "median_abs_err": round(float(r["median_abs_err"]), 3)}
                for k, r in m.iterrows()}

    held = table[table["held_out"] == "yes"]
    out = {}
    for metric in (THROUGHPUT, SPEEDUP):
        out[metric] = {by or "all": groups(medians(table, by, metric)) for by in GROUPINGS}
        # the bar is on the held-out rows, by system and overall
        out[metric]["held_out_system"] = groups(medians(held, "system", metric))
    return out


def readme_table(golden: dict) -> str:
    """Markdown: the medians per system, overall and over the held-out rows."""
    t, s = golden[THROUGHPUT], golden[SPEEDUP]
    lines = ["| group | throughput: rows | median abs. error | speed-up over 1 GPU: rows "
             "| median abs. error |", "|---|---:|---:|---:|---:|"]

    def line(label: str, a: dict | None, b: dict | None) -> str:
        cell = lambda x: ("", "") if x is None else (str(x["rows"]), f"{100 * x['median_abs_err']:.1f} %")  # noqa: E731
        return f"| {label} | {' | '.join(cell(a))} | {' | '.join(cell(b))} |"
    lines.append(line("**all**", t["all"]["all"], s["all"].get("all")))
    for key, label in (("no", "used in development"), ("yes", "**held out**")):
        lines.append(line(label, t["held_out"].get(key), s["held_out"].get(key)))
    for name in t["held_out_system"]:
        lines.append(line(f"held out, system: {name}", t["held_out_system"][name],
                          s["held_out_system"].get(name)))
    for by in ("system", "gpu", "algorithm", "precision", "source"):
        for name in t[by]:
            lines.append(line(f"{by}: {name}", t[by][name], s[by].get(name)))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    import argparse
    import json

    from .regress import repository_root

    parser = argparse.ArgumentParser(prog="python -m asgdsim.validation",
                                     description="regenerate the validation's golden medians")
    parser.add_argument("--update", action="store_true", help=f"rewrite {GOLDEN}")
    parser.add_argument("--readme", action="store_true",
                        help="rewrite README's validation table from the golden file")
    args = parser.parse_args(argv)
    if not (args.update or args.readme):
        parser.print_help()
        return
    root = repository_root(parser)
    if args.update:
        (root / GOLDEN).write_text(json.dumps(summary(validate()), indent=1) + "\n")
        print(f"wrote {root / GOLDEN}")
    if args.readme:
        readme = root / "README.md"
        head, rest = readme.read_text().split(README_START, 1)
        _, tail = rest.split(README_END, 1)
        golden = json.loads((root / GOLDEN).read_text())
        readme.write_text(f"{head}{README_START}\n{readme_table(golden)}\n{README_END}{tail}")
        print(f"rewrote the validation table in {readme}")


if __name__ == "__main__":
    main()
