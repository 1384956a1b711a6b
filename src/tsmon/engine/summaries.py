"""Queries answered from stream summaries, hosted by a source node's local part
(:mod:`tsmon.kinds.local`; a :class:`~tsmon.engine.monitor.Monitor` runs one in its batch host).

* ``INNER`` / ``POINT`` / ``RANGE`` read a SWAT tree of the series' last N values (Bulut &
  Singh 2003, :mod:`tsmon.core.swat`); queries over the same series and N share one tree;
* ``APPROX COUNT(x op c)`` / ``APPROX SUM(x)`` an exponential histogram of the last N points
  (Datar et al., :mod:`tsmon.core.exphist`): the count of points satisfying the comparison,
  or the sum of integer values in ``[0, R]``, within relative error ε;
* ``COUNT|SUM(x > AVG)``, ``(x <= c·MIN)``, ``(x >= c·MAX)`` a correlated aggregate with
  piecemeal-uniform focused histograms (Gehrke, Korn & Srivastava, :mod:`tsmon.core.correlated`)
  over a landmark (since the query started) or the last N points, checked online against a
  sample of 512 points and replaced by the trivial answer (half the scope, for ``COUNT(x >
  AVG)``) or the sample's when those track closer (:mod:`tsmon.core.correlated_check`).

Choices
    * A summary is fed the series' in-order points from when its query is added (it is a
      synopsis of the stream, not of stored history); late points are left out, as summaries
      of "the last N arrivals" have no place for them.
    * ``APPROX SUM`` takes integer values in ``[0, R]``; another value is skipped and counted
      (``ignored`` in the answer), the point itself is stored as usual.
    * Answers are computed when asked (:meth:`SummaryQueries.answers`), from the summaries'
      current state; ``bound`` is the guaranteed absolute error where the summary gives one
      (SWAT §2.6; for the histograms half the oldest bucket, at most ``ε·exact``), and the
      exact answer lies in ``[lower, upper]``. ``satisfied`` says whether that guarantee meets
      the query's ``WITHIN``: ``bound <= δ`` for INNER/POINT (SWAT answers from its finest
      nodes when no level meets δ, and says so with ``satisfied=False``), ``bound <= ε·lower``
      for APPROX; ``None`` without a ``WITHIN`` or a bound (RANGE, correlated aggregates, which
      carry no bound).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from tsmon.core.correlated import CorrelatedQuery
from tsmon.core.correlated_check import CheckedAggregate
from tsmon.core.exphist import BasicCounting, WindowSum
from tsmon.core.swat import SWAT
from tsmon.query import ApproxDef, CorrelatedDef, WaveletDef, query_key
from tsmon.query.compile import COMPARISONS

__all__ = ["SummaryAnswer", "SummaryQueries"]

SummaryDef = WaveletDef | ApproxDef | CorrelatedDef


@dataclass(frozen=True)
class SummaryAnswer:
    """A summary query's answer: ``value`` (``nan`` before any point), its absolute error
    ``bound`` when the summary guarantees one, ``positions`` for RANGE (those certainly
    inside; ``possible`` those the bounds allow), ``points`` the points summarized so far;
    the exact answer lies in ``[lower, upper]``, and ``satisfied`` tells whether ``bound``
    met the query's ``WITHIN`` (``None``: no ``WITHIN`` or no bound)."""

    name: str
    value: float
    bound: float | None
    points: int
    positions: tuple[int, ...] = ()
    possible: tuple[int, ...] = ()
    ignored: int = 0
    satisfied: bool | None = None
    lower: float | None = None
    upper: float | None = None


class _Summary:
    """One query's summary and what it has seen; each family below answers its own way."""

    def __init__(self, statement: Any, tree: SWAT | None) -> None:
        self.statement, self.tree = statement, tree
        self.points = self.ignored = 0

    def feed(self, values: np.ndarray) -> None:
        self.points += len(values)

    def answer(self) -> SummaryAnswer:
        if self.points == 0:
            return SummaryAnswer(self.statement.name, math.nan, None, 0)
        return self._answer()

    def _answer(self) -> SummaryAnswer:
        raise NotImplementedError


class _Wavelet(_Summary):
    """``INNER`` / ``POINT`` / ``RANGE`` over the series' shared SWAT tree (fed once per series)."""

    def _answer(self) -> SummaryAnswer:
        s, tree = self.statement, self.tree
        assert tree is not None
        available = min(tree.count, s.window_points)
        if s.kind == "range":
            assert s.span is not None and s.value is not None and s.radius is not None
            lo, hi = s.span
            if lo >= available:
                return SummaryAnswer(s.name, math.nan, None, self.points)
            r = tree.range_query(s.value, s.radius, lo, min(hi, available - 1))  # inclusive
            certain, possible = tuple(map(int, r.certain)), tuple(map(int, r.possible))
            value = float(len(r.matches))
            return SummaryAnswer(s.name, value, None, self.points, certain, possible)
        indices = [s.position] if s.kind == "point" else list(s.indices)
        weights = [1.0] if s.kind == "point" else list(s.weights)
        if max(indices) >= available:  # not that many values yet
            return SummaryAnswer(s.name, math.nan, None, self.points)
        r = tree.inner_product(indices, weights, s.within)
        met = None if s.within is None else bool(r.satisfied)
        return SummaryAnswer(
            s.name, float(r.value), float(r.bound), self.points, (), (), 0, met, r.lower, r.upper
        )


