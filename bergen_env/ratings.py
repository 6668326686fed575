"""Bradley-Terry ratings of a league, fitted in numpy and shown on the Elo scale.

Why Bradley-Terry and not OpenSkill: a tournament here is a fixed batch of matches, so the
maximum-likelihood fit of all of them at once is the right estimator; it does not depend on the
order in which matches are fed (an online rater such as OpenSkill or Elo updates does), so the
same seed gives the same ratings whatever the worker count, and it needs no extra dependency.
Multi-player matches enter as their pairwise outcomes (see :func:`bergen_env.arena`).

On the Elo scale a 400-point gap means 10:1 odds: ``P(i beats j) = 1 / (1 + 10**((Rj - Ri)/400))``.

>>> wins = np.array([[0.0, 30.0], [10.0, 0.0]])
>>> r = elo_ratings(wins, prior=0.0)
>>> round(float(r[0] - r[1]), 1)  # 30:10 is 3:1 odds
190.8
>>> round(expected_score(float(r[0]), float(r[1])), 3)
0.75
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

ELO_CENTER = 1500.0
ELO_SCALE = 400.0 / np.log(10.0)


def bradley_terry(
    wins: np.ndarray, prior: float = 1.0, tol: float = 1e-10, max_iter: int = 100_000
) -> np.ndarray:
    """Bradley-Terry strengths from a matrix ``wins[i, j]`` (i beat j; ties count 0.5 each).

    Fitted by the minorization-maximization iteration of Hunter (2004). ``prior`` adds that
    many virtual games, split evenly, between every pair: it keeps strengths finite when an
    agent won (or lost) every comparison and links agents that never met. Strengths are
    normalized to a geometric mean of 1.
    """
    w = np.array(wins, dtype=np.float64)
    if w.ndim != 2 or w.shape[0] != w.shape[1]:
        raise ValueError(f"wins must be a square matrix, got shape {w.shape}")
    if (w < 0).any():
        raise ValueError("wins must be non-negative")
    if prior < 0:
        raise ValueError(f"prior must be >= 0, got {prior}")
    k = w.shape[0]
    np.fill_diagonal(w, 0.0)
    w += (prior / 2.0) * (1.0 - np.eye(k))
    games = w + w.T
    total_wins = w.sum(axis=1)
    if (total_wins == 0).any() or (games.sum(axis=1) == 0).any():
        raise ValueError("every agent needs at least one win and one game (use prior > 0)")
    p = np.ones(k)
    for _ in range(max_iter):
        denom = (games / (p[:, None] + p[None, :])).sum(axis=1)
        new = total_wins / denom
        new /= np.exp(np.log(new).mean())
        if np.max(np.abs(new - p)) < tol:
            return new
        p = new
    return p


def elo_ratings(wins: np.ndarray, prior: float = 1.0) -> np.ndarray:
    """Bradley-Terry strengths on the Elo scale, centred on a mean rating of 1500."""
    return ELO_CENTER + ELO_SCALE * np.log(bradley_terry(wins, prior=prior))


def expected_score(rating: float, other: float) -> float:
    """The share of points an Elo-scale ``rating`` is expected to take against ``other``."""
    return 1.0 / (1.0 + 10.0 ** ((other - rating) / 400.0))


#: Seed stream of the bootstrap (the tournaments use 0 for deals and 1 for agents).
BOOTSTRAP_STREAM = 2


@dataclass(frozen=True)
class PairPoints:
    """One pair's duplicate results as the fit reads them: agent ``i``'s half-points in each
    deal group against agent ``j`` (a comparison placed ahead gives 2, level 1, behind 0) and
    the comparisons in one deal group (its seatings times the comparisons of a match)."""

    i: int
    j: int
    points: np.ndarray
    per_group: int


@dataclass(frozen=True)
class RatingFit:
    """Elo-scale ratings with the percentile interval of a bootstrap, one entry per agent."""

    ratings: np.ndarray
    low: np.ndarray
    high: np.ndarray


def _pinned(wins: np.ndarray, prior: float, anchor: int | None, anchor_rating: float) -> np.ndarray:
    elo = elo_ratings(wins, prior=prior)
    return elo if anchor is None else elo - elo[anchor] + anchor_rating


def fit_with_intervals(
    num_agents: int,
    pairs: Sequence[PairPoints],
    *,
    prior: float,
    bootstrap: int = 1000,
    seed: int = 0,
    anchor: int | None = None,
    anchor_rating: float = ELO_CENTER,
    level: float = 0.95,
) -> RatingFit:
    """The Bradley-Terry fit of every pair's results (``prior`` virtual games a pair) with a
    ``level`` percentile interval from ``bootstrap`` replicates, each redrawing every pair's
    deal groups with replacement (seeded by ``seed``); agent ``anchor`` is pinned at
    ``anchor_rating`` (``None``: the mean rating is ``anchor_rating``)."""
    if not isinstance(bootstrap, int) or isinstance(bootstrap, bool) or bootstrap < 1:
        raise ValueError(f"bootstrap must be an integer >= 1, got {bootstrap!r}")
    k = num_agents
    wins = np.zeros((k, k))
    for p in pairs:
        total = p.points.sum() / 2
        wins[p.i, p.j] += total
        wins[p.j, p.i] += len(p.points) * p.per_group - total
    point = _pinned(wins, prior, anchor, anchor_rating)
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(BOOTSTRAP_STREAM,)))
    samples = np.empty((bootstrap, k))
    for b in range(bootstrap):
        w = np.zeros((k, k))
        for p in pairs:
            n = len(p.points)
            total = p.points[rng.integers(0, n, n)].sum() / 2
            w[p.i, p.j] += total
            w[p.j, p.i] += n * p.per_group - total
        samples[b] = _pinned(w, prior, anchor, anchor_rating)
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(samples, [tail, 100 - tail], axis=0)
    return RatingFit(point, low, high)
