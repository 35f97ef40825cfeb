"""Time laws that know their own moments.

A :class:`Law` is a non-negative random duration: a constant, or
``shift + scale x D`` where D is one of the standard families named in the
scenario format (exponential, uniform, gamma, lognormal), built from a mean
plus a cv, shape or shift. The simulator draws from it in blocks (one numpy
call per few thousand steps, not one per step); the closed-form model asks it
for exact quantities (mean, variance, cdf, quantiles, E[max of n],
E[(y - X)+]), so tests can compare samples with theory for the very law that
was sampled.

The families are written out with ``scipy.special`` rather than taken from
``scipy.stats``: importing the latter costs about a second, which every
``asgdsim predict`` would pay. The draws are the ones ``scipy.stats`` makes
(the same numpy calls in the same order), so a seed gives the numbers it
always gave.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Iterator
from typing import ClassVar
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np
from scipy import special

from .pmf import binomial
from .specs import LawSpec

__all__ = ["Law", "Empirical", "apart_from_stragglers", "law_from_spec", "order_moments",
           "slowest_of", "top_quantile"]

_BLOCK = 4096
#: cells of the grid :meth:`_Duration.apart` integrates on
_APART_CELLS = 2048
FAMILIES = ("expon", "uniform", "gamma", "lognorm")


class _Duration:
    """What every step law derives from its mean, variance and ``sample``."""

    #: how :meth:`sum_of` takes a sum where it is not exact (words for ``laws``)
    sums_taken = "as gammas of their moments"

    @property
    def std(self) -> float:
        return math.sqrt(self.var)

    @property
    def cv(self) -> float:
        return self.std / self.mean

    def apart(self, gap: float) -> float:
        """P(|X - X'| > gap) for two independent steps X, X' of this law: how
        often two learners' steps differ by more than ``gap`` (on a grid over
        its range from the 1e-6 to the 1 - 1e-6 quantile, atoms included;
        the far tails beyond are left out)."""
        lo, hi = self.ppf(1e-6), self.ppf(1 - 1e-6)
        if hi - lo <= gap:
            return 0.0
        width = (hi - lo) / _APART_CELLS
        # the first cell starts below lo: an atom there (a fixed step) counts
        edges = lo - width + width * np.arange(_APART_CELLS + 2)
        mass = np.diff(self.cdf(edges))
        middle = edges[:-1] + width / 2
        near = self.cdf(middle + gap) - self.cdf(middle - gap)
        return float(max(0.0, 1.0 - (mass * near).sum() / mass.sum()))

    def _blocks(self, rng: np.random.Generator) -> Iterator[float]:
        # blocks grow from a few draws to _BLOCK, so thousands of learners that
        # each take only a few steps do not pay for draws they never use
        size = 16
        while True:
            yield from self.sample(rng, size).tolist()
            size = min(2 * size, _BLOCK)

    def _gamma_sum(self, k: int) -> Law:
        """The gamma of the mean and variance of k draws' sum (their shifts added)."""
        mean, var = k * (self.mean - self.shift), k * self.var
        return Law(f"sum of {k} {self.name}", "gamma", scale=var / mean, shape=mean**2 / var,
                   shift=k * self.shift)


#: sums of up to this many steps of a law are convolved numerically
NUMERIC_SUMS = 16
#: cells of one step's law, and quantiles kept of the sum (_convolved)
_CELLS, _QUANTILES = 4096, 16384


