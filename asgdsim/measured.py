"""Step times measured on a real GPU: read, replayed, or fitted by a law.

A user who has timed their own training steps (``asgdsim profile --steps``,
or any timer of their framework) writes them one per row in a CSV with a
column ``step_s``. Two uses:

- ``timing.compute: {empirical: FILE}`` replays them: every step a learner
  takes is one of the measured ones, drawn with the learner's own random
  stream (:class:`~asgdsim.distributions.Empirical`);
- ``asgdsim fit FILE`` fits each law of ``timing.compute`` by maximum
  likelihood, ranks them by AIC (the likelihood penalised by the number of
  parameters, so a two-parameter law must earn its second one), and reports
  how well each one fits (the Kolmogorov-Smirnov distance to the sample and
  its p-value, optimistic since the law's parameters come from the same
  steps) beside a QQ figure. The winner's YAML entry goes into a
  scenario as it is.

The deterministic law has no density, so it is offered only where every
measured step is the same.
"""

from __future__ import annotations

import csv
import contextlib
import math
import os
from dataclasses import dataclass
from functools import cache

import numpy as np

from .inputs import MAX_TABLE_BYTES, check_file

__all__ = ["read_steps", "Fit", "fit_laws", "qq_figure"]

#: fewer steps than this say too little about a law's shape to fit or replay
MIN_STEPS = 10


def read_steps(path: str) -> np.ndarray:
    """The measured steps of a CSV's ``step_s`` column, in seconds;
    ValueError names the file, the column and the line of what is wrong."""
    try:
        stat = os.stat(path)
        check_file(path, MAX_TABLE_BYTES)      # not a device, a pipe, or gigabytes
    except OSError as exc:
        raise ValueError(f"cannot read step times {path} ({exc.strerror or exc})") from None
    return _read(path, stat.st_mtime_ns, stat.st_size).copy()


@cache
def _read(path: str, mtime_ns: int, size: int) -> np.ndarray:
    # cached by modification time and size: a file edited in a notebook is read again
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ValueError(f"cannot read step times {path} ({exc})") from None
    if not rows or "step_s" not in rows[0]:
        raise ValueError(f"step times {path}: expected a header with a column step_s and a "
                         "row per measured step, in seconds")
    values = []
    for line, row in enumerate(rows, start=2):      # line 1 is the header
        text = (row.get("step_s") or "").strip()
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"step times {path}: column step_s, line {line}: expected a "
                             f"positive number of seconds, got {text!r}")
        values.append(value)
    if len(values) < MIN_STEPS:
        raise ValueError(f"step times {path}: {len(values)} steps; expected at least "
                         f"{MIN_STEPS} to say anything about their law")
    return np.array(values)


@dataclass(frozen=True)
class Fit:
    """One law fitted to the sample."""

    distribution: str
    entry: dict              # the scenario's timing.compute entry (times in ms)
    parameters: int
    log_likelihood: float
    ks_distance: float
    ks_pvalue: float

    @property
    def aic(self) -> float:
        return 2 * self.parameters - 2 * self.log_likelihood


def _entry(distribution: str, mean: float, **extra: float) -> dict:
    return {"distribution": distribution, "mean": f"{1e3 * mean:.6g} ms",
            **{k: (f"{1e3 * v:.6g} ms" if k == "shift" else float(f"{v:.6g}"))
               for k, v in extra.items()}}


def _takes(entry: dict) -> bool:
    """Whether a scenario takes ``entry`` as its timing.compute."""
    from pydantic import ValidationError

    from .specs import LawSpec

    try:
        LawSpec.model_validate(entry)
    except ValidationError:
        return False
    return True


def fit_laws(steps: np.ndarray) -> list[Fit]:
    """Every law of ``timing.compute`` fitted to ``steps`` by maximum
    likelihood, best (lowest AIC) first."""
    from scipy import stats

    x = np.asarray(steps, dtype=float)
    n, mean = len(x), float(x.mean())
    if float(x.max() - x.min()) <= 1e-6 * mean:
        # steps alike to the 6 digits an entry keeps: no spread to fit a law to
        return [Fit("deterministic", _entry("deterministic", mean), 1, math.inf, 0.0, 1.0)]
    lo, hi = float(x.min()), float(x.max())
    candidates = []
    # exponential: its mean
    candidates.append(("exponential", stats.expon(scale=mean), 1, _entry("exponential", mean)))
    # shifted exponential: the shift at the least step and the rest exponential (the MLE)
    shift = lo
    candidates.append(("shifted-exponential", stats.expon(loc=shift, scale=mean - shift), 2,
                       _entry("shifted-exponential", mean, shift=shift)))
    # uniform: between the least and the greatest step (the MLE)
    width = hi - lo
    candidates.append(("uniform", stats.uniform(loc=lo, scale=width), 2,
                       _entry("uniform", (lo + hi) / 2, cv=min(width / math.sqrt(12) / ((lo + hi) / 2),
                                                               1 / math.sqrt(3)))))
    # gamma and lognormal from 0: the MLE of their shape (a sample too
    # narrow for scipy's root finder leaves that law out)
    with contextlib.suppress(ValueError, RuntimeError, FloatingPointError, OverflowError):
        a, _, scale = stats.gamma.fit(x, floc=0)
        candidates.append(("gamma", stats.gamma(a, scale=scale), 2,
                           _entry("gamma", a * scale, shape=a)))
    with contextlib.suppress(ValueError, RuntimeError, FloatingPointError, OverflowError):
        sigma, _, scale = stats.lognorm.fit(x, floc=0)
        candidates.append(("lognormal", stats.lognorm(sigma, scale=scale), 2,
                           _entry("lognormal", scale * math.exp(sigma**2 / 2), shape=sigma)))
    fits = []
    for name, law, k, entry in candidates:
        if not _takes(entry):
            continue         # rounded to 6 digits, a shift that reaches the mean, say
        ks = stats.kstest(x, law.cdf)
        with np.errstate(divide="ignore"):
            loglik = float(np.sum(law.logpdf(x)))
        fits.append(Fit(name, entry, k, loglik, float(ks.statistic), float(ks.pvalue)))
    return sorted(fits, key=lambda f: f.aic)


def qq_figure(steps: np.ndarray, fits: list[Fit]):
    """Measured quantiles against each fitted law's (a matplotlib Figure)."""
    from matplotlib.figure import Figure

    from .distributions import law_from_spec
    from .specs import LawSpec

    x = np.sort(np.asarray(steps, dtype=float))
    probabilities = (np.arange(1, len(x) + 1) - 0.5) / len(x)
    fig = Figure(figsize=(6, 5), layout="constrained")
    ax = fig.add_subplot()
    for fit in fits:
        law = law_from_spec(LawSpec.model_validate(fit.entry))
        theory = np.array([law.ppf(p) for p in probabilities])
        ax.plot(1e3 * theory, 1e3 * x, ".", markersize=3,
                label=f"{fit.distribution} (AIC {fit.aic:.1f}, KS {fit.ks_distance:.3f})")
    ax.axline((1e3 * x[0], 1e3 * x[0]), slope=1, color="0.5", linewidth=0.8)
    # the measured range (and a margin): a law that fits badly runs off it
    margin = max(0.25 * (x[-1] - x[0]), 0.05 * x[0])
    ax.set_xlim(1e3 * (x[0] - margin), 1e3 * (x[-1] + margin))
    ax.set_xlabel("fitted law's quantile (ms)")
    ax.set_ylabel("measured step (ms)")
    ax.set_title(f"{len(x)} measured steps against each law, best first")
    ax.legend(fontsize=8)
    return fig
