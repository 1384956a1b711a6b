"""``DeferralEngine``: standing queries over DBM streams, evaluated only when due (§4, §5).

Each ``tick(now_ms, ...)`` runs, in order: buffer the tick's items; detect interrupted streams;
re-estimate due streams (Algorithm 2); record window samples of MAX/MIN queries; release the
evaluation task of every query whose deadline falls before the next tick; run the scheduler with
the tick's budget (EDF, Eq. 18 under overload); evaluate the completed tasks, all linear ones in
one sparse product, and set their next deadlines (Eq. 7, 11; ``T`` if interrupted, Algorithm 1).

Interrupted streams enter every aggregate as ``Ŝ_i`` (Eq. 13). MAX/MIN queries over a sliding
window need ``A(τ)`` across the window (§4.3 scans it): the engine records ``A`` of those
queries every tick, one sparse product for all of them; recording is the data path, and only
the deferred scan-and-answer counts as an evaluation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

from tsmon.protocols.deferral.deferral import StandingQuery, next_interval, relative_eps
from tsmon.protocols.deferral.extrema import LandmarkExtrema, WindowSeries, sliding_extremum
from tsmon.protocols.deferral.interrupt import (
    InterruptMonitor,
    approximate_values,
    interruption_error,
)
from tsmon.protocols.deferral.model import StreamModels, aggregate_params
from tsmon.protocols.deferral.schedule import EdfScheduler


@dataclass(frozen=True)
class Answer:
    """One evaluation: ``value`` at ``ts_ms`` with drift ``mu_a`` (Eq. 8) and bound ``eps``.

    If ``interrupted``, ``value`` is ``A_approx`` (Eq. 13) with expected error ``eps_intr``.
    ``late`` says the evaluation missed its deadline.
    """

    name: str
    ts_ms: int
    value: float
    mu_a: float
    eps: float
    interrupted: bool
    eps_intr: float
    next_due_ms: float
    late: bool


@dataclass
class Counters:
    """Work done so far: every evaluation, missed deadline and Eq. 18 penalty is counted."""

    evaluations: int = 0
    missed_deadlines: int = 0
    penalty: float = 0.0
    estimations: int = 0
    interrupted_answers: int = 0
    ticks: int = 0


@dataclass
class _Query:
    spec: StandingQuery
    qid: int
    deadline_ms: float
    row: int = -1  # row in the window series or landmark state


class DeferralEngine:
    """Standing queries over many streams, each evaluated only when its model says it is due.

    Parameters
    ----------
    tick_ms : int
        Spacing of ``tick`` calls. A query's task is released when its deadline is before the
        next tick; stream values change only at ticks, so deadlines are at least one tick on.
    budget : float
        Cost units of evaluation per tick (``inf``: no CPU limit). Tasks run in a tick complete
        at the tick's time; tasks left over wait for the next tick and are then late.
    max_dt_ms : float
        Cap on any interval between evaluations (also used when a query is never due).
    t_interrupt_ms : int
        ``T`` of Algorithms 1-2: re-evaluation interval while a stream is interrupted.
    interrupt_factor : float
        Silence longer than this many expected periods marks a stream interrupted.
    models : StreamModels, optional
        Stream models to use (default ``StreamModels(k, t_max_ms=max_dt_ms, ...)``).

    Examples
    --------
    >>> eng = DeferralEngine(tick_ms=1, max_dt_ms=1_000)
    >>> eng.models.fix([0, 1], mu=[0.0, 0.0], sigma=[0.1, 0.1])
    >>> eng.add_query(StandingQuery("avg", {0: 0.5, 1: 0.5}, eps=1.0, p=0.9))
    >>> [a.value for a in eng.tick(0, [0, 1], [0, 0], [10.0, 20.0])]
    [15.0]
    >>> eng.tick(1, [0, 1], [1, 1], [10.1, 20.1]), eng.counters.evaluations  # deferred
    ([], 1)
    >>> round(eng.next_due_ms("avg"), 1)            # (1 / (0.1 · √0.5 · z_0.95))² ms
    73.9
    >>> eng.remove_query("avg"); eng.query_names
    []
    """

    def __init__(
        self,
        *,
        k: int = 100,
        tick_ms: int = 1,
        budget: float = np.inf,
        max_dt_ms: float = 60_000,
        t_interrupt_ms: int = 1_000,
        interrupt_factor: float = 3.0,
        combine: Literal["linear", "rss"] = "linear",
        models: StreamModels | None = None,
    ) -> None:
        if tick_ms <= 0 or budget <= 0:
            raise ValueError(f"tick_ms and budget must be > 0, got {tick_ms} ms, {budget} units")
        self.tick_ms, self.budget, self.max_dt_ms = tick_ms, budget, max_dt_ms
        self.t_interrupt_ms, self.combine = t_interrupt_ms, combine
        self.models = models or StreamModels(
            k, t_max_ms=int(min(max_dt_ms, 2**62)), t_interrupt_ms=t_interrupt_ms
        )
        self.monitor = InterruptMonitor(interrupt_factor)
        # Evaluations in a tick complete "at" the tick (data time); the budget bounds how many.
        self.scheduler = EdfScheduler(ms_per_unit=0.0)
        self.series, self.landmarks = WindowSeries(), LandmarkExtrema()
        self.counters = Counters()
        self.now_ms: int | None = None
        self._queries: dict[str, _Query] = {}
        self._next_qid = 0
        self._w: sp.csr_array | None = None  # weights a_i, one row per query
        self._w2: sp.csr_array | None = None  # a_i², cached for Eq. 6
        self._wabs: sp.csr_array | None = None  # |a_i|, for ε_intr and "touches" tests

    def __repr__(self) -> str:
        return f"DeferralEngine(queries={len(self._queries)}, counters={self.counters})"

    @property
    def query_names(self) -> list[str]:
        return list(self._queries)

    def next_due_ms(self, name: str) -> float:
        """Deadline of the next evaluation of query ``name``."""
        return self._queries[name].deadline_ms

    def add_query(self, query: StandingQuery) -> None:
        """Register a standing query; it is evaluated at the next tick."""
        if query.name in self._queries:
            raise ValueError(f"query {query.name!r} exists; remove it first or pick a new name")
        self.models.ensure(max(query.weights) + 1)
        q = _Query(query, self._next_qid, -np.inf)
        self._next_qid += 1
        if query.window_ms is not None:
            q.row = self.series.add_row(query.window_ms)
        elif query.landmark_ms is not None:
            q.row = self.landmarks.add(query.landmark_ms, query.kind)
        self._queries[query.name] = q
        self._w = None

    def remove_query(self, name: str) -> None:
        """Drop a standing query and any evaluation of it still pending."""
        q = self._queries.pop(name)  # KeyError names the unknown query
        self.scheduler.cancel([q.qid])
        for other in self._queries.values():
            same = (other.spec.window_ms is None) == (q.spec.window_ms is None)
            if q.row >= 0 and other.spec.kind != "linear" and same and other.row > q.row:
                other.row -= 1
        if q.spec.window_ms is not None:
            self.series.remove_row(q.row)
        elif q.spec.landmark_ms is not None:
            self.landmarks.remove(q.row)
        self._w = None

    def _weights(self) -> sp.csr_array:
        n = self.models.n_streams
        if self._w is None or self._w.shape[1] != n:
            rows, cols, vals = [], [], []
            for r, q in enumerate(self._queries.values()):
                rows += [r] * len(q.spec.weights)
                cols += list(q.spec.weights)
                vals += list(q.spec.weights.values())
            self._w = sp.csr_array((vals, (rows, cols)), shape=(len(self._queries), n))
            self._w.eliminate_zeros()
            self._w2, self._wabs = self._w.multiply(self._w).tocsr(), abs(self._w)
        return self._w

    def tick(
        self, now_ms: int, stream_ids: ArrayLike = (), ts_ms: ArrayLike = (), values: ArrayLike = ()
    ) -> list[Answer]:
        """Feed this tick's items and return the answers of the evaluations run at ``now_ms``."""
        if self.now_ms is not None and now_ms <= self.now_ms:
            raise ValueError(f"ticks must move forward: got {now_ms} ms after {self.now_ms} ms")
        m = self.models
        m.observe(stream_ids, ts_ms, values)
        self.now_ms = now_ms
        self.counters.ticks += 1
        w = self._weights()
        intr, _, _ = self.monitor.update(now_ms, m.last_ts, m.period_ms())
        self.counters.estimations += len(m.reestimate(now_ms, intr))
        s_hat = approximate_values(m.value, m.last_ts, m.mu, intr, now_ms)  # Eq. 13
        queries = list(self._queries.values())
        self._record_windows(queries, w, s_hat, now_ms)
        for q in queries:
            if q.deadline_ms == -np.inf:  # a new query is due now
                q.deadline_ms = float(now_ms)
        due = [
            r
            for r, q in enumerate(queries)
            if q.deadline_ms < now_ms + self.tick_ms and not self.scheduler.pending(q.qid)
        ]
        if due:
            mu_a = sigma_a = 0.0  # only late tasks need them (Eq. 18): never with no budget
            if np.isfinite(self.budget):
                mu_a, sigma_a = aggregate_params(w[due], m.mu, m.sigma, squared=self._w2[due])
            self.scheduler.submit(
                [queries[r].qid for r in due],
                [queries[r].deadline_ms for r in due],
                [queries[r].spec.cost for r in due],
                mu_a,
                sigma_a,
            )
        done = self.scheduler.run(now_ms, self.budget)
        by_qid = {q.qid: r for r, q in enumerate(queries)}
        rows = np.array([by_qid[k] for k in done.keys.tolist()], dtype=np.int64)
        self.counters.missed_deadlines = self.scheduler.n_missed  # counted once per task
        self.counters.penalty = self.scheduler.total_penalty
        return self._evaluate(queries, rows, done.late, w, s_hat, intr, now_ms)

    def _record_windows(
        self, queries: list[_Query], w: sp.csr_array, s_hat: np.ndarray, now_ms: int
    ) -> None:
        sliding = [r for r, q in enumerate(queries) if q.spec.window_ms is not None]
        landmark = [r for r, q in enumerate(queries) if q.spec.landmark_ms is not None]
        if sliding:
            order = np.argsort([queries[r].row for r in sliding])
            self.series.record(now_ms, w[np.array(sliding)[order]] @ s_hat)
        if landmark:
            order = np.argsort([queries[r].row for r in landmark])
            self.landmarks.record(now_ms, w[np.array(landmark)[order]] @ s_hat)

    def _extremum(
        self, q: _Query, now_ms: int, mu_a: float, sigma_a: float
    ) -> tuple[float, float, float]:
        """``(value, Δt, ε)`` of a MAX/MIN query (Theorem 1; Eq. 9 on the extremum)."""
        s = q.spec
        if s.window_ms is not None:
            ts, a = self.series.view(q.row, now_ms)
            if not np.isfinite(a).any():  # no stream value yet: try again next tick
                return np.nan, 0.0, s.eps
            m = np.nanmax(a) if s.kind == "max" else np.nanmin(a)
            e = float(relative_eps(m, s.eps)) if s.relative else s.eps
            ans = sliding_extremum(
                ts, a, now_ms, s.window_ms, e, s.p, mu_a, sigma_a, kind=s.kind,
                max_dt=self.max_dt_ms,
            )  # fmt: skip
            return ans.value, ans.dt_ms, e
        m = float(self.landmarks.value[q.row])
        e = float(relative_eps(m, s.eps)) if s.relative else s.eps
        dt = self.landmarks.interval([q.row], e, s.p, mu_a, sigma_a, max_dt=self.max_dt_ms)
        return m, float(dt[0]), e  # Eq. 11-12: φ₂ alone

    def _evaluate(
        self,
        queries: list[_Query],
        rows: np.ndarray,
        late: np.ndarray,
        w: sp.csr_array,
        s_hat: np.ndarray,
        intr: np.ndarray,
        now_ms: int,
    ) -> list[Answer]:
        if len(rows) == 0:
            return []
        m = self.models
        wr = w[rows]
        specs = [queries[r].spec for r in rows]
        p = np.array([s.p for s in specs])
        value = np.asarray(wr @ s_hat, dtype=np.float64)  # Eq. 2 (Eq. 13 if interrupted)
        mu_a, sigma_a = aggregate_params(wr, m.mu, m.sigma, squared=self._w2[rows])  # Eq. 6
        q_intr = np.zeros(len(rows), dtype=bool)
        eps_intr = np.zeros(len(rows))
        if intr.any():
            q_intr = np.asarray(self._wabs[rows] @ intr.astype(np.float64)) > 0
            eps_intr = interruption_error(
                wr, m.sigma, m.last_ts, intr, now_ms, p, combine=self.combine
            )
        dt = np.empty(len(rows))
        eps = np.array([s.eps for s in specs])
        for j, r in enumerate(rows):
            if specs[j].kind != "linear":
                value[j], dt[j], eps[j] = self._extremum(queries[r], now_ms, mu_a[j], sigma_a[j])
        lin = np.array([s.kind == "linear" for s in specs])
        if lin.any():
            rel = np.array([s.relative for s in specs])
            eps = np.where(lin & rel, relative_eps(value, eps), eps)  # Eq. 9
            drift = np.where([s.extrapolate for s in specs], 0.0, mu_a)  # Eq. 8: μ_A = 0
            dt[lin] = next_interval(
                drift[lin], sigma_a[lin], eps[lin], p[lin], max_dt=self.max_dt_ms
            )  # Eq. 7
        dt = np.where(q_intr, self.t_interrupt_ms, dt)  # Algorithm 1, interrupted branch
        # A cannot change before the next tick, so no deadline is earlier than it.
        due = now_ms + np.maximum(dt, self.tick_ms)
        for r, d in zip(rows, due.tolist(), strict=True):
            queries[r].deadline_ms = d
        cols = zip(value.tolist(), mu_a.tolist(), eps.tolist(), q_intr.tolist(),
                   eps_intr.tolist(), due.tolist(), late.tolist(), strict=True)  # fmt: skip
        answers = [
            Answer(queries[r].spec.name, now_ms, *c) for r, c in zip(rows, cols, strict=True)
        ]
        self.counters.evaluations += len(rows)
        self.counters.interrupted_answers += int(q_intr.sum())
        return answers
