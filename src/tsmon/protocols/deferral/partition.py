"""``QueryPartition``: the query side of deferred evaluation, fed stream snapshots (§4, §5).

A partition holds standing queries and evaluates them against a :class:`StreamSnapshot`, the
state of every stream at a tick (its value ``Ŝ_i``, Eq. 13; ``μ_i``, ``σ_i``; last timestamp;
interruption flag). It does not see items: estimating the streams is someone else's job
(:class:`~tsmon.protocols.deferral.engine.DeferralEngine` in one process; source nodes and
the coordinator when a runtime splits a million queries into partitions hosted apart).

Each :meth:`QueryPartition.run` records window samples of MAX/MIN queries; releases the
evaluation task of every query whose deadline falls before the next tick; runs the scheduler
with the tick's budget (EDF, Eq. 18 under overload); evaluates the completed tasks, all linear
ones in one sparse product, and sets their next deadlines (Eq. 7, 11; ``T`` if interrupted,
Algorithm 1). A query over a stream whose interruption starts or ends at a tick is due at that
tick, so its answer carries the interruption (``A_approx``, ``ε_intr``) from the tick the
silence is detected, and the exact value again from the tick the stream resumes.

A linear query is next due at the first tick after Eq. 7's ``Δt``, so every tick's answer is
within ε with probability at least ``p``; ``Δt`` is capped at ``max_dt_periods`` sampling
intervals of the query's fastest stream and at ``max_dt_ms`` (:mod:`.deadlines`). The weights
``a_i`` of all queries are one sparse matrix (:mod:`.weights`).

Per-query state lives in NumPy arrays indexed by row (registration order), so a tick costs one
vectorised deadline comparison over all queries plus work proportional to the *due* queries:
Eq. 6 and Eq. 7 run on the rows of the sparse weight matrix sliced to the due rows.
MAX/MIN queries over a sliding window need ``A(τ)`` across the window (§4.3 scans it): the
partition records ``A`` of those queries every tick, one sparse product for all of them;
recording is the data path, and only the deferred scan-and-answer counts as an evaluation.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from tsmon.protocols.deferral.deadlines import JumpTest, interval_caps, tick_interval
from tsmon.protocols.deferral.deferral import StandingQuery, next_interval, relative_eps
from tsmon.protocols.deferral.extrema import LandmarkExtrema, WindowSeries, evaluate_extremum
from tsmon.protocols.deferral.interrupt import interruption_error
from tsmon.protocols.deferral.model import aggregate_params
from tsmon.protocols.deferral.schedule import EdfScheduler
from tsmon.protocols.deferral.snapshot import Answer, Counters, StreamSnapshot
from tsmon.protocols.deferral.weights import QueryWeights

__all__ = ["DEFAULT_MAX_DT_PERIODS", "DEFAULT_WAIT_TICKS", "QueryPartition"]


DEFAULT_WAIT_TICKS = 10
"""Default anti-starvation limit: a task late by more than this many ticks runs first."""

DEFAULT_MAX_DT_PERIODS = 100.0
"""Default cap on ``Δt``, in sampling intervals of a query's fastest stream."""


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


