"""Simulated DBM streams driven through a :class:`DeferralEngine`, and fidelity oracles.

Fidelity is measured as in §6.1: the fraction of ticks at which the last answer is within ε of
the true aggregate. Its exact expectation given the evaluation times is ``Σ F(s - t_eval)``
over the ticks (``F`` of Eq. 3 with the *true* ``μ_A, σ_A``): each interval's length is fixed at
its start from past data only, and the increments after it are independent of the past. The
per-interval sums of ``indicator - F`` are martingale differences, so their root sum of squares
gives the standard error of the fraction.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tsmon.protocols.deferral import DeferralEngine, within_bound_probability


def simulate(
    engine: DeferralEngine,
    rng: np.random.Generator,
    mu: np.ndarray,
    sigma: np.ndarray,
    n_ticks: int,
) -> tuple[np.ndarray, dict[str, list]]:
    """Every stream reports each tick (1 ms); return values ``(T, n)`` and answers by name."""
    n = len(mu)
    x = np.zeros(n)
    xs = np.empty((n_ticks, n))
    answers: dict[str, list] = {name: [] for name in engine.query_names}
    ids = np.arange(n)
    for t in range(n_ticks):
        x = x + mu + sigma * rng.standard_normal(n)  # Eq. 1 with Δt = 1 ms
        xs[t] = x
        for a in engine.tick(t, ids, np.full(n, t), x):
            answers[a.name].append(a)
    return xs, answers


@dataclass
class Fidelity:
    """Observed vs expected hit rates, over ticks (§6.1) and at the interval ends (Eq. 7)."""

    time_hits: float = 0.0
    time_expected: float = 0.0
    time_var: float = 0.0
    ticks: int = 0
    end_hits: float = 0.0
    end_expected: float = 0.0
    end_var: float = 0.0
    intervals: int = 0
    last_stale_min: float = 1.0  # smallest F at the last tick before an evaluation

    @property
    def time(self) -> tuple[float, float, float]:
        """(observed, expected, standard error) of the time fidelity."""
        n = self.ticks
        return self.time_hits / n, self.time_expected / n, np.sqrt(self.time_var) / n

    @property
    def end(self) -> tuple[float, float, float]:
        """(observed, expected, standard error) at the end of each deferred interval."""
        n = self.intervals
        return self.end_hits / n, self.end_expected / n, np.sqrt(self.end_var) / n

    def add(
        self, a_true: np.ndarray, eval_ticks: np.ndarray, eps: float, mu_a: float, sigma_a: float
    ) -> None:
        """Fold in one linear query: true ``A`` per tick and the ticks it was evaluated at."""
        t = np.arange(eval_ticks[0], len(a_true))
        last = eval_ticks[np.searchsorted(eval_ticks, t, side="right") - 1]
        hit = np.abs(a_true[t] - a_true[last]) <= eps
        f = within_bound_probability(t - last, mu_a, sigma_a, eps)
        dev = np.bincount(np.searchsorted(eval_ticks, t, side="right") - 1, hit - f)
        self.time_hits += hit.sum()
        self.time_expected += f.sum()
        self.time_var += (dev**2).sum()
        self.ticks += len(t)
        gap = np.diff(eval_ticks)
        end_hit = np.abs(a_true[eval_ticks[1:]] - a_true[eval_ticks[:-1]]) <= eps
        fe = within_bound_probability(gap, mu_a, sigma_a, eps)
        self.end_hits += end_hit.sum()
        self.end_expected += fe.sum()
        self.end_var += (fe * (1 - fe)).sum()
        self.intervals += len(gap)
        last = within_bound_probability(gap - 1, mu_a, sigma_a, eps)
        self.last_stale_min = min(self.last_stale_min, float(last.min(initial=1.0)))