@dataclass(frozen=True)
class Law(_Duration):
    """A random duration ``shift + loc + scale x D``, D standard of ``family``
    with ``shape`` (gamma's a, lognormal's sigma); ``family`` None is the
    constant ``shift``. ``name`` is the scenario's word for the law."""

    name: str
    family: str | None = None
    scale: float = 1.0
    shape: float = 1.0
    loc: float = 0.0
    shift: float = 0.0
    sums_taken: ClassVar[str] = (f"numerically up to {NUMERIC_SUMS} steps, as gammas of their "
                                 "moments beyond")

    @classmethod
    def constant(cls, value: float) -> Law:
        return cls("deterministic", shift=float(value))

    @property
    def is_constant(self) -> bool:
        return self.family is None

    @property
    def mean(self) -> float:
        return self.shift + self.loc + self.scale * _standard_mean(self.family, self.shape)

    @property
    def var(self) -> float:
        return self.scale**2 * _standard_var(self.family, self.shape)

    def scaled(self, factor: float) -> Law:
        """The law of ``factor * X``."""
        return replace(self, scale=self.scale * factor, loc=self.loc * factor,
                       shift=self.shift * factor)

    def sum_of(self, k: int) -> Law:
        """The law of the sum of ``k`` independent draws: exact for constants,
        exponentials and gammas (a gamma); of up to ``NUMERIC_SUMS`` draws of
        any other law, by numerical convolution (:func:`_convolved`); of more,
        the gamma of the same mean and variance (plus the shifts), which the
        central limit makes close."""
        if k == 1:
            return self
        if self.family is None:
            return Law.constant(k * self.shift)
        if self.family in ("expon", "gamma") and self.loc == 0:
            shape = self.shape if self.family == "gamma" else 1.0
            return Law("gamma", "gamma", scale=self.scale, shape=k * shape, shift=k * self.shift)
        if k <= NUMERIC_SUMS:
            return _convolved(self, k)
        return self._gamma_sum(k)

    @property
    def sums_exactly(self) -> bool:
        """Whether :meth:`sum_of` is exact for this law."""
        return self.family is None or (self.family in ("expon", "gamma") and self.loc == 0)

    def plus(self, constant: float) -> Law:
        """The law of ``X + constant``."""
        return replace(self, shift=self.shift + constant)

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        if self.family is None:
            return np.full(size, self.shift)
        if self.family == "expon":
            draws = rng.standard_exponential(size)
        elif self.family == "uniform":
            draws = rng.uniform(0.0, 1.0, size)
        elif self.family == "gamma":
            draws = rng.standard_gamma(self.shape, size)
        else:
            draws = np.exp(self.shape * rng.standard_normal(size))
        return self.shift + (draws * self.scale + self.loc)

    def sampler(self, rng: np.random.Generator) -> Iterator[float]:
        """An endless stream of draws, made a block at a time (fast ``next()``)."""
        if self.family is None:
            return itertools.repeat(self.shift)
        return self._blocks(rng)

    def cdf(self, x: float | np.ndarray) -> float | np.ndarray:
        """P(X <= x), vectorised over x."""
        x = np.asarray(x, dtype=float)
        if self.family is None:
            result = (x >= self.shift).astype(float)
        else:
            result = self._standard_cdf((x - self.shift - self.loc) / self.scale)
        return float(result) if result.ndim == 0 else result

    def ppf(self, q: float) -> float:
        """The q-quantile."""
        return float(self.quantiles(q))

    def quantiles(self, levels: float | np.ndarray) -> np.ndarray:
        """The quantile at each of ``levels``, vectorised."""
        q = np.asarray(levels, dtype=float)
        if self.family is None:
            return np.full(q.shape, self.shift)
        if self.family == "expon":
            z = -np.log1p(-q)
        elif self.family == "uniform":
            z = q
        elif self.family == "gamma":
            z = special.gammaincinv(self.shape, q)
        else:
            z = np.exp(self.shape * special.ndtri(q))
        return self.shift + self.loc + self.scale * z

    @property
    def atoms(self) -> np.ndarray:
        """Where the cdf jumps: a constant's value, else nowhere."""
        return np.array([self.shift] if self.family is None else [])

    def partial_expectation(self, y: float | np.ndarray) -> float | np.ndarray:
        """E[(y - X)+] = y F(y) - E[X; X <= y], in closed form for every family
        here (vectorised over y)."""
        z = np.maximum(np.asarray(y, dtype=float) - self.shift, 0.0)
        if self.family is None:
            result = z
        else:
            result = np.maximum(z * self.cdf(z + self.shift) - self._lower_mean(z), 0.0)
        return float(result) if np.ndim(result) == 0 else result

    def _standard_cdf(self, z: np.ndarray) -> np.ndarray:
        if self.family == "expon":
            return -np.expm1(-np.maximum(z, 0.0))
        if self.family == "uniform":
            return np.clip(z, 0.0, 1.0)
        if self.family == "gamma":
            return special.gammainc(self.shape, np.maximum(z, 0.0))
        with np.errstate(divide="ignore"):
            return special.ndtr(np.log(np.maximum(z, 0.0)) / self.shape)

    def _lower_mean(self, z: np.ndarray) -> np.ndarray:
        """E[D; D <= z] for the random part D = loc + scale x standard."""
        scale, loc = self.scale, self.loc
        if self.family == "expon":
            tail = np.exp(-z / scale)
            return scale * (1 - tail) - z * tail
        if self.family == "gamma":
            return self.shape * scale * special.gammainc(self.shape + 1, z / scale)
        if self.family == "lognorm":
            sigma, mu = self.shape, math.log(scale)
            with np.errstate(divide="ignore"):
                return math.exp(mu + sigma**2 / 2) * special.ndtr((np.log(z) - mu - sigma**2) / sigma)
        inside = np.clip(z, loc, loc + scale)
        return (inside**2 - loc**2) / (2 * scale)

    def expected_max(self, n: int) -> float:
        """E[max of n independent draws]."""
        if self.family is None:
            return self.shift
        if self.family == "expon":
            return self.mean + self.scale * (_harmonic(n) - 1.0)
        from scipy import integrate   # a second to import; only synchronous rounds need it

        base = self.shift + self.loc   # the random part's lower end
        tail = lambda x: -math.expm1(n * math.log(max(self.cdf(base + x), 1e-300)))  # noqa: E731
        upper = self.ppf(top_quantile(n)) - base
        return base + integrate.quad(tail, 0.0, upper, limit=400)[0]

    def expected_order(self, k: int, n: int) -> float:
        """E[k-th smallest of n independent draws] (k = n: the max):
        m (H_n - H_{n-k}) for exponentials, else the integral of
        P(X_(k) > x) = 1 - I_F(x)(k, n - k + 1)."""
        if k == n:
            return self.expected_max(n)
        if self.family is None:
            return self.shift
        base = self.shift + self.loc
        if self.family == "expon":
            return base + self.scale * (_harmonic(n) - _harmonic(n - k))
        from scipy import integrate

        tail = lambda x: special.betaincc(k, n - k + 1, self.cdf(base + x))  # noqa: E731
        upper = self.ppf(top_quantile(n)) - base
        # break points where the order statistic's mass is, so a long tail
        # does not hide it from the quadrature
        points = sorted({self.ppf(q) - base for q in (0.01 / n, 0.5 / n, k / (n + 1), 0.5,
                                                       1 - 0.5 / n)} - {0.0})
        return base + integrate.quad(tail, 0.0, upper, limit=400,
                                     points=[p for p in points if 0 < p < upper])[0]


