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
