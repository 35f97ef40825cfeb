"""Every figure the README and the scenarios' comments quote, against a
fresh run of the shipped scenarios.

Each claim is the words as written, with the figure in them replaced by a
format, and where the figure comes from. The test formats the fresh figure
and looks for the result in the file, so a model change that moves a quoted
figure fails here until the words are brought up to date.
"""

import re
from pathlib import Path

import pytest

import asgdsim

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "scenarios"


def summary(stem, *keys, scale=1):
    """A figure of a shipped scenario's summary.json, by its keys."""
    def figure(run):
        value = run(stem).summary
        for key in keys:
            value = value[key]
        return scale * value
    return figure


def staleness(stem, group):
    """The simulated mean staleness of a mixed scenario's group (in no summary)."""
    return lambda run: run(stem).gradients.groupby("group")["staleness"].mean()[group]


def utilisation(stem, kind):
    return lambda run: 100 * run(stem).summary["utilisation"][kind]


def group(index, key, scale=1, closed=False):
    """A figure of the mixed scenario's group ``index`` (the closed form's
    where ``closed``: the simulated staleness per group is in no summary)."""
    def figure(run):
        summary = run(MIXED).summary
        return scale * (summary["analytic"] if closed else summary)["groups"][index][key]
    return figure


MIXED, SHAPES = "mixed-k80-p100-async", "mixed-shapes-kfc-p100-sprint"
KFC, KFC64, T25 = "tsubame-kfc-dl-vgg16", "tsubame-kfc-dl-vgg16-64nodes", "tsubame2.5-vgg16-16nodes"
PS16, PS64, DGX = "gpu-asgd-k20x-async", "gpu-asgd-k20x-async-saturated", "dgx-a100-resnet50"
ALEX = "tsubame-kfc-dl-alexnet-sb8"
FAT = "tsubame2.5-vgg16-fat-tree"