def _standard_mean(family: str | None, shape: float) -> float:
    if family == "lognorm":
        return math.exp(shape**2 / 2)
    return {None: 0.0, "expon": 1.0, "uniform": 0.5, "gamma": shape}[family]


def _standard_var(family: str | None, shape: float) -> float:
    if family == "lognorm":
        return math.expm1(shape**2) * math.exp(shape**2)
    return {None: 0.0, "expon": 1.0, "uniform": 1 / 12, "gamma": shape}[family]


#: beyond this many terms a harmonic number is digamma's, not a sum
_SUMMED_HARMONICS = 16_384


def _harmonic(n: int) -> float:
    if n <= _SUMMED_HARMONICS:
        return math.fsum(1.0 / k for k in range(1, n + 1))
    # H_n = psi(n + 1) + Euler's gamma, to rounding: a million learners'
    # rounds cost what a few learners' do
    return float(special.digamma(n + 1)) + np.euler_gamma


def order_moments(law, k: int, n: int) -> tuple[float, float]:
    """Mean and sd of the k-th smallest of n independent draws of ``law``
    (any law with ``cdf`` and ``ppf``): by quadrature of its survival
    P(X_(k) > x) = I_(1 - F(x))(n - k + 1, k) over its own bulk (from its
    1e-12 to its 1 - 1e-12 quantile, each the law's quantile of the Beta's),
    the variance about the mean, with no cancellation (a heavy tail spreads
    it far past its mean: the 2nd of 16 gamma steps of cv 3 has a cv of
    about 20; the first of 16,384 uniform steps sits in the law's lowest
    hundred-thousandth)."""
    if law.std == 0:
        return law.mean, 0.0
    from scipy import integrate

    a, b = k, n - k + 1
    lo, mid, hi = (float(law.ppf(special.betaincinv(a, b, q))) for q in (1e-12, 0.5, 1 - 1e-12))
    if hi <= lo:
        return mid, 0.0
    above = lambda x: float(special.betaincc(a, b, law.cdf(x)))              # noqa: E731
    mean = lo + integrate.quad(above, lo, hi, limit=400, points=[mid])[0]
    # E[(X - mean)^2] = 2 * integral of (x - mean)(P(X > x) - [x < mean]) dx
    spread = lambda x: 2 * (x - mean) * (above(x) - (x < mean))              # noqa: E731
    var = integrate.quad(spread, lo, hi, limit=400, points=sorted({mid, mean}))[0]
    return mean, math.sqrt(max(var, 0.0))