class _Approx(_Summary):
    """``APPROX COUNT(x op c)`` (BasicCounting) or ``APPROX SUM(x)`` (integers in ``[0, R]``)
    over an exponential histogram of the last N points."""

    def __init__(self, statement: ApproxDef, tree: SWAT | None) -> None:
        super().__init__(statement, tree)
        s = statement
        if s.kind == "count":
            self.hist: Any = BasicCounting(s.window_points, s.eps)
        else:
            assert s.max_value is not None
            self.hist = WindowSum(s.window_points, s.eps, s.max_value)

    def feed(self, values: np.ndarray) -> None:
        super().feed(values)
        s = self.statement
        if s.kind == "count":
            assert s.op is not None
            for bit in COMPARISONS[s.op](values, np.full(len(values), s.threshold)):
                self.hist.update(int(bit))
            return
        ok = (values >= 0) & (values <= s.max_value) & (values == np.round(values))
        self.ignored += int((~ok).sum())
        for v in values[ok]:
            self.hist.update(int(v))

    def _answer(self) -> SummaryAnswer:
        value = float(self.hist.get())
        bound = float(self.hist.error())  # Fact 1: the exact count is within value ± bound
        lower, upper = value - bound, value + bound
        met = bound <= self.statement.eps * lower
        name, n = self.statement.name, self.points
        return SummaryAnswer(name, value, bound, n, (), (), self.ignored, met, lower, upper)


class _Correlated(_Summary):
    """``COUNT|SUM(x op AVG|c·MIN|c·MAX)``, checked online (:mod:`tsmon.core.correlated_check`)."""

    def __init__(self, statement: CorrelatedDef, tree: SWAT | None) -> None:
        super().__init__(statement, tree)
        s = statement
        query = CorrelatedQuery(s.independent, s.dependent, s.eps)
        self.hist = CheckedAggregate(query, window=s.window_points)

    def feed(self, values: np.ndarray) -> None:
        super().feed(values)
        if self.statement.independent in ("min", "max"):
            ok = values >= 0  # MIN/MAX predicates are relative: values must be >= 0
            self.ignored += int((~ok).sum())
            values = values[ok]
        for v in values:
            self.hist.update(float(v))

    def _answer(self) -> SummaryAnswer:
        value = float(self.hist.get())
        return SummaryAnswer(self.statement.name, value, None, self.points, ignored=self.ignored)


#: The summary of each statement family.
_FAMILIES: dict[type, type[_Summary]] = {
    WaveletDef: _Wavelet,
    ApproxDef: _Approx,
    CorrelatedDef: _Correlated,
}


class SummaryQueries:
    """The summary queries of one Monitor.

    Examples
    --------
    >>> from tsmon.query import parse_query
    >>> sq = SummaryQueries()
    >>> sq.add(parse_query("QUERY e AS APPROX COUNT(err.n > 0) OVER 100 points WITHIN 10%"))
    >>> sq.feed("err.n", np.array([0.0, 1.0, 2.0, 0.0, 3.0]))
    >>> sq.answers()["e"].value
    3.0
    """

    def __init__(self) -> None:
        self.statements: dict[str, _Summary] = {}  # by query key
        self.trees: dict[tuple[str, int], SWAT] = {}  # (series, N) -> shared SWAT tree

    def defines(self, name: str) -> bool:
        return query_key(name) in self.statements

    def names(self) -> list[str]:
        return [q.statement.name for q in self.statements.values()]

    def texts(self) -> dict[str, str]:
        return {q.statement.name: q.statement.text for q in self.statements.values()}

    def add(self, statement: SummaryDef) -> None:
        family = _FAMILIES[type(statement)]
        tree = None
        if family is _Wavelet:  # queries over the same series and N share one tree
            key = (statement.series, statement.window_points)
            tree = self.trees.setdefault(key, SWAT(window=statement.window_points))
        self.statements[query_key(statement.name)] = family(statement, tree)

    def remove(self, name: str) -> None:
        gone = self.statements.pop(query_key(name))
        if gone.tree is not None and not any(q.tree is gone.tree for q in self.statements.values()):
            s = gone.statement
            del self.trees[(s.series, s.window_points)]  # type: ignore[union-attr]

    def tracks(self, series: str) -> bool:
        return any(q.statement.series == series for q in self.statements.values())

    def feed(self, series: str, values: np.ndarray) -> None:
        """In-order values of ``series``."""
        values = np.asarray(values, dtype=float)
        for (name, _), tree in self.trees.items():
            if name == series:
                tree.extend(values)
        for q in self.statements.values():
            if q.statement.series == series:
                q.feed(values)

    def answers(self) -> dict[str, SummaryAnswer]:
        """Every summary query's answer from the current summaries."""
        return {q.statement.name: q.answer() for q in self.statements.values()}