class QueryPartition:
    """Standing queries evaluated only when due, against the stream snapshot of each tick.

    Parameters
    ----------
    tick_ms : int
        Spacing of ticks. A query's task is released when its deadline is before the next
        tick; stream values change only at ticks, so deadlines are at least one tick on.
    budget : float
        Cost units of evaluation per tick (``inf``: no CPU limit). Tasks run in a tick complete
        at the tick's time; tasks left over wait for the next tick and are then late.
    max_dt_ms : float
        Cap on any interval between evaluations, ms (``inf``: none).
    max_dt_periods : float
        Cap on a query's interval in sampling intervals of its fastest stream (``inf``: none).
        The smaller cap applies; with neither, a query whose model says "never due"
        (``σ = μ = 0``) is not evaluated again.
    t_interrupt_ms : int
        ``T`` of Algorithm 1: re-evaluation interval of a query over an interrupted stream.
    combine : {"linear", "rss"}
        How ``ε_intr`` adds up the interrupted streams' errors (§4.5).
    max_wait_ms : float, optional
        Anti-starvation limit (default ``DEFAULT_WAIT_TICKS · tick_ms``; ``inf``: off, the
        paper's pure order). A task late by more than this runs before the on-time EDF set, so
        under sustained overload every query is still answered, at the price of more misses.
    jump_z : float, optional
        Jump test (not in the paper, :mod:`.deadlines`): a query whose aggregate moved by more
        than its ε through streams' jumps of more than ``jump_z`` ``σ√δ`` at a tick is due at
        that tick. ``None`` (default): deadlines only, as in the paper.

    Examples
    --------
    >>> part = QueryPartition(tick_ms=1, max_dt_ms=1_000)
    >>> part.add_query(StandingQuery("avg", {0: 0.5, 1: 0.5}, eps=1.0, p=0.9))
    >>> snap = StreamSnapshot(0, np.array([10.0, 20.0]), np.zeros(2), np.array([0.1, 0.1]),
    ...                       np.zeros(2, np.int64), np.zeros(2, bool), np.ones(2))
    >>> [(a.name, a.value) for a in part.run(snap)]
    [('avg', 15.0)]
    >>> round(part.next_due_ms("avg"), 1)            # (1 / (0.1 · √0.5 · z_0.95))² ms
    73.9
    """

    def __init__(
        self,
        *,
        tick_ms: int = 1,
        budget: float = np.inf,
        max_dt_ms: float = np.inf,
        max_dt_periods: float = DEFAULT_MAX_DT_PERIODS,
        t_interrupt_ms: int = 1_000,
        combine: Literal["linear", "rss"] = "linear",
        max_wait_ms: float | None = None,
        jump_z: float | None = None,
    ) -> None:
        if tick_ms <= 0 or budget <= 0:
            raise ValueError(f"tick_ms and budget must be > 0, got {tick_ms} ms, {budget} units")
        if not (max_dt_ms > 0 and max_dt_periods > 0):
            raise ValueError(
                f"max_dt_ms and max_dt_periods must be > 0 (inf: no cap), got {max_dt_ms} ms, "
                f"{max_dt_periods} sampling intervals"
            )
        self.tick_ms, self.budget, self.max_dt_ms = tick_ms, budget, max_dt_ms
        self.max_dt_periods = max_dt_periods
        if jump_z is not None and not jump_z >= 0:
            raise ValueError(f"jump_z must be >= 0 (a z-score) or None, got {jump_z}")
        self._jump_test = None if jump_z is None else JumpTest(jump_z)
        self.t_interrupt_ms, self.combine = t_interrupt_ms, combine
        # Evaluations in a tick complete "at" the tick (data time); the budget bounds how many.
        wait = DEFAULT_WAIT_TICKS * tick_ms if max_wait_ms is None else max_wait_ms
        self.scheduler = EdfScheduler(ms_per_unit=0.0, max_wait_ms=wait)
        self.series, self.landmarks = WindowSeries(), LandmarkExtrema()
        self.counters = Counters()
        self.now_ms: int | None = None
        self.n_streams = 0  # stream ids 0 .. n_streams − 1 appear in some query
        self._names: dict[str, int] | None = {}  # see _by_name
        # Compact state (a host may pickle the partition every batch): names by row, the
        # specs of MAX/MIN queries only, and the weights without their derived matrices.
        self._row_names: list[str] = []  # by row
        self._extrema: dict[int, StandingQuery] = {}  # qid -> spec, MAX/MIN queries
        self.weights = QueryWeights()  # a_i, one row per query (Eq. 2)
        self._n = 0
        self._cap = 0
        self._a: dict[str, np.ndarray] = {f: np.empty(0, dtype=t) for f, t in _FIELDS.items()}
        self._row_of = np.empty(0, dtype=np.int64)  # qid -> row (-1: removed)
        self._next_qid = 0
        self._ext: tuple[np.ndarray, np.ndarray] | None = None  # sliding, landmark rows
        self._interrupted = np.zeros(0, dtype=bool)  # by stream, at the last tick

    def __getstate__(self) -> dict[str, object]:
        """Compact for a host that stores the partition every batch: without ``|a_i|`` and
        ``a_i²`` (derived again) and with the names as one string, not a dict and a list."""
        state = dict(self.__dict__)
        state["_names"] = None  # rebuilt from the rows' names and qids when needed
        state["_row_names"] = "\x00".join(self._row_names)
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        joined = state["_row_names"]
        self._row_names = joined.split("\x00") if joined else []  # type: ignore[union-attr]

    @property
    def _by_name(self) -> dict[str, int]:
        """Query name -> qid, in registration (= row) order (rebuilt after unpickling)."""
        if self._names is None:
            qids = self._a["qid"][: self._n].tolist()
            self._names = dict(zip(self._row_names, qids, strict=True))
        return self._names

    def __repr__(self) -> str:
        return f"{type(self).__name__}(queries={self._n}, counters={self.counters})"

    @property
    def query_names(self) -> list[str]:
        return list(self._row_names)

    def _col(self, f: str) -> np.ndarray:
        return self._a[f][: self._n]

    def next_due_ms(self, name: str) -> float:
        """Deadline of the next evaluation of query ``name``."""
        return float(self._a["deadline"][self._row_of[self._by_name[name]]])

    def add_query(self, query: StandingQuery) -> None:
        """Register a standing query; it is evaluated at the next tick."""
        if query.name in self._by_name:
            raise ValueError(f"query {query.name!r} exists; remove it first or pick a new name")
        self.n_streams = max(self.n_streams, max(query.weights) + 1)
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
        self._by_name[query.name] = qid
        self._row_names.append(query.name)
        if query.kind != "linear":
            self._extrema[qid] = query
        self.weights.append(query.weights)
        if not vals["linear"]:
            self._ext = None

    def remove_query(self, name: str) -> None:
        """Drop a standing query and any evaluation of it still pending."""
        qid = self._by_name.pop(name)  # KeyError names the unknown query
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
        del self._row_names[r]
        self._extrema.pop(qid, None)
        self.weights.remove(r)
        if sliding or landmark:
            same = self._col("sliding") if sliding else self._col("landmark")
            self._a["aux"][: self._n][same & (self._col("aux") > aux)] -= 1
            if sliding:
                self.series.remove_row(aux)
            else:
                self.landmarks.remove(aux)
        self._ext = None  # rows after r moved

    def _extrema_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """Rows of the sliding and landmark queries, each ordered by their ``aux`` row."""
        if self._ext is None:
            aux = self._col("aux")
            sl, lm = np.flatnonzero(self._col("sliding")), np.flatnonzero(self._col("landmark"))
            self._ext = (sl[np.argsort(aux[sl])], lm[np.argsort(aux[lm])])
        return self._ext

    def run(self, snapshot: StreamSnapshot) -> list[Answer]:
        """Evaluate the queries due at ``snapshot.now_ms``; return their answers.

        Per-query work is O(due queries) plus a few vectorised passes over the deadline array.
        """
        now_ms = int(snapshot.now_ms)
        if self.now_ms is not None and now_ms <= self.now_ms:
            raise ValueError(f"ticks must move forward: got {now_ms} ms after {self.now_ms} ms")
        snap = snapshot.fitted(self.n_streams)
        self.now_ms = now_ms
        self.counters.ticks += 1
        w = self.weights.matrix(self.n_streams)
        self._record_windows(w, snap.value, now_ms)
        deadline, pending = self._col("deadline"), self._col("pending")
        deadline[deadline == -np.inf] = float(now_ms)  # a new query is due now
        self._on_interruptions(w, snap.interrupted, now_ms)
        if self._jump_test is not None:
            self._on_jumps(snap, now_ms)
        due = np.flatnonzero((deadline < now_ms + self.tick_ms) & ~pending)
        if len(due):
            mu_a = sigma_a = 0.0  # only late tasks need them (Eq. 18): never with no budget
            if np.isfinite(self.budget):
                mu_a, sigma_a = aggregate_params(
                    w[due], snap.mu, snap.sigma, squared=self.weights.squared[due]
                )
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
        return self._evaluate(rows, done.late, w, snap)

    def _on_interruptions(
        self, w: sp.csr_array, interrupted: NDArray[np.bool_], now_ms: int
    ) -> None:
        """Queries over a stream whose interruption starts or ends now are due now: the
        answer says so at the tick the silence is detected (not at the query's deadline, up to
        ``max_dt`` later), and is exact again at the tick the stream resumes (not ``T`` later).
        """
        before = np.zeros(len(interrupted), dtype=bool)
        n = min(len(before), len(self._interrupted))
        before[:n] = self._interrupted[:n]
        self._interrupted = interrupted.copy()
        changed = before != interrupted
        if changed.any() and self.weights.absolute is not None:
            rows = np.flatnonzero(
                np.asarray(self.weights.absolute @ changed.astype(np.float64)) > 0
            )
            deadline = self._col("deadline")
            deadline[rows] = np.minimum(deadline[rows], float(now_ms))

    def _on_jumps(self, snap: StreamSnapshot, now_ms: int) -> None:
        """Queries whose aggregate jumped by more than ε at this tick are due now (relative
        bounds are not tested)."""
        limit = np.where(self._col("relative"), np.inf, self._col("eps"))
        rows = self._jump_test.rows(snap, self.weights, limit)  # type: ignore[union-attr]
        deadline = self._col("deadline")
        deadline[rows] = np.minimum(deadline[rows], float(now_ms))

    def _record_windows(self, w: sp.csr_array, s_hat: np.ndarray, now_ms: int) -> None:
        sliding, landmark = self._extrema_rows()
        if len(sliding):
            self.series.record(now_ms, w[sliding] @ s_hat)
        if len(landmark):
            self.landmarks.record(now_ms, w[landmark] @ s_hat)

    def _evaluate(
        self,
        rows: np.ndarray,
        late: np.ndarray,
        w: sp.csr_array,
        snap: StreamSnapshot,
    ) -> list[Answer]:
        if len(rows) == 0:
            return []
        now_ms, intr = snap.now_ms, snap.interrupted
        wr = w[rows]
        p = self._col("p")[rows]
        value = np.asarray(wr @ snap.value, dtype=np.float64)  # Eq. 2 (Eq. 13 if interrupted)
        mu_a, sigma_a = aggregate_params(
            wr, snap.mu, snap.sigma, squared=self.weights.squared[rows]
        )  # Eq. 6
        q_intr = np.zeros(len(rows), dtype=bool)
        eps_intr = np.zeros(len(rows))
        if intr.any():
            q_intr = np.asarray(self.weights.absolute[rows] @ intr.astype(np.float64)) > 0
            eps_intr = interruption_error(
                wr, snap.sigma, snap.last_ts, intr, now_ms, p, combine=self.combine
            )
        dt = np.empty(len(rows))
        cap = interval_caps(wr, snap.period, self.max_dt_ms, self.max_dt_periods)
        eps = self._col("eps")[rows].copy()
        lin = self._col("linear")[rows]
        for j in np.flatnonzero(~lin).tolist():
            r = int(rows[j])
            spec, aux = self._extrema[int(self._a["qid"][r])], int(self._a["aux"][r])
            value[j], dt[j], eps[j] = evaluate_extremum(
                spec, aux, self.series, self.landmarks, now_ms, mu_a[j], sigma_a[j], cap[j]
            )
        if lin.any():
            rel = self._col("relative")[rows]
            eps = np.where(lin & rel, relative_eps(value, eps), eps)  # Eq. 9
            drift = np.where(self._col("extrapolate")[rows], 0.0, mu_a)  # Eq. 8: μ_A = 0
            eq7 = next_interval(drift[lin], sigma_a[lin], eps[lin], p[lin])  # Eq. 7
            dt[lin] = np.minimum(tick_interval(eq7, self.tick_ms), cap[lin])  # §4.4: 1st tick after
        dt = np.where(q_intr, self.t_interrupt_ms, dt)  # Algorithm 1, interrupted branch
        # A cannot change before the next tick, so no deadline is earlier than it.
        due = now_ms + np.maximum(dt, self.tick_ms)
        self._a["deadline"][rows] = due
        cols = zip(value.tolist(), mu_a.tolist(), eps.tolist(), q_intr.tolist(),
                   eps_intr.tolist(), due.tolist(), late.tolist(), strict=True)  # fmt: skip
        names = self._row_names
        answers = [Answer(names[r], now_ms, *c) for r, c in zip(rows.tolist(), cols, strict=True)]
        self.counters.evaluations += len(rows)
        self.counters.interrupted_answers += int(q_intr.sum())
        return answers