def slowest_of(law: Law, k: int) -> Law:
    """The law of the slowest of ``k`` independent draws of ``law``, as a
    law of its family with the slowest's mean and sd (:func:`order_moments`):
    a lognormal's or a gamma's slowest is close to one of its own family
    (it is as skewed, a little narrower); the exponentials' and the
    uniform's is a gamma above the law's least value (an exponential's max
    is not exponential, a uniform's not uniform)."""
    if k == 1 or law.is_constant:
        return law
    mean, sd = order_moments(law, k, k)
    if law.family == "lognorm":
        return law_from_spec(LawSpec(distribution="lognormal", mean=mean, cv=sd / mean))
    least = law.shift + law.loc if law.family in ("expon", "uniform") else 0.0
    shape = ((mean - least) / sd) ** 2
    return Law("gamma", "gamma", scale=(mean - least) / shape, shape=shape, shift=least)


def top_quantile(n: int) -> float:
    """The level 1 - 1e-12 / n, where the max of n draws has all but 1e-12 of
    its mass below; no nearer to 1 than a double can tell from 1 (beyond
    about 4,500 draws 1 - 1e-12 / n rounds to 1, whose quantile is infinite)."""
    return min(1 - 1e-12 / n, 1 - 2.0**-52)


def law_from_spec(spec: LawSpec) -> Law:
    """Build the law a scenario describes by its mean plus cv, shape or shift."""
    m, kind = spec.mean, spec.distribution
    if kind == "deterministic":
        return Law.constant(m)
    if kind == "exponential":
        return Law(kind, "expon", scale=m)
    if kind == "shifted-exponential":
        return Law(kind, "expon", scale=m - spec.shift, shift=spec.shift)
    if kind == "uniform":
        half = math.sqrt(3.0) * spec.cv * m
        if half == 0:
            return Law.constant(m)
        return Law(kind, "uniform", scale=2 * half, loc=m - half)
    if kind == "gamma":
        shape = spec.shape if spec.shape is not None else 1.0 / spec.cv**2
        return Law(kind, "gamma", scale=m / shape, shape=shape)
    if kind == "lognormal":
        sigma = spec.shape if spec.shape is not None else math.sqrt(math.log1p(spec.cv**2))
        return Law(kind, "lognorm", scale=m * math.exp(-sigma**2 / 2), shape=sigma)
    raise AssertionError(f"law {kind!r} is validated in the scenario")


