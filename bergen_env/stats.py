"""Interval estimates for tournament statistics (numpy only).

>>> lo, hi = wilson_interval(50, 100)
>>> round(lo, 4), round(hi, 4)
(0.4038, 0.5962)
>>> wilson_interval(0, 10)[0]
0.0
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

#: The two-sided 97.5% quantile of the standard normal: a 95% interval.
Z95 = 1.959963984540054


def wilson_interval(successes: int, trials: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion (95% by default).

    Unlike the normal (Wald) interval it stays inside [0, 1] and does not collapse to a point
    at 0 or ``trials`` successes. With no trials nothing is known: ``(0.0, 1.0)``.
    """
    if trials < 0 or not 0 <= successes <= trials:
        raise ValueError(f"need 0 <= successes <= trials, got {successes} of {trials}")
    if trials == 0:
        return 0.0, 1.0
    n = float(trials)
    p = successes / n
    z2 = z * z
    denom = 1.0 + z2 / n
    center = (p + z2 / (2.0 * n)) / denom
    half = z * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n)) / denom
    # exact ends at 0 and n successes (the formula gives them up to rounding)
    lo = 0.0 if successes == 0 else max(0.0, center - half)
    hi = 1.0 if successes == trials else min(1.0, center + half)
    return lo, hi


def standard_error(values: Sequence[float]) -> float:
    """The standard error of the mean of ``values`` (sample deviation, ``ddof=1``); NaN with
    fewer than two values."""
    x = np.asarray(values, dtype=np.float64)
    return float(x.std(ddof=1)) / math.sqrt(x.size) if x.size > 1 else math.nan


def mean_interval(values: Sequence[float], z: float = Z95) -> tuple[float, float, float]:
    """``(mean, lo, hi)``: the sample mean with a normal-approximation 95% interval.

    Uses the sample standard deviation (``ddof=1``); with fewer than two values the interval is
    the mean itself.
    """
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        raise ValueError("mean_interval needs at least one value")
    mean = float(x.mean())
    if x.size < 2:
        return mean, mean, mean
    half = z * standard_error(x)
    return mean, mean - half, mean + half