#: (file, the words with {} for the figure, the figure)
CLAIMS = [
    (f"{KFC64}.yaml", "lengthens the cycle a little ({:.3f} s against",
     summary(KFC64, "analytic", "t_update_s")),
    (f"{KFC64}.yaml", "against {:.3f} s at 8 nodes)", summary(KFC, "analytic", "t_update_s")),
    (f"{KFC64}.yaml", "mini-batch grows from {:,.0f} to", summary(KFC, "minibatch", "mean")),
    (f"{KFC64}.yaml", "to {:,.0f} samples", summary(KFC64, "minibatch", "mean")),
    (f"{KFC64}.yaml", "(mean {:.2f} against", summary(KFC64, "staleness", "mean")),
    (f"{KFC64}.yaml", "against {:.2f})", summary(KFC, "staleness", "mean")),
    (f"{T25}.yaml", "step ({:.3f} s against", summary(T25, "analytic", "t_gpu_s")),
    (f"{T25}.yaml", "against {:.3f} s: a K20X", summary(KFC, "analytic", "t_gpu_s")),
    (f"{T25}.yaml", "about as long ({:.3f} s)", summary(T25, "analytic", "t_update_s")),
    (f"{T25}.yaml", "(mean mini-batch {:.0f} against", summary(T25, "minibatch", "mean")),
    (f"{T25}.yaml", "against {:.0f}) and fewer", summary(KFC, "minibatch", "mean")),
    (f"{T25}.yaml", "(mean staleness {:.2f} against", summary(T25, "staleness", "mean")),
    (f"{T25}.yaml", "against {:.2f}).", summary(KFC, "staleness", "mean")),
    (f"{PS16}.yaml", "busy {:.0f} % of the time", utilisation(PS16, "server_port_in")),
    (f"{PS16}.yaml", "compute {:.0f} % of it", utilisation(PS16, "gpu")),
    (f"{PS16}.yaml", "(mean {:.2f})", summary(PS16, "staleness", "mean")),
    (f"{PS64}.yaml", "takes {:.0f} s against", summary(PS64, "epoch_time_s")),
    (f"{PS64}.yaml", "against {:.0f} s with 16", summary(PS16, "epoch_time_s")),
    (f"{PS64}.yaml", "compute {:.0f} % of the time", utilisation(PS64, "gpu")),
    (f"{PS64}.yaml", "staleness {:.1f}.", summary(PS64, "staleness", "mean")),
    (f"{PS64}.yaml", 'bound ("{}")', summary(PS64, "analytic", "bound")),
    (f"{ALEX}.yaml", "GPU steps of {:.0f} ms against", lambda run: 1e3 * run(ALEX).summary["analytic"]["t_gpu_s"]),
    (f"{ALEX}.yaml", "a cycle of {:.0f} ms", lambda run: 1e3 * run(ALEX).summary["analytic"]["t_update_s"]),
    (f"{ALEX}.yaml", "host links ({:.0f} % busy)", utilisation(ALEX, "host_link")),
    (f"{ALEX}.yaml", "a mean mini-batch of {:.0f} samples", summary(ALEX, "minibatch", "mean")),
    (f"{DGX}.yaml", "tables): {:.3f} s per step", summary(DGX, "analytic", "t_gpu_s")),
    (f"{DGX}.yaml", "against a {:.1f} ms cycle",
     lambda run: 1e3 * run(DGX).summary["analytic"]["t_update_s"]),
    (f"{DGX}.yaml", "About {:.0f} cycles pass",
     lambda run: run(DGX).summary["analytic"]["t_gpu_s"] / run(DGX).summary["analytic"]["t_update_s"]),
    (f"{DGX}.yaml", "applied {:.1f} versions late", summary(DGX, "staleness", "mean")),
    ("dgx1-allreduce-resnet50.yaml", "a round takes {:.3f} s",
     summary("dgx1-allreduce-resnet50", "analytic", "t_update_s")),
    ("dgx1-allreduce-resnet50.yaml", "the GPUs compute {:.0f} %", utilisation("dgx1-allreduce-resnet50", "gpu")),
    ("dgx1-allreduce-resnet50.yaml", "update take {:.0f} %",
     utilisation("dgx1-allreduce-resnet50", "collective")),
    ("commodity-local-sgd-alexnet.yaml", "an averaging every {:.3f} s",
     summary("commodity-local-sgd-alexnet", "analytic", "t_update_s")),
    ("commodity-local-sgd-alexnet.yaml", "update busy {:.0f} %",
     utilisation("commodity-local-sgd-alexnet", "collective")),
    ("commodity-local-sgd-alexnet.yaml", "would take {:.0f} s an epoch", lambda run: asgdsim.predict(
        asgdsim.load_scenario(SCENARIOS / "commodity-local-sgd-alexnet.yaml",
                              overrides={"algorithm.period": 1})).epoch_time_s),
    ("commodity-local-sgd-alexnet.yaml", "against {:.0f} s here",
     summary("commodity-local-sgd-alexnet", "analytic", "epoch_time_s")),
    ("ideal-async-exponential.yaml", "with mean {:.0f}.", summary("ideal-async-exponential", "staleness", "mean")),
    ("kfc-vgg16-softsync.yaml", "the run's mean is {:.2f}.", summary("kfc-vgg16-softsync", "staleness", "mean")),
    ("kfc-vgg16-softsync.yaml", "it is busy {:.0f} % of the time", utilisation("kfc-vgg16-softsync", "server_port_in")),
    ("kfc-vgg16-softsync.yaml", "the GPUs compute {:.0f} % of", utilisation("kfc-vgg16-softsync", "gpu")),
    ("dutta-k-sync-exponential.yaml", "m (H_16 - H_12) = {:.1f} ms",
     lambda run: 1e3 * run("dutta-k-sync-exponential").summary["analytic"]["t_update_s"]),
    ("dutta-k-sync-exponential.yaml", "and {:,} steps are cancelled",
     summary("dutta-k-sync-exponential", "cancelled_steps")),
    ("dgx1-ssp-resnet50.yaml", "The mean staleness is {:.2f},", summary("dgx1-ssp-resnet50", "staleness", "mean")),
    ("k80-sync-stragglers.yaml", "grows from {:.3f} s to", summary("k80-sync-baseline", "analytic", "t_update_s")),
    ("k80-sync-stragglers.yaml", "to {:.3f} s.", summary("k80-sync-stragglers", "analytic", "t_update_s")),
    ("ideal-async-slow-learners.yaml", "staleness stays L - 1 = {:.0f},", summary("ideal-async-slow-learners", "staleness", "mean")),
    ("kfc-vgg16-network-slowdown.yaml", "grows from {:.0f} to", summary(KFC, "minibatch", "mean")),
    ("kfc-vgg16-network-slowdown.yaml", "to {:.0f} samples", summary("kfc-vgg16-network-slowdown", "minibatch", "mean")),
    ("kfc-vgg16-network-slowdown.yaml", "falls from {:.2f} to", summary(KFC, "staleness", "mean")),
    ("kfc-vgg16-network-slowdown.yaml", "to {:.2f} updates", summary("kfc-vgg16-network-slowdown", "staleness", "mean")),
    ("kfc-vgg16-node-failures.yaml", "The epoch takes {:.0f} s against", summary("kfc-vgg16-node-failures", "epoch_time_s")),
    ("kfc-vgg16-node-failures.yaml", "against {:.0f} s healthy", summary(KFC, "epoch_time_s")),
    ("kfc-vgg16-network-slowdown.yaml", "280 s of a {:.0f} s epoch", summary(KFC, "epoch_time_s")),
    ("kfc-vgg16-node-failures.yaml", "with {} failures", summary("kfc-vgg16-node-failures", "faults", "failures")),
    ("kfc-vgg16-node-failures.yaml", "and {} gradients lost", summary("kfc-vgg16-node-failures", "faults", "lost_gradients")),
    ("kfc-vgg16-node-failures.yaml", "(6/7): {:.0f} s", summary("kfc-vgg16-node-failures", "analytic", "epoch_time_s")),
    ("ideal-async-failures.yaml", "(closed form {:.0f} s,", summary("ideal-async-failures", "analytic", "epoch_time_s")),
    ("ideal-async-failures.yaml", "simulated {:.0f} s:", summary("ideal-async-failures", "epoch_time_s")),
    ("ideal-async-failures.yaml", "{} failures in the epoch", summary("ideal-async-failures", "faults", "failures")),
    ("ideal-async-failures.yaml", "simulated {:.2f},", summary("ideal-async-failures", "staleness", "mean")),
    ("ideal-async-failures.yaml", "6 / 6.1 = {:.2f};", summary("ideal-async-failures", "analytic", "staleness", "mean")),
    ("mixed-k80-p100-async.yaml", "A P100 steps in {:.2f} s", group(1, "mean_step_s")),
    ("mixed-k80-p100-async.yaml", "against a K80 die's {:.2f} s", group(0, "mean_step_s")),
    ("mixed-k80-p100-async.yaml", "deliver {:.0f} % of the gradients", group(1, "throughput_share", 100)),
    ("mixed-k80-p100-async.yaml", "staleness of {:.0f} against", group(1, "staleness_mean", closed=True)),
    ("mixed-k80-p100-async.yaml", "against {:.0f} for the K80s'", group(0, "staleness_mean", closed=True)),
    ("mixed-k80-p100-async.yaml", "An epoch takes {:.0f} s.", summary(MIXED, "epoch_time_s")),
    ("mixed-shapes-kfc-p100-sprint.yaml", "deliver {:.0f} % of the gradients",
     summary(SHAPES, "groups", 1, "throughput_share", scale=100)),
    ("mixed-shapes-kfc-p100-sprint.yaml", "a mean staleness of {:.1f} against", staleness(SHAPES, 1)),
    ("mixed-shapes-kfc-p100-sprint.yaml", "against {:.1f} for the K80s'", staleness(SHAPES, 0)),
    ("mixed-shapes-kfc-p100-sprint.yaml", "An epoch takes {:.0f} s.", summary(SHAPES, "epoch_time_s")),
    (f"{FAT}.yaml", "grows from {:.3f} s to", summary(T25, "analytic", "t_update_s")),
    (f"{FAT}.yaml", "to {:.3f} s, so each", summary(FAT, "analytic", "t_update_s")),
    (f"{FAT}.yaml", "(mean mini-batch {:.0f} samples against", summary(FAT, "minibatch", "mean")),
    (f"{FAT}.yaml", "samples against {:.0f})", summary(T25, "minibatch", "mean")),
    (f"{FAT}.yaml", "(mean staleness {:.2f} against", summary(FAT, "staleness", "mean")),
    (f"{FAT}.yaml", "against {:.2f}), while", summary(T25, "staleness", "mean")),
    (f"{FAT}.yaml", "as long ({:.0f} s against", summary(FAT, "epoch_time_s")),
    (f"{FAT}.yaml", "against {:.0f} s): SPRINT", summary(T25, "epoch_time_s")),
    # the README's own quotes of the shipped scenarios
    ("README.md", "the 8 P100s deliver {:.0f} % of the", summary(SHAPES, "groups", 1, "throughput_share", scale=100)),
    ("README.md", "deliver {:.0f} % of the gradients, with", group(1, "throughput_share", 100)),
    ("README.md", "staleness of {:.0f} against", group(1, "staleness_mean", closed=True)),
    ("README.md", "staleness of 22 against {:.0f}.", group(0, "staleness_mean", closed=True)),
    ("README.md", "its epoch holds {:,} updates since", summary(KFC, "updates")),
    ("README.md", "the mean round grows from {:.3f} s to", summary("k80-sync-baseline", "analytic", "t_update_s")),
    ("README.md", "to {:.3f} s with 2 % of steps", summary("k80-sync-stragglers", "analytic", "t_update_s")),
    ("README.md", "mini-batch grows from {:.0f} to", summary(KFC, "minibatch", "mean")),
    ("README.md", "to {:.0f} samples.", summary("kfc-vgg16-network-slowdown", "minibatch", "mean")),
    ("README.md", "SPRINT's cycle from {:.3f} s to", summary(T25, "analytic", "t_update_s")),
    ("README.md", "to {:.3f} s, and its mean", summary(FAT, "analytic", "t_update_s")),
    ("README.md", "mini-batch from {:.0f} to", summary(T25, "minibatch", "mean")),
    ("README.md", "to {:.0f} samples, in the same", summary(FAT, "minibatch", "mean")),
    # the H200's FP32 steps measured here, against the cost model
    *[("README.md", f"| {model} | {batch} | {measured} | {{:.1f}} |",
       lambda run, model=model, batch=batch: 1e3 * asgdsim.step_time("H200", model, batch))
      for model, batch, measured in [("resnet18", 64, 24.4), ("resnet50", 16, 22.5),
                                     ("resnet50", 64, 68.9), ("resnet50", 128, 128.3),
                                     ("inception3", 16, 36.5), ("inception3", 64, 108.2),
                                     ("inception3", 128, 205.8), ("vgg16", 64, 98.3)]],
]