class _Mixed(_Duration):
    """A law that is ``parts[i]`` with probability ``weights[i]``: moments
    and the cdf are the parts' weighted; quantiles and order statistics
    numerically."""

    is_constant = False
    sums_exactly = False
    weights: tuple[float, ...]
    parts: tuple[Law, ...]

    @property
    def mean(self) -> float:
        return math.fsum(w * p.mean for w, p in zip(self.weights, self.parts))

    @property
    def var(self) -> float:
        second = math.fsum(w * (p.var + p.mean**2) for w, p in zip(self.weights, self.parts))
        return max(second - self.mean**2, 0.0)

    def sampler(self, rng: np.random.Generator) -> Iterator[float]:
        return self._blocks(rng)

    def cdf(self, x: float | np.ndarray) -> float | np.ndarray:
        result = sum(w * np.asarray(p.cdf(x)) for w, p in zip(self.weights, self.parts))
        return float(result) if np.ndim(result) == 0 else result

    def ppf(self, q: float) -> float:
        from scipy.optimize import brentq

        # the mixture's quantile lies between its parts' quantiles
        q = min(q, 1 - 1e-15)
        lo = min(p.ppf(q) for p in self.parts)
        hi = max(p.ppf(q) for p in self.parts)
        if hi <= lo or self.cdf(lo) >= q:     # constant parts: the cdf jumps
            return lo
        if self.cdf(hi) <= q:                 # q within rounding of 1: the cdf is flat there
            return hi
        return brentq(lambda x: self.cdf(x) - q, lo, hi, xtol=1e-12 * max(1.0, hi))

    def quantiles(self, levels: np.ndarray) -> np.ndarray:
        """:meth:`ppf` at each of ``levels`` (ascending) at once: bisection on
        the cdf, all levels together, between the first's and the last's
        quantile (to a 2^-60th of that range)."""
        q = np.asarray(levels, dtype=float)
        lo, hi = np.full(q.shape, self.ppf(q[0])), np.full(q.shape, self.ppf(q[-1]))
        for _ in range(60):
            middle = (lo + hi) / 2
            short = np.asarray(self.cdf(middle)) < q
            lo, hi = np.where(short, middle, lo), np.where(short, hi, middle)
        return hi

    @property
    def atoms(self) -> np.ndarray:
        return np.unique(np.concatenate([p.atoms for p in self.parts]))

    def partial_expectation(self, y: float | np.ndarray) -> float | np.ndarray:
        result = sum(w * np.asarray(p.partial_expectation(y)) for w, p in zip(self.weights, self.parts))
        return float(result) if np.ndim(result) == 0 else result

    def expected_max(self, n: int) -> float:
        return self.expected_order(n, n)

    def expected_order(self, k: int, n: int) -> float:
        """E[k-th smallest of n draws], by quadrature of P(X_(k) > x), told
        where the parts' medians are."""
        from scipy import integrate

        upper = self.ppf(top_quantile(n))
        tail = lambda x: special.betaincc(k, n - k + 1, self.cdf(x))  # noqa: E731
        breaks = sorted({m for m in (p.ppf(0.5) for p in self.parts) if 0 < m < upper})
        return integrate.quad(tail, 0.0, upper, limit=400, points=breaks)[0]


@dataclass(frozen=True)
class Straggling(_Mixed):
    """A step law with stragglers: each step, independently with
    ``probability``, takes ``slowdown`` times its draw from ``base`` (then
    ``shift`` is added): the mixture of the base law and the slowed one."""

    base: Law
    probability: float
    slowdown: float
    shift: float = 0.0

    sums_taken = ("as mixtures over how many straggle, each a gamma of its moments (of a "
                  f"law other than a gamma, numerically up to {NUMERIC_SUMS} steps)")

    @property
    def name(self) -> str:
        return f"{self.base.name} with stragglers"

    @property
    def weights(self) -> tuple[float, float]:
        return (1 - self.probability, self.probability)

    @cached_property
    def parts(self) -> tuple[Law, Law]:
        return (self.base.plus(self.shift), self.base.scaled(self.slowdown).plus(self.shift))

    def scaled(self, factor: float) -> Straggling:
        return replace(self, base=self.base.scaled(factor), shift=self.shift * factor)

    def plus(self, constant: float) -> Straggling:
        return replace(self, shift=self.shift + constant)

    def sum_of(self, k: int) -> Straggling | Mixture:
        """The sum of ``k`` steps, as the mixture over how many of them
        straggle (binomial): m slow steps and k - m others sum to a
        constant where the base law is one, else to the gamma of that
        sum's mean and variance (exact for a gamma base when m is 0 or k).
        One gamma for the whole sum would smear the mixture's modes, which
        are what a few steps' sum looks like. A base law that is neither
        constant nor a gamma has sums of up to ``NUMERIC_SUMS`` steps
        convolved numerically (:func:`_convolved`), modes and all."""
        if k == 1:
            return self
        b, f = self.base, self.slowdown
        if not b.is_constant and not b.sums_exactly and k <= NUMERIC_SUMS:
            return _convolved(self, k)
        parts = []
        for slow, weight in enumerate(binomial(np.arange(k + 1), k, self.probability).tolist()):
            if weight < 1e-12:
                continue
            fast = k - slow
            shift = k * self.shift + b.shift * (fast + f * slow)
            random_mean = (b.mean - b.shift) * (fast + f * slow)
            var = b.var * (fast + f * f * slow)
            part = (Law.constant(shift + random_mean) if var == 0 else
                    Law(f"sum of {k}", "gamma", scale=var / random_mean,
                        shape=random_mean**2 / var, shift=shift))
            parts.append((weight, part))
        total = sum(w for w, _ in parts)
        return Mixture(f"sum of {k} {self.name}", tuple(w / total for w, _ in parts),
                       tuple(part for _, part in parts))

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        draws = self.base.sample(rng, size)
        slow = rng.random(size) < self.probability
        return self.shift + np.where(slow, self.slowdown * draws, draws)


