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


#: The two-sided 95% quantiles of Student's t (its 0.975 quantile) for 1..30 degrees of freedom.
_T95 = (
    12.7062047, 4.30265273, 3.18244631, 2.77644511, 2.57058184, 2.44691185, 2.36462425,
    2.30600414, 2.26215716, 2.22813885, 2.20098516, 2.17881283, 2.16036866, 2.14478669,
    2.13144955, 2.11990530, 2.10981558, 2.10092204, 2.09302405, 2.08596345, 2.07961384,
    2.07387307, 2.06865761, 2.06389856, 2.05953855, 2.05552944, 2.05183052, 2.04840714,
    2.04522964, 2.04227246,
)  # fmt: skip


def t95(df: int) -> float:
    """Student's t 0.975 quantile for ``df`` degrees of freedom (a 95% two-sided interval): a
    table up to 30, then the Cornish-Fisher series about :data:`Z95` (error below 1e-6)."""
    if df < 1:
        raise ValueError(f"need df >= 1, got {df}")
    if df <= len(_T95):
        return _T95[df - 1]
    z = Z95
    return (
        z
        + (z**3 + z) / (4 * df)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3)
        + (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / (92160 * df**4)
    )


def t_interval(
    values: Sequence[float], bounds: tuple[float, float] = (-math.inf, math.inf)
) -> tuple[float, float, float]:
    """``(mean, lo, hi)``: the sample mean of ``values`` (independent groups: deal groups, or
    paired differences over them) with a 95% Student-t interval (``n - 1`` degrees of freedom,
    right for few groups), clipped to ``bounds``, the range the mean can take. With fewer than
    two values nothing bounds the mean but ``bounds``."""
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        raise ValueError("t_interval needs at least one value")
    mean = float(x.mean())
    lo_bound, hi_bound = bounds
    if x.size < 2:
        return mean, lo_bound, hi_bound
    half = t95(x.size - 1) * standard_error(x)
    return mean, max(lo_bound, mean - half), min(hi_bound, mean + half)


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
