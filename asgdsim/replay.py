"""What the run's staleness and mini-batch sizes do to training.

A simulated run records which gradients each update applied and which
version of the weights each gradient was computed on. ``replay`` trains a
small real model with exactly that schedule: update u applies the gradients
whose ``version_applied`` is u, each computed on the weights of its
``version_read`` over its ``samples`` samples, averaged over the update's
mini-batch. Beside it, plain synchronous mini-batch SGD at the run's mean
mini-batch, on the same samples in the same order: the difference between
the two curves is what the cluster did to training.

A ``local-sgd`` run is not replayed: its learners step on their own
copies and average weights, so no update applies gradients computed on a
shared version. The model is softmax regression (``digits``) or a one-hidden-layer tanh
network (``digits-mlp``) on scikit-learn's handwritten digits (1,797 images
of 8 x 8 pixels, shipped inside scikit-learn: nothing is downloaded), in
numpy on the CPU. The samples come as a stream: the training images in a
fresh seeded order each pass, each gradient taking the next ``samples`` of
them in the order the updates apply them. Gradients of one update read from
the same version are computed as one batch, so a run with staleness 0 and a
constant mini-batch replays plain mini-batch SGD bit for bit.

Options: ``staleness_aware`` divides each gradient's learning rate by its
staleness (at least 1), as Zhang et al. (IJCAI 2016) do; ``momentum`` keeps
a velocity across updates, for both tracks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["TASKS", "ReplayOptions", "replay"]
#: replay.csv's columns (output.py knows its own table by them)
COLUMNS = ("update", "samples_seen", "loss", "accuracy", "sync_update", "sync_loss",
           "sync_accuracy")

TASKS = ("digits", "digits-mlp")
#: points of the curves: the loss and accuracy are measured this many times at most
CHECKPOINTS = 200
HIDDEN = 32


@dataclass(frozen=True)
class ReplayOptions:
    task: str = "digits"
    learning_rate: float = 0.1
    momentum: float = 0.0
    staleness_aware: bool = False
    seed: int = 0


class _Data:
    """Standardised digits, split 80 / 20 with a fixed seed."""

    def __init__(self, seed: int):
        from sklearn.datasets import load_digits

        digits = load_digits()
        x = digits.data.astype(float)
        x = (x - x.mean(axis=0)) / np.maximum(x.std(axis=0), 1e-9)
        order = np.random.default_rng(seed).permutation(len(x))
        cut = int(0.8 * len(x))
        self.x_train, self.y_train = x[order[:cut]], digits.target[order[:cut]]
        self.x_test, self.y_test = x[order[cut:]], digits.target[order[cut:]]
        self.seed = seed

    def stream(self, total: int) -> np.ndarray:
        """Indices of the first ``total`` training samples of the stream."""
        n = len(self.x_train)
        rng = np.random.default_rng(self.seed + 1)
        passes = math.ceil(total / n)
        return np.concatenate([rng.permutation(n) for _ in range(passes)])[:total]


class _Model:
    """Parameters as one flat vector; the loss's gradient averaged over a batch."""

    def __init__(self, task: str, features: int, classes: int, seed: int):
        rng = np.random.default_rng(seed + 2)
        self.mlp = task == "digits-mlp"
        self.shapes = ([(features, HIDDEN), (HIDDEN,), (HIDDEN, classes), (classes,)] if self.mlp
                       else [(features, classes), (classes,)])
        parts = [rng.normal(0, 1 / math.sqrt(s[0]), s) if len(s) == 2 else np.zeros(s)
                 for s in self.shapes]
        self.initial = np.concatenate([p.ravel() for p in parts])

    def _unpack(self, w: np.ndarray) -> list[np.ndarray]:
        out, at = [], 0
        for s in self.shapes:
            size = int(np.prod(s))
            out.append(w[at:at + size].reshape(s))
            at += size
        return out

    def _forward(self, w: np.ndarray, x: np.ndarray):
        parts = self._unpack(w)
        if self.mlp:
            w1, b1, w2, b2 = parts
            hidden = np.tanh(x @ w1 + b1)
            logits = hidden @ w2 + b2
        else:
            (w2, b2), hidden = parts, x
            logits = x @ w2 + b2
        logits = logits - logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        return p / p.sum(axis=1, keepdims=True), hidden

    def gradient_sum(self, w: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """The sum over the batch of each sample's cross-entropy gradient."""
        p, hidden = self._forward(w, x)
        p[np.arange(len(y)), y] -= 1.0
        if not self.mlp:
            return np.concatenate([(x.T @ p).ravel(), p.sum(axis=0)])
        w2 = self._unpack(w)[2]
        back = (p @ w2.T) * (1.0 - hidden**2)
        return np.concatenate([(x.T @ back).ravel(), back.sum(axis=0),
                               (hidden.T @ p).ravel(), p.sum(axis=0)])

    def evaluate(self, w: np.ndarray, data: _Data) -> tuple[float, float]:
        """(mean cross-entropy on the training set, accuracy on the test set)."""
        p, _ = self._forward(w, data.x_train)
        # 0.0 less the mean: a perfect fit's loss is 0, not -0.0
        loss = float(0.0 - np.mean(np.log(np.maximum(p[np.arange(len(p)), data.y_train], 1e-300))))
        test, _ = self._forward(w, data.x_test)
        return loss, float(np.mean(test.argmax(axis=1) == data.y_test))


class _Track:
    """One optimiser's weights, velocity and curve."""

    def __init__(self, model: _Model, data: _Data, options: ReplayOptions, marks: np.ndarray):
        self.model, self.data, self.options, self.marks = model, data, options, marks
        self.w, self.velocity = model.initial.copy(), np.zeros_like(model.initial)
        self.seen, self.update, self.rows = 0, 0, []

    def step(self, direction: np.ndarray, samples: int, update: int | None = None) -> None:
        """Apply one update (numbered ``update``, the run's version, or the next)."""
        if self.options.momentum:
            self.velocity = self.options.momentum * self.velocity + direction
            direction = self.velocity
        self.w = self.w - self.options.learning_rate * direction
        self.update = self.update + 1 if update is None else update
        before, self.seen = self.seen, self.seen + samples
        # a point of the curve where this update passed a checkpoint
        if np.searchsorted(self.marks, self.seen, side="right") > \
                np.searchsorted(self.marks, before, side="right"):
            self.rows.append((self.update, self.seen, *self.model.evaluate(self.w, self.data)))


#: the most samples a replay streams (ten epochs of ImageNet are 1.3e7; a
#: gradients table of a billion samples a row is no run's)
MAX_REPLAY_SAMPLES = 10**9


def table_problems(gradients: pd.DataFrame) -> list[str]:
    """What makes a gradients table (its columns version_read,
    version_applied, staleness, samples, t_end) one no run wrote: each
    problem naming its column, none where it is a run's."""
    import pandas as pd

    problems = [f"column {c} holds {gradients[c].dtype}, not whole numbers"
                for c in ("version_read", "version_applied", "staleness", "samples")
                if not pd.api.types.is_integer_dtype(gradients[c])]
    if not pd.api.types.is_numeric_dtype(gradients["t_end"]):
        problems.append(f"column t_end holds {gradients['t_end'].dtype}, not times")
    if problems:
        return problems
    applied = gradients[gradients["version_applied"] >= 1]
    if (gradients["samples"] < 1).any():
        problems.append("column samples holds a gradient of no samples")
    if (gradients[["version_read", "staleness"]] < 0).any().any():
        problems.append("columns version_read and staleness hold a negative number")
    if (applied["version_read"] >= applied["version_applied"]).any():
        problems.append("a gradient's version_read is not below its version_applied")
    if int(applied["samples"].clip(lower=0).sum()) > MAX_REPLAY_SAMPLES:
        problems.append(f"column samples sums to more than {MAX_REPLAY_SAMPLES:,} applied")
    return problems


def replay(gradients: pd.DataFrame, options: ReplayOptions) -> pd.DataFrame:
    """The loss and accuracy of the run's schedule and of synchronous SGD at
    its mean mini-batch, against samples seen (``replay.csv``'s rows)."""
    import pandas as pd

    data = _Data(options.seed)
    model = _Model(options.task, data.x_train.shape[1], 10, options.seed)
    applied = gradients[gradients["version_applied"] >= 1].sort_values(
        ["version_applied", "version_read", "t_end"], kind="stable")
    total = int(applied["samples"].sum())
    if total == 0:
        return pd.DataFrame(columns=list(COLUMNS))
    stream = data.stream(total)
    # points spaced evenly on a log scale: early training changes fastest
    marks = np.unique(np.round(np.geomspace(max(1.0, total / 1e4), total, CHECKPOINTS)))
    run = _Track(model, data, options, marks)
    start = np.concatenate([[0], np.cumsum(applied["samples"].to_numpy())])
    versions = applied["version_applied"].to_numpy()
    reads = applied["version_read"].to_numpy()
    staleness = np.maximum(applied["staleness"].to_numpy(), 1)
    # the weights of each version some gradient still has to read, dropped
    # after its last reader. An update that applied nothing (a SPRINT cycle
    # without gradients) changed nothing: a version read below the next
    # update that applies something is the weights as they are then
    last_read = pd.Series(np.arange(len(reads))).groupby(reads).max().to_dict()
    needed, stored, kept = np.unique(reads), 0, {}
    bounds = np.flatnonzero(np.diff(versions, prepend=-1, append=-1))
    for first, end in zip(bounds[:-1], bounds[1:]):
        while stored < len(needed) and needed[stored] < versions[first]:
            kept[needed[stored]] = run.w
            stored += 1
        direction = np.zeros_like(run.w)
        samples = int(start[end] - start[first])
        group = first
        while group < end:      # rows read from one version are one batch
            stop = group + int(np.searchsorted(reads[group:end], reads[group], side="right"))
            idx = stream[start[group]:start[stop]]
            grad = model.gradient_sum(kept[reads[group]], data.x_train[idx], data.y_train[idx])
            scale = 1.0 / staleness[group] if options.staleness_aware else 1.0
            direction += grad * scale if scale != 1.0 else grad
            for row in range(group, stop):
                if last_read.get(reads[row]) == row:
                    kept.pop(reads[row], None)
            group = stop
        run.step(direction / samples, samples, int(versions[first]))
    # synchronous SGD at the run's mean mini-batch, on the same stream
    batch = max(1, round(total / max(len(bounds) - 1, 1)))
    sync = _Track(model, data, options, marks)
    for first in range(0, total, batch):
        idx = stream[first:first + batch]
        sync.step(model.gradient_sum(sync.w, data.x_train[idx], data.y_train[idx]) / len(idx), len(idx))
    a = pd.DataFrame(run.rows, columns=["update", "samples_seen", "loss", "accuracy"])
    s = pd.DataFrame(sync.rows, columns=["sync_update", "samples_seen", "sync_loss", "sync_accuracy"])
    return pd.merge_asof(a, s, on="samples_seen", direction="nearest")


def figure(table: pd.DataFrame, title: str):
    """Loss and accuracy against samples seen, the run beside synchronous SGD."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 4), layout="constrained")
    loss, accuracy = fig.subplots(1, 2)
    for ax, column, label in ((loss, "loss", "training loss"), (accuracy, "accuracy", "test accuracy")):
        ax.plot(table["samples_seen"], table[column], label="the run's schedule")
        ax.plot(table["samples_seen"], table[f"sync_{column}"], "--", label="synchronous SGD")
        ax.set_xscale("log")
        ax.set_xlabel("samples seen")
        ax.set_ylabel(label)
    loss.set_yscale("log")
    accuracy.legend()
    fig.suptitle(title)
    return fig
