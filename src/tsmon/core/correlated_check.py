"""A correlated aggregate that checks its focused histogram online and falls back when it fails.

The focused histogram of :class:`~tsmon.core.correlated.CorrelatedAggregate` (Gehrke, Korn &
Srivastava 2001) packs its buckets around where the predicate boundary *will* be: for ``x >
AVG`` the focus ``AVG ± z sd/sqrt(n)`` shrinks as the scope grows (§3.1.3), which assumes a mean
that settles. On real series it does not (load steps, daily cycles, bursts): the boundary walks
into an outer bucket spanning ``[MIN, focus)`` and is interpolated there as if values were
uniform. Measured on the NAB series (``benchmarks/summaries/bench_correlated_nab.py``), the
plain histogram's ``COUNT(x > AVG)`` was worse than the trivial "half the scope" answer on 5 of
33 series over a landmark and on 27 of 33 over the last 500 points.

The paper proves no error bound, so nothing tells the histogram it is failing. Here a *check
sample* of about ``sample`` tuples of the scope does: a uniform reservoir (Vitter's Algorithm R)
over a landmark and over a sliding window of ``w`` until it is full, then each new tuple with
probability ``sample / w`` (every tuple of the window is kept with that probability; a random
sample, whose variance estimate holds where an every-k-th sample's phase effects on periodic
series would not). It gives an
unbiased estimate ``s = scope * mean(z)`` (``z = 1[P(x, AGG)]`` for COUNT, ``y 1[P]`` for SUM,
with the exact AGG), whose variance ``V`` is known from the sample. For any other answer ``c``,
``E[(c - s)^2] = (c - exact)^2 + V``, so exponentially weighted means of ``(c - s)^2 - V`` track
the squared error of the histogram and, for ``COUNT(x > AVG)``, of the trivial answer; ``get``
returns the candidate (histogram, trivial, sample) with the least tracked error. While the
sample holds the whole scope, ``s`` is exact and is returned.

Costs: ``sample`` more tuples of memory and ``O(sample)`` work per tuple. ``sample=0`` is the
paper's histogram alone.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tsmon.core.correlated import CorrelatedAggregate, CorrelatedQuery

__all__ = ["CANDIDATES", "CheckedAggregate"]

CANDIDATES = ("histogram", "trivial", "sample")


class CheckedAggregate(CorrelatedAggregate):
    """:class:`CorrelatedAggregate` whose answer is the best of its histogram, the trivial
    answer and a check sample, by squared error tracked online against the sample.

    The other parameters are the histogram's. ``sample`` tuples are kept (``0``: the
    histogram alone); ``memory`` tuples is the span of the error tracking (exponential
    weights ``1 - 1/memory``); ``seed`` drives the sampling.
    :attr:`chosen` names the candidate the last :meth:`get` answered with.

    Examples
    --------
    COUNT{x > AVG} over the last 1,500 points of a series whose level jumps every 400 points:

    >>> from tsmon.sim.correlated import exact_correlated, rmse
    >>> x = np.repeat([10.0, 30.0, 12.0, 28.0, 11.0, 29.0, 13.0, 31.0], 400)
    >>> x = x + np.random.default_rng(0).normal(0, 2, x.size)
    >>> q = CorrelatedQuery("avg", "count")
    >>> exact = exact_correlated(q, x, window=1500)
    >>> plain = CorrelatedAggregate(q, 10, window=1500).extend(x)
    >>> checked = CheckedAggregate(q, 10, window=1500).extend(x)
    >>> trivial = np.minimum(np.arange(1, x.size + 1), 1500) / 2
    >>> print(round(rmse(plain, exact)), round(rmse(trivial, exact)), round(rmse(checked, exact)))
    56 74 20
    """

    def __init__(
        self,
        query: CorrelatedQuery,
        *args: Any,
        sample: int = 512,
        memory: int = 256,
        seed: int = 0,
        **kwargs: Any,
    ) -> None:
        if sample < 0 or memory < 1:
            raise ValueError(f"need sample >= 0 tuples and memory >= 1, got {sample}, {memory}")
        self.sample, self.memory, self.seed = sample, memory, seed
        super().__init__(query, *args, **kwargs)  # the histogram's parameters

    def new_landmark(self) -> None:
        """Start a new scope at the next tuple; the sample and the tracked errors restart."""
        super().new_landmark()
        self._rng = np.random.default_rng(self.seed)
        self._kept = np.empty((min(self.sample, 64), 3))  # the sample: rows (position, x, y)
        self._n = 0  # rows in use
        self._oldest = 0  # smallest position kept (sliding: when it leaves, so do others)
        self._now: tuple[int, dict[str, float], float] | None = None  # (pos, answers, V)
        self._sq = dict.fromkeys(CANDIDATES, 0.0)  # weighted E[(c - s)^2], E[V] for "sample"
        self._weight = 0.0
        self.chosen = "histogram"

    def update(self, x: float, y: float | None = None) -> CheckedAggregate:
        """Read tuple ``(x, y)`` into the histogram and the sample, then score the answers."""
        super().update(x, y)
        if self.sample == 0:
            return self
        y = float(x if y is None else y)
        pos, w, row = self.pos, self.window, (self.pos, float(x), y)
        if w is None or pos <= w:  # Algorithm R: tuple pos replaces a random one w.p. sample/pos
            j = pos - 1 if pos <= self.sample else int(self._rng.integers(pos))
            if j < self._n:
                self._kept[j] = row
            elif j < self.sample:
                self._append(row)
        elif self._rng.random() * w < self.sample:  # a full window: Bernoulli(sample / w)
            self._append(row)
        if w is not None and self._n and self._oldest <= pos - w:
            live = self._kept[: self._n][self._kept[: self._n, 0] > pos - w]
            self._n = len(live)
            self._kept[: self._n] = live
            self._oldest = int(live[:, 0].min()) if self._n else pos
        if self.hist is not None:
            answers, var = self._candidates()
            s = answers["sample"]
            w = max(1.0 / self.memory, 1.0 / (self._weight + 1.0))  # a plain mean at first
            self._weight += 1.0
            for name, c in answers.items():
                seen = var if name == "sample" else (c - s) ** 2
                self._sq[name] += w * (seen - self._sq[name])
        return self

    def _append(self, row: tuple[int, float, float]) -> None:
        if self._n == len(self._kept):
            self._kept = np.concatenate([self._kept, np.empty_like(self._kept)])
        self._kept[self._n] = row
        self._n += 1

    def _sampled(self) -> tuple[float, float]:
        """``(s, V)``: the sample's estimate of the answer and its variance."""
        n, scope = self._n, self.scope
        if n == 0:
            return 0.0, math.inf
        xs, ys = self._kept[:n, 1], self._kept[:n, 2]
        lo, hi, open_lo = self.query.predicate(self._agg())
        keep = ((xs > lo) if open_lo else (xs >= lo)) & (xs <= hi)
        zs = keep.astype(float) if self.query.dependent == "count" else np.where(keep, ys, 0.0)
        if n >= scope:  # the sample is the scope: exact
            return float(zs.sum()), 0.0
        fpc = 1.0 - n / scope
        var = scope**2 * float(zs.var(ddof=1) if n > 1 else zs[0] ** 2) / n * fpc
        return scope * float(zs.mean()), var

    def _candidates(self) -> tuple[dict[str, float], float]:
        """The candidates now: the histogram's, the trivial one (COUNT{x > AVG}: half the
        scope), the sample's; and the sample's variance (kept until the next tuple)."""
        if self._now is None or self._now[0] != self.pos:
            s, var = self._sampled()
            out = {"histogram": super().get()}
            if self.query.independent == "avg" and self.query.dependent == "count":
                out["trivial"] = self.scope / 2.0
            out["sample"] = s
            self._now = (self.pos, out, var)
        return self._now[1], self._now[2]

    def get(self) -> float:
        """The candidate with the least tracked squared error (exact while warming up or
        while the sample holds the whole scope)."""
        if self.hist is None or self.sample == 0:
            self.chosen = "histogram"
            return super().get()
        answers, var = self._candidates()
        if var == 0.0:
            self.chosen = "sample"
            return answers["sample"]
        noise = self._sq["sample"]
        score = {n: noise if n == "sample" else self._sq[n] - noise for n in answers}
        self.chosen = min(answers, key=lambda n: (score[n], CANDIDATES.index(n)))
        return answers[self.chosen]