@pytest.mark.parametrize("name, words, figure", CLAIMS, ids=[f"{c[0]}: {c[1]}" for c in CLAIMS])
def test_scenario_comment_states_the_fresh_figure(shipped_run, name, words, figure):
    if name == "README.md":
        comment = " ".join((ROOT / name).read_text().split())
    else:
        text = (SCENARIOS / name).read_text()
        # the comment's words as one line, wherever they wrap
        comment = " ".join(line.lstrip("#").strip() for line in text.splitlines() if line.startswith("#"))
    assert words.format(figure(shipped_run)) in comment


def test_readme_example_is_a_fresh_run_of_the_default_scenario(shipped_run):
    from asgdsim.cli import headline

    readme = (ROOT / "README.md").read_text()
    shown = readme.split("<!-- the default run -->\n```\n", 1)[1].split("```", 1)[0]
    fresh = headline(shipped_run(KFC)) + "\n"
    wall = r"simulated in [0-9.]+ s"     # the machine's, not the model's
    assert re.sub(wall, "", shown) == re.sub(wall, "", fresh)


def test_readme_sweep_table_is_a_fresh_run_of_its_command(tmp_path, monkeypatch):
    # the command as the README prints it (joined where it wraps), into a fresh folder
    import shlex

    import pandas as pd

    from asgdsim.cli import main

    readme = (ROOT / "README.md").read_text()
    joined = readme.replace("\\\n", " ")
    command = re.search(r"(asgdsim sweep scenarios/[^\n]* --grid algorithm\.k=\S+ --out \S+)",
                        joined).group(1)
    args = shlex.split(command)[1:]
    args[args.index("--out") + 1] = str(tmp_path / "k-sync")
    monkeypatch.chdir(ROOT)                            # where its scenario path starts
    assert "--grid" in args and main(args + ["--workers", "1"]) == 0
    results = pd.read_csv(tmp_path / "k-sync" / "results.csv").sort_values("algorithm.k")
    fresh = [f"| {row[1]} | {row.epoch_time_s:.0f} | {row.analytic_epoch_time_s:.0f} | "
             f"{row.minibatch_mean:.0f} | {row.staleness_mean:.0f} |" for row in results.itertuples()]
    # the table that follows the command, row for row
    table = joined.split(command, 1)[1].strip().split("\n\n", 1)[0].splitlines()
    shown = table[2:]                                   # after the header and the rule
    assert len(fresh) == 4 and shown == fresh
