"""Point estimates with 95% intervals: Student t over runs, BCa bootstrap over tasks (seeded)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from types import ModuleType
from typing import Any

import numpy as np

CONFIDENCE = 0.95
SEED = 20240607
N_RESAMPLES = 9999


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its 95% interval, the number of units behind it, and how."""

    mean: float
    low: float
    high: float
    n: int
    method: str

    @property
    def has_interval(self) -> bool:
        return math.isfinite(self.low) and math.isfinite(self.high)

    def clipped(self, low: float, high: float) -> Estimate:
        """The interval cut to a quantity's feasible range (a t interval is symmetric and
        can cross 0% or 100% when runs are few and rates extreme)."""
        if not self.has_interval:
            return self
        return Estimate(self.mean, min(max(self.low, low), high), min(max(self.high, low), high), self.n, self.method)


@cache
def scipy_stats() -> ModuleType:
    """``scipy.stats``, imported on first use: every eval worker imports the statistics through the report's
    formats, and its start-up need not load SciPy (about a second; tests/test_startup.py)."""
    from scipy import stats

    return stats


def _finite(values: Iterable[float]) -> np.ndarray:
    return np.asarray([v for v in values if math.isfinite(v)], dtype=float)


def _without_interval(array: np.ndarray, method: str) -> Estimate:
    """Fewer than two values: the mean (NaN for none) and no interval."""
    mean = float(array.mean()) if array.size else math.nan
    return Estimate(mean, math.nan, math.nan, int(array.size), method)


def t_interval(values: Iterable[float], confidence: float = CONFIDENCE) -> Estimate:
    """Mean and Student t interval: mean +- t_{(1+c)/2, n-1} * s / sqrt(n), s with ddof=1."""
    array = _finite(values)
    n = int(array.size)
    if n < 2:
        return _without_interval(array, "t")
    mean = float(array.mean())
    stats = scipy_stats()
    sem = float(stats.sem(array))
    if sem == 0.0:  # scipy rejects scale=0; the interval of identical runs is the point
        return Estimate(mean, mean, mean, n, "t")
    low, high = stats.t.interval(confidence, df=n - 1, loc=mean, scale=sem)
    return Estimate(mean, float(low), float(high), n, "t")


def bootstrap_interval(
    samples: Sequence[np.ndarray], statistic: Callable[..., Any], *, paired: bool
) -> tuple[float, float, str]:
    """BCa bootstrap interval, or percentile when BCa is undefined (e.g. constant data)."""
    stats = scipy_stats()
    for method in ("BCa", "percentile"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", stats.DegenerateDataWarning)
            warnings.simplefilter("ignore", RuntimeWarning)
            result = stats.bootstrap(
                tuple(samples),
                statistic,
                n_resamples=N_RESAMPLES,
                paired=paired,
                vectorized=True,
                confidence_level=CONFIDENCE,
                method=method,
                rng=np.random.default_rng(SEED),
            )
        low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
        if math.isfinite(low) and math.isfinite(high):
            return low, high, f"bootstrap {method}"
    return math.nan, math.nan, "bootstrap"


def bootstrap_mean(values: Iterable[float], scale: float = 1.0) -> Estimate:
    """Mean (times ``scale``) with a BCa bootstrap interval over the given units."""
    array = _finite(values) * scale
    n = int(array.size)
    if n < 2:
        return _without_interval(array, "bootstrap")
    mean = float(array.mean())
    if np.all(array == array[0]):
        return Estimate(mean, mean, mean, n, "bootstrap")
    low, high, method = bootstrap_interval((array,), lambda x, axis: np.mean(x, axis=axis), paired=False)
    return Estimate(mean, low, high, n, method)
