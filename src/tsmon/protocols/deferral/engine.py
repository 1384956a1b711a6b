"""``DeferralEngine``: standing queries over DBM streams, evaluated only when due (§4, §5).

Each ``tick(now_ms, ...)`` runs, in order: buffer the tick's items; detect interrupted streams;
re-estimate due streams (Algorithm 2); record window samples of MAX/MIN queries; release the
evaluation task of every query whose deadline falls before the next tick; run the scheduler with
the tick's budget (EDF, Eq. 18 under overload); evaluate the completed tasks, all linear ones in
one sparse product, and set their next deadlines (Eq. 7, 11; ``T`` if interrupted, Algorithm 1).

Per-query state lives in NumPy arrays indexed by row (registration order), so a tick costs one
vectorised deadline comparison over all queries plus work proportional to the *due* queries:
Eq. 6 and Eq. 7 run on the rows of the sparse weight matrix sliced to the due rows.

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
    """Work done so far: every evaluation, missed deadline and Eq. 18 penalty is counted.

    ``missed_deadlines`` counts each task once, when its deadline passes unserved or it
    completes late; ``penalty`` is the Eq. 18 penalty charged at completion. A task that waits
    is visible at once: ``late_pending`` tasks are past their deadline now, the oldest by
    ``max_lateness_ms``, and ``accrued_penalty`` is the Eq. 18 penalty they would be charged if
    they completed now (not yet in ``penalty``). ``aged`` counts tasks run ahead of the on-time
    set by the anti-starvation rule (``max_wait_ms``).
    """

    evaluations: int = 0
    missed_deadlines: int = 0
    penalty: float = 0.0
    estimations: int = 0
    interrupted_answers: int = 0
    ticks: int = 0
    late_pending: int = 0
    max_lateness_ms: float = 0.0
    accrued_penalty: float = 0.0
    aged: int = 0


DEFAULT_WAIT_TICKS = 10
"""Default anti-starvation limit: a task late by more than this many ticks runs first."""


_FIELDS = {  # per-query state, one array entry per row (rows in registration order)
    "deadline": np.float64,  # next evaluation time, ms (-inf: new, due at the next tick)
    "qid": np.int64,  # scheduler task key
    "aux": np.int64,  # row in the window series or landmark state (-1: linear)
    "eps": np.float64,
    "p": np.float64,
    "cost": np.float64,
    "linear": np.bool_,
    "sliding": np.bool_,
    "landmark": np.bool_,
    "relative": np.bool_,
    "extrapolate": np.bool_,
    "pending": np.bool_,  # an evaluation task of the query waits in the scheduler
}


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
    max_wait_ms : float, optional
        Anti-starvation limit (default ``DEFAULT_WAIT_TICKS · tick_ms``; ``inf``: off, the
        paper's pure order). A task late by more than this runs before the on-time EDF set, so
        under sustained overload every query is still answered, at the price of more misses.

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
        max_wait_ms: float | None = None,
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
        wait = DEFAULT_WAIT_TICKS * tick_ms if max_wait_ms is None else max_wait_ms
        self.scheduler = EdfScheduler(ms_per_unit=0.0, max_wait_ms=wait)
        self.series, self.landmarks = WindowSeries(), LandmarkExtrema()
        self.counters = Counters()
        self.now_ms: int | None = None
        self._names: dict[str, int] = {}  # name -> qid, in registration (= row) order
        self._specs: list[StandingQuery] = []  # by row
        self._wrows: list[tuple[np.ndarray, np.ndarray]] = []  # (streams, weights) by row
        self._n = 0
        self._cap = 0
        self._a: dict[str, np.ndarray] = {f: np.empty(0, dtype=t) for f, t in _FIELDS.items()}
        self._row_of = np.empty(0, dtype=np.int64)  # qid -> row (-1: removed)
        self._next_qid = 0
        self._w: sp.csr_array | None = None  # weights a_i, one row per query
        self._w2: sp.csr_array | None = None  # a_i², cached for Eq. 6
        self._wabs: sp.csr_array | None = None  # |a_i|, for ε_intr and "touches" tests
        self._n_built = 0  # rows of the queries already in ``_w`` (new rows are appended)
        self._ext: tuple[np.ndarray, np.ndarray] | None = None  # sliding, landmark rows

    def __repr__(self) -> str:
        return f"DeferralEngine(queries={self._n}, counters={self.counters})"

    @property
    def query_names(self) -> list[str]:
        return list(self._names)

    def _col(self, f: str) -> np.ndarray:
        return self._a[f][: self._n]

    def next_due_ms(self, name: str) -> float:
        """Deadline of the next evaluation of query ``name``."""
        return float(self._a["deadline"][self._row_of[self._names[name]]])

    def add_query(self, query: StandingQuery) -> None:
        """Register a standing query; it is evaluated at the next tick."""
        if query.name in self._names:
            raise ValueError(f"query {query.name!r} exists; remove it first or pick a new name")
        self.models.ensure(max(query.weights) + 1)
        if self._n == self._cap:  # amortised growth: registering Q queries is O(Q)
            self._cap = max(16, 2 * self._cap)
            for f, a in self._a.items():
                self._a[f] = np.resize(a, self._cap)
        if self._next_qid == len(self._row_of):
            self._row_of = np.resize(self._row_of, max(16, 2 * len(self._row_of)))
        r, qid = self._n, self._next_qid
        self._next_qid += 1
        aux = -1
        if query.window_ms is not None:
            aux = self.series.add_row(query.window_ms)
        elif query.landmark_ms is not None:
            aux = self.landmarks.add(query.landmark_ms, query.kind)
        vals = dict(
            deadline=-np.inf, qid=qid, aux=aux, eps=query.eps, p=query.p, cost=query.cost,
            linear=query.kind == "linear", sliding=query.window_ms is not None,
            landmark=query.landmark_ms is not None, relative=query.relative,
            extrapolate=query.extrapolate, pending=False,
        )  # fmt: skip
        for f, v in vals.items():
            self._a[f][r] = v
        self._row_of[qid] = r
        self._n += 1
        self._names[query.name] = qid
        self._specs.append(query)
        cols = np.fromiter(query.weights.keys(), dtype=np.int64, count=len(query.weights))
        w = np.fromiter(query.weights.values(), dtype=np.float64, count=len(query.weights))
        self._wrows.append((cols[w != 0], w[w != 0]))
        if not vals["linear"]:
            self._ext = None

    def remove_query(self, name: str) -> None:
        """Drop a standing query and any evaluation of it still pending."""
        qid = self._names.pop(name)  # KeyError names the unknown query
        r = int(self._row_of[qid])
        self.scheduler.cancel([qid])
        n = self._n
        aux = int(self._a["aux"][r])
        sliding, landmark = bool(self._a["sliding"][r]), bool(self._a["landmark"][r])
        for a in self._a.values():  # shift the rows after r down by one
            a[r : n - 1] = a[r + 1 : n]
        self._n = n - 1
        self._row_of[self._a["qid"][r : self._n]] -= 1
        self._row_of[qid] = -1
        del self._specs[r], self._wrows[r]
        if sliding or landmark:
            same = self._col("sliding") if sliding else self._col("landmark")
            self._a["aux"][: self._n][same & (self._col("aux") > aux)] -= 1
            if sliding:
                self.series.remove_row(aux)
            else:
                self.landmarks.remove(aux)
        self._ext = None  # rows after r moved
        if r < self._n_built and self._w is not None:
            keep = np.ones(self._n_built, dtype=bool)
            keep[r] = False
            self._w, self._w2, self._wabs = self._w[keep], self._w2[keep], self._wabs[keep]
            self._n_built -= 1

    def _weights(self) -> sp.csr_array:
        n = self.models.n_streams
        if self._w is None or self._w.shape[1] != n:
            self._w, self._n_built = None, 0
        if self._w is None or self._n_built < self._n:
            new = self._wrows[self._n_built : self._n]
            lens = np.fromiter((len(c) for c, _ in new), dtype=np.int64, count=len(new))
            cols = np.concatenate([c for c, _ in new]) if new else np.empty(0, np.int64)
            vals = np.concatenate([v for _, v in new]) if new else np.empty(0)
            indptr = np.r_[0, np.cumsum(lens)]
            block = sp.csr_array((vals, cols, indptr), shape=(len(new), n))
            block.sum_duplicates()
            w = block if self._w is None else sp.vstack([self._w, block], format="csr")
            self._w = sp.csr_array(w)
            self._w2, self._wabs = self._w.multiply(self._w).tocsr(), abs(self._w)
            self._n_built = self._n
        assert self._w is not None
        return self._w

    def _extrema_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """Rows of the sliding and landmark queries, each ordered by their ``aux`` row."""
        if self._ext is None:
            aux = self._col("aux")
            sl, lm = np.flatnonzero(self._col("sliding")), np.flatnonzero(self._col("landmark"))
            self._ext = (sl[np.argsort(aux[sl])], lm[np.argsort(aux[lm])])
        return self._ext

    def tick(
        self, now_ms: int, stream_ids: ArrayLike = (), ts_ms: ArrayLike = (), values: ArrayLike = ()
    ) -> list[Answer]:
        """Feed this tick's items and return the answers of the evaluations run at ``now_ms``.

        Per-query work is O(due queries) plus a few vectorised passes over the deadline array.
        """
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
        self._record_windows(w, s_hat, now_ms)
        deadline, pending = self._col("deadline"), self._col("pending")
        deadline[deadline == -np.inf] = float(now_ms)  # a new query is due now
        due = np.flatnonzero((deadline < now_ms + self.tick_ms) & ~pending)
        if len(due):
            mu_a = sigma_a = 0.0  # only late tasks need them (Eq. 18): never with no budget
            if np.isfinite(self.budget):
                mu_a, sigma_a = aggregate_params(w[due], m.mu, m.sigma, squared=self._w2[due])
            self.scheduler.submit(
                self._col("qid")[due], deadline[due], self._col("cost")[due], mu_a, sigma_a
            )
            pending[due] = True
        done = self.scheduler.run(now_ms, self.budget)
        rows = self._row_of[done.keys]
        pending[rows] = False
        c, s = self.counters, self.scheduler
        c.missed_deadlines = s.n_missed  # counted once per task
        c.penalty = s.total_penalty
        c.late_pending, c.max_lateness_ms = s.n_overdue(now_ms), s.max_lateness(now_ms)
        c.accrued_penalty = s.pending_penalty(now_ms)
        c.aged = s.n_aged
        return self._evaluate(rows, done.late, w, s_hat, intr, now_ms)

    def _record_windows(self, w: sp.csr_array, s_hat: np.ndarray, now_ms: int) -> None:
        sliding, landmark = self._extrema_rows()
        if len(sliding):
            self.series.record(now_ms, w[sliding] @ s_hat)
        if len(landmark):
            self.landmarks.record(now_ms, w[landmark] @ s_hat)

    def _extremum(
        self, r: int, now_ms: int, mu_a: float, sigma_a: float
    ) -> tuple[float, float, float]:
        """``(value, Δt, ε)`` of a MAX/MIN query (Theorem 1; Eq. 9 on the extremum)."""
        s, row = self._specs[r], int(self._a["aux"][r])
        if s.window_ms is not None:
            ts, a = self.series.view(row, now_ms)
            if not np.isfinite(a).any():  # no stream value yet: try again next tick
                return np.nan, 0.0, s.eps
            m = np.nanmax(a) if s.kind == "max" else np.nanmin(a)
            e = float(relative_eps(m, s.eps)) if s.relative else s.eps
            ans = sliding_extremum(
                ts, a, now_ms, s.window_ms, e, s.p, mu_a, sigma_a, kind=s.kind,
                max_dt=self.max_dt_ms,
            )  # fmt: skip
            return ans.value, ans.dt_ms, e
        m = float(self.landmarks.value[row])
        e = float(relative_eps(m, s.eps)) if s.relative else s.eps
        dt = self.landmarks.interval([row], e, s.p, mu_a, sigma_a, max_dt=self.max_dt_ms)
        return m, float(dt[0]), e  # Eq. 11-12: φ₂ alone

    def _evaluate(
        self,
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
        p = self._col("p")[rows]
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
        eps = self._col("eps")[rows].copy()
        lin = self._col("linear")[rows]
        for j in np.flatnonzero(~lin).tolist():
            value[j], dt[j], eps[j] = self._extremum(int(rows[j]), now_ms, mu_a[j], sigma_a[j])
        if lin.any():
            rel = self._col("relative")[rows]
            eps = np.where(lin & rel, relative_eps(value, eps), eps)  # Eq. 9
            drift = np.where(self._col("extrapolate")[rows], 0.0, mu_a)  # Eq. 8: μ_A = 0
            dt[lin] = next_interval(
                drift[lin], sigma_a[lin], eps[lin], p[lin], max_dt=self.max_dt_ms
            )  # Eq. 7
        dt = np.where(q_intr, self.t_interrupt_ms, dt)  # Algorithm 1, interrupted branch
        # A cannot change before the next tick, so no deadline is earlier than it.
        due = now_ms + np.maximum(dt, self.tick_ms)
        self._a["deadline"][rows] = due
        cols = zip(value.tolist(), mu_a.tolist(), eps.tolist(), q_intr.tolist(),
                   eps_intr.tolist(), due.tolist(), late.tolist(), strict=True)  # fmt: skip
        specs = self._specs
        answers = [
            Answer(specs[r].name, now_ms, *c) for r, c in zip(rows.tolist(), cols, strict=True)
        ]
        self.counters.evaluations += len(rows)
        self.counters.interrupted_answers += int(q_intr.sum())
        return answers