@dataclass(frozen=True)
class Mixture(_Mixed):
    """Any mixture of laws: what a sum of a few straggling steps is."""

    name: str
    weights: tuple[float, ...]
    parts: tuple[Law, ...]
    shift = 0.0

    def scaled(self, factor: float) -> Mixture:
        return replace(self, parts=tuple(p.scaled(factor) for p in self.parts))

    def plus(self, constant: float) -> Mixture:
        return replace(self, parts=tuple(p.plus(constant) for p in self.parts))

    def sum_of(self, k: int) -> Law | Mixture:
        return self if k == 1 else self._gamma_sum(k)

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        which = rng.choice(len(self.parts), size=size, p=self.weights)
        draws = np.empty(size)
        for i, part in enumerate(self.parts):
            chosen = which == i
            draws[chosen] = part.sample(rng, int(chosen.sum()))
        return draws


@dataclass(frozen=True, eq=False)
class Empirical(_Duration):
    """Measured steps replayed: each draw is one of ``values`` (sorted), all
    equally likely, resampled with the learner's own random stream. Its
    moments, cdf, quantiles and order statistics are those of the sample
    itself, exactly (a discrete law), so the closed form reads the very law
    the simulator draws from; its sums are taken as gammas of their moments."""

    values: np.ndarray
    name: str = "empirical"
    shift = 0.0
    is_constant = False
    sums_exactly = False

    @classmethod
    def of(cls, values: np.ndarray) -> Empirical | Law:
        values = np.sort(np.asarray(values, dtype=float))
        return Law.constant(values[0]) if values[0] == values[-1] else cls(values)

    @property
    def mean(self) -> float:
        return float(self.values.mean())

    @property
    def var(self) -> float:
        return float(self.values.var())

    def scaled(self, factor: float) -> Empirical:
        return Empirical(self.values * factor)

    def plus(self, constant: float) -> Empirical:
        return Empirical(self.values + constant)

    def sum_of(self, k: int) -> Law | Empirical:
        return self if k == 1 else self._gamma_sum(k)

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return self.values[rng.integers(0, len(self.values), size)]

    def sampler(self, rng: np.random.Generator) -> Iterator[float]:
        return self._blocks(rng)

    def cdf(self, x: float | np.ndarray) -> float | np.ndarray:
        result = np.searchsorted(self.values, x, side="right") / len(self.values)
        return float(result) if np.ndim(result) == 0 else result

    def ppf(self, q: float) -> float:
        return float(self.quantiles(q))

    def quantiles(self, levels: float | np.ndarray) -> np.ndarray:
        # the smallest value whose cdf (i / n, as cdf computes it) reaches each level
        n = len(self.values)
        i = np.searchsorted(np.arange(1, n + 1) / n, np.asarray(levels, dtype=float), side="left")
        return self.values[np.minimum(i, n - 1)]

    @property
    def atoms(self) -> np.ndarray:
        return np.unique(self.values)

    def partial_expectation(self, y: float | np.ndarray) -> float | np.ndarray:
        # E[(y - X)+] = (y c - sum of the c values at or below y) / n, from
        # the running sum: no matrix of every y against every value
        y = np.asarray(y, dtype=float)
        below = np.searchsorted(self.values, y, side="right")
        sums = np.concatenate([[0.0], np.cumsum(self.values)])
        result = (y * below - sums[below]) / len(self.values)
        return float(result) if result.ndim == 0 else result

    def expected_max(self, n: int) -> float:
        return self.expected_order(n, n)

    def expected_order(self, k: int, n: int) -> float:
        """E[k-th smallest of n draws], exactly: the sum over the sample's
        values of each one's probability of being the k-th,
        P(X_(k) <= x) = I_F(x)(k, n - k + 1)."""
        at_most = special.betainc(k, n - k + 1, self.cdf(self.values))
        return float(np.sum(self.values * np.diff(at_most, prepend=0.0)))


