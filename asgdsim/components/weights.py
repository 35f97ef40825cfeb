"""The global weights: versions, what each update applied, and when to stop.

Every update, whoever performs it (a parameter server, a synchronous round,
SPRINT's replicated Allreduce), goes through :meth:`Weights.apply`: the
version advances by exactly one, the gradients it applied are marked in the
recorder, and the stop conditions (gradients, samples, updates) are checked.
An update with no gradients is no update: it changes nothing and is not
recorded (DESIGN.md, "Words").
"""

from __future__ import annotations

import math

import simpy

from ..recorder import Recorder

__all__ = ["Weights"]


class Weights:
    def __init__(self, env: simpy.Environment, recorder: Recorder, *,
                 max_gradients: float = math.inf, max_samples: float = math.inf,
                 max_updates: float = math.inf):
        self.env = env
        self.recorder = recorder
        self.version = 0
        self.gradients_applied = 0
        self.samples_applied = 0
        self._limits = (max_gradients, max_samples, max_updates)
        #: triggered once the first stop condition is reached
        self.stopped = env.event()

    def apply(self, rows: list[int]) -> int:
        """Apply the recorded gradients ``rows`` as one update; return the version.

        Once a stop condition is reached nothing more is applied, even by
        events at the same instant that SimPy has still to process."""
        if not rows or self.stopped.triggered:
            return self.version
        self.version += 1
        self.samples_applied += self.recorder.update(self.version, self.env.now, rows)
        self.gradients_applied += len(rows)
        self._check_stop()
        return self.version

    def apply_single(self, learner: int, version_read: int, t_start: float, samples: int) -> int:
        """Record one gradient and apply it at once as its own update."""
        if self.stopped.triggered:
            return self.version
        self.version += 1
        self.recorder.single(learner, version_read, t_start, self.env.now, samples, self.version)
        self.samples_applied += samples
        self.gradients_applied += 1
        self._check_stop()
        return self.version

    def _check_stop(self) -> None:
        max_gradients, max_samples, max_updates = self._limits
        if ((self.gradients_applied >= max_gradients or self.samples_applied >= max_samples
             or self.version >= max_updates) and not self.stopped.triggered):
            self.stopped.succeed()
