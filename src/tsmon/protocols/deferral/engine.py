"""``DeferralEngine``: standing queries over DBM streams, evaluated only when due (§4, §5).

A :class:`~tsmon.protocols.deferral.partition.QueryPartition` that also keeps the streams: each
``tick(now_ms, ...)`` buffers the tick's items, detects interrupted streams (§4.5), re-estimates
due streams (Algorithm 2), forms the tick's :class:`StreamSnapshot` (``Ŝ_i`` of Eq. 13) and
evaluates the due queries on it. Runtimes that host queries apart from the streams (Spark's
query partitions) use the same two halves: :class:`~tsmon.protocols.deferral.model.StreamModels`
where the items are, a ``QueryPartition`` where the queries are.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from tsmon.protocols.deferral.deferral import StandingQuery
from tsmon.protocols.deferral.interrupt import InterruptMonitor, approximate_values
from tsmon.protocols.deferral.model import StreamModels
from tsmon.protocols.deferral.partition import (
    DEFAULT_MAX_DT_PERIODS,
    DEFAULT_WAIT_TICKS,
    QueryPartition,
)
from tsmon.protocols.deferral.snapshot import Answer, Counters, StreamSnapshot

__all__ = [
    "DEFAULT_MAX_DT_PERIODS",
    "DEFAULT_WAIT_TICKS",
    "Answer",
    "Counters",
    "DeferralEngine",
    "snapshot_of",
]


def snapshot_of(
    models: StreamModels, monitor: InterruptMonitor, now_ms: int
) -> tuple[StreamSnapshot, int]:
    """The streams at ``now_ms``: interruptions detected (§4.5), due streams re-estimated
    (Algorithm 2, interrupted ones held), ``Ŝ_i`` of Eq. 13; also how many were re-estimated."""
    period = models.period_ms()
    intr, _, _ = monitor.update(now_ms, models.last_ts, period)
    estimated = len(models.reestimate(now_ms, intr))
    s_hat = approximate_values(models.value, models.last_ts, models.mu, intr, now_ms)  # Eq. 13
    snap = StreamSnapshot(
        now_ms, s_hat, models.mu.copy(), models.sigma.copy(), models.last_ts.copy(), intr, period
    )
    return snap, estimated


class DeferralEngine(QueryPartition):
    """Standing queries over many streams, each evaluated only when its model says it is due.

    Parameters are those of :class:`QueryPartition` and:

    k : int
        Items per stream the estimators use (Eq. 15-17).
    t_interrupt_ms : int
        ``T`` of Algorithms 1-2: re-evaluation (and re-estimation) interval while a stream is
        interrupted.
    interrupt_factor : float
        Silence longer than this many expected periods marks a stream interrupted.
    models : StreamModels, optional
        Stream models to use (default ``StreamModels(k)`` re-estimating at least every
        ``max_dt_ms`` and every ``max_dt_periods`` sampling intervals).
    drift_z : float, optional
        The default models' drift test (:class:`StreamModels`); ``None``: the paper's.

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
        max_dt_ms: float = np.inf,
        max_dt_periods: float = DEFAULT_MAX_DT_PERIODS,
        t_interrupt_ms: int = 1_000,
        interrupt_factor: float = 3.0,
        combine: Literal["linear", "rss"] = "linear",
        models: StreamModels | None = None,
        max_wait_ms: float | None = None,
        drift_z: float | None = None,
        jump_z: float | None = None,
    ) -> None:
        super().__init__(
            tick_ms=tick_ms,
            budget=budget,
            max_dt_ms=max_dt_ms,
            max_dt_periods=max_dt_periods,
            t_interrupt_ms=t_interrupt_ms,
            combine=combine,
            max_wait_ms=max_wait_ms,
            jump_z=jump_z,
        )
        self.models = models or StreamModels(
            k,
            t_max_ms=int(min(max_dt_ms, 2**62)),
            t_max_periods=max_dt_periods if np.isfinite(max_dt_periods) else None,
            t_interrupt_ms=t_interrupt_ms,
            drift_z=drift_z,
        )
        self.monitor = InterruptMonitor(interrupt_factor)

    def add_query(self, query: StandingQuery) -> None:
        """Register a standing query; it is evaluated at the next tick."""
        super().add_query(query)
        self.models.ensure(self.n_streams)

    def tick(
        self, now_ms: int, stream_ids: ArrayLike = (), ts_ms: ArrayLike = (), values: ArrayLike = ()
    ) -> list[Answer]:
        """Feed this tick's items and return the answers of the evaluations run at ``now_ms``."""
        if self.now_ms is not None and now_ms <= self.now_ms:
            raise ValueError(f"ticks must move forward: got {now_ms} ms after {self.now_ms} ms")
        self.models.observe(stream_ids, ts_ms, values)
        snap, estimated = snapshot_of(self.models, self.monitor, now_ms)
        self.counters.estimations += estimated
        return self.run(snap)
