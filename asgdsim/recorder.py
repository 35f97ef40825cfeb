"""Compact columns of what the simulation did.

Components append one row per gradient and one per update into typed
``array.array`` columns: a few dozen bytes a row and no Python object per
event. A gradient's row is written when it reaches its aggregation point and
completed when its update is published; ``frames()`` turns the columns into
the DataFrames of DESIGN.md ("Files and names") after the run, keeping applied gradients only.

Times, per gradient: ``t_start`` when the learner took its weights,
``t_end`` when the gradient reached the accumulator or server, ``t_applied``
when the update that applied it was published.
"""

from __future__ import annotations

from array import array

import numpy as np
import pandas as pd

__all__ = ["Recorder", "GRADIENT_COLUMNS", "UPDATE_COLUMNS"]

#: columns every gradients.parquet and updates.parquet holds (a run's
#: groups and local steps add theirs)
GRADIENT_COLUMNS = ("learner", "node", "version_read", "version_applied", "staleness",
                    "t_start", "t_end", "t_applied", "samples")
UPDATE_COLUMNS = ("version", "t", "gradients", "minibatch")

NOT_APPLIED = -1


class Recorder:
    def __init__(self) -> None:
        self.learner = array("i")
        self.version_read = array("q")
        self.version_applied = array("q")
        self.t_start = array("d")
        self.t_end = array("d")
        self.t_applied = array("d")
        self.samples = array("i")
        self.update_version = array("q")
        self.update_t = array("d")
        self.update_gradients = array("i")
        self.update_minibatch = array("q")
        #: local-sgd only: a gradient's step since the last averaging
        self.local_step = array("i")

    def gradient(self, learner: int, version_read: int, t_start: float, t_end: float,
                 samples: int) -> int:
        """Record a gradient that reached aggregation; return its row."""
        self.learner.append(learner)
        self.version_read.append(version_read)
        self.version_applied.append(NOT_APPLIED)
        self.t_start.append(t_start)
        self.t_end.append(t_end)
        self.t_applied.append(np.nan)
        self.samples.append(samples)
        return len(self.learner) - 1

    def local_gradient(self, learner: int, version_read: int, t_start: float, t_end: float,
                       samples: int, local_step: int) -> int:
        """A local-sgd gradient: :meth:`gradient`, and its step since the last averaging."""
        self.local_step.append(local_step)
        return self.gradient(learner, version_read, t_start, t_end, samples)

    def update(self, version: int, t: float, rows: list[int]) -> int:
        """Mark ``rows`` applied by ``version`` at ``t``; return the mini-batch size."""
        version_applied, t_applied, samples = self.version_applied, self.t_applied, self.samples
        minibatch = 0
        for row in rows:
            version_applied[row] = version
            t_applied[row] = t
            minibatch += samples[row]
        self.update_version.append(version)
        self.update_t.append(t)
        self.update_gradients.append(len(rows))
        self.update_minibatch.append(minibatch)
        return minibatch

    def single(self, learner: int, version_read: int, t_start: float, t: float, samples: int,
               version: int) -> None:
        """A gradient applied the moment it arrives, as an update of its own
        (the hot path of an instantaneous parameter server)."""
        self.learner.append(learner)
        self.version_read.append(version_read)
        self.version_applied.append(version)
        self.t_start.append(t_start)
        self.t_end.append(t)
        self.t_applied.append(t)
        self.samples.append(samples)
        self.update_version.append(version)
        self.update_t.append(t)
        self.update_gradients.append(1)
        self.update_minibatch.append(samples)

    @property
    def nbytes(self) -> tuple[int, int]:
        """Bytes used by the gradient and by the update columns."""
        def held(*columns: array) -> int:
            return sum(c.buffer_info()[1] * c.itemsize for c in columns)
        return (held(self.learner, self.version_read, self.version_applied, self.t_start,
                     self.t_end, self.t_applied, self.samples),
                held(self.update_version, self.update_t, self.update_gradients,
                     self.update_minibatch))

    def frames(self, node_of_learner: np.ndarray) -> tuple[pd.DataFrame, pd.DataFrame]:
        """(gradients, updates) DataFrames, gradients in order of application.

        Rows are recorded in arrival order, which is already the order of
        application for every aggregation here (FIFO servers, swapped
        accumulators); the sort only runs if that ever stops being true.
        """
        def column(values: array, dtype: type) -> np.ndarray:
            return np.frombuffer(values, dtype=dtype).copy()

        applied = column(self.version_applied, np.int64)
        keep = applied != NOT_APPLIED
        everything = bool(keep.all())

        def kept(values: array, dtype: type) -> np.ndarray:
            data = column(values, dtype)
            return data if everything else data[keep]

        learner, read = kept(self.learner, np.int32), kept(self.version_read, np.int64)
        applied = applied if everything else applied[keep]
        gradients = pd.DataFrame({
            "learner": learner,
            "node": node_of_learner[learner].astype(np.int32),
            "version_read": read,
            "version_applied": applied,
            "staleness": applied - read - 1,
            "t_start": kept(self.t_start, np.float64),
            "t_end": kept(self.t_end, np.float64),
            "t_applied": kept(self.t_applied, np.float64),
            "samples": kept(self.samples, np.int32),
        }, copy=False)
        if len(self.local_step):
            gradients["local_step"] = kept(self.local_step, np.int32)
        step, later = np.diff(applied), np.diff(gradients["t_end"].to_numpy())
        if not np.all((step > 0) | ((step == 0) & (later >= 0))):
            gradients = gradients.sort_values(["version_applied", "t_end"], kind="stable",
                                              ignore_index=True)
        updates = pd.DataFrame({
            "version": column(self.update_version, np.int64),
            "t": column(self.update_t, np.float64),
            "gradients": column(self.update_gradients, np.int32),
            "minibatch": column(self.update_minibatch, np.int64),
        }, copy=False)
        return gradients, updates
