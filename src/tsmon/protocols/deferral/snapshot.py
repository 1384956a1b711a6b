"""What a :class:`~tsmon.protocols.deferral.partition.QueryPartition` is fed and gives back:
the stream snapshot of a tick (§4.5, Eq. 13), evaluations (Eq. 8) and its work counters (§5,
Eq. 18)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from tsmon.protocols.deferral.model import NO_TS

__all__ = ["Answer", "Counters", "StreamSnapshot"]


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


@dataclass(frozen=True)
class StreamSnapshot:
    """Every stream at a tick, as evaluation needs it: arrays indexed by stream id.

    ``value`` is ``Ŝ_i(now)``: the latest value of a live stream, the Eq. 13 extrapolation of
    an interrupted one; ``nan`` before a stream's first item. ``sigma`` is ``nan`` while a
    stream's parameters are unknown (fewer than 3 items), which makes queries over it due.
    ``period`` is a stream's sampling interval (mean over its buffered items; ``nan`` unknown).
    """

    now_ms: int
    value: NDArray[np.float64]
    mu: NDArray[np.float64]
    sigma: NDArray[np.float64]
    last_ts: NDArray[np.int64]
    interrupted: NDArray[np.bool_]
    period: NDArray[np.float64]

    def fitted(self, n: int) -> StreamSnapshot:
        """The snapshot over ids ``0 .. n−1``: streams it lacks are unknown, never interrupted;
        streams beyond are left out."""
        have = len(self.value)
        arrays = (self.value, self.mu, self.sigma, self.last_ts, self.interrupted, self.period)
        if have >= n:
            return StreamSnapshot(self.now_ms, *(a[:n] for a in arrays))

        def pad(a: NDArray, fill: object) -> NDArray:
            return np.concatenate([a, np.full(n - have, fill, dtype=a.dtype)])

        return StreamSnapshot(
            self.now_ms,
            pad(self.value, np.nan),
            pad(self.mu, 0.0),
            pad(self.sigma, np.nan),
            pad(self.last_ts, NO_TS),
            pad(self.interrupted, False),
            pad(self.period, np.nan),
        )
