"""Compact columns of what the simulation did.

Components append one row per gradient and one per update into typed
``array.array`` columns: a few dozen bytes a row and no Python object per
event. A gradient's row is written when it reaches its aggregation point and
completed when its update is published; ``frames()`` turns the columns into
the DataFrames of CONTRACT.md after the run, keeping applied gradients only.

Times, per gradient: ``t_start`` when the learner took its weights,
``t_end`` when the gradient reached the accumulator or server, ``t_applied``
when the update that applied it was published.
"""

from __future__ import annotations

from array import array

import numpy as np
import pandas as pd

__all__ = ["Recorder"]

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

    @property
    def nbytes(self) -> int:
        """Bytes held by the columns (allocated, not only used)."""
        columns = (self.learner, self.version_read, self.version_applied, self.t_start,
                   self.t_end, self.t_applied, self.samples, self.update_version,
                   self.update_t, self.update_gradients, self.update_minibatch)
        return sum(c.buffer_info()[1] * c.itemsize for c in columns)

    def frames(self, node_of_learner: np.ndarray) -> tuple[pd.DataFrame, pd.DataFrame]:
        """(gradients, updates) DataFrames, gradients in order of application."""
        applied = np.frombuffer(self.version_applied, dtype=np.int64)
        keep = applied != NOT_APPLIED
        learner = np.frombuffer(self.learner, dtype=np.int32)[keep]
        read = np.frombuffer(self.version_read, dtype=np.int64)[keep]
        gradients = pd.DataFrame({
            "learner": learner,
            "node": node_of_learner[learner].astype(np.int32),
            "version_read": read,
            "version_applied": applied[keep],
            "staleness": applied[keep] - read - 1,
            "t_start": np.frombuffer(self.t_start, dtype=np.float64)[keep],
            "t_end": np.frombuffer(self.t_end, dtype=np.float64)[keep],
            "t_applied": np.frombuffer(self.t_applied, dtype=np.float64)[keep],
            "samples": np.frombuffer(self.samples, dtype=np.int32)[keep],
        })
        gradients = gradients.sort_values(["version_applied", "t_end"], kind="stable",
                                          ignore_index=True)
        updates = pd.DataFrame({
            "version": np.frombuffer(self.update_version, dtype=np.int64).copy(),
            "t": np.frombuffer(self.update_t, dtype=np.float64).copy(),
            "gradients": np.frombuffer(self.update_gradients, dtype=np.int32).copy(),
            "minibatch": np.frombuffer(self.update_minibatch, dtype=np.int64).copy(),
        })
        return gradients, updates
