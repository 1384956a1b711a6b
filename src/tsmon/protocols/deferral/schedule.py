"""Scheduling evaluation tasks on one processor with a budget per tick (§5, Eq. 18).

Each evaluation task has a deadline ``d_i`` (its query's next evaluation time), a cost (processing
time ``p_i`` in cost units, ``ms_per_unit`` ms each) and the ``μ_A, σ_A`` of its aggregate. Tasks
are preemptible: a task cut off by the end of the budget keeps its remaining cost.

At every ``run(now_ms, budget)``:

0. **Anti-starvation (aging).** Tasks late by more than ``max_wait_ms`` (``d_i < now -
   max_wait_ms``) run first, earliest deadline first. Without this rule (``max_wait_ms = inf``,
   the default here and the paper's order) a late task can wait forever under sustained
   overload, because step 1 always prefers the freshly released on-time tasks. With it, no task
   waits much longer than ``max_wait_ms`` plus the time to drain the aged backlog; the price is
   that on-time tasks it displaces become late (and are counted).
1. **EDF while feasible.** The largest set of pending tasks that can all meet their deadlines
   (processing back to back from ``now``) is found by Moore-Hodgson (EDF order, dropping the
   longest task whenever one would be late; optimal for the number of missed deadlines) and
   runs first, in EDF order. In underload this is plain EDF.
2. **Late tasks by Eq. 18.** The rest are late whatever happens; they follow in non-increasing
   ``(|μ_A| + σ_A / √|s_i|) / p_i`` with slack ``s_i = d_i - (t + p_i)`` at the time ``t`` they
   start being sequenced (the paper's metric; ``|·|`` because a late task's slack is negative,
   floored at ``slack_floor_ms``).
3. Tasks run in that order until ``budget`` cost units are spent. A task completing at
   ``C_i > d_i`` costs ``P_i = |μ_A|(C_i - d_i) + σ_A √(C_i - d_i)`` (Eq. 18), charged at
   completion. A missed deadline is counted once per task, as soon as it is seen: when the task
   is still pending at a ``run`` after its deadline, or completes after it. Tasks still waiting
   are reported by :meth:`EdfScheduler.n_overdue`, :meth:`EdfScheduler.max_lateness` and
   :meth:`EdfScheduler.pending_penalty` (Eq. 18 accrued so far, not yet charged), so starvation
   is visible while it happens rather than only when (if ever) the task completes.

``pending(key)`` is a set lookup (O(1)); a ``run`` is O(P log P) NumPy work over the P pending
tasks, plus a Python Moore-Hodgson pass only when EDF cannot meet every deadline.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray


def penalty(
    completion_ms: ArrayLike, deadline_ms: ArrayLike, mu_a: ArrayLike, sigma_a: ArrayLike
) -> NDArray[np.float64]:
    """Eq. 18: ``0`` if ``C ≤ d`` else ``|μ_A|(C - d) + σ_A √(C - d)``.

    Examples
    --------
    >>> penalty([5.0, 14.0], [10.0, 10.0], [2.0, 2.0], [3.0, 3.0]).tolist()
    [0.0, 14.0]
    """
    late = np.maximum(np.asarray(completion_ms, float) - np.asarray(deadline_ms, float), 0.0)
    return np.abs(np.asarray(mu_a, float)) * late + np.nan_to_num(
        np.asarray(sigma_a, float)
    ) * np.sqrt(late)


def moore_hodgson(
    deadline_ms: NDArray, cost: NDArray, start_ms: float, ms_per_unit: float, budget: float = np.inf
) -> NDArray[np.bool_]:
    """Mask of a largest subset of tasks that all meet their deadlines in EDF order.

    Tasks run back to back from ``start_ms``. With ``ms_per_unit = 0`` (evaluations complete
    "at" the tick) a task can be on time only if ``d ≥ start`` and it fits in ``budget``.

    Examples
    --------
    >>> d, c = np.array([2.0, 3.0, 4.0]), np.array([2.0, 2.0, 1.0])
    >>> moore_hodgson(d, c, start_ms=0.0, ms_per_unit=1.0).tolist()  # one of the first two goes
    [True, False, True]
    >>> moore_hodgson(d, c, start_ms=0.0, ms_per_unit=0.0, budget=3.0).tolist()
    [True, False, True]
    """
    with np.errstate(divide="ignore", invalid="ignore"):  # deadlines in cost units from start
        if ms_per_unit > 0:
            room = (deadline_ms - start_ms) / ms_per_unit
        else:
            room = np.where(deadline_ms >= start_ms, budget, -1.0)
    order = np.argsort(deadline_ms, kind="stable")
    done = np.cumsum(cost[order])
    keep = np.ones(len(cost), dtype=bool)
    if (done <= room[order]).all():  # fast path: EDF meets every deadline
        return keep
    heap: list[tuple[float, int, int]] = []
    t = 0.0
    for pos, i in enumerate(order):
        heapq.heappush(heap, (-float(cost[i]), -pos, int(i)))
        t += cost[i]
        if t > room[i]:
            c, _, j = heapq.heappop(heap)  # drop the longest task so far (ties: the latest)
            keep[j] = False
            t += c
    return keep


@dataclass(frozen=True)
class Completed:
    """Tasks completed by one ``run``, in execution order (arrays aligned)."""

    keys: NDArray[np.int64]
    completion_ms: NDArray[np.float64]
    deadline_ms: NDArray[np.float64]
    late: NDArray[np.bool_]
    penalty: NDArray[np.float64]

    def __len__(self) -> int:
        return len(self.keys)


class EdfScheduler:
    """Preemptive EDF with Moore-Hodgson admission and Eq. 18 sequencing of late tasks.

    Parameters
    ----------
    ms_per_unit : float
        Processing time of one cost unit, ms (``0``: evaluations take no time).
    slack_floor_ms : float
        Floor on ``|s_i|`` in the Eq. 18 metric (avoids ``σ / √0``).
    max_wait_ms : float
        Aging limit of step 0 (``inf``: off).

    Examples
    --------
    >>> s = EdfScheduler(ms_per_unit=1.0)
    >>> s.submit([1, 2, 3], deadline_ms=[3.0, 1.0, 2.0])
    >>> done = s.run(now_ms=0, budget=2)          # two units: the two earliest deadlines
    >>> done.keys.tolist(), done.completion_ms.tolist(), s.n_pending
    ([2, 3], [1.0, 2.0], 1)
    >>> done = s.run(now_ms=2, budget=2)
    >>> done.keys.tolist(), done.late.tolist(), s.n_missed
    ([1], [False], 0)
    """

    def __init__(
        self,
        ms_per_unit: float = 1.0,
        *,
        slack_floor_ms: float = 1e-6,
        max_wait_ms: float = np.inf,
    ) -> None:
        if ms_per_unit < 0:
            raise ValueError(f"ms_per_unit must be >= 0 ms, got {ms_per_unit}")
        if not max_wait_ms >= 0:
            raise ValueError(f"max_wait_ms must be >= 0 ms, got {max_wait_ms}")
        self.ms_per_unit = ms_per_unit
        self.slack_floor_ms = slack_floor_ms
        self.max_wait_ms = max_wait_ms
        self._keyset: set[int] = set()
        self.n_aged = 0  # tasks run ahead of the on-time set by step 0
        self.keys = np.empty(0, dtype=np.int64)
        self.deadline_ms = np.empty(0)
        self.remaining = np.empty(0)
        self.mu_a = np.empty(0)
        self.sigma_a = np.empty(0)
        self.missed = np.empty(0, dtype=bool)  # already counted as a missed deadline
        self.n_completed = 0
        self.n_missed = 0
        self.total_penalty = 0.0

    def __repr__(self) -> str:
        return (
            f"EdfScheduler(pending={self.n_pending}, completed={self.n_completed}, "
            f"missed={self.n_missed}, penalty={self.total_penalty:.6g})"
        )

    @property
    def n_pending(self) -> int:
        return len(self.keys)

    def submit(
        self,
        keys: ArrayLike,
        deadline_ms: ArrayLike,
        cost: ArrayLike = 1.0,
        mu_a: ArrayLike = 0.0,
        sigma_a: ArrayLike = 0.0,
    ) -> None:
        """Add tasks (keys must be new); ``cost`` in units, ``μ_A, σ_A`` for Eq. 18."""
        k = np.asarray(keys, dtype=np.int64).ravel()
        d, c, m, s = (
            np.broadcast_to(np.asarray(x, dtype=np.float64), k.shape).copy()
            for x in (deadline_ms, cost, mu_a, sigma_a)
        )
        new = set(k.tolist())
        if len(new) != len(k) or not self._keyset.isdisjoint(new):
            raise ValueError("task keys must be unique and not already pending; cancel first")
        if (c <= 0).any() or np.isnan(d).any():
            raise ValueError(
                f"costs must be > 0 units and deadlines not nan, got cost "
                f"{c.min() if len(c) else None}"
            )
        self.keys = np.r_[self.keys, k]
        self.deadline_ms = np.r_[self.deadline_ms, d]
        self.remaining = np.r_[self.remaining, c]
        self.mu_a = np.r_[self.mu_a, np.nan_to_num(m)]
        self.sigma_a = np.r_[self.sigma_a, np.nan_to_num(s)]
        self.missed = np.r_[self.missed, np.zeros(len(k), dtype=bool)]
        self._keyset |= new

    def cancel(self, keys: ArrayLike) -> int:
        """Drop pending tasks by key (unknown keys ignored); return how many were dropped."""
        drop = np.isin(self.keys, np.asarray(keys, dtype=np.int64))
        self._keyset.difference_update(self.keys[drop].tolist())
        self._keep(~drop)
        return int(drop.sum())

    def pending(self, key: int) -> bool:
        """Whether a task with ``key`` waits to run (a set lookup)."""
        return int(key) in self._keyset

    def n_overdue(self, now_ms: float) -> int:
        """Pending tasks whose deadline is before ``now_ms`` (they have missed it)."""
        return int((self.deadline_ms < now_ms).sum())

    def max_lateness(self, now_ms: float) -> float:
        """How long the most overdue pending task is past its deadline at ``now_ms`` (ms)."""
        return float(max(now_ms - self.deadline_ms.min(), 0.0)) if self.n_pending else 0.0

    def pending_penalty(self, now_ms: float) -> float:
        """Eq. 18 of the pending tasks if they completed at ``now_ms`` (accrued, not charged)."""
        return float(penalty(now_ms, self.deadline_ms, self.mu_a, self.sigma_a).sum())

    def _keep(self, mask: NDArray[np.bool_]) -> None:
        for name in ("keys", "deadline_ms", "remaining", "mu_a", "sigma_a", "missed"):
            setattr(self, name, getattr(self, name)[mask])

    def order(self, now_ms: float, budget: float = np.inf) -> NDArray[np.int64]:
        """Execution order (indices into the pending arrays) at ``now_ms``: steps 0-2 above."""
        u = self.ms_per_unit
        aged = self.deadline_ms < now_ms - self.max_wait_ms
        rest = np.flatnonzero(~aged)
        aged = np.flatnonzero(aged)
        aged = aged[np.argsort(self.deadline_ms[aged], kind="stable")]  # oldest first
        aged_cost = float(self.remaining[aged].sum())
        start = now_ms + aged_cost * u
        on_time = moore_hodgson(
            self.deadline_ms[rest], self.remaining[rest], start, u, max(budget - aged_cost, 0.0)
        )
        first = rest[on_time]
        first = first[np.argsort(self.deadline_ms[first], kind="stable")]  # EDF
        late = rest[~on_time]
        t = start + self.remaining[first].sum() * u
        p = self.remaining[late]
        slack = np.abs(self.deadline_ms[late] - (t + p * u))  # s_i = d_i - (t + p_i)
        slack = np.maximum(slack, self.slack_floor_ms)
        metric = (np.abs(self.mu_a[late]) + self.sigma_a[late] / np.sqrt(slack)) / p  # §5
        late = late[np.argsort(-metric, kind="stable")]  # non-increasing metric
        return np.r_[aged, first, late].astype(np.int64)

    def run(self, now_ms: float, budget: float = np.inf) -> Completed:
        """Spend up to ``budget`` cost units from ``now_ms``; return the tasks that completed."""
        if budget < 0:
            raise ValueError(f"budget must be >= 0 cost units, got {budget}")
        newly = ~self.missed & (self.deadline_ms < now_ms)  # still pending past the deadline
        self.missed |= newly
        self.n_missed += int(newly.sum())
        seq = self.order(now_ms, budget)
        cum = np.cumsum(self.remaining[seq])
        done = cum <= budget * (1 + 1e-12)
        n_done = int(done.sum())
        if n_done < len(seq) and np.isfinite(budget):  # preempt the next task at the budget
            spent = cum[n_done - 1] if n_done else 0.0
            self.remaining[seq[n_done]] -= budget - spent
        fin = seq[:n_done]
        self.n_aged += int((self.deadline_ms[fin] < now_ms - self.max_wait_ms).sum())
        self._keyset.difference_update(self.keys[fin].tolist())
        completion = now_ms + cum[:n_done] * self.ms_per_unit
        dl = self.deadline_ms[fin]
        late = completion > dl
        self.n_missed += int((late & ~self.missed[fin]).sum())
        pen = penalty(completion, dl, self.mu_a[fin], self.sigma_a[fin])  # Eq. 18
        out = Completed(self.keys[fin], completion, dl, late, pen)
        keep = np.ones(self.n_pending, dtype=bool)
        keep[fin] = False
        self._keep(keep)
        self.n_completed += n_done
        self.total_penalty += float(pen.sum())
        return out
