"""Time laws that know their own moments.

A :class:`Law` is a non-negative random duration: a constant or one of the
scipy.stats families named in CONTRACT.md, built from a mean plus a cv, shape
or shift. The simulator draws from it in blocks (one numpy call per few
thousand steps, not one per step); the closed-form model asks it for exact
quantities (mean, variance, E[max of n], E[(y - X)+]), so tests can compare
samples with theory for the very law that was sampled.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import integrate, stats

from .scenario import LawSpec

__all__ = ["Law", "law_from_spec"]

_BLOCK = 4096


@dataclass(frozen=True)
class Law:
    """A random duration: ``shift + dist`` where ``dist`` is a frozen scipy law.

    ``dist`` None means the constant ``shift``.
    """

    name: str
    dist: Any = None
    shift: float = 0.0

    @classmethod
    def constant(cls, value: float) -> Law:
        return cls("deterministic", None, float(value))

    @property
    def is_constant(self) -> bool:
        return self.dist is None

    @property
    def mean(self) -> float:
        return self.shift + (0.0 if self.dist is None else float(self.dist.mean()))

    @property
    def var(self) -> float:
        return 0.0 if self.dist is None else float(self.dist.var())

    @property
    def std(self) -> float:
        return math.sqrt(self.var)

    @property
    def cv(self) -> float:
        return math.sqrt(self.var) / self.mean

    def scaled(self, factor: float) -> Law:
        """The law of ``factor * X``."""
        if self.dist is None:
            return Law(self.name, None, self.shift * factor)
        scaled = type(self.dist)(self.dist.dist, *self.dist.args, **_scaled_kwds(self.dist.kwds, factor))
        return Law(self.name, scaled, self.shift * factor)

    def plus(self, constant: float) -> Law:
        """The law of ``X + constant``."""
        return Law(self.name, self.dist, self.shift + constant)

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        if self.dist is None:
            return np.full(size, self.shift)
        return self.shift + self.dist.rvs(size=size, random_state=rng)

    def sampler(self, rng: np.random.Generator) -> Iterator[float]:
        """An endless stream of draws, made a block at a time (fast ``next()``)."""
        if self.dist is None:
            return itertools.repeat(self.shift)
        return self._blocks(rng)

    def _blocks(self, rng: np.random.Generator) -> Iterator[float]:
        # blocks grow from a few draws to _BLOCK, so thousands of learners that
        # each take only a few steps do not pay for draws they never use
        size = 16
        while True:
            yield from self.sample(rng, size).tolist()
            size = min(2 * size, _BLOCK)

    def cdf(self, x: float) -> float:
        if self.dist is None:
            return 1.0 if x >= self.shift else 0.0
        return float(self.dist.cdf(x - self.shift))

    def ppf(self, q: float) -> float:
        return self.shift + (0.0 if self.dist is None else float(self.dist.ppf(q)))

    def partial_expectation(self, y: float | np.ndarray) -> float | np.ndarray:
        """E[(y - X)+] = y F(y) - E[X; X <= y], in closed form for every family
        here (vectorised over y)."""
        z = np.maximum(np.asarray(y, dtype=float) - self.shift, 0.0)
        if self.dist is None:
            result = z
        else:
            result = np.maximum(z * self.dist.cdf(z) - self._lower_mean(z), 0.0)
        return float(result) if np.ndim(result) == 0 else result

    def _lower_mean(self, z: np.ndarray) -> np.ndarray:
        """E[D; D <= z] for the law's scipy part D."""
        family, args, kwds = self.dist.dist.name, self.dist.args, self.dist.kwds
        scale, loc = kwds.get("scale", 1.0), kwds.get("loc", 0.0)
        if family == "expon":
            tail = np.exp(-z / scale)
            return scale * (1 - tail) - z * tail
        if family == "gamma":
            shape = args[0]
            return shape * scale * stats.gamma.cdf(z, shape + 1, scale=scale)
        if family == "lognorm":
            sigma, mu = args[0], math.log(scale)
            with np.errstate(divide="ignore"):
                return math.exp(mu + sigma**2 / 2) * stats.norm.cdf((np.log(z) - mu - sigma**2) / sigma)
        if family == "uniform":
            inside = np.clip(z, loc, loc + scale)
            return (inside**2 - loc**2) / (2 * scale)
        raise AssertionError(f"no closed form for {family}")

    def expected_max(self, n: int) -> float:
        """E[max of n independent draws]."""
        if self.dist is None:
            return self.shift
        if self.name in ("exponential", "shifted-exponential"):
            return self.shift + float(self.dist.mean()) * _harmonic(n)
        tail = lambda x: -math.expm1(n * math.log(max(self.dist.cdf(x), 1e-300)))  # noqa: E731
        upper = float(self.dist.ppf(1 - 1e-12 / n))
        return self.shift + integrate.quad(tail, 0.0, upper, limit=400)[0]


def _scaled_kwds(kwds: dict, factor: float) -> dict:
    kwds = dict(kwds)
    kwds["scale"] = kwds.get("scale", 1.0) * factor
    if "loc" in kwds:
        kwds["loc"] *= factor
    return kwds


def _harmonic(n: int) -> float:
    return math.fsum(1.0 / k for k in range(1, n + 1))


def law_from_spec(spec: LawSpec) -> Law:
    """Build the law a scenario describes by its mean plus cv, shape or shift."""
    m, kind = spec.mean, spec.distribution
    if kind == "deterministic":
        return Law.constant(m)
    if kind == "exponential":
        return Law(kind, stats.expon(scale=m))
    if kind == "shifted-exponential":
        return Law(kind, stats.expon(scale=m - spec.shift), spec.shift)
    if kind == "uniform":
        half = math.sqrt(3.0) * spec.cv * m
        if half == 0:
            return Law.constant(m)
        return Law(kind, stats.uniform(loc=m - half, scale=2 * half))
    if kind == "gamma":
        shape = spec.shape if spec.shape is not None else 1.0 / spec.cv**2
        return Law(kind, stats.gamma(shape, scale=m / shape))
    if kind == "lognormal":
        sigma = spec.shape if spec.shape is not None else math.sqrt(math.log1p(spec.cv**2))
        return Law(kind, stats.lognorm(sigma, scale=m * math.exp(-sigma**2 / 2)))
    raise AssertionError(f"law {kind!r} is validated in the scenario")
