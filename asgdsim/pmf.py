"""Discrete distributions on integers: the common language of the simulated
histograms and the closed-form laws.

A :class:`Pmf` is a pair of arrays (values, probabilities). Both sides of
every comparison (empirical staleness, analytic staleness, mini-batch sizes)
become one, so means, quantiles and distances are computed the same way.

A closed-form law of a million learners spans millions of values (async's
staleness has mean L - 1). Past ``MAX_SUPPORT`` values a law is kept on a
coarser lattice instead: the middle of every ``width`` integers, each point
holding the mass of its bin (:func:`lattice`), so no law costs
more than ``MAX_SUPPORT`` points whatever the cluster's size. Every law of a
cluster the simulator can hold (16,384 learners: async's geometric staleness
reaches 30 x 16,384 before its tail is cut) fits on the integers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["MAX_SUPPORT", "Pmf", "binomial", "lattice", "total_variation"]

#: probability mass below which an analytic law's tail is cut
TAIL = 1e-12
#: the most values a closed-form law is written on (see the module's docstring)
MAX_SUPPORT = 2**19


def lattice(lo: float, hi: float) -> tuple[np.ndarray, int]:
    """The integers from ``lo`` to ``hi`` (lo rounded down, hi up), or past
    ``MAX_SUPPORT`` of them the middles of bins of ``width`` integers each,
    [lo + i width, lo + (i + 1) width): (points, width). A law evaluated at
    the points and normalised is the midpoint rule of its bins, so its mean
    moves by at most half an integer (a middle rounded down) plus the law's
    curvature across a bin."""
    lo, hi = math.floor(lo), math.ceil(hi)
    width = max(1, math.ceil((hi - lo + 1) / MAX_SUPPORT))
    return np.arange(lo + (width - 1) // 2, hi + 1, width), width


def binomial(k: np.ndarray, trials: int, q: float) -> np.ndarray:
    """P(k of ``trials`` independent trials of chance q succeed), for each k
    (by log-gamma: scipy.stats is a second to import)."""
    from scipy import special

    return np.exp(special.gammaln(trials + 1) - special.gammaln(k + 1)
                  - special.gammaln(trials - k + 1) + special.xlogy(k, q)
                  + special.xlog1py(trials - k, -q))


@dataclass(frozen=True)
class Pmf:
    values: np.ndarray
    probs: np.ndarray

    def __str__(self) -> str:
        # what it is in a line; repr stays every atom (a failing test's report)
        if not len(self.values):
            return "Pmf(empty)"
        n = len(self.values)
        return (f"Pmf(mean {self.mean:.4g}, {n:,} value{'s' * (n != 1)} from "
                f"{self.values[0]:g} to {self.values[-1]:g})")

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(str(self))      # a notebook cell ending in one shows the line

    @classmethod
    def of_samples(cls, samples: np.ndarray) -> Pmf:
        values, counts = np.unique(np.asarray(samples, dtype=np.int64), return_counts=True)
        return cls(values, counts / counts.sum())

    @classmethod
    def point(cls, value: int) -> Pmf:
        return cls(np.array([int(value)]), np.array([1.0]))

    @classmethod
    def from_probs(cls, start: int, probs: np.ndarray, width: int = 1) -> Pmf:
        """Values start, start + width, ...; trims the negligible tails and renormalises."""
        probs = np.clip(np.asarray(probs, dtype=float), 0.0, None)
        keep = np.flatnonzero(probs > TAIL)
        probs = probs[keep[0]:keep[-1] + 1]
        return cls(start + width * np.arange(keep[0], keep[-1] + 1), probs / probs.sum())

    def less(self, part: Pmf, share: float) -> Pmf:
        """The law of the rest of a mixture: this law is ``share`` of ``part``
        and 1 - share of the rest (mass that would turn negative is dropped)."""
        if share <= 0:
            return self
        lo = int(min(self.values.min(), part.values.min()))
        hi = int(max(self.values.max(), part.values.max()))
        rest = np.zeros(hi - lo + 1)
        np.add.at(rest, self.values - lo, self.probs)
        np.add.at(rest, part.values - lo, -share * part.probs)
        return Pmf.from_probs(lo, rest)

    def scaled(self, factor: int) -> Pmf:
        return Pmf(self.values * factor, self.probs)

    @property
    def mean(self) -> float:
        return float(np.dot(self.values, self.probs))

    @property
    def std(self) -> float:
        return float(np.sqrt(max(np.dot((self.values - self.mean) ** 2, self.probs), 0.0)))

    def quantile(self, q: float) -> int:
        """Smallest value whose cumulative probability reaches q (inverted cdf)."""
        cdf = np.cumsum(self.probs)
        return int(self.values[min(np.searchsorted(cdf, q - 1e-12), len(cdf) - 1)])

    def prob(self, value: int) -> float:
        i = np.searchsorted(self.values, value)
        return float(self.probs[i]) if i < len(self.values) and self.values[i] == value else 0.0

    def describe(self) -> dict:
        """The contract's statistics block: mean, std, p50, p95 and the pmf."""
        return {"mean": self.mean, "std": self.std, "p50": self.quantile(0.5),
                "p95": self.quantile(0.95),
                "pmf": {"values": self.values.tolist(), "probs": self.probs.tolist()}}


def total_variation(a: Pmf, b: Pmf) -> float:
    """Half the L1 distance between two pmfs on the integers."""
    support = np.union1d(a.values, b.values)
    pa = np.zeros(len(support))
    pb = np.zeros(len(support))
    pa[np.searchsorted(support, a.values)] = a.probs
    pb[np.searchsorted(support, b.values)] = b.probs
    return 0.5 * float(np.abs(pa - pb).sum())