@functools.lru_cache(maxsize=256)
def _convolved(law: Law, k: int) -> Empirical | Law:
    """The law of the sum of k draws of ``law``: its mass on 4,096 cells
    between its 1e-9 and 1 - 1e-7 quantiles (the mass above in the last),
    each at the cell's centre, convolved k times (by FFT), kept as 16,384
    quantiles of the sum moved to its exact mean (k times the law's): an
    :class:`Empirical` law, whose order statistics are exact for them. A sum
    of bounded steps stays bounded and a heavy tail stays heavy, where the
    gamma of the sum's moments (what it replaces) smears both."""
    lo, hi = float(law.ppf(1e-9)), float(law.ppf(1.0 - 1e-7))
    edges = np.linspace(lo, hi, _CELLS + 1)
    mass = np.clip(np.diff(np.asarray(law.cdf(edges), dtype=float)), 0.0, None)
    mass[-1] += max(0.0, 1.0 - mass.sum())
    size = k * _CELLS
    summed = np.fft.irfft(np.fft.rfft(mass, size) ** k, size)[: k * (_CELLS - 1) + 1]
    cdf = np.cumsum(np.clip(summed, 0.0, None))
    width = edges[1] - edges[0]
    # k cells' centres sum to k (lo + width / 2) + (i_1 + ... + i_k) width
    x = k * (lo + width / 2) + width * np.arange(len(cdf))
    q = (np.arange(_QUANTILES) + 0.5) / _QUANTILES
    points = np.interp(q * cdf[-1], cdf, x)
    # the cells' centres smear a long tail's mass: the sum's mean is k means, exactly
    return Empirical.of(points + (k * law.mean - points.mean()))


#: measured steps whose slowest few per cent (half a per cent at least: a
#: lone spike in a log is no mode) are this many times their bulk's median,
#: the bulk itself this steady: stragglers written out as a sample
RARE_SLOW_SHARE, RARE_SLOW_RATIO, RARE_SLOW_BULK_CV = 0.05, 1.5, 0.1
RARE_SLOW_LEAST = 0.005


def rare_slow_mode(law) -> tuple[float, float] | None:
    """(share, ratio) where ``law`` is measured steps (:class:`Empirical`)
    of a steady bulk and a rare slow mode: RARE_SLOW_LEAST to
    RARE_SLOW_SHARE of them over RARE_SLOW_RATIO times the median, the rest within a cv of
    RARE_SLOW_BULK_CV. The closed forms that tell stragglers apart
    (``faults.stragglers``) see such a sample only by its moments."""
    if not isinstance(law, Empirical):
        return None
    values = law.values
    median = float(np.median(values))
    slow = values > RARE_SLOW_RATIO * median
    share = float(slow.mean())
    if not RARE_SLOW_LEAST <= share <= RARE_SLOW_SHARE:
        return None
    bulk = values[~slow]
    if bulk.std() > RARE_SLOW_BULK_CV * bulk.mean():
        return None
    return share, float(values[slow].mean() / median)


def apart_from_stragglers(law: Law | Straggling) -> Law:
    """The steps that do not straggle: stragglers knock one learner at a
    time off a steady schedule and the rest keep it, so how steady that
    schedule is reads from these."""
    return law.parts[0] if isinstance(law, Straggling) else law


def straggling(law: Law, probability: float, slowdown: float) -> Law | Straggling:
    """``law`` with stragglers (``law`` itself where none slow down)."""
    if probability == 0 or slowdown == 1:
        return law
    return Straggling(law, probability, slowdown)
